// The one sentence every tab uses: the one started in the Translate tab. assets/shell/lens.js announces it when a
// Start answer arrives (window event lens-started), and its end (detail null: another model was picked); the
// Translate tab's box reports its text on every change (a js-only Gradio event, translate_tab.py). Each tab names
// the sentence (a .started-sentence element), and a hint under the box says so when the box holds another sentence
// that was not started.
// The hint's element also says why a Start started nothing (its value, set by the server: attention_lens/shell/components.py
// box_note_value, box "source"), until the box is edited or a sentence is started: drawn here, so no later server
// event of the page can wipe it (Gradio's own status of the box is replaced by every one of them).
// Runs as the js_on_load of each of those gr.HTML elements (element is given); they share one state, kept on the
// Translate tab's hint (#source_hint's .sentence, the first of them to run: it is on the first screen), where the
// other scripts read the sentence started (docs/design.md).
// Text is set with textContent only: the sentence is user input.
const keeper = document.getElementById("source_hint") || home;  // #source_hint, or this view's own element
const S = keeper.sentence || (keeper.sentence = (() => {
  const s = {started: null, sent: null, box: "", refused: null, elements: new Set()};
  // (an empty box holds no other sentence: nothing to say until something is typed; nor does the box that was
  // started when the model's limit cut it: `started` is what was read, `sent` the box's text at that Start)
  s.stale = () => s.started !== null && s.box.trim() !== "" && s.box.trim() !== s.started.trim()
    && s.box.trim() !== (s.sent || "").trim();
  const cut = (t) => ([...t].length > 120 ? `${[...t].slice(0, 100).join("")}…` : t);  // a long one, quoted
  s.paint = (e) => {
    const hint = e.querySelector(".source-hint"), name = e.querySelector(".started-sentence"), stale = s.stale();
    const said = e.querySelector(".source-said");
    const why = s.refused && (s.refused.texts || {}).source === s.box ? s.refused.said : "";
    if (said) {  // and which sentence the views still show, when one was started before
      said.hidden = !why;
      said.textContent = why && s.started !== null ? `${why} ${w("sentence_still", {s: cut(s.started)})}` : why;
    }
    if (hint) {  // (not beside a refusal: it says what to do about the box already)
      hint.hidden = !stale || Boolean(why);
      hint.textContent = stale && !why ? w("sentence_hint", {s: cut(s.started)}) : "";
    }
    if (name) {
      name.classList.toggle("stale", stale);
      name.textContent = s.started === null ? w("sentence_none")
        : w(stale ? "sentence_started_stale" : "sentence_started", {s: cut(s.started)});
    }
  };
  const w = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label]
  document.addEventListener("lens-explain", () => s.show());  // in the language shown (assets/shell/i18n.js)
  s.show = () => { for (const e of s.elements) if (e.isConnected) s.paint(e); else s.elements.delete(e); };
  s.setBox = (v) => { s.box = typeof v === "string" ? v : ""; s.show(); };
  s.setNote = (v) => {  // the server's box_note_value: {n, texts: {source}, said ("" when it started)}
    let note = null;
    try { note = typeof v === "string" && v ? JSON.parse(v) : null; } catch (e) { note = null; }
    s.refused = note && note.said ? note : null;
    s.show();
  };
  window.addEventListener("lens-started", (ev) => {  // a refusal stays said when the sentence ends (a refused Start
    s.started = ev.detail == null ? null : String(ev.detail); s.sent = s.started === null ? null : s.box;  // ends it)
    if (s.started !== null) s.refused = null;
    s.show();
  });
  return s;
})());
S.elements.add(element);
if (element.querySelector(".source-said")) {
  S.setNote(props.value);
  watch("value", () => { S.elements.add(element); S.setNote(props.value); });
}
S.paint(element);

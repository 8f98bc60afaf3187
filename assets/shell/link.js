// attention-lens: a link to the view shown. Runs as the js_on_load of the gr.HTML #link_box (attention_lens/shell/link.py): `element`,
// `props`, `trigger`, `watch` are given.
// Copy link writes a URL whose query holds the model, the sentence, the step, the kind, layer and head (1-based, as
// the page shows them), the inside panel's row, the colour measure and the tab. A page opened with such a query
// sends its model and sentence to the server once (the link box's event: the picker, the box and Start, as if
// typed), waits for the trajectory, then moves the view there in the browser: no other request. A parameter that
// is missing is left as it is; one out of range, unknown or hostile is ignored and said in one line (#link_note).
// The model is in every link. Every other tab's view travels as <tab>_<name> parameters (compare_a, beam_size, ...):
// the tab's own code gives and restores them (the tabs' registry, #lesson's .lesson.tabs: assets/shell/views.js), pressing its button so that the
// view opens started. A lesson (?lesson=..., assets/shell/lesson.js) opens its views one by one with inst.open(query).
// Everything from the URL is shown with textContent only and checked before use: it is user input.
const box = element.querySelector(".link-box"), btn = element.querySelector("#copy_link");
const MODELS = (box.dataset.models || "").split(",").filter(Boolean);
// the model picked: the picker's (a gr.Dropdown's) value, told by its change event (attention_lens/app.py PICKED_JS), else the
// page's default; a gr.Dropdown shows the choice's label, not its value, so the page reads it from here
const picked = () => {                   // the picker's value, kept on its element (attention_lens/app.py PICKED_JS)
  const v = document.getElementById("model")?.dataset.picked;
  return MODELS.includes(v) ? v : box.dataset.model || MODELS[0];
};
const KINDS = ["encoder_self", "decoder_self", "cross"];
const MEASURES = ["weight", "contribution", "alti", "saliency"];
const TABS = {translate: "Translate", compare: "Compare", ablation: "Head ablation", beam: "Beam search",
              layers: "Across layers", atlas: "Head atlas", learned: "Attention being learned", model: "Model"};
const KEYS = ["model", "text", "step", "kind", "layer", "head", "row", "stage", "sheet", "measure", "tab"];
const VIEW = ["step", "kind", "layer", "head", "row", "stage", "sheet", "measure"];  // need a started sentence
const STAGES = 6, ALL = 6;                // Inside this head's stages ①..⑤ and "all" (assets/translate/inside.js stage)
const MAX_TEXT = 2000;                    // the source box's limit (attention_lens/shell/link.py checks it again)
const VIEW_KEY = new RegExp(`^(${Object.keys(TABS).filter(k => k !== "translate").join("|")})_(.+)$`);
const inst = {notes: [], applied: null, opening: false, last: null};
home.link = inst;  // on this view's own element (#link_box): docs/design.md
const tabs = () => find("lesson", "lesson")?.tabs || {};  // each tab's view (assets/shell/views.js)
const sentence = () => find("source_hint", "sentence");  // the sentence started (assets/shell/sentence.js)
const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);
const quote = (v) => JSON.stringify(v.length > 24 ? `${v.slice(0, 24)}…` : v);
const lens = () => find("attention", "lens");  // the attention view (assets/shell/lens.js), on its element
const sleep = (ms) => new Promise(r => setTimeout(r, ms));
const w = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label]: the page's language
const tabButton = (key) => document.querySelector(`#tabs button[role=tab][data-tab-id="${key}"]`);  // gr.Tab(id=key)

// -- reading a link --------------------------------------------------------------------------------------------
function parse(search) {                  // -> {want: the parameters kept, bad: why each other one was ignored}
  const q = new URLSearchParams(search), want = {views: {}}, bad = [];
  for (const [k, v] of q) {               // a tab's view: checked by the tab's own code when it is restored
    const m = VIEW_KEY.exec(k);
    if (!m) continue;
    if (v.length > MAX_TEXT * 2) bad.push(`${k} (${v.length} characters; at most ${MAX_TEXT * 2})`);
    else (want.views[m[1]] = want.views[m[1]] || {})[m[2]] = v;
  }
  const CHOICES = {model: MODELS, kind: KINDS, measure: MEASURES, tab: Object.keys(TABS)};
  for (const k of KEYS) {
    if (!q.has(k)) continue;
    const v = q.get(k);
    if (has(CHOICES, k)) {
      if (CHOICES[k].includes(v)) want[k] = v;
      else bad.push(`${k} ${quote(v)} (${k === "model" ? "this app serves" : "one of"} ${CHOICES[k].join(", ")})`);
    } else if (k === "text") {
      const n = [...v].length;
      if (v.trim() && n <= MAX_TEXT) want.text = v;
      else bad.push(`text (${n} characters; a sentence of 1 to ${MAX_TEXT})`);
    } else if (k === "head" && v === "mean") want.head = "mean";
    else {
      const min = k === "layer" || k === "head" ? 1 : 0;
      if (/^\d{1,4}$/.test(v) && +v >= min) want[k] = +v;
      else bad.push(`${k} ${quote(v)} (a whole number from ${min})`);
    }
  }
  if (q.has("explain") && !["plain", "detail"].includes(q.get("explain"))) {  // assets/shell/explain.js reads it itself
    bad.push(`explain ${quote(q.get("explain"))} (one of plain, detail)`);
  }
  if (q.has("lang") && !["en", "de"].includes(q.get("lang"))) bad.push(`lang ${quote(q.get("lang"))} (one of en, de)`);
  return {want, bad, any: KEYS.some(k => q.has(k)) || Object.keys(want.views).length > 0 || bad.length > 0};
}
function say(text, url) {                 // the line under the intro row; a URL goes in a box to select
  const root = document.getElementById("link_note");
  const note = root && root.querySelector(".link-note");
  if (!note) return;
  note.querySelector("[data-role=text]").textContent = text;
  let input = note.querySelector("input");
  if (url) {
    if (!input) {
      input = document.createElement("input"); input.readOnly = true;
      input.addEventListener("focus", () => input.select()); note.querySelector("[data-role=close]").before(input);
    }
    input.setAttribute("aria-label", w("link_field"));  // in the language of the line it belongs to
    input.value = url;
  } else if (input) input.remove();
  const close = note.querySelector("[data-role=close]");
  if (!close.bound) { close.bound = true; close.addEventListener("click", () => { note.hidden = true; }); }
  note.hidden = !text;
  clearTimeout(say.timer);                // it closes by itself: after some seconds (not while used) or on a tab change
  const later = () => {
    if (note.matches(":hover") || note.contains(document.activeElement)) say.timer = setTimeout(later, 2000);
    else note.hidden = true;
  };
  if (text) say.timer = setTimeout(later, url ? 10000 : 20000);
}
document.addEventListener("click", (e) => {
  if (inst.opening || !e.target.closest || !e.target.closest("button[role=tab]")) return;
  const n = document.querySelector("#link_note .link-note");
  if (n) { clearTimeout(say.timer); n.hidden = true; }
}, true);
document.addEventListener("lens-explain", (e) => {  // a line said in the other language is gone with it
  const n = document.querySelector("#link_note .link-note");
  if (n && say.lang && e.detail && e.detail.lang !== say.lang) { clearTimeout(say.timer); n.hidden = true; }
  say.lang = e.detail && e.detail.lang;
});
function tell(notes) {
  inst.notes = notes.slice();
  if (notes.length) say(w(notes.length === 1 ? "link_ignored_1" : "link_ignored_n", {notes: notes.join("; ")}));
}

// -- opening it: the server starts the sentence; the view is then moved here -----------------------------------
let answered = null;
function ask(data) {                      // the link box's event (attention_lens/shell/link.py wire) -> {id, ok, notes, input}
  const late = sleep(120000).then(() => ({ok: false, notes: ["its sentence (the server did not answer)"]}));
  return Promise.race([new Promise((ok) => { answered = {id: data.id, ok}; trigger("click", data); }), late]);
}
watch("value", () => {
  const a = props.value;
  if (a && answered && a.id === answered.id) { const done = answered.ok; answered = null; done(a); }
});
async function until(test, ms) {
  for (const t0 = performance.now(); performance.now() - t0 < ms; await sleep(50)) if (test()) return true;
  return false;
}
function apply(want, notes) {             // the step, head, row and colours of the link, on the trajectory shown
  const L = lens(), st = L.state, d = st.traj, kind = want.kind || st.kind, [nl, nh] = d.maps[kind].shape;
  let layer = st.layer, head = st.head;
  if (want.layer !== undefined) {
    if (want.layer <= nl) layer = want.layer - 1; else notes.push(`layer ${want.layer} (this model has ${nl})`);
  }
  if (want.head === "mean") head = "mean";
  else if (want.head !== undefined) {
    if (want.head <= nh) head = want.head - 1; else notes.push(`head ${want.head} (this model has ${nh} per layer)`);
  }
  L.select(kind, Math.min(layer, nl - 1), head === "mean" ? head : Math.min(head, nh - 1));
  if (want.step !== undefined) {
    if (want.step < d.n) L.ctl.goto(want.step);
    else notes.push(`step ${want.step} (this sentence has steps 0 to ${d.n - 1})`);
  }
  const I = find("inside", "inside");
  if (want.row !== undefined) {
    const rows = kind === "encoder_self" ? d.S : st.t + 1;
    if (st.head === "mean") notes.push(`row ${want.row} (the mean of heads has no inside view)`);
    else if (want.row >= rows) notes.push(`row ${want.row} (this map has rows 0 to ${rows - 1})`);
    else if (I && I.pick) I.pick(want.row, want.sheet === 1);  // a phone's sheet only if the view had it open
  }
  if (I && I.stage) {                     // the stage is part of the view: missing is "all", as url() writes it
    if (want.stage !== undefined && (want.stage < 1 || want.stage > STAGES)) {
      notes.push(`stage ${want.stage} (one of 1 to ${STAGES})`);
    } else if ((want.stage ?? ALL) !== I.ui.stage) I.stage(want.stage ?? ALL);
    if (want.sheet !== 1 && I.sheet && I.closeSheet) I.closeSheet();
  }
  const A = find("attribution", "attribution");
  if (want.measure === "contribution" && I && I.setMeasure) I.setMeasure(true);
  else if ((want.measure === "alti" || want.measure === "saliency")) {
    if (A && A.setMethod) A.setMethod(want.measure); else notes.push(`measure ${want.measure} (not on this page)`);
  }
  inst.applied = {kind: st.kind, layer: st.layer, head: st.head, step: st.t, row: want.row ?? null};
}
function shownAlready(want) {             // the link's model and sentence are those of the view shown now
  const L = lens(), st = L && L.state, d = st && st.traj;
  const model = want.model === undefined || picked() === want.model;
  if (want.text === undefined) return want.model !== undefined && model && !d;  // no sentence: none drawn
  const started = sentence() ? sentence().started : null;
  return model && !!d && st.doc === d && !d.forced.some(Boolean) && started === want.text && d.p.input === want.text;
}
function showTab(key) {
  const b = tabButton(key || "translate");
  if (b && b.getAttribute("aria-selected") !== "true") b.click();
}
async function restoreView(want, bad, fresh) {  // the tab's own view, by its own code (assets/shell/views.js), started
  const tab = want.tab || "translate";
  for (const [other, ps] of Object.entries(want.views)) {
    if (other === tab) continue;
    for (const k of Object.keys(ps)) bad.push(`${other}_${k} (the link's tab is ${TABS[tab]})`);
  }
  for (const [other, view] of Object.entries(tabs())) {  // a link of another sentence or model is a
    if (fresh && !want.views[other] && view && view.reset) view.reset();        // whole new view: a tab's view it holds
  }                                                                     // nothing of is the tab's default
  const params = want.views[tab];
  if (!params) return;
  const ok = () => { showTab(tab); return !!tabs()[tab] && tabs()[tab].ready(); };
  if (!await until(ok, 60000)) { bad.push(`the ${TABS[tab]} view (its tab did not load)`); return; }
  inst.stage = `setting the ${tab} view`; await tabs()[tab].set(params, bad);
}
async function open(search = location.search, inLesson = false) {
  if (!inLesson && new URLSearchParams(search).has("lesson")) return;  // assets/shell/lesson.js opens it
  const {want, bad, any} = parse(search);
  if (!any && !inLesson) return;
  inst.opening = true;
  if (want.text === undefined) {
    for (const k of VIEW) if (k in want) { bad.push(`${k} (the link has no sentence to show it on)`); delete want[k]; }
  }
  inst.stage = "waiting for the view"; await until(() => lens() && lens().ready, 60000);
  const already = shownAlready(want), fresh = !already && (want.text !== undefined || want.model !== undefined);
  if (already) {              // the model and sentence shown (a lesson's next view, Back): no request
    if (want.text !== undefined) apply(want, bad);
  } else if (want.text !== undefined || want.model !== undefined) {
    const seq = lens().state.traj ? lens().state.traj.seq : null, id = `link-${Date.now()}-${Math.random()}`;
    inst.stage = "asking the server"; const answer = await ask({id, model: want.model ?? null, text: want.text ?? null});
    bad.push(...(answer.notes || []));
    if (answer.ok) {
      const text = answer.input ?? want.text;  // what was started: the part translated when the text was cut
      const mine = () => { const d = lens().state.traj; return d && d.seq !== seq && d.p.input === text; };
      inst.stage = "waiting for the sentence"; const arrived = await until(mine, 60000);
      if (arrived) apply(want, bad); else bad.push("the sentence (no answer from the server)");
    }
  }
  showTab(want.tab);
  inst.stage = `opening the ${want.tab || "translate"} tab`; await restoreView(want, bad, fresh);
  tell(bad);
  inst.opening = false; inst.stage = "opened";
  inst.opened = true;
  return bad;
}

// -- Copy link -------------------------------------------------------------------------------------------------
function currentTab() {
  const b = document.querySelector("#tabs button[role=tab][aria-selected=true]"), key = b ? b.dataset.tabId : "";
  return has(TABS, key) ? key : null;
}
function url() {                          // the view shown now as a link
  const q = new URLSearchParams(), L = lens(), st = L && L.state, d = st && st.traj;
  const text = sentence() ? sentence().started : null, extra = [];
  if (d && typeof text === "string") {
    if (d.p.model) q.set("model", d.p.model);  // its model's key (the picker's)
    q.set("text", text); q.set("step", String(st.t)); q.set("kind", st.kind);
    q.set("layer", String(st.layer + 1)); q.set("head", st.head === "mean" ? "mean" : String(st.head + 1));
    const I = find("inside", "inside"), p = I && I.ui.pick, enc = st.kind === "encoder_self";
    const picked = p && p.ids === d.ids.join(",") && p.kind === (enc ? "src" : "tgt") && (enc || p.row <= st.t);
    if (picked) q.set("row", String(p.row));  // a row clicked on the map (else the panel follows the step)
    if (I && I.ui.stage !== ALL) q.set("stage", String(I.ui.stage));  // Inside this head's stage (① .. ⑤)
    if (I && I.sheet) q.set("sheet", "1");  // on a phone: the panel open as a sheet over the page
    const A = find("attribution", "attribution"), method = A && A.ui && A.ui.method;
    if (method) q.set("measure", method); else if (I && I.ui.measure) q.set("measure", "contribution");
    if (d.forced.some(Boolean) || st.doc !== d) {
      extra.push(w("link_forced"));
    }
  } else {
    q.set("model", picked());  // the model is always in it
    extra.push(w(currentTab() !== "translate" ? "link_no_sentence_tab" : "link_no_sentence"));
  }
  const tab = currentTab();
  if (tab && tab !== "translate") q.set("tab", tab);
  const V = tab && tabs()[tab], mine = V && V.ready() ? V.get() : null;
  for (const [k, v] of Object.entries(mine || {})) q.set(`${tab}_${k}`, String(v));
  const E = find("explain_box", "explain");
  if (E && E.mode === "detail") q.set("explain", "detail");  // assets/shell/explain.js
  if (E && E.lang && (E.lang !== "en" || E.browserLang() !== "en")) q.set("lang", E.lang);  // assets/shell/i18n.js
  const theme = new URLSearchParams(location.search).get("__theme");
  if (theme) q.set("__theme", theme);
  return {url: `${location.origin}${location.pathname}${q.toString() ? "?" + q : ""}`, extra};
}
btn.addEventListener("click", async () => {
  const {url: u, extra} = url();
  let copied = false;
  try { await navigator.clipboard.writeText(u); copied = true; } catch (e) { copied = false; }
  say(w(copied ? "link_copied" : "link_copy_this", {what: extra.length ? extra.join("; ") : w("link_exact")}), u);
  inst.last = u;                          // given, and said (a test waits for this: the line is up by then)
});
inst.url = () => url().url;
inst.model = picked;

// -- the browser's history follows the view: a tab changed by the user is an entry; Back / Forward reopen it ----
// (a lesson's views are entries of their own: assets/shell/lesson.js). The entry left is first rewritten to the view it
// showed, so Back returns to exactly that view; opening an entry makes none.
const inLesson = () => !!find("lesson", "lesson")?.views;  // assets/shell/lesson.js
document.addEventListener("click", (e) => {
  const b = e.target.closest && e.target.closest("button[role=tab]");
  if (!b || inst.opening || inLesson() || b.getAttribute("aria-selected") === "true" || !lens() || !lens().ready) return;
  const here = () => { try { return url().url; } catch (err) { return null; } };  // a view not ready: no entry
  const left = here();
  if (left) history.replaceState(history.state, "", left);
  const before = currentTab();
  const pushed = () => {
    if (currentTab() === before) { if (++pushed.tries < 40) setTimeout(pushed, 50); return; }
    const now = here();
    if (now) history.pushState({tab: currentTab()}, "", now);
  };
  pushed.tries = 0; setTimeout(pushed, 0);
}, true);
window.addEventListener("popstate", () => {
  if (inLesson() || new URLSearchParams(location.search).has("lesson")) return;  // assets/shell/lesson.js
  open(location.search, true).catch(failed("link_view_failed"));
});
inst.parse = parse;
inst.say = say;
const failed = (key) => (e) => {          // said, and the link counts as opened: nothing waits for it any more
  inst.opening = false; inst.opened = true; inst.error = String(e.message || e); say(w(key, {why: inst.error}));
};
inst.open = (search) => open(search, true).catch(failed("link_view_failed"));
open().catch(failed("link_failed"));

// attention-lens, the attention view (assets/shell/lens.js): the plain DOM around the maps, updated only where a step
// changes it: the target pieces (chips) and what their marks mean, the ▁ legend, the status line and the player's
// slider, the top-k list (assets/translate/topk.js), the layer and head selects. Every token is set with textContent: user
// text is never HTML. A part of the view's script (attention_lens/shell/components.py `script`, LENS_PARTS): the body of a function of
// `view`, in a scope of its own; what it takes from the view and the parts before it is named just below, what it
// gives is returned at the end (lens.js puts it in `view`).
const {st, inst, q, MAIN, setText, tl, props, draw, find} = view;

function drawChips(f) {
  const box = q("target"), d = st.doc, labels = f.words ? f.tgt : f.tp;
  const key = `${d.seq}|${f.words}`;
  if (box.dataset.key !== key || f.words) { box.textContent = ""; box.dataset.key = key; inst.chips = []; }
  const chips = inst.chips;
  for (let i = 0; i < labels.length; i++) {
    let s = chips[i];
    if (!s) { s = chips[i] = document.createElement("span"); s.className = "lens-tok"; s.title = tl("position", {i});
              s.textContent = labels[i]; if (d.specials.has(labels[i])) s.classList.add("special"); }
    s.classList.toggle("forced", !!f.chipForced[i]);
    s.classList.toggle("differs", !!f.chipDiffers[i] && !f.chipForced[i]);
    s.classList.toggle("newest", i === f.row && i > 0);
    if (s.parentNode !== box || box.children[i] !== s) box.appendChild(s);
  }
  while (box.children.length > labels.length) box.lastChild.remove();
  drawMarks(f);
}
// What the chips' markers mean, for those shown: forced (a user's what-if) and differs (given, not chosen)
document.addEventListener("lens-explain", () => {  // the view's own words in the language (and mode) shown
  for (const r of ["legend", "marks"]) q(r).dataset.key = "";
  q("layer").textContent = ""; q("head").textContent = ""; q("target").dataset.key = "";
  q("play").textContent = tl(st.timer ? "pause" : "play");
  if (st.doc) draw(); else if (!props.value || !props.value.source) setText(q("status"), tl("lens_empty"));
});
function drawMarks(f) {
  const forced = f.chipForced.some(Boolean), differs = f.chipDiffers.some((x, i) => x && !f.chipForced[i]);
  const box = q("marks"), key = `${forced}|${differs}|${st.doc.mode}`;
  if (box.dataset.key === key) return;
  box.dataset.key = key; box.textContent = "";
  const who = tl(st.doc.mode === "ablated" ? "mark_who_ablated" : "mark_who");
  const given = tl({ablated: "mark_given_ablated", reference: "mark_given_reference"}[st.doc.mode] || "mark_given");
  for (const [on, cls, text] of [[forced, "forced", tl("mark_forced")],
                                 [differs, "differs", tl("mark_differs", {who, given})]]) {
    if (!on) continue;
    const item = document.createElement("span"), chip = document.createElement("span");
    item.className = "lens-mark"; chip.className = `lens-swatch ${cls}`; chip.textContent = tl("piece");
    item.append(chip, ` ${text}`); box.appendChild(item);
  }
}
function drawLegend() {                  // what ▁ means, with a word of this sentence that became several pieces
  const d = st.doc, box = q("legend"), key = String(d.seq);
  if (box.dataset.key === key) return;
  box.dataset.key = key;
  let ex = null;                          // the shortest such word of the source (else of the target)
  for (const [pieces, spans] of [[d.source, d.spans && d.spans.source], [d.pieces, d.spans && d.spans.target]]) {
    for (const [a, b] of spans || []) {
      const ps = pieces.slice(a, b), word = ps.join("").replace(/\u2581/g, "");
      if (b - a > 1 && ps.every(p => /\p{L}/u.test(p) && !d.specials.has(p)) && (!ex || word.length < ex[0].length))
        ex = [word, ps];                  // letters only: Schnee + . is a word and a full stop, not a split
    }
    if (ex) break;
  }
  box.textContent = tl("lens_legend") +
    (ex ? `: ${ex[0]} \u2192 ${ex[1].join(" ")}` : "");
}
function drawStatus(f) {
  const d = st.doc, unit = f.words || d.merged ? "words" : "pieces", count = (n, side) =>
    tl(`count_${side}_${unit}${n === 1 ? "_1" : ""}`, {n});
  const mode = d.traj ? (d.mode === "reference" ? tl("status_reference_step", {t: st.t}) : tl("status_step", {t: st.t}))
    : (d.mode in {reference: 1, beam: 1, ablated: 1} ? tl(`status_${d.mode}`) : tl("status_step", {t: d.step ?? d.cursor}));
  const nt = f.words ? f.tgt.length : (d.merged ? d.n : f.n), ns = f.words ? f.src.length : d.S;
  setText(q("status"), `${mode} · ${count(ns, "source")} · ${count(nt, "target")}` +
    (f.done ? ` · ${tl("finished")}` + (st.kind !== "encoder_self" && f.tp[f.n - 1] === "</s>" && !f.words
      ? ` ${tl("status_last_row")}` : "")
      : (f.next ? ` · ${tl("status_next")}: ${f.next}` : "")));
  const player = q("player"), show = MAIN && d.traj, leave = q("leave"), back = !!(show && d.mode === "reference" && st.back);
  if (player.hidden === show) player.hidden = !show;
  if (leave.hidden === back) leave.hidden = !back;
  if (show) {
    const scrub = q("scrub");
    if (scrub.max !== String(d.n - 1)) scrub.max = String(d.n - 1);
    if (scrub.value !== String(st.t)) scrub.value = String(st.t);
    setText(q("stepno"), `${tl("step_word")} ${st.t} / ${d.n - 1}`);
  }
}
function pushTopk(f) {                    // the top-k list (#topk, assets/translate/topk.js) follows the main view
  const topk = MAIN && find("topk", "topk");  // assets/translate/topk.js, on its element
  if (!topk) return;
  const d = st.doc;
  if (!d.traj) { topk.render({items: [], done: true}); return; }
  const K = d.topk.k, items = [];
  for (let r = 0; r < Math.min(st.k, K); r++) items.push([d.vocab[d.topk.ids[st.t * K + r]], d.topk.p[st.t * K + r]]);
  topk.render({items, done: d.done[st.t], step: st.t, note: d.mode === "reference" && !d.done[st.t]
    ? tl("topk_reference") : null});
}
function fillSelect(sel, n, withMean, value) {  // option values are the labels shown: 1..n (and "mean")
  const want = [...Array(n).keys()].map(i => String(i + 1)).concat(withMean ? ["mean"] : []);
  if ([...sel.options].map(o => o.value).join() !== want.join()) {
    sel.textContent = "";
    for (const v of want) { const o = document.createElement("option"); o.value = v;
      o.textContent = v === "mean" ? tl("mean_heads") : v; sel.appendChild(o); }
  }
  const v = value === "mean" ? "mean" : String(value + 1);
  if (sel.value !== v) sel.value = v;
}

return {drawChips, drawLegend, drawStatus, pushTopk, fillSelect};

// attention-lens: "Inside this head", the panel that opens up one head of the Translate view's map for one query
// row: q·k for every key → ÷√d_k → mask → softmax → weights → Σ wᵢvᵢ, with the numbers of the sentence shown, and
// each key's contribution ‖w·v·W_O‖. Also the map's toggle between attention weight and contribution.
// Runs as the js_on_load of a gr.HTML (#inside): `element`, `props`, `trigger`, `watch` are given, and `parts`, whose
// payload (assets/shell/payload.js, in a scope of its own) gives the decoders (attention_lens/translate/inside_panel.py).
// One payload (attention_lens/translate/inside_payload.py) holds one head's q, k and v for every position of the decoded trajectory,
// so Step / Back / Play / the slider only redraw here (lens.js calls #inside's .inside.update after each draw):
// no request. Choosing another head, or a new trajectory (Start, a forced piece), asks the server once
// (trigger("click") -> attention_lens/translate/handlers.py inside_at). The panel computes the numbers as the lesson's
// scaled_dot_product_attention does; tokens are set with textContent only.
const {decodeHead, headKey} = parts.payload();
const q = (role) => element.querySelector(`[data-role="${role}"]`);
const num = (x, d) => (find("explain_box", "explain")?.num(x, d) ?? x.toFixed(d));  // 0.741 / 0,741 (assets/shell/explain.js)
const wl = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label]
const KEEP = 12, RETRY_MS = 15000;        // payloads kept (heads × trajectories); a request unanswered by then is sent again
const cache = new Map(), pending = new Map(), failed = new Map();  // failed: key -> the server's message
const ui = {open: true, stage: 6, measure: false, pick: null};  // pick: {ids, kind, row} chosen on the map
const inst = {updates: 0, updateMs: 0, requests: 0, cache, ui, shown: null, sheet: false};  // on #inside (below)
const lens = () => find("attention", "lens");  // the attention view (assets/shell/lens.js), on its element

// -- a head's payload, decoded by payload.js (decodeHead), with the scales of its colour strips -----------------
function load(p) { const h = decodeHead(p); h.qk = absMax(h.q, h.k); h.vmax = absMax(h.v); return h; }
function absMax(...arrays) { let m = 1e-9; for (const a of arrays) for (const x of a) m = Math.max(m, Math.abs(x)); return m; }

// -- the numbers of one row, in the order scaled_dot_product_attention computes them: the library's (payload.js) --
function compute(h, i, nk) {              // query row i over keys 0..nk-1
  const row = (a) => Array.from(a.subarray(i * h.Tk, i * h.Tk + nk));
  return {raw: row(h.raw), scaled: row(h.scores), masked: row(h.mask).map((m) => m === 1), weight: row(h.weights),
          contribution: row(h.contribution), out: Array.from(h.out.subarray(i * h.dk, (i + 1) * h.dk))};
}

// -- drawing -------------------------------------------------------------------------------------------------
function colour(x, m) {                   // diverging: blue negative, white 0, red positive
  const t = Math.max(-1, Math.min(1, x / m)), a = Math.abs(t);
  const to = t < 0 ? [33, 102, 172] : [178, 24, 43];
  return [255 + (to[0] - 255) * a, 255 + (to[1] - 255) * a, 255 + (to[2] - 255) * a];
}
function strip(c, data, off, n, m) {      // n values as a 1-pixel-high image, stretched by CSS
  if (c.width !== n) { c.width = n; c.height = 1; }
  c.style.width = `${Math.min(96, Math.max(48, n))}px`;
  const g = c.getContext("2d"), img = g.createImageData(n, 1);
  for (let i = 0; i < n; i++) {
    const [r, gg, b] = colour(data[off + i], m);
    img.data[4 * i] = r; img.data[4 * i + 1] = gg; img.data[4 * i + 2] = b; img.data[4 * i + 3] = 255;
  }
  g.putImageData(img, 0, 0);
}
function cell(tr, cls) { const td = document.createElement("td"); if (cls) td.className = cls; tr.appendChild(td); return td; }
function bar(td) {
  const b = document.createElement("span"), t = document.createElement("span");
  b.className = "inside-bar"; t.className = "inside-val"; td.append(b, t); return {b, t};
}
function buildRows(h) {                   // one table row per key, made once per payload (keys never change)
  const body = q("rows");
  body.textContent = "";
  const rows = [];
  for (let j = 0; j < h.Tk; j++) {
    const tr = document.createElement("tr"), r = {tr};
    cell(tr, "inside-key").textContent = h.keys[j];
    const ks = document.createElement("canvas"); ks.className = "inside-strip"; cell(tr, "s1").appendChild(ks);
    strip(ks, h.k, j * h.dk, h.dk, h.qk);
    r.raw = cell(tr, "num s1"); r.scaled = cell(tr, "num s2"); r.mask = cell(tr, "s3");
    r.weight = bar(cell(tr, "barcell s4"));
    const vs = document.createElement("canvas"); vs.className = "inside-strip"; cell(tr, "s5").appendChild(vs);
    strip(vs, h.v, j * h.dk, h.dk, h.vmax);
    r.contribution = bar(cell(tr, "barcell s5"));
    body.appendChild(tr); rows.push(r);
  }
  return rows;
}
function setText(el, s) { if (el.textContent !== s) el.textContent = s; }
const fmt = (x) => num(x, Math.abs(x) >= 100 ? 1 : 3);

function render(h, st, i, nk) {
  if (!inst.shown || inst.shown.h !== h) inst.shown = {h, rows: buildRows(h)};
  const rows = inst.shown.rows, n = compute(h, i, nk);
  let cmax = 1e-9, jw = 0, jc = 0;
  for (let j = 0; j < nk; j++) {
    cmax = Math.max(cmax, n.contribution[j]);
    if (n.weight[j] > n.weight[jw]) jw = j;
    if (n.contribution[j] > n.contribution[jc]) jc = j;
  }
  for (let j = 0; j < rows.length; j++) {
    const r = rows[j], show = j < nk;
    if (r.tr.hidden === show) r.tr.hidden = !show;
    if (!show) continue;
    setText(r.raw, fmt(n.raw[j])); setText(r.scaled, fmt(n.scaled[j]));
    setText(r.mask, n.masked[j] ? "−∞" : "");
    r.tr.classList.toggle("masked", n.masked[j]);
    r.weight.b.style.width = `${(100 * n.weight[j]).toFixed(1)}%`; setText(r.weight.t, num(n.weight[j], 3));
    r.contribution.b.style.width = `${(100 * n.contribution[j] / cmax).toFixed(1)}%`;
    setText(r.contribution.t, num(n.contribution[j], 3));
    r.tr.classList.toggle("top-w", j === jw); r.tr.classList.toggle("top-c", j === jc);
  }
  strip(q("qstrip"), h.q, i * h.dk, h.dk, h.qk);
  strip(q("outstrip"), n.out, 0, h.dk, h.vmax);
  // ‖out‖ lives in the head's d_k numbers; the contributions in the model's: ‖out·W_Oʰ‖ beside their sum (library's)
  const t = (k) => (find("explain_box", "explain")?.t(k) ?? k), fill = {dk: h.dk, norm: num(h.outLength[i], 3),
    on: num(h.on[i], 3), sum: num(h.contributionTotal[i], 3), w: h.keys[jw], c: h.keys[jc],
    differ: jw !== jc ? t("inside.differ") : ""};
  setText(q("outnote"), t("inside.out").replace(/\{(\w+)\}/g, (m, k) => (k in fill ? String(fill[k]) : m)));
  drawMask(h, i, nk);
  inst.row = {kind: h.kind, layer: h.layer, head: h.head, step: st.t, row: i, query: h.queries[i], keys: h.keys.slice(0, nk), ...n,
              q: Array.from(h.q.subarray(i * h.dk, (i + 1) * h.dk)), top_weight: jw, top_contribution: jc};
  return n;
}
function titles(h, st, i) {                 // the words: attention_lens/texts [label], in the page's language
  const w = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);
  setText(q("title"), `${w(`inside_${h.kind}`)} · ${w("layer")} ${h.layer + 1} · ${w("head")} ${h.head + 1} · ${w("step_word")} ${st.t}` +
    (h.ablated ? ` · ${w("inside_off")}` : "") + (st.words ? ` · ${w("inside_pieces")}` : ""));
  const d = st.doc, asked = st.conceal === "next" && i === st.t;  // a live class asks what comes next (lens.js conceal)
  const next = i + 1 < d.n && !asked ? d.pieces[i + 1] : (h.queries[i] === "</s>" ? `(${w("finished")})` : "?");
  const label = h.kind === "encoder_self" ? h.queries[i] : `${h.queries[i]} → ${next}`;
  const follows = following(st);
  setText(q("qlabel"), w("query_row", {i, label}) + " " + w(!follows ? "row_picked" :
    (h.kind === "encoder_self" ? "row_click" : "row_current")));
  q("follow").hidden = follows;
  const x = find("explain_box", "explain");
  // a head that adds a position bias to q·k and does not divide by √d_k (T5): step ② says so ("biased" in its payload)
  for (const [sel, key] of [[".inside-formula", h.biased ? "inside.formula_bias" : "inside.formula"],
                            ["button[data-stage='2']", h.biased ? "inside.b2_bias" : "inside.b2"]]) {
    const el = element.querySelector(`${sel} [data-text]`);
    if (el && el.dataset.text !== key) { el.dataset.text = key; if (x) x.apply(el.parentElement); }
  }
  const line = q("code").querySelector("[data-line='2']"), own = line.dataset.own ?? (line.dataset.own = line.textContent);
  line.textContent = h.biased ? "    scores = scores + position_bias".padEnd(own.indexOf("#")) + "# ②" : own;
  if (x) x.put(q("scaledhead"), h.biased ? "inside.th_scaled_bias" : "inside.th_scaled", {dk: h.dk});  // "÷√64"
  else setText(q("scaledhead"), h.biased ? "+ bias" : `÷√${h.dk}`);
  // the stage's note from the page's catalogue (attention_lens/shell/texts/en.toml "inside.stage<n>"), plain or detailed as the page's
  // "Explanations" box says (assets/shell/explain.js)
  const key = ui.stage === 3 ? (h.kind === "decoder_self" ? "inside.stage3_future" : "inside.stage3_none") :
    (ui.stage === 2 && h.biased ? "inside.stage2_bias" : `inside.stage${ui.stage}`);
  const said = find("explain_box", "explain")?.t(key) ?? key;
  setText(q("note"), said.replace(/\{dk\}/g, String(h.dk)).replace(/\{root\}/g, num(Math.sqrt(h.dk), 2)));
}

// -- decoder self-attention's mask: the T×T causal triangle of training, the current row marked ---------------
function drawMask(h, i, nk) {              // nk: the keys the table shows (as far as the step shown)
  const box = q("maskbox"), c = q("maskviz");
  box.hidden = h.kind !== "decoder_self";
  if (box.hidden) return;
  const T = h.Tq, cell = Math.max(3, Math.min(12, Math.floor(120 / T)));
  c.width = T * cell; c.height = T * cell;
  const g = c.getContext("2d");
  for (let r = 0; r < T; r++) for (let k = 0; k < T; k++) {
    g.fillStyle = k > r ? "#d9d9d9" : (r === i ? "#f2a65a" : "#6b8fd6");  // grey: masked (−∞), blue: may look
    g.fillRect(k * cell, r * cell, cell - 1, cell - 1);
  }
  g.strokeStyle = "#d62728"; g.lineWidth = 2; g.strokeRect(1, i * cell + 1, T * cell - 2, cell - 2);
  const m = Math.max(0, (nk || i + 1) - 1 - i);  // the table's keys after row i: −∞ there (a row picked before the step)
  setText(q("masknote"), m ? wl("masknote_past", {T, i, m, last: nk - 1}) : wl("masknote", {T, i}));  // attention_lens/texts [label]
}

// -- which row: the current step's, or one picked on the map (decided from the view's state alone, so the map
// marks it the same whether or not the head's payload has arrived) ------------------------------------------
function following(st) {
  const p = ui.pick, enc = st.kind === "encoder_self";
  return !(p && st.traj && p.ids === st.traj.ids.join(",") && p.kind === (enc ? "src" : "tgt") && (enc || p.row <= st.t));
}
function rowOf(st) { return following(st) ? (st.kind === "encoder_self" ? 0 : st.t) : ui.pick.row; }
function keysAt(h, st) { return h.kind === "decoder_self" ? st.t + 1 : h.Tk; }

// -- requests: one per head and trajectory -------------------------------------------------------------------
function request(d, kind, layer, head) {
  const key = `${d.ids.join(",")}|${kind}|${layer}|${head}`, now = performance.now();
  if (cache.has(key) || failed.has(key) || (pending.has(key) && now - pending.get(key) < RETRY_MS)) return;
  pending.set(key, now); inst.requests++;
  const position = JSON.stringify({step: d.n - 1, ids: d.ids, forced: d.forced.map(Number)});
  trigger("click", {kind, layer, head, position});
}
function received() {
  const p = props.value;
  if (p && p.error) return refused(p);
  if (!p || !p.q || !Array.isArray(p.ids)) return;
  pending.delete(headKey(p)); const h = load(p);
  cache.delete(h.key); cache.set(h.key, h);
  while (cache.size > KEEP) cache.delete(cache.keys().next().value);
  giveNorms(h, true);
  update();
}
function refused(p) {                      // the server said no: say why, and offer to ask again
  const r = p.request || {};
  let ids = null; try { ids = JSON.parse(r.position).ids.join(","); } catch (e) { /* no position: every request in flight failed */ }
  const keys = ids === null ? [...pending.keys()] : [`${ids}|${r.kind}|${r.layer}|${r.head}`];
  for (const key of keys) { pending.delete(key); failed.set(key, String(p.error)); }
  update();
}
function giveNorms(h, redraw) {           // the map's contribution toggle: ‖v W_O‖ of every head of this trajectory
  const L = lens(); if (!L) return;
  const c = L.contribution, same = c && c.ids === h.ids;
  if (!same) L.contribution = {on: ui.measure, ids: h.ids, norms: h.norms};
  if (!same && redraw && ui.measure && L.redraw) L.redraw();
}

// -- the update lens.js calls after every draw ---------------------------------------------------------------
function message(s) {
  setText(q("msg"), s); q("msg").hidden = false; q("main").hidden = true; q("retry").hidden = true;
  if (s) setText(q("title"), ""); inst.row = null;
}
function update() {
  const t0 = performance.now(), L = lens();
  placeToggle();
  if (!L || !L.state) return;
  const st = L.state, d = st.doc;
  if (!d || !d.traj || st.doc !== st.traj) {
    if (!d) { q("rows").textContent = ""; inst.shown = null; }  // no sentence: no rows of one gone (hidden or not)
    message(d ? "This map is not a decoding step (a reference, a beam hypothesis or an ablation): the panel follows the steps of Start."
              : (find("explain_box", "explain")?.t("inside.msg") ?? "Press Start."));
    return done(t0);
  }
  const ids = d.ids.join(","), mean = st.head === "mean";
  const any = [...cache.values()].reverse().find(c => c.ids === ids);
  if (any) giveNorms(any, false);
  else if (ui.measure && !ui.open) request(d, st.kind, st.layer, mean ? 0 : st.head);  // the toggle needs norms
  if (st.conceal === "where") {           // a live class's open question about the map's row (assets/live/live.js): the
    message(wl("conceal_inside")); return done(t0);  // weights, their table and notes wait for the reveal
  }
  if (mean) {
    if (ui.measure && !any) request(d, st.kind, st.layer, 0);
    message(wl("inside_mean")); return done(t0);
  }
  if (!ui.open) return done(t0);
  const key = `${ids}|${st.kind}|${st.layer}|${st.head}`, h = cache.get(key);
  if (!h && failed.has(key)) { message(wl("inside_failed", {why: failed.get(key)})); q("retry").hidden = false; return done(t0); }
  if (!h) { request(d, st.kind, st.layer, st.head); message(wl("inside_loading")); return done(t0); }
  const i = Math.min(rowOf(st), h.Tq - 1);
  q("msg").hidden = true; q("main").hidden = false;
  render(h, st, i, keysAt(h, st)); titles(h, st, i);
  return done(t0);
}
function done(t0) { inst.updateMs = performance.now() - t0; inst.updates++; element.dataset.updates = String(inst.updates); }

// -- controls ------------------------------------------------------------------------------------------------
function stage(s) {
  ui.stage = s;
  element.querySelectorAll(".inside-stages button").forEach(b => b.classList.toggle("active", +b.dataset.stage === s));
  const main = q("main");
  for (let k = 1; k <= 5; k++) { main.classList.toggle(`upto-${k}`, s === k); }
  main.classList.toggle("all", s === 6);
  q("code").querySelectorAll("[data-line]").forEach(l => l.classList.toggle("on", s !== 6 && +l.dataset.line === s));
  update();
}
element.querySelectorAll(".inside-stages button").forEach(b => b.addEventListener("click", () => stage(+b.dataset.stage)));
document.addEventListener("lens-explain", () => update());  // the notes in the other version (assets/shell/explain.js)
q("fold").addEventListener("click", () => {
  ui.open = !ui.open; q("body").hidden = !ui.open;
  q("fold").textContent = ui.open ? "▾" : "▸"; q("fold").setAttribute("aria-expanded", String(ui.open));
  redrawLens();                           // the map's mark of the panel's row comes and goes with it
});
q("follow").addEventListener("click", () => { ui.pick = null; redrawLens(); });
q("retry").addEventListener("click", () => { failed.clear(); update(); });
function redrawLens() { const L = lens(); if (L && L.redraw) L.redraw(); else update(); }
// a row of the big map (lens.js calls this with the row's query position, in pieces)
function pick(row, asSheet = true) {      // asSheet false: a link's view whose teacher had no sheet open
  const L = lens(); if (!L || !L.state.traj) return;
  ui.pick = {ids: L.state.traj.ids.join(","), kind: L.state.kind === "encoder_self" ? "src" : "tgt", row};
  redrawLens();
  if (PHONE.matches && asSheet) sheet(true);
}
// A phone: a row tapped on the map opens the panel as a sheet over the page, its table's key, weight
// and contribution first (inside.css); ✕ or Escape closes it, the focus goes into it and back to the map
const PHONE = window.matchMedia("(max-width: 599px)"), box = element.querySelector(".inside");
function sheet(open) {
  if (box.classList.contains("inside-sheet") === open) return;
  box.classList.toggle("inside-sheet", open); q("close").hidden = !open; inst.sheet = open; const tip = document.querySelector("#attention [data-role=tip]"); if (tip) tip.hidden = true;
  if (open && !ui.open) q("fold").click();
  (open ? q("close") : document.querySelector("#attention .lens") || document.body).focus({preventScroll: !open});
}
q("close").addEventListener("click", () => sheet(false));
box.addEventListener("keydown", e => { if (e.key === "Escape" && inst.sheet) { e.stopPropagation(); sheet(false); } });
function row() {                          // the query row the panel shows (lens_draw.js marks it on the map), or -1
  const L = lens(); if (!L || !L.state.traj || L.state.doc !== L.state.traj) return -1;
  return ui.open && L.state.head !== "mean" ? rowOf(L.state) : -1;
}

// The toggle on the map: attention weight or contribution (placed in the view's controls; styled by lens.css)
const toggle = document.createElement("span");
toggle.className = "lens-measure"; toggle.setAttribute("role", "radiogroup");
toggle.dataset.tip = "inside.toggle_tip";  // its title, in the mode shown (assets/shell/explain.js apply)
for (const value of ["weight", "contribution"]) {
  const l = document.createElement("label"), r = document.createElement("input");
  r.type = "radio"; r.name = "lens-measure"; r.value = value; r.checked = value === "weight";
  r.addEventListener("change", () => setMeasure(value === "contribution"));
  const s = document.createElement("span"); s.dataset.text = `label.measure_${value}`; s.textContent = value;
  l.append(r, " ", s); toggle.appendChild(l);
}
const toggleNote = document.createElement("div");
toggleNote.className = "lens-measure-note"; toggleNote.hidden = true;
const sayToggle = () => {  // the toggle's note and title, and the panel's fixed labels (data-tip), in the mode shown
  const x = find("explain_box", "explain"); if (!x) return;
  toggleNote.textContent = x.t("inside.measure_note"); toggle.title = x.t("inside.toggle_tip"); x.apply(element); x.apply(toggle);
};
sayToggle();
document.addEventListener("lens-explain", sayToggle);  // attention_lens/shell/texts/en.toml "inside.measure_note", in the mode shown
function placeToggle() {
  if (toggle.isConnected) return true;
  const box = document.querySelector("#attention .lens-controls");
  if (!box) return false;
  box.appendChild(toggle); box.after(toggleNote);
  return true;
}
function setMeasure(on) {
  ui.measure = on; toggleNote.hidden = !on; sayToggle();
  toggle.querySelectorAll("input").forEach(r => { r.checked = r.value === (on ? "contribution" : "weight"); });
  const L = lens();
  if (L && L.contribution) L.contribution.on = on;
  if (L) update();                        // asks for the norms if this trajectory has none yet
  redrawLens();
}
inst.setMeasure = setMeasure; inst.stage = stage; inst.pick = pick; inst.closeSheet = () => sheet(false);
inst.ready = () => pending.size === 0;
inst.update = update; inst.queryRow = row;  // for the Translate view (assets/shell/lens.js, lens_draw.js)
home.inside = inst;  // where every other script finds this view (docs/design.md)
if (!placeToggle()) { const t = setInterval(() => { if (placeToggle()) clearInterval(t); }, 200); setTimeout(() => clearInterval(t), 30000); }
update();
watch("value", received);

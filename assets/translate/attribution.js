// attention-lens: ALTI+ and saliency in the Translate view. Two more choices in the map's colour toggle (made by
// assets/translate/inside.js: attention weight · contribution ‖w·v·W_O‖ · ALTI+ · saliency); with one of them on, the
// source pieces (a row of chips over the target's) and the target pieces are coloured by how much of the piece
// being predicted at the current step comes from each, and the big map shows the measure of every step so far:
// rows are steps, columns the source pieces then the target pieces.
// Runs as the js_on_load of a hidden gr.HTML (#attribution): `element`, `props`, `trigger`, `watch` are given.
//
// One payload (attention_lens/translate/attribution_payload.py) holds one method's rows for every position of the trajectory, so
// stepping only redraws here (lens.js calls #attribution's .attribution.update after each draw): no request. The
// first use of a method for a trajectory asks the server once (trigger("click") -> attention_lens/translate/attribution.py
// attribution_at); the answers are kept per trajectory and method, and all of them go with a new Start, a new
// model (the view empties) or a page reload. Tokens are set with textContent only.
const num = (x, d) => (find("explain_box", "explain")?.num(x, d) ?? x.toFixed(d));  // 0.741 / 0,741 (assets/shell/explain.js)
const METHODS = {alti: "ALTI+", saliency: "saliency"};  // shown: M(method), attention_lens/texts [label]
const NOTE = () => (find("explain_box", "explain")?.t("attribution.note") ?? "");  // attention_lens/shell/texts/en.toml, plain or not
const T = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k), M = (m) => T(`method_${m}`);
const KEEP = 12;                          // payloads kept: trajectories × methods
const RETRY_MS = 30000;                   // a request with no answer by then may be sent again
const BG = "#f3f4f6", CHIP = [255, 133, 27];  // cells not shown; the chips' colour (alpha = share / row's largest)
const MAP_H = 160;                        // the map's rows take at most this height (px)
const cache = new Map(), pending = new Map(), failed = new Map();  // key `${seq}|${method}` -> payload / time / why
const ui = {method: null, greedy: undefined};  // method: null = off (the view's own weight / contribution)
const inst = {requests: 0, updates: 0, updateMs: 0, cache, pending, ui, shown: null};  // on #attribution (below)
const lens = () => find("attention", "lens");  // the attention view (assets/shell/lens.js), on its element
const part = (sel) => document.querySelector(`#attention ${sel}`);

// -- decoding the payload ----------------------------------------------------------------------------------
function floats(d) {                      // {shape, b64[, packed: "tril"]}: uint16 of value * 65535 -> Float32Array
  const bin = atob(d.b64), n = bin.length >> 1, u = new Float32Array(n);
  for (let i = 0; i < n; i++) u[i] = (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) / 65535;
  if (d.packed !== "tril") return u;
  const T = d.shape[d.shape.length - 1], out = new Float32Array(T * T);  // (T, T): row t's first t+1 values
  for (let t = 0, k = 0; t < T; t++) for (let j = 0; j <= t; j++) out[t * T + j] = u[k++];
  return out;
}
function load(p) {                        // -> {method, title, ids, S, T, src (T*S), tgt (T*T)}
  const [T, S] = p.source_rows.shape;
  return {method: p.method, title: p.title, ids: p.ids.join(","), S, T, src: floats(p.source_rows),
          tgt: floats(p.target_rows), ms: p.ms};
}

// -- the parts this adds to the Translate view (made once, placed when the view is there) ---------------------
const radios = {};
let bigWidth = 0;                         // the width of the view's big map (a ResizeObserver keeps it)
const div = () => document.createElement("div");
const caption = div(), srcRow = div(), note = div();
caption.className = "attr-caption"; srcRow.className = "attr-source"; note.className = "attr-note";
note.textContent = NOTE(); note.hidden = true;
document.addEventListener("lens-explain", () => {  // the note and the labels' tooltips follow "Explain"
  note.textContent = NOTE(); for (const r of Object.values(radios)) r.parentElement.title = NOTE(); retry.textContent = T("try_again"); });
const map = document.createElement("div");
map.className = "attr-map";
const mapTitle = document.createElement("div"), mapCanvas = document.createElement("canvas");
mapTitle.className = "attr-map-title"; map.append(mapTitle, mapCanvas);
const retry = document.createElement("button");
retry.type = "button"; retry.className = "attr-retry"; retry.dataset.text = "label.try_again"; retry.textContent = "Try again";
retry.addEventListener("click", () => { failed.clear(); update(); });
function place() {                        // into #attention, beside the toggle inside.js made; false until both exist
  const toggle = part(".lens-measure"), box = part(".lens-controls"), target = part("[data-role=target]"),
        big = part("[data-role=big]");
  if (!toggle || !box || !target || !big) return false;
  if (!radios.alti) {
    for (const [value, text] of Object.entries(METHODS)) {
      const l = document.createElement("label"), r = document.createElement("input");
      r.type = "radio"; r.name = "lens-measure"; r.value = value;
      r.addEventListener("change", () => { if (r.checked) setMethod(value); });
      const s = document.createElement("span"); s.dataset.text = `label.method_${value}`; s.textContent = text; l.title = NOTE(); l.append(r, " ", s); toggle.appendChild(l); radios[value] = r;
    }
    toggle.addEventListener("change", (e) => { if (!(e.target.value in METHODS)) setMethod(null); }); find("explain_box", "explain")?.apply(toggle);
  }
  if (!note.isConnected) box.after(note);
  if (!srcRow.isConnected) target.before(caption, srcRow);
  if (!map.isConnected) {
    big.prepend(map);
    new ResizeObserver((es) => {            // its width, read here: reading it while drawing would force a layout
      const w = Math.round(es[0].contentRect.width);
      if (w !== bigWidth) { bigWidth = w; if (ui.method && w > 0) update(); }
    }).observe(big);
  }
  return true;
}

// -- what the current step shows ------------------------------------------------------------------------------
function doc() {                          // the trajectory shown, or null
  const L = lens(), st = L && L.state;
  return st && st.traj && st.doc === st.traj ? st.traj : null;
}
function keyOf(d, method) { return `${d.seq}|${method}`; }
function request(d, method) {
  const key = keyOf(d, method), now = performance.now();
  if (cache.has(key) || failed.has(key) || (pending.has(key) && now - pending.get(key) < RETRY_MS)) return;
  pending.set(key, now); inst.requests++;
  const position = JSON.stringify({step: d.n - 1, ids: d.ids, forced: d.forced.map(Number)});
  trigger("click", {method, position, key});
}
function received() {
  const p = props.value;
  if (!p || typeof p.key !== "string" || !pending.has(p.key)) return;  // an answer nobody waits for any more
  pending.delete(p.key);
  if (p.error) failed.set(p.key, String(p.error));
  else {
    cache.set(p.key, load(p));
    while (cache.size > KEEP) cache.delete(cache.keys().next().value);
  }
  update();
}
// Columns of the frame: pieces, or words (the view's "merge pieces into words": a word's share is the sum of its
// pieces'); rows are always the steps (pieces)
function columns(d, t, words) {
  const spans = (side, n) => words && d.spans
    ? d.spans[side].filter(([a]) => a < n).map(([a, b]) => [a, Math.min(b, n)])
    : [...Array(n).keys()].map(i => [i, i + 1]);
  const special = new Set(d.p.word_specials || d.p.specials || []);  // a word of its own, named as it is
  const label = (pieces, [a, b]) => !words || (b - a === 1 && special.has(pieces[a])) ? pieces.slice(a, b).join("")
    : (pieces.slice(a, b).join("").replace(/\u2581/g, "") || "\u2581");  // as the view labels its word chips
  const ss = spans("source", d.S), ts = spans("target", d.n);
  return {ss, ts, src: ss.map(s => label(d.source, s)), tgt: ts.map(s => label(d.pieces, s)),
          words: !!(words && d.spans)};
}
function shares(a, row, cols) {           // one row's shares over the frame's columns: {src, tgt}
  const sum = (data, off, [x, y]) => { let s = 0; for (let j = x; j < y; j++) s += data[off + j]; return s; };
  return {src: cols.ss.map(s => sum(a.src, row * a.S, s)),
          tgt: cols.ts.map(([x, y]) => sum(a.tgt, row * a.T, [x, Math.min(y, row + 1)]))};
}
function rowLabel(d, i, t) {              // "query → what it predicts", as the view labels its rows
  const end = `(${T(d.pieces[t] === "</s>" ? "finished" : "stopped")})`;
  const next = i < t ? d.pieces[i + 1] : (d.done[t] ? end : d.greedy[t]);
  return `${d.pieces[i]} → ${next}`;
}

// -- drawing ---------------------------------------------------------------------------------------------------
function colourChips(chips, values, max) {
  chips.forEach((c, i) => {
    const v = values[i] || 0, a = max > 0 ? v / max : 0;
    c.style.backgroundColor = `rgba(${CHIP.join(", ")}, ${a.toFixed(3)})`;
    if (!("title0" in c.dataset)) c.dataset.title0 = c.title;
    c.dataset.share = v.toFixed(4); c.title = T("attr_share", {pct: num(100 * v, 1)});
  });
}
function plainChips() {                   // the view's own look again
  for (const c of document.querySelectorAll("#attention [data-role=target] .lens-tok")) {
    if ("title0" in c.dataset) { c.title = c.dataset.title0; delete c.dataset.title0; }
    c.style.backgroundColor = ""; delete c.dataset.share;
  }
}
function drawChips(d, a, cols, t) {
  const sh = shares(a, t, cols), max = Math.max(...sh.src, ...sh.tgt);
  if (srcRow.dataset.key !== `${d.seq}|${cols.src.length}`) {
    srcRow.textContent = ""; srcRow.dataset.key = `${d.seq}|${cols.src.length}`;
    const head = document.createElement("span"); head.className = "attr-head"; head.dataset.text = "label.attr_source"; head.textContent = T("attr_source");
    srcRow.appendChild(head);
    for (const s of cols.src) {
      const c = document.createElement("span"); c.className = "lens-tok"; c.textContent = s; srcRow.appendChild(c);
    }
  }
  colourChips([...srcRow.querySelectorAll(".lens-tok")], sh.src, max);
  colourChips([...document.querySelectorAll("#attention [data-role=target] .lens-tok")], sh.tgt, max);
  const total = sh.src.reduce((x, y) => x + y, 0);
  setText(caption, T("attr_caption", {title: T(`mtitle_${a.method}`), t, row: rowLabel(d, t, t), src: num(100 * total, 0),
                                      tgt: num(100 - 100 * total, 0)}));
  return sh;
}
function setText(el, s) { if (el.textContent !== s) el.textContent = s; }
const LUT = (() => {                      // Viridis, as the other maps draw: 256 entries of r, g, b
  const stops = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b",
                 "#fde725"]
    .map(h => [1, 3, 5].map(i => parseInt(h.slice(i, i + 2), 16)));
  const lut = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const y = i / 255 * (stops.length - 1), k = Math.min(Math.floor(y), stops.length - 2), f = y - k;
    for (let c = 0; c < 3; c++) lut[3 * i + c] = Math.round(stops[k][c] * (1 - f) + stops[k + 1][c] * f);
  }
  return lut;
})();
// Every row of the trajectory over the frame's columns, once per trajectory, method and pieces/words: z (T, C) with
// NaN where a target column is not there yet for that row, and upto[i], the largest value of rows 0..i
let prep = null;
function prepare(d, a, cols) {
  const key = `${d.seq}|${a.method}|${cols.src.length}|${cols.tgt.length}`;
  if (prep && prep.key === key) return prep;
  const S = cols.src.length, C = S + cols.tgt.length, z = new Float32Array(d.n * C), upto = new Float32Array(d.n);
  let max = 0;
  for (let i = 0; i < d.n; i++) {
    const sh = shares(a, i, cols);
    for (let j = 0; j < C; j++) {
      const v = j < S ? sh.src[j] : (cols.ts[j - S][0] <= i ? sh.tgt[j - S] : NaN);
      z[i * C + j] = v;
      if (v > max) max = v;
    }
    upto[i] = max;
  }
  prep = {key, S, C, z, upto, labels: cols.src.concat(cols.tgt), image: null};
  return prep;
}
function image(P, T, zmax) {              // one pixel per cell of every row on the scale 0..zmax (made when it changes)
  if (P.image && P.image.zmax === zmax) return P.image.canvas;
  const c = document.createElement("canvas"), img = new ImageData(Math.max(1, P.C), Math.max(1, T)), px = img.data;
  c.width = img.width; c.height = img.height;
  for (let k = 0; k < T * P.C; k++) {
    const v = P.z[k], o = 4 * k;
    if (Number.isNaN(v)) { px[o] = 243; px[o + 1] = 244; px[o + 2] = 246; px[o + 3] = 255; continue; }
    const l = 3 * Math.min(255, Math.round(v / zmax * 255));
    px[o] = LUT[l]; px[o + 1] = LUT[l + 1]; px[o + 2] = LUT[l + 2]; px[o + 3] = 255;
  }
  c.getContext("2d").putImageData(img, 0, 0);
  P.image = {zmax, canvas: c};
  return c;
}
function geometry(d, P, rows) {           // the map's layout, made once per trajectory, method and width
  const width = Math.max(200, bigWidth);
  if (P.geo && P.geo.width === width) return P.geo;
  const g0 = mapCanvas.getContext("2d");
  g0.font = "11px ui-monospace, monospace";
  const tw = (xs) => Math.ceil(Math.max(0, ...xs.map(s => g0.measureText(s).width)));
  const gutter = Math.min(200, tw(rows) + 10), top = 16;
  const cw = Math.max(3, Math.min(26, Math.floor((width - gutter - 4) / Math.max(1, P.C))));
  const ch = Math.max(8, Math.min(22, cw, Math.floor(MAP_H / Math.max(1, d.n))));
  const bottom = Math.min(110, Math.ceil(tw(P.labels) * 0.87) + 14);
  P.geo = {width, gutter, top, cw, ch, S: P.S, C: P.C, W: gutter + P.C * cw + 4, H: top + d.n * ch + bottom};
  return P.geo;
}
function drawMap(d, a, cols, t) {
  const P = prepare(d, a, cols), rows = [...Array(d.n).keys()].map(i => rowLabel(d, i, Math.max(i, t)));
  const G = geometry(d, P, rows), {gutter, top, cw, ch, S, C, W, H} = G, zmax = Math.max(1e-6, P.upto[t]);
  const dpr = window.devicePixelRatio || 1;
  if (mapCanvas.width !== Math.round(W * dpr) || mapCanvas.height !== Math.round(H * dpr)) {
    mapCanvas.width = Math.round(W * dpr); mapCanvas.height = Math.round(H * dpr);
    mapCanvas.style.width = `${W}px`; mapCanvas.style.height = `${H}px`;
  }
  const g = mapCanvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0); g.clearRect(0, 0, W, H); g.imageSmoothingEnabled = false;
  g.fillStyle = BG; g.fillRect(gutter, top, C * cw, d.n * ch);
  g.drawImage(image(P, d.n, zmax), 0, 0, C, t + 1, gutter, top, C * cw, (t + 1) * ch);  // rows 0..t
  g.strokeStyle = "#fff"; g.lineWidth = 2;   // the source block | the target block
  g.beginPath(); g.moveTo(gutter + S * cw, top - 12); g.lineTo(gutter + S * cw, top + d.n * ch); g.stroke();
  g.strokeStyle = "#ff4136"; g.strokeRect(gutter + 1, top + t * ch + 1, C * cw - 2, ch - 2);  // the current step
  g.fillStyle = "#555"; g.font = "11px sans-serif"; g.textBaseline = "middle"; g.textAlign = "left";
  g.fillText(T(cols.words ? "attr_source_words" : "attr_source_pieces"), gutter, top / 2);
  g.fillText(T("arch_target_in"), gutter + S * cw + 4, top / 2);
  g.font = "11px ui-monospace, monospace"; g.fillStyle = "#333"; g.textAlign = "right";
  const stepY = Math.ceil(12 / ch), stepX = Math.ceil(11 / cw);
  for (let i = t; i >= 0; i -= stepY) g.fillText(rows[i], gutter - 4, top + i * ch + ch / 2);  // the step's own
  for (let j = 0; j < C; j += stepX) {
    if (j >= S && cols.ts[j - S][0] > t) continue;  // no target piece before its step
    g.save(); g.translate(gutter + (j + 0.5) * cw, top + d.n * ch + 4); g.rotate(-Math.PI / 3);
    g.fillText(P.labels[j], 0, 0); g.restore();
  }
  setText(mapTitle, T("attr_map_title", {title: T(`mtitle_${a.method}`), max: num(P.upto[t], 3)}));
  inst.shown = {method: a.method, step: t, rows: rows.slice(0, t + 1), cols: P.labels, zmax: P.upto[t], P, geometry: G};
}
function cellAt(v, i, j) {                // the map's value at row i, column j (null where nothing is shown)
  if (i < 0 || i > v.step || j < 0 || j >= v.P.C) return null;
  const z = v.P.z[i * v.P.C + j];
  return Number.isNaN(z) ? null : z;
}
mapCanvas.addEventListener("mousemove", (e) => {  // a cell's row, column and share, as a tooltip
  const v = inst.shown; if (!v) return;
  const {gutter, top, cw, ch, S} = v.geometry;
  const i = Math.floor((e.offsetY - top) / ch), j = Math.floor((e.offsetX - gutter) / cw), z = cellAt(v, i, j);
  const where = T(j < S ? "attr_where_source" : "attr_where_target");
  mapCanvas.title = z === null ? "" : T("attr_tip", {row: v.rows[i], col: v.cols[j], where, z: num(z, 3)});
});

// -- the update lens.js calls after every draw -----------------------------------------------------------------
function setOn(on) {
  const root = part(".lens"), was = !!(root && root.classList.contains("attr-on"));
  if (root) root.classList.toggle("attr-on", on);
  caption.hidden = srcRow.hidden = note.hidden = !on;  // the note: under the toggle while a measure of it is on
  if (!on && was) { plainChips(); retry.remove(); inst.shown = null; }
}
function message(s, canRetry) {
  setText(caption, s); srcRow.textContent = ""; srcRow.dataset.key = ""; plainChips();
  setText(mapTitle, s); mapCanvas.width = mapCanvas.height = 0; mapCanvas.style.height = "0px"; inst.shown = null;
  if (canRetry) caption.appendChild(retry);
}
function forget() { cache.clear(); pending.clear(); failed.clear(); }
function update() {
  const t0 = performance.now(), L = lens();
  if (!place() || !L) return;
  if (L.state.greedy !== ui.greedy) { ui.greedy = L.state.greedy; forget(); }  // a new Start, another model
  const method = ui.method;
  setOn(!!method);
  if (!method) return done(t0);
  const d = doc();
  if (!d) { message(T("attr_press", {method: M(method)})); return done(t0); }
  const key = keyOf(d, method), a = cache.get(key);
  if (!a && failed.has(key)) {
    message(T("attr_failed", {method: M(method), why: failed.get(key)}), true); return done(t0);
  }
  if (!a) {
    request(d, method);
    message(T("attr_computing", {method: M(method)})); return done(t0);
  }
  if (a.ids !== d.ids.join(",")) { message(T("attr_mismatch", {method: M(method)})); return done(t0); }
  const t = L.state.t, cols = columns(d, t, !!L.state.words);
  const sh = drawChips(d, a, cols, t);
  drawMap(d, a, cols, t);
  inst.shown.chips = sh;
  return done(t0);
}
function done(t0) {
  inst.updateMs = performance.now() - t0; inst.updates++; element.dataset.updates = String(inst.updates);
}
function setMethod(method) {
  ui.method = method in METHODS ? method : null;
  for (const [value, r] of Object.entries(radios)) r.checked = value === ui.method;
  const I = find("inside", "inside");  // Inside this head (assets/translate/inside.js), on its element
  if (ui.method && I && I.ui.measure) I.setMeasure(false);
  if (ui.method) radios[ui.method].checked = true;  // inside.js's setMeasure checks "attention weight"
  update();
}
inst.setMethod = setMethod;
inst.ready = () => pending.size === 0;
inst.view = () => {                      // for tests: what the map and the chips show now (z: rows 0..step)
  const v = inst.shown; if (!v) return null;
  const z = [...Array(v.step + 1).keys()].map(i => [...Array(v.P.C).keys()].map(j => cellAt(v, i, j)));
  return {method: v.method, step: v.step, rows: v.rows, cols: v.cols, zmax: v.zmax, z, chips: v.chips};
};
inst.update = update;                    // for the Translate view (assets/shell/lens.js)
home.attribution = inst;  // where every other script finds this view (docs/design.md)
if (!place()) {                           // the view and inside.js's toggle may come after this script
  const k = setInterval(() => { if (place()) { clearInterval(k); update(); } }, 200);
  setTimeout(() => clearInterval(k), 30000);
}
update();
watch("value", received);

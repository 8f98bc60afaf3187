// attention-lens: the attention view, drawn in the browser from the compact payload in props.value
// (ui/payload.py writes it). Runs as the js_on_load of a gr.HTML component: `element`, `props`,
// `trigger`, `watch` are given.
//
// A trajectory payload (v2: Start, forcing a piece, a reference translation) holds every step of the sentence,
// so Step / Back / Run / Reset, the step slider, the arrow keys and Play move through it here with no
// request to the server; a reference is left with its own button. A one-step payload (v1: other tabs) is drawn
// as it is.
// The maps are drawn on two canvases (the big map, the layers × heads grid) from the decoded weights;
// labels, chips and the top-k list are plain DOM, updated only where a step changes them.
// Every token is set with textContent, or escaped for Plotly (loaded only to export a figure):
// user text is never HTML.
const KINDS = ["encoder_self", "decoder_self", "cross"];
const TITLES = {encoder_self: "Encoder self-attention", decoder_self: "Decoder self-attention (masked)",
                cross: "Cross-attention"};
const q = (role) => element.querySelector(`[data-role="${role}"]`);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const BG = [243, 244, 246];  // cells not revealed yet
const RED = "#ff4136";
const MAP_H = 220;                        // the big map's rows take at most this height (px): it fits 1280x800
const NOKEY = "#c8c8c8";                  // a row with no key left once <s>/</s> are hidden
const NOKEY_TIP = "no keys: it could attend only to <s>/</s>, which are hidden";

// Viridis as Plotly defines it, as a 256-entry lookup table
const LUT = (() => {
  const stops = ["#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
                 "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725"]
    .map(h => [1, 3, 5].map(i => parseInt(h.slice(i, i + 2), 16)));
  const lut = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const x = i / 255 * (stops.length - 1), a = Math.min(Math.floor(x), stops.length - 2), f = x - a;
    for (let c = 0; c < 3; c++) lut[3 * i + c] = Math.round(stops[a][c] * (1 - f) + stops[a + 1][c] * f);
  }
  return lut;
})();

// One instance per gr.HTML view; the main one (#attention) is also window.__lens for tests/benchmarks.
let root = element;
while (root && (!root.id || root.id.startsWith("html-"))) root = root.parentElement;
const rootId = root ? root.id : "attention";
const MAIN = rootId === "attention";
const st = {kind: "cross", layer: 0, head: 0, hide: false, words: false, k: 8, speed: 500,
            doc: null,      // what is drawn: a decoded payload (a trajectory, or one step)
            traj: null,     // the trajectory the step controls move through
            greedy: null,   // the trajectory Start gave: Reset returns to it after forcing
            t: 0,           // the step shown in `traj`
            back: null,     // {traj, t} a reference was opened from: "Leave the reference" goes back there
            timer: null};   // Play
const inst = {renders: 0, state: st, drawMs: 0};
window.__lensViews = window.__lensViews || {};
window.__lensViews[rootId] = inst;
if (MAIN) window.__lens = inst;
inst.select = (kind, layer, head) => {     // open one head (the head atlas calls this); drawn now or at the next payload
  if (KINDS.includes(kind)) st.kind = kind;
  st.layer = layer; st.head = head; cv.big = null; draw();
};
inst.reveal = () => {                     // bring the big map into sight once the view is shown (after a tab switch)
  let tries = 60;
  const look = () => {
    if (q("big").clientWidth > 0) q("big").scrollIntoView({block: "nearest"});
    else if (--tries > 0) requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
};
// What the maps show: attention weights, or each key's contribution ‖α_ij v_j W_Oʰ‖ = α_ij ‖v_j W_Oʰ‖ with each
// row normalised to sum to 1 (the inside panel, assets/inside.js, sets inst.contribution = {on, ids, norms:
// {kind: {shape: [L, H, Tk], data}}} from its payload: ‖v_j W_Oʰ‖ of every head of the trajectory `ids`)
function normsFor(kind) {
  const c = inst.contribution, d = st.doc;
  return c && c.on && d && d.traj && c.norms[kind] && c.ids === d.ids.join(",") ? c.norms[kind] : null;
}
function contributionRow(z, dst, w, src, nm, nb, C, scale) {  // z[dst..] += scale * α_j ‖v_j W_O‖ / Σ
  let s = 0;
  for (let j = 0; j < C; j++) s += w[src + j] * nm[nb + j];
  if (s > 0) for (let j = 0; j < C; j++) z[dst + j] += w[src + j] * nm[nb + j] / s * scale;
}

// -- decoding the payload --------------------------------------------------------------------------
function bytes(b64) {
  const bin = atob(b64), n = bin.length >> 1, out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8);
  return out;
}
function floats(d) {                              // {shape, b64[, packed: "tril"]} -> {shape, data: Float32Array}
  const u = bytes(d.b64), size = d.shape.reduce((a, b) => a * b, 1), out = new Float32Array(size);
  if (d.packed === "tril") {                      // (..., T, T): row t's first t+1 weights, row after row
    const T = d.shape[d.shape.length - 1];
    for (let m = 0, k = 0; m < size / (T * T); m++)
      for (let t = 0; t < T; t++) for (let j = 0; j <= t; j++) out[m * T * T + t * T + j] = u[k++] / 65535;
  } else for (let i = 0; i < size; i++) out[i] = u[i] / 65535;
  return {shape: d.shape, data: out};
}
function load(p) {
  const doc = {p, seq: p.seq, maps: {}, source: p.source, S: p.source.length, mode: p.mode,
               specials: new Set(p.specials || []), spans: null,
               off: new Set((p.ablated || []).map(a => a.join("|")))};  // heads switched off (Head ablation)
  for (const k of KINDS) doc.maps[k] = floats(p.maps[k]);
  if (p.steps) {
    const s = p.steps;
    Object.assign(doc, {traj: true, n: s.n, ids: s.ids, pieces: s.pieces, forced: s.forced.map(Boolean),
      differs: (s.differs || []).map(Boolean),
      done: s.done.map(Boolean), greedy: s.greedy.map(i => s.vocab[i]), vocab: s.vocab, spans: s.spans,
      topk: {k: s.topk.k, ids: bytes(s.topk.ids.b64), p: floats(s.topk.p).data},
      texts: s.texts || null, text: s.text, ends: s.ends});
  } else {
    Object.assign(doc, {traj: false, n: p.target.length, pieces: p.target, forced: p.forced, cursor: p.cursor,
      differs: (p.differs || []).map(Boolean),
      next: p.next, doneNow: p.done, merged: !!p.words, rowLabels: p.rows || null, spans: p.words ? null : p.spans,
      step: p.step});
  }
  return doc;
}

// -- what is visible at a step ---------------------------------------------------------------------
function wordLabels(pieces, spans, specials) {
  return spans.map(([a, b]) => b - a === 1 && specials.has(pieces[a]) ? pieces[a]
    : (pieces.slice(a, b).join("").replace(/\u2581/g, "") || "\u2581"));
}
// The last row once decoding has stopped: the model still reads that piece, but its prediction is not used
const stopped = (x) => x === "</s>" ? "(finished)" : "(stopped)";
function frame() {
  const d = st.doc, traj = d.traj, t = st.t;
  const n = traj ? t + 1 : d.n, cursor = traj ? t : d.cursor, tp = d.pieces.slice(0, n);
  const next = traj ? (d.done[t] ? null : d.greedy[t]) : d.next, done = traj ? d.done[t] : d.doneNow;
  const forced = traj ? d.forced.slice(0, n) : d.forced, differs = traj ? d.differs.slice(0, n) : d.differs;
  const f = {n, cursor, next, done, forced, tp, words: !!(st.words && d.spans)};
  if (f.words) {
    const ws = new Set(d.p.word_specials || d.p.specials);
    const ss = d.spans.source, ts = d.spans.target.filter(([a]) => a < n).map(([a, b]) => [a, Math.min(b, n)]);
    f.ss = ss; f.ts = ts;
    f.src = wordLabels(d.source, ss, ws); f.tgt = wordLabels(tp, ts, ws); f.rows = f.tgt;
    f.srcSpecial = ss.map(([a, b]) => b - a === 1 && d.specials.has(d.source[a]));
    f.tgtSpecial = ts.map(([a, b]) => b - a === 1 && d.specials.has(tp[a]));
    f.row = ts.findIndex(([a, b]) => a <= cursor && cursor < b);
    f.chipForced = ts.map(([a, b]) => forced.slice(a, b).some(Boolean));
    f.chipDiffers = ts.map(([a, b]) => differs.slice(a, b).some(Boolean));
  } else {
    f.src = d.source; f.tgt = tp; f.row = cursor; f.chipForced = forced; f.chipDiffers = differs;
    f.srcSpecial = d.source.map(x => d.specials.has(x)); f.tgtSpecial = tp.map(x => d.specials.has(x));
    f.rows = d.rowLabels || tp.map((x, i) => `${x} → ${i + 1 < n ? tp[i + 1] : (next ?? stopped(x))}`);
  }
  return f;
}
// Rows and key columns of one kind at frame f, after merging and hiding (labels only: no weights)
function axesOf(kind, f) {
  const rows = kind === "encoder_self" ? f.src : f.rows;
  const cols = kind === "decoder_self" ? f.tgt : f.src, special = kind === "decoder_self" ? f.tgtSpecial : f.srcSpecial;
  const keep = [...cols.keys()].filter(j => !(st.hide && special[j]));
  return {rows, cols: keep.map(j => cols[j]), keep};
}
// One map (layer l, head h or "mean") at frame f: {R, C, z (R*C), rows, cols}
function panel(kind, l, h, f, ax) {
  const d = st.doc, m = d.maps[kind], [, H, Tq, Tk] = m.shape;
  const R0 = kind === "encoder_self" ? d.S : f.n, C0 = kind === "decoder_self" ? f.n : d.S;
  let z = new Float32Array(R0 * C0);
  const heads = h === "mean" ? [...Array(H).keys()] : [h], w = 1 / heads.length;
  const nm = normsFor(kind);
  for (const hh of heads) {
    const base = (l * H + hh) * Tq * Tk, nb = nm ? (l * H + hh) * nm.shape[2] : 0;
    for (let i = 0; i < R0; i++) {
      const src = base + i * Tk, dst = i * C0;
      if (nm) contributionRow(z, dst, m.data, src, nm.data, nb, C0, w);
      else for (let j = 0; j < C0; j++) z[dst + j] += m.data[src + j] * w;
    }
  }
  let R = R0, C = C0;
  if (f.words) {                                   // SUM over a word's key pieces, MEAN over its query pieces
    const qs = kind === "encoder_self" ? f.ss : f.ts, ks = kind === "decoder_self" ? f.ts : f.ss;
    const out = new Float32Array(qs.length * ks.length);
    qs.forEach(([qa, qb], i) => ks.forEach(([ka, kb], j) => {
      let s = 0;
      for (let r = qa; r < qb; r++) for (let c = ka; c < kb; c++) s += z[r * C0 + c];
      out[i * ks.length + j] = s / (qb - qa);
    }));
    z = out; R = qs.length; C = ks.length;
  }
  let nokeys = null;
  if (ax.keep.length !== C) {                      // hide <s>/</s> key columns, renormalise each row
    const K = ax.keep.length, out = new Float32Array(R * K);
    nokeys = new Uint8Array(R);
    for (let i = 0; i < R; i++) {
      let s = 0;
      for (let j = 0; j < K; j++) s += (out[i * K + j] = z[i * C + ax.keep[j]]);
      if (!ax.keep.some(j => sees(kind, f, i, j))) nokeys[i] = 1;  // only hidden keys: nothing to renormalise
      else if (s > 0) for (let j = 0; j < K; j++) out[i * K + j] /= s;
    }
    z = out; C = K;
  }
  return {R, C, z, rows: ax.rows, cols: ax.cols, nokeys};
}
// May query row i attend to key column j at all? Decoder self-attention is masked: a piece (word) sees itself
// and what came before it.
function sees(kind, f, i, j) {
  if (kind !== "decoder_self") return true;
  return f.words ? f.ts[j][0] < f.ts[i][1] : j <= i;
}
// Rows x columns reserved for a kind: the size at the last step, so the layout never moves while stepping
function reserved(kind) {
  const d = st.doc, key = `${kind}|${st.words}|${st.hide}`;
  d.reserved = d.reserved || {};
  if (!d.reserved[key]) {
    const t = st.t;
    if (d.traj) st.t = d.n - 1;
    const f = frame(), ax = axesOf(kind, f);
    st.t = t;
    d.reserved[key] = {R: ax.rows.length, C: ax.cols.length};
  }
  return d.reserved[key];
}

// -- the maps at a step ---------------------------------------------------------------------------------
// A panel: {R, C, stride, z, rows, cols}: row i, column j is z[i * stride + j]. For a trajectory in pieces,
// every map is computed once over all T positions (`whole`) and a step only narrows the view to rows 0..t
// (and key columns 0..t of decoder self-attention): row t never changes once computed (KV cache).
// Merged into words (a word's last row changes while its pieces arrive) or for a one-step payload,
// the maps are computed for the frame shown.
function wholeMaps(kind) {
  const d = st.doc, key = `${kind}|${st.hide}|${normsFor(kind) ? "c" : "w"}`;
  d.whole = d.whole || {};
  if (!d.whole[key]) {
    const t = st.t; st.t = d.n - 1;
    const f = frame(), ax = axesOf(kind, f), [L, H] = d.maps[kind].shape;
    st.t = t;
    const panels = [], means = [];
    for (let l = 0; l < L; l++) { panels.push([]); for (let h = 0; h < H; h++) panels[l].push(withMax(panel(kind, l, h, f, ax))); }
    d.whole[key] = {panels, means, f, ax, L, H};
  }
  return d.whole[key];
}
function withMax(p) {                     // prefix maxima of rows: the largest weight in rows 0..i
  p.stride = p.C; p.upto = new Float32Array(p.R);
  let m = 0;
  for (let i = 0; i < p.R; i++) { for (let j = 0; j < p.C; j++) if (p.z[i * p.C + j] > m) m = p.z[i * p.C + j]; p.upto[i] = m; }
  return p;
}
function mapsAt(kind, f) {                // {L, H, R, C, res, panel(l, h), key}: the maps shown at frame f
  const d = st.doc, ax = axesOf(kind, f), [L, H] = d.maps[kind].shape;
  const R = ax.rows.length, C = ax.cols.length;
  if (d.traj && !f.words) {
    const w = wholeMaps(kind), res = {R: w.panels[0][0].R, C: w.panels[0][0].C};
    const narrow = (p) => ({R, C, stride: p.stride, z: p.z, rows: ax.rows, cols: ax.cols, zmax: R ? p.upto[R - 1] : 0,
                            nokeys: p.nokeys});
    return {L, H, R, C, res, key: `${d.seq}|${kind}|${st.hide}|${normsFor(kind) ? "c" : "w"}|whole`,
            panel: (l, h) => {
              if (h !== "mean") return narrow(w.panels[l][h]);
              if (!w.means[l]) w.means[l] = withMax(panel(kind, l, "mean", w.f, w.ax));
              return narrow(w.means[l]);
            }};
  }
  const cache = {}, res = d.traj ? reserved(kind) : {R, C};
  return {L, H, R, C, res, key: `${d.seq}|${kind}|${st.hide}|${normsFor(kind) ? "c" : "w"}|${f.words}|${st.t}`,
          panel: (l, h) => cache[`${l}|${h}`] || (cache[`${l}|${h}`] = Object.assign(panel(kind, l, h, f, ax), {stride: C}))};
}
function maxOf(p) {                       // the largest weight shown
  if (p.zmax !== undefined) return p.zmax;
  let m = 0;
  for (let i = 0; i < p.R; i++) for (let j = 0; j < p.C; j++) if (p.z[i * p.stride + j] > m) m = p.z[i * p.stride + j];
  return m;
}

// -- drawing: a 1-pixel-per-cell image per canvas, updated where the step changed it, scaled onto the canvas
const cv = {big: null, grid: null};       // the last geometry and panels drawn (hover, clicks, tests)
const scratch = {big: document.createElement("canvas"), grid: document.createElement("canvas")};
function cells(img, W, x0, y0, p, r0, r1, c0, c1, zmax) {  // rows r0..r1-1, columns c0..c1-1 of panel p
  const s = 255 / zmax, px = img.data, z = p.z, S = p.stride;
  for (let i = r0; i < r1; i++) {
    let o = ((y0 + i) * W + x0 + c0) * 4;
    for (let j = c0; j < c1; j++, o += 4) {
      const w = z[i * S + j] * s, v = (w >= 255 ? 255 : (w + 0.5) | 0) * 3;
      px[o] = LUT[v]; px[o + 1] = LUT[v + 1]; px[o + 2] = LUT[v + 2]; px[o + 3] = 255;
    }
  }
}
function blank(img, W, x0, y0, r0, r1, c0, c1) {  // back to "not revealed yet"
  const px = img.data;
  for (let i = r0; i < r1; i++) {
    let o = ((y0 + i) * W + x0 + c0) * 4;
    for (let j = c0; j < c1; j++, o += 4) { px[o] = BG[0]; px[o + 1] = BG[1]; px[o + 2] = BG[2]; px[o + 3] = 255; }
  }
}
// Bring canvas `which`'s image to show `items` ([x0, y0, panel]) with R x C cells visible, on the colour
// scale 0..zmax: everything when the maps or the scale changed, else only the rows and columns that
// appeared or went since the last step. Returns the scratch canvas holding it.
function refresh(which, W, Hh, items, R, C, zmax, key) {
  const c = scratch[which];
  if (!c.img || c.img.width !== Math.max(1, W) || c.img.height !== Math.max(1, Hh)) {
    c.img = new ImageData(Math.max(1, W), Math.max(1, Hh)); c.width = c.img.width; c.height = c.img.height; c.last = null;
  }
  const img = c.img, was = c.last;
  if (!was || was.key !== key || was.zmax !== zmax) {
    blank(img, W, 0, 0, 0, Hh, 0, W);
    for (const [x0, y0, p] of items) cells(img, W, x0, y0, p, 0, R, 0, C, zmax);
    inst.repaints = (inst.repaints || 0) + 1;
  } else {
    for (const [x0, y0, p] of items) {
      if (R > was.R) cells(img, W, x0, y0, p, was.R, R, 0, C, zmax);
      else if (R < was.R) blank(img, W, x0, y0, R, was.R, 0, was.C);
      const r = Math.min(R, was.R);
      if (C > was.C) cells(img, W, x0, y0, p, 0, r, was.C, C, zmax);
      else if (C < was.C) blank(img, W, x0, y0, 0, r, C, was.C);
    }
  }
  c.last = {key, R, C, zmax};
  c.getContext("2d").putImageData(img, 0, 0);
  return c;
}
function sizeCanvas(c, w, h) {
  const dpr = window.devicePixelRatio || 1, W = Math.max(1, Math.round(w * dpr)), H = Math.max(1, Math.round(h * dpr));
  if (c.width !== W || c.height !== H) { c.width = W; c.height = H; c.style.width = `${w}px`; c.style.height = `${h}px`; }
  const g = c.getContext("2d"); g.setTransform(dpr, 0, 0, dpr, 0, 0); g.imageSmoothingEnabled = false;
  return g;
}
const measurer = document.createElement("canvas").getContext("2d");
function textWidth(labels) {
  measurer.font = "11px ui-monospace, monospace";
  let w = 0; for (const s of labels) w = Math.max(w, measurer.measureText(String(s)).width);
  return Math.ceil(w);
}
function labelSet(box, n) {                // n reusable label spans in box
  while (box.children.length < n) box.appendChild(document.createElement("span"));
  while (box.children.length > n) box.lastChild.remove();
  return box.children;
}
function setText(el, s) { if (el.textContent !== s) el.textContent = s; }

// The big map: one canvas; row and column labels are spans laid out once per shape (not per step)
function layoutBig(kind, res) {
  const plot = q("plot"), width = plot.clientWidth || q("big").clientWidth;
  const key = [st.doc.seq, kind, st.words, st.hide, res.R, res.C, width].join("|");
  if (cv.big && cv.big.key === key) return cv.big;
  const full = reservedLabels(kind);
  const gutter = Math.min(240, textWidth(full.rows) + 10);
  const cw = Math.max(1, Math.min(40, Math.floor((width - gutter - 8) / Math.max(1, res.C))));
  const ch = Math.max(10, Math.min(26, cw, Math.floor(MAP_H / Math.max(1, res.R))));  // the map fits a laptop screen
  const bottom = Math.min(150, Math.ceil(textWidth(full.cols) * 0.87) + 16);
  plot.style.height = `${res.R * ch + bottom}px`;
  const canvas = q("canvas");
  canvas.style.left = `${gutter}px`;
  sizeCanvas(canvas, Math.max(1, res.C) * cw, res.R * ch);  // one cell wide at least: a "no keys" row shows
  const ys = labelSet(q("ylabels"), res.R), xs = labelSet(q("xlabels"), res.C), step = Math.ceil(11 / cw);
  const stepY = Math.ceil(12 / ch);       // rows lower than a label: every other label
  for (let i = 0; i < res.R; i++) Object.assign(ys[i].style, {left: "0px", width: `${gutter - 6}px`,
    top: `${i * ch + (ch - 14) / 2}px`, lineHeight: "14px", display: i % stepY ? "none" : ""});
  for (let j = 0; j < res.C; j++) Object.assign(xs[j].style, {right: `${width - (gutter + (j + 0.5) * cw)}px`,
    top: `${res.R * ch + 2}px`, lineHeight: "12px", marginTop: "-6px", display: j % step ? "none" : ""});
  for (const s of ys) s.textContent = ""; for (const s of xs) s.textContent = "";
  return {kind, res, gutter, cw, ch, bottom, key, width};
}
function reservedLabels(kind) {           // the labels at the last step: what the layout must fit
  const t = st.t;
  if (st.doc.traj) st.t = st.doc.n - 1;
  const ax = axesOf(kind, frame());
  st.t = t;
  return ax;
}
// Heads switched off (a Head ablation payload): their weights are still computed, only their outputs are zeroed,
// so their maps are drawn greyed out and the title says so
const OFF = "rgba(255, 255, 255, 0.62)";
function offHeads(kind, l) {
  const d = st.doc, H = d.maps[kind].shape[1];
  return d.off && d.off.size ? [...Array(H).keys()].filter(h => d.off.has(`${kind}|${l}|${h}`)) : [];
}
function offNote(kind) {
  const off = offHeads(kind, st.layer), H = st.doc.maps[kind].shape[1];
  if (st.head === "mean") return off.length ? ` · ${off.length} of ${H} heads switched off (weights computed, outputs zeroed)` : "";
  return off.includes(st.head) ? " · switched off: its weights are still computed, its output is zeroed" : "";
}
function drawBig(kind, f, m) {
  const res = m.res, p = m.panel(st.layer, st.head), g = layoutBig(kind, res);
  const zmax = Math.max(1e-6, maxOf(p));
  const src = refresh("big", res.C, res.R, [[0, 0, p]], p.R, p.C, zmax, `${m.key}|${st.layer}|${st.head}`);
  const ctx = q("canvas").getContext("2d");
  ctx.imageSmoothingEnabled = false;
  if (res.C && res.R) ctx.drawImage(src, 0, 0, res.C, res.R, 0, 0, res.C * g.cw, res.R * g.ch);
  else ctx.clearRect(0, 0, g.cw, res.R * g.ch);
  const none = noKeyRows(p);
  for (const i of none) {                 // rows left without keys by hiding <s>/</s>: grey, and said so
    ctx.fillStyle = NOKEY; ctx.fillRect(0, i * g.ch, Math.max(1, res.C) * g.cw, g.ch);
    ctx.fillStyle = "#444"; ctx.font = "11px sans-serif"; ctx.textBaseline = "middle";
    ctx.fillText("no keys", 4, i * g.ch + g.ch / 2);
  }
  if (st.head !== "mean" && offHeads(kind, st.layer).includes(st.head)) { ctx.fillStyle = OFF; ctx.fillRect(0, 0, res.C * g.cw, res.R * g.ch); }
  if (kind !== "encoder_self" && f.row >= 0) {
    ctx.strokeStyle = RED; ctx.lineWidth = 2;
    ctx.strokeRect(1, f.row * g.ch + 1, Math.max(1, p.C) * g.cw - 2, g.ch - 2);
  }
  const ys = q("ylabels").children, xs = q("xlabels").children;
  for (let i = 0; i < ys.length; i++) setText(ys[i], i < p.R ? String(p.rows[i]) : "");
  for (let j = 0; j < xs.length; j++) setText(xs[j], j < p.C ? String(p.cols[j]) : "");
  const roles = st.doc.p.roles || {}, role = st.head === "mean" ? null : ((roles[kind] || [])[st.layer] || [])[st.head];
  setText(q("title"), `${TITLES[kind]} · layer ${st.layer + 1} · ${st.head === "mean" ? "mean of heads" : "head " + (st.head + 1)}` +
    (role ? ` · role: ${role}` : "") + offNote(kind) + (normsFor(kind) ? " · contribution ‖w·v·W_O‖, rows normalised" : ""));
  setText(q("zmax"), maxOf(p) > 0 ? zmax.toFixed(3) : "–");
  setText(q("note"), none.length === 0 ? "" : (none.length === 1 ? `No keys in the row ${p.rows[none[0]]}` : `No keys in ${none.length} rows`) +
    ": every key it could attend to is a hidden <s> or </s>, so there is nothing to renormalise (grey).");
  insideMark(ctx, kind, f, p, g);
  cv.big = Object.assign(g, {p, zmax, row: f.row, spans: f.words ? (kind === "encoder_self" ? f.ss : f.ts) : null,
                             measure: normsFor(kind) ? "contribution share" : "weight"});
}
function insideMark(ctx, kind, f, p, g) {   // the query row the inside panel opens (assets/inside.js), dashed
  const r = MAIN && window.__insideView ? window.__insideView.row() : -1;
  const spans = f.words ? (kind === "encoder_self" ? f.ss : f.ts) : null;
  const i = r < 0 ? -1 : (spans ? spans.findIndex(([a, b]) => a <= r && r < b) : r);
  if (i < 0 || i >= p.R || (kind !== "encoder_self" && i === f.row)) return;
  ctx.save(); ctx.strokeStyle = "#0074d9"; ctx.lineWidth = 2; ctx.setLineDash([4, 3]);
  ctx.strokeRect(1, i * g.ch + 1, Math.max(1, p.C) * g.cw - 2, g.ch - 2); ctx.restore();
}
function noKeyRows(p) {                   // the visible rows of panel p that have no key left
  const out = [];
  if (p.nokeys) for (let i = 0; i < p.R; i++) if (p.nokeys[i]) out.push(i);
  return out;
}

// The layers x heads grid: one canvas, every panel on one colour scale
function drawGrid(kind, f, m) {
  const {L, H, res} = m;
  const box = q("grid"), width = Math.max(120, box.clientWidth), left = 24, top = 16, gap = 6;
  let cell = (width - left - gap * (H - 1)) / (H * Math.max(1, res.C));
  cell = Math.max(0.25, Math.min(cell, 22, (640 - top - gap * (L - 1)) / (L * Math.max(1, res.R))));
  const pw = res.C * cell, ph = res.R * cell, height = top + L * ph + (L - 1) * gap + 2;
  const c = q("grid-canvas"), ctx = sizeCanvas(c, width, height);
  const panels = [], items = [];
  let zmax = 1e-6;
  for (let l = 0; l < L; l++) {
    panels.push([]);
    for (let h = 0; h < H; h++) {
      const p = m.panel(l, h);
      panels[l].push(p); items.push([h * res.C, l * res.R, p]); zmax = Math.max(zmax, maxOf(p));
    }
  }
  const src = refresh("grid", res.C * H, res.R * L, items, m.R, m.C, zmax, m.key);
  ctx.clearRect(0, 0, width, height);
  if (res.C && res.R) for (let l = 0; l < L; l++) for (let h = 0; h < H; h++)
    ctx.drawImage(src, h * res.C, l * res.R, res.C, res.R, left + h * (pw + gap), top + l * (ph + gap), pw, ph);
  ctx.fillStyle = NOKEY;                  // rows with no key left (hidden <s>/</s>), as in the big map
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++)
    for (const i of noKeyRows(panels[l][h])) ctx.fillRect(left + h * (pw + gap), top + l * (ph + gap) + i * cell, pw, cell);
  ctx.fillStyle = "#555"; ctx.font = "11px sans-serif"; ctx.textBaseline = "middle";
  for (let l = 0; l < L; l++) { ctx.textAlign = "right"; ctx.fillText(`L${l + 1}`, left - 4, top + l * (ph + gap) + ph / 2); }
  for (let h = 0; h < H; h++) { ctx.textAlign = "center"; ctx.fillText(`H${h + 1}`, left + h * (pw + gap) + pw / 2, top / 2); }
  const off = [];
  for (let l = 0; l < L; l++) for (const h of offHeads(kind, l)) {
    const x = left + h * (pw + gap), y = top + l * (ph + gap);
    ctx.fillStyle = OFF; ctx.fillRect(x, y, pw, ph);
    ctx.fillStyle = "#b00"; ctx.textAlign = "center"; ctx.fillText("off", x + pw / 2, y + ph / 2);
    off.push([l, h]);
  }
  ctx.strokeStyle = RED; ctx.lineWidth = 2;
  for (const h of st.head === "mean" ? [...Array(H).keys()] : [st.head])
    ctx.strokeRect(left + h * (pw + gap) - 1, top + st.layer * (ph + gap) - 1, pw + 2, ph + 2);
  cv.grid = {L, H, left, top, gap, pw, ph, cell, res, panels, zmax, kind, off};
  setText(q("grid-title"), `${TITLES[kind]}: all ${L} layers × ${H} heads (click a panel)`);
}

function drawChips(f) {
  const box = q("target"), d = st.doc, labels = f.words ? f.tgt : f.tp;
  const key = `${d.seq}|${f.words}`;
  if (box.dataset.key !== key || f.words) { box.textContent = ""; box.dataset.key = key; inst.chips = []; }
  const chips = inst.chips;
  for (let i = 0; i < labels.length; i++) {
    let s = chips[i];
    if (!s) { s = chips[i] = document.createElement("span"); s.className = "lens-tok"; s.title = `position ${i}`;
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
function drawMarks(f) {
  const forced = f.chipForced.some(Boolean), differs = f.chipDiffers.some((x, i) => x && !f.chipForced[i]);
  const box = q("marks"), key = `${forced}|${differs}|${st.doc.mode}`;
  if (box.dataset.key === key) return;
  box.dataset.key = key; box.textContent = "";
  const who = {ablated: "the model with these heads switched off", reference: "the model"}[st.doc.mode] || "the model";
  const given = {ablated: "it follows the intact model's pieces", reference: "the reference's pieces are given"}[st.doc.mode]
    || "the pieces were given";
  for (const [on, cls, text] of [[forced, "forced", "forced by you: the top-k piece you clicked instead of the greedy one"],
                                 [differs, "differs", `${who} would have chosen another piece here (${given})`]]) {
    if (!on) continue;
    const item = document.createElement("span"), chip = document.createElement("span");
    item.className = "lens-mark"; chip.className = `lens-swatch ${cls}`; chip.textContent = "piece";
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
  box.textContent = "\u2581 starts a word \u00b7 a word the model's vocabulary lacks is split into pieces" +
    (ex ? `: ${ex[0]} \u2192 ${ex[1].join(" ")}` : "");
}
function drawStatus(f) {
  const d = st.doc, unit = f.words || d.merged ? "word" : "piece", count = (n, side) => `${n} ${side} ${unit}${n === 1 ? "" : "s"}`;
  const mode = d.traj ? (d.mode === "reference" ? `Reference translation, teacher-forced · step ${st.t}` : `Step ${st.t}`)
    : ({reference: "Teacher-forced reference", beam: "Beam hypothesis (teacher-forced)",
        ablated: "Heads switched off"}[d.mode] || `Step ${d.step ?? d.cursor}`);
  const nt = f.words ? f.tgt.length : (d.merged ? d.n : f.n), ns = f.words ? f.src.length : d.S;
  setText(q("status"), `${mode} · ${count(ns, "source")} · ${count(nt, "target")}` +
    (f.done ? " · finished" + (st.kind !== "encoder_self" && f.tp[f.n - 1] === "</s>" && !f.words
      ? " (the last row reads </s>; what it predicts then is not used)" : "")
      : (f.next ? ` · next (greedy): ${f.next}` : "")));
  const player = q("player"), show = MAIN && d.traj, leave = q("leave"), back = !!(show && d.mode === "reference" && st.back);
  if (player.hidden === show) player.hidden = !show;
  if (leave.hidden === back) leave.hidden = !back;
  if (show) {
    const scrub = q("scrub");
    if (scrub.max !== String(d.n - 1)) scrub.max = String(d.n - 1);
    if (scrub.value !== String(st.t)) scrub.value = String(st.t);
    setText(q("stepno"), `step ${st.t} / ${d.n - 1}`);
  }
}
function pushTopk(f) {                    // the top-k list (#topk, assets/topk.js) follows the main view
  if (!MAIN || !window.__topkView) return;
  const d = st.doc;
  if (!d.traj) { window.__topkView.render({items: [], done: true}); return; }
  const K = d.topk.k, items = [];
  for (let r = 0; r < Math.min(st.k, K); r++) items.push([d.vocab[d.topk.ids[st.t * K + r]], d.topk.p[st.t * K + r]]);
  window.__topkView.render({items, done: d.done[st.t], step: st.t, note: d.mode === "reference" && !d.done[st.t]
    ? "Teacher-forced: the model's most probable next pieces after the reference's prefix; click one to continue " +
      "from there with it." : null});
}
function fillSelect(sel, n, withMean, value) {  // option values are the labels shown: 1..n (and "mean")
  const want = [...Array(n).keys()].map(i => String(i + 1)).concat(withMean ? ["mean"] : []);
  if ([...sel.options].map(o => o.value).join() !== want.join()) {
    sel.textContent = "";
    for (const v of want) { const o = document.createElement("option"); o.value = v;
      o.textContent = v === "mean" ? "mean of heads" : v; sel.appendChild(o); }
  }
  const v = value === "mean" ? "mean" : String(value + 1);
  if (sel.value !== v) sel.value = v;
}
function empty(msg) {
  st.doc = null; cv.big = cv.grid = null;
  if (MAIN) { q("intro").hidden = false; element.querySelector(".lens").dataset.empty = "1"; }  // what the map will show
  setText(q("status"), msg); q("target").textContent = ""; q("target").dataset.key = "";
  q("legend").textContent = ""; q("legend").dataset.key = "";
  q("marks").textContent = ""; q("marks").dataset.key = "";
  q("player").hidden = true; q("ylabels").textContent = ""; q("xlabels").textContent = "";
  for (const c of [q("canvas"), q("grid-canvas")]) { c.width = c.height = 0; c.style.height = "0px"; }
  q("plot").style.height = "0px"; setText(q("title"), ""); setText(q("zmax"), ""); setText(q("note"), "");
  if (MAIN && window.__topkView) window.__topkView.render({items: [], done: true});
  if (MAIN && window.__attributionView) window.__attributionView.update();
  element.dataset.renders = String(++inst.renders);
}
function draw() {
  const d = st.doc;
  if (!d) return;
  const box = MAIN && element.querySelector(".lens");
  if (box && box.dataset.empty) { q("intro").hidden = true; delete box.dataset.empty; }
  const t0 = performance.now();
  if (!d.maps[st.kind]) st.kind = "cross";
  const kind = st.kind, [L, H] = d.maps[kind].shape;
  st.layer = Math.min(st.layer, L - 1); if (st.head !== "mean") st.head = Math.min(st.head, H - 1);
  fillSelect(q("layer"), L, false, st.layer); fillSelect(q("head"), H, true, st.head);
  element.querySelectorAll("[data-kind]").forEach(b => b.classList.toggle("active", b.dataset.kind === kind));
  q("hide").checked = st.hide;
  const f = frame();
  drawChips(f); drawLegend(); drawStatus(f); pushTopk(f);
  if (q("big").clientWidth > 0) {           // drawn when visible; a ResizeObserver redraws on showing
    const m = mapsAt(kind, f);
    drawGrid(kind, f, m);
    drawBig(kind, f, m);
  }
  inst.drawMs = performance.now() - t0;
  if (MAIN && window.__insideView) window.__insideView.update();  // the inside panel follows (timed on its own)
  if (MAIN && window.__attributionView) window.__attributionView.update();  // ALTI+ / saliency (assets/attribution.js)
  element.dataset.renders = String(++inst.renders);
  element.dataset.kind = kind; element.dataset.layer = st.layer; element.dataset.head = st.head;
  element.dataset.step = d.traj ? st.t : "";
}

// -- moving through the trajectory (no request) -----------------------------------------------------
function announce() {                     // tell the page: the translation box, the position other tabs read
  if (!MAIN) return;
  const fire = window.__lensBus || trigger;  // #lens_bus: events fired on this view would copy its payload
  fire("input");                          // a js-only Gradio event (translate_tab.py): no request
  const layers = document.getElementById("tab_layers");
  if (layers && layers.offsetParent !== null) fire("select");  // Across layers follows the step while shown
}
function go(t, doc) {
  const d = doc || st.traj;
  if (!d) { setText(q("status"), "Press Start first: there is no sentence being decoded."); return false; }
  t = Math.max(0, Math.min(d.n - 1, t));
  const changed = st.doc !== d || st.t !== t || st.traj !== d;
  st.traj = d; st.doc = d; st.t = t;
  draw();
  if (changed) announce();
  return changed;
}
function pause() {
  if (st.timer) { clearTimeout(st.timer); st.timer = null; }
  const b = q("play"); b.textContent = "▶ Play"; b.classList.remove("playing");
}
function play() {
  if (!st.traj) return;
  if (st.timer) { pause(); return; }
  if (st.doc !== st.traj || st.t >= st.traj.n - 1) go(0);
  const b = q("play"); b.textContent = "❚❚ Pause"; b.classList.add("playing");
  const tick = () => {
    if (!st.traj || st.t >= st.traj.n - 1) { pause(); return; }
    go(st.t + 1);
    st.timer = st.t >= st.traj.n - 1 ? (pause(), null) : setTimeout(tick, st.speed);
  };
  st.timer = setTimeout(tick, st.speed);
}
function text(d, t) { return d.texts ? d.texts[t] : d.text.slice(0, d.ends[t]); }
const ctl = {
  step: () => { pause(); return go(st.doc === st.traj ? st.t + 1 : st.t); },
  back: () => { pause(); return go(st.doc === st.traj ? st.t - 1 : st.t); },
  run: () => { pause(); return go(Infinity); },
  reset: () => { pause(); return go(0, st.traj && st.greedy && st.traj.forced.some(Boolean) ? st.greedy : st.traj); },
  goto: (i) => {
    pause();
    const d = st.traj;
    if (!d) return go(0);
    if (typeof i !== "number" || !Number.isInteger(i) || i < 0 || i >= d.n) {
      setText(q("status"), `step index must be an integer from 0 to ${d.n - 1}, got ${i}`); return false;
    }
    return go(i);
  },
  play, pause,
  leave: () => {                          // from a reference back to the decoding it was opened from
    pause();
    const b = st.back;
    if (!b) return false;
    st.back = null; cv.big = null;
    return go(b.t, b.traj);
  },
  setK: (k) => { if (Number.isInteger(k) && k >= 1 && k <= 20) { st.k = k; if (st.doc) pushTopk(frame()); } },
  setWords: (w) => { st.words = !!w; if (st.doc) { cv.big = null; draw(); } },
};
inst.ctl = ctl;
inst.decode = load;                       // a payload -> its decoded maps and steps (assets/compare.js)
// For Gradio events: [translation so far, the position shown] (js-only: sets #translation and #view_pos)
inst.sync = () => st.traj ? [text(st.traj, st.t), inst.position()] : ["", ""];
// The position the view shows, for the server: the step and the pieces that lead to it
inst.position = () => {
  const d = st.traj;
  return d ? JSON.stringify({step: st.t, ids: d.ids.slice(0, st.t + 1), forced: d.forced.slice(0, st.t + 1).map(Number)}) : "";
};
// For tests and benchmarks: what the big view and the grid show now
inst.view = () => {
  const b = cv.big; if (!b) return null;
  const p = b.p, z = [];
  for (let i = 0; i < p.R; i++) z.push(Array.from(p.z.subarray(i * p.stride, i * p.stride + p.C)));
  return {title: q("title").textContent, kind: st.kind, layer: st.layer, head: st.head, step: st.doc.traj ? st.t : null,
          x: p.cols.map(String), y: p.rows.map(String), z, row: b.row, zmax: b.zmax,
          nokeys: [...Array(p.R).keys()].map(i => !!(p.nokeys && p.nokeys[i])), cell: {w: b.cw, h: b.ch}};
};
inst.redraw = () => {                    // repaint everything from scratch (tests compare it with a step's update)
  scratch.big.last = scratch.grid.last = null; cv.big = null; if (st.doc) draw();
};
inst.grid = () => {
  const g = cv.grid; if (!g) return null;
  return {layers: g.L, heads: g.H, panels: g.L * g.H, rows: g.panels[0][0].R, cols: g.panels[0][0].C, kind: g.kind,
          off: g.off};
};
inst.panelPoint = (l, h) => {            // client coordinates of the middle of grid panel (l, h)
  const g = cv.grid, r = q("grid-canvas").getBoundingClientRect();
  return {x: r.left + g.left + h * (g.pw + g.gap) + g.pw / 2, y: r.top + g.top + l * (g.ph + g.gap) + Math.min(g.ph / 2, g.cell / 2 + 1)};
};

// -- payloads from the server ------------------------------------------------------------------------
function render() {
  inst.recvAt = performance.now();
  const p = props.value;
  if (!p || !p.source) { pause(); st.traj = st.greedy = null; empty("Type a sentence and press Start."); return; }
  const doc = load(p);
  if (doc.traj) {
    pause();
    if (p.ui && MAIN) { st.k = p.ui.k; st.words = !!p.ui.words; }
    if (MAIN && typeof p.input === "string")  // a Start: every tab names this sentence (assets/sentence.js)
      window.dispatchEvent(new CustomEvent("lens-started", {detail: p.input}));
    if (doc.mode === "reference") {       // stepped like a decoding; "Leave the reference" returns to this
      if (st.traj && st.traj.mode !== "reference") st.back = {traj: st.traj, t: st.t};
    } else {
      st.back = null;
      if (!doc.forced.some(Boolean)) st.greedy = doc;
    }
    cv.big = null;
    go(p.cursor, doc);
  } else {
    pause();
    st.doc = doc; cv.big = null;
    draw();
  }
}

// -- hover, clicks, keys, export -------------------------------------------------------------------------
const tip = q("tip");
function showTip(e, s) { tip.textContent = s; tip.hidden = false;
  tip.style.left = `${Math.min(e.clientX + 14, window.innerWidth - 300)}px`; tip.style.top = `${e.clientY + 14}px`; }
function hideTip() { tip.hidden = true; }
q("canvas").addEventListener("mousemove", e => {
  const b = cv.big; if (!b) return hideTip();
  const i = Math.floor(e.offsetY / b.ch), j = Math.floor(e.offsetX / b.cw), p = b.p;
  if (i >= 0 && i < p.R && p.nokeys && p.nokeys[i]) return showTip(e, `query ${p.rows[i]}\n${NOKEY_TIP}`);
  if (i < 0 || j < 0 || i >= p.R || j >= p.C) return hideTip();
  showTip(e, `query ${p.rows[i]}\nkey ${p.cols[j]}\n${b.measure} ${p.z[i * p.stride + j].toFixed(3)}`);
});
q("canvas").addEventListener("click", e => {   // a row of the big map: the query the inside panel opens
  const b = cv.big; if (!MAIN || !b || !window.__insideView) return;
  const i = Math.floor(e.offsetY / b.ch);
  if (i >= 0 && i < b.p.R) window.__insideView.pick(b.spans ? b.spans[i][1] - 1 : i);
});
function gridCell(e) {
  const g = cv.grid; if (!g) return null;
  const x = e.offsetX - g.left, y = e.offsetY - g.top;
  const h = Math.floor(x / (g.pw + g.gap)), l = Math.floor(y / (g.ph + g.gap));
  if (h < 0 || l < 0 || h >= g.H || l >= g.L || x - h * (g.pw + g.gap) > g.pw || y - l * (g.ph + g.gap) > g.ph) return null;
  return {l, h, i: Math.floor((y - l * (g.ph + g.gap)) / g.cell), j: Math.floor((x - h * (g.pw + g.gap)) / g.cell)};
}
q("grid-canvas").addEventListener("mousemove", e => {
  const c = gridCell(e); if (!c) return hideTip();
  const p = cv.grid.panels[c.l][c.h];
  if (c.i < p.R && p.nokeys && p.nokeys[c.i]) return showTip(e, `layer ${c.l + 1} · head ${c.h + 1}\nquery ${p.rows[c.i]}\n${NOKEY_TIP}`);
  if (c.i >= p.R || c.j >= p.C) return showTip(e, `layer ${c.l + 1} · head ${c.h + 1}`);
  showTip(e, `layer ${c.l + 1} · head ${c.h + 1}\nquery ${p.rows[c.i]}\nkey ${p.cols[c.j]}\nweight ${p.z[c.i * p.stride + c.j].toFixed(3)}`);
});
q("grid-canvas").addEventListener("click", e => {
  const c = gridCell(e); if (!c) return;
  st.layer = c.l; st.head = c.h; draw();
});
for (const c of [q("canvas"), q("grid-canvas")]) c.addEventListener("mouseleave", hideTip);
const lensRoot = element.querySelector(".lens");
lensRoot.addEventListener("keydown", e => {
  if (!MAIN || !st.traj || ["INPUT", "SELECT", "TEXTAREA"].includes(e.target.tagName) && e.target.type !== "checkbox") return;
  const act = {ArrowRight: ctl.step, ArrowLeft: ctl.back, Home: ctl.reset, End: ctl.run}[e.key];
  if (!act) return;
  e.preventDefault();
  if (e.key === "Home") { pause(); go(0); } else act();
});
q("scrub").addEventListener("input", e => { pause(); go(+e.target.value); });
q("play").addEventListener("click", () => play());
q("leave").addEventListener("click", () => ctl.leave());
q("speed").addEventListener("change", e => { st.speed = +e.target.value; });
element.querySelectorAll("[data-kind]").forEach(b => b.addEventListener("click", () => {
  if (st.doc && st.doc.maps[b.dataset.kind]) { st.kind = b.dataset.kind; cv.big = null; draw(); } }));
q("layer").addEventListener("change", e => { st.layer = +e.target.value - 1; draw(); });
q("head").addEventListener("change", e => { st.head = e.target.value === "mean" ? "mean" : +e.target.value - 1; draw(); });
q("hide").addEventListener("change", e => { st.hide = e.target.checked; cv.big = null; draw(); });

function figure() {                       // the big view as a Plotly figure (labels escaped): for export only
  const b = cv.big, p = b.p, x = p.cols.map(esc), y = p.rows.map(esc), z = [], text = [];
  for (let i = 0; i < p.R; i++) {
    z.push(Array.from(p.z.subarray(i * p.stride, i * p.stride + p.C)));
    text.push(z[i].map((w, j) => `query ${y[i]}<br>key ${x[j]}<br>weight ${w.toFixed(3)}`));
  }
  const layout = {title: {text: esc(q("title").textContent), font: {size: 14}},
    xaxis: {tickmode: "array", tickvals: [...x.keys()], ticktext: x, tickangle: -60, title: {text: "keys"}, showgrid: false, zeroline: false, automargin: true},
    yaxis: {tickmode: "array", tickvals: [...y.keys()], ticktext: y, autorange: "reversed", title: {text: "queries"}, showgrid: false, zeroline: false, automargin: true},
    margin: {l: 10, r: 10, t: 36, b: 10}, width: Math.max(500, 200 + 24 * p.C), height: Math.max(380, 140 + 22 * p.R), shapes: []};
  if (st.kind !== "encoder_self" && b.row >= 0)
    layout.shapes.push({type: "rect", x0: -0.5, x1: p.C - 0.5, y0: b.row - 0.5, y1: b.row + 0.5, line: {color: RED, width: 2}});
  return {data: [{type: "heatmap", z, x: [...x.keys()], y: [...y.keys()], text, hoverinfo: "text", colorscale: "Viridis", zmin: 0, zmax: b.zmax}], layout};
}
let plotlyLoading = null;
function plotly() {                       // the vendored plotly.js, loaded on the first export
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!plotlyLoading) plotlyLoading = new Promise((ok, fail) => {
    const s = document.createElement("script"); s.src = lensRoot.dataset.plotly;
    s.onload = () => ok(window.Plotly); s.onerror = fail; document.head.appendChild(s);
  });
  return plotlyLoading;
}
let plotlySource = null;
async function exportHtml() {
  if (!cv.big) return;
  const fig = JSON.stringify(figure()).replace(/</g, "\\u003c");
  if (plotlySource === null) plotlySource = await (await fetch(lensRoot.dataset.plotly)).text();
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>attention-lens figure</title></head>` +
    `<body><div id="fig" style="width:100%;height:90vh"></div><script>${plotlySource.replace(/<\/script/gi, "<\\/script")}</` +
    `script><script>const f=${fig};Plotly.newPlot("fig",f.data,f.layout);</` + `script></body></html>`;
  const a = document.createElement("a"); a.href = URL.createObjectURL(new Blob([html], {type: "text/html"}));
  a.download = "attention.html"; document.body.appendChild(a); a.click(); a.remove();
}
async function exportPng() {
  if (!cv.big) return;
  const P = await plotly(), fig = figure();
  await P.downloadImage(fig, {format: "png", filename: "attention", scale: 2, width: fig.layout.width, height: fig.layout.height});
}
q("png").addEventListener("click", () => { exportPng().catch(e => console.error("PNG export failed", e)); });
q("html").addEventListener("click", () => { exportHtml().catch(e => console.error("HTML export failed", e)); });

// redraw when the view's width changes (first shown, window resized, tab switched)
let lastWidth = -1;
new ResizeObserver(() => {
  const w = q("big").clientWidth;
  if (w !== lastWidth) { lastWidth = w; if (st.doc && w > 0) { cv.big = null; draw(); } }
}).observe(q("big"));
(() => {                                  // the colour bar beside the title: 0 .. the largest weight shown
  const c = q("colorbar"), g = c.getContext("2d"), img = g.createImageData(c.width, c.height);
  for (let x = 0; x < c.width; x++) {
    const v = Math.round(x / (c.width - 1) * 255) * 3;
    for (let y = 0; y < c.height; y++) { const o = (y * c.width + x) * 4;
      img.data[o] = LUT[v]; img.data[o + 1] = LUT[v + 1]; img.data[o + 2] = LUT[v + 2]; img.data[o + 3] = 255; }
  }
  g.putImageData(img, 0, 0);
})();
inst.ready = true;
render();
watch("value", render);

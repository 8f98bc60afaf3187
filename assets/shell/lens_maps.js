// attention-lens, the attention view (assets/shell/lens.js): the numbers of the maps at a step, no drawing.
// A part of the view's script (attention_lens/shell/components.py `script`, LENS_PARTS): the body of a function of
// `view`, in a scope of its own; what it takes from the view and the parts before it is named just below, what it
// gives is returned at the end (lens.js puts it in `view`). The view's state (`st`, `inst`) is lens.js's, the decoded
// payload (st.doc) comes from payload.js decodeView.
const {st, inst, tl, find} = view;
//
// frame(): what is visible at step st.t (pieces, or merged into words); panel(): one map (a layer and head, or
// the mean of heads) at a frame, with <s>/</s> columns hidden if asked; mapsAt(): every map of a kind at a frame,
// computed once per trajectory where it can be.

// What the maps show: attention weights, or each key's contribution ‖α_ij v_j W_Oʰ‖ = α_ij ‖v_j W_Oʰ‖ with each
// row normalised to sum to 1 (the inside panel, assets/translate/inside.js, sets inst.contribution = {on, ids, norms:
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

// -- what is visible at a step ---------------------------------------------------------------------
function wordLabels(pieces, spans, specials) {
  return spans.map(([a, b]) => b - a === 1 && specials.has(pieces[a]) ? pieces[a]
    : (pieces.slice(a, b).join("").replace(/\u2581/g, "") || "\u2581"));
}
// What the rows and the columns are, in the model's languages (the big map, the grid, Compare, the exports):
// '↓ English being written · German it reads →' (attention_lens/shell/figures.py axis_line says the same for the .html export)
const LANG_NAMES = {de: "German", en: "English", fr: "French", es: "Spanish", it: "Italian", nl: "Dutch"};
function languagesOf(d) {                 // [source, target] names: the payload's, else the main view's sentence's
  const main = find("attention", "lens")?.state?.traj;  // the main view, on its element
  const codes = (d && d.p && d.p.languages) || (main && main.p.languages);
  const named = (c) => (find("explain_box", "explain") && find("explain_box", "explain").t(`label.lang_${c}`) !== `label.lang_${c}` ? tl(`lang_${c}`) : LANG_NAMES[c] || c);
  return codes && codes.length === 2 ? codes.map(named) : [tl("the_source"), tl("the_translation")];
}
function axisWords(kind, [s, t]) {       // [what the rows are, what the columns are]
  return kind === "encoder_self" ? [tl("axis_reading", {s}), tl("axis_reads", {s})]
    : kind === "decoder_self" ? [tl("axis_written", {t}), tl("axis_so_far", {t})] : [tl("axis_written", {t}), tl("axis_reads", {s})];
}
function axisLine(kind, langs) {
  const [rows, cols] = axisWords(kind, langs);
  return `\u2193 ${rows} \u00b7 ${cols} \u2192`;
}
// The last row once decoding has stopped: the model still reads that piece, but its prediction is not used
const stopped = (x) => `(${tl(x === "</s>" ? "finished" : "stopped")})`;
function frame() {
  const d = st.doc, traj = d.traj, t = st.t;
  const n = traj ? t + 1 : d.n, cursor = traj ? t : d.cursor, tp = d.pieces.slice(0, n);
  const next = traj ? (d.done[t] ? null : d.greedy[t]) : d.next, done = traj ? d.done[t] : d.doneNow;
  const forced = traj ? d.forced.slice(0, n) : d.forced, differs = traj ? d.differs.slice(0, n) : d.differs;
  const f = {n, cursor, next: traj && st.conceal === "next" ? null : next, done, forced, tp, words: !!(st.words && d.spans)};
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
    // the row being written names the piece after it, unless a live class asks what that piece is (lens.js conceal)
    const after = traj && st.conceal === "next" && !done ? "?" : next;
    f.rows = d.rowLabels || tp.map((x, i) => `${x} → ${i + 1 < n ? tp[i + 1] : (after ?? stopped(x))}`);
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

// -- the crossing ---------------------------------------------------------------------------------------------------
// The cross-attention head whose strongest links cross most clearly in a trajectory (the tour's 'look for the
// crossing' opens it, assets/shell/tour.js): for each head, each row's strongest source word piece; a pair of rows whose
// pieces come in the other order crosses, weighted by the weaker of the two links. No crossing anywhere: the head
// with the sharpest links (its diagonal).
function crossingHead(d) {
  const m = d.maps.cross, [L, H, Tq, Tk] = m.shape, word = (p) => /\p{L}/u.test(p) && !d.specials.has(p);
  const keys = d.source.map((p, j) => j).filter(j => word(d.source[j]));
  const rows = [...Array(Math.min(d.n, Tq)).keys()].filter(i => i + 1 < d.n && word(d.pieces[i + 1]));
  let best = null;
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
    const links = rows.map(i => {
      let bj = -1, bw = 0;
      for (const j of keys) { const w = m.data[((l * H + h) * Tq + i) * Tk + j]; if (w > bw) { bw = w; bj = j; } }
      return [bj, bw];
    });
    let score = 0, sharp = 0;
    for (let a = 0; a < links.length; a++) {
      sharp += links[a][1];
      for (let b = a + 1; b < links.length; b++) if (links[a][0] > links[b][0]) score += Math.min(links[a][1], links[b][1]);
    }
    if (!best || score > best.score + 1e-9 || (Math.abs(score - best.score) <= 1e-9 && sharp > best.sharp))
      best = {layer: l, head: h, score, sharp};
  }
  return best;
}

return {frame, panel, mapsAt, maxOf, axesOf, axisLine, axisWords, languagesOf, normsFor, crossingHead};

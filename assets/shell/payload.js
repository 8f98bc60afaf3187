// attention-lens: decoding the payloads the server sends, shared by the attention view (assets/shell/lens.js) and the
// "Inside this head" panel (assets/translate/inside.js). A part of both views' scripts (attention_lens/shell/components.py `script`): the
// body of a function in their js_on_load, its own scope; it returns what the views use (no global, nothing to load
// first). It needs nothing from the view.
//
// Two payloads, each with its Python writer, to be kept in step with it:
// - decodeView: the attention view's maps and steps (attention_lens/translate/payload.py)
// - decodeHead: one head's q, k, v and norms for the inside panel (attention_lens/translate/inside_payload.py)
// Arrays travel as base64 of little-endian numbers, so the three kinds of maps take ~38 kB instead of ~400 kB
// of JSON floats.
const KINDS = ["encoder_self", "decoder_self", "cross"];

// -- base64 -> typed arrays --------------------------------------------------------------------------------
function raw(b64) {                       // the bytes
  const bin = atob(b64), u = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
  return u;
}
function u16(b64) {                       // little-endian uint16 (attention_lens/translate/payload.py encode_ints: the top-k ids)
  const bin = atob(b64), n = bin.length >> 1, out = new Uint16Array(n);
  for (let i = 0; i < n; i++) out[i] = bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8);
  return out;
}
// Weights in [0, 1]: {shape, b64[, packed: "tril"]} of uint16 w · 65535 (attention_lens/translate/payload.py encode_array, encode_tril)
// -> {shape, data: Float32Array}
function weights16(d) {
  const u = u16(d.b64), size = d.shape.reduce((a, b) => a * b, 1), out = new Float32Array(size);
  if (d.packed === "tril") {              // (..., T, T): row t's first t+1 weights, row after row (encode_tril)
    const T = d.shape[d.shape.length - 1];
    for (let m = 0, k = 0; m < size / (T * T); m++)
      for (let t = 0; t < T; t++) for (let j = 0; j <= t; j++) out[m * T * T + t * T + j] = u[k++] / 65535;
  } else for (let i = 0; i < size; i++) out[i] = u[i] / 65535;
  return {shape: d.shape, data: out};
}
function f32(d) {                         // {shape, b64}: little-endian float32 -> {shape, data: Float32Array}
  const u = raw(d.b64), view = new DataView(u.buffer), out = new Float32Array(u.length >> 2);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(4 * i, true);
  return {shape: d.shape, data: out};
}
function rows16(d) {                      // {shape: [N, d], b64: int16, scale: float32 per row} -> Float32Array
  const u = raw(d.b64), view = new DataView(u.buffer), scale = f32({shape: [d.shape[0]], b64: d.scale}).data;
  const n = d.shape[1], out = new Float32Array(u.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(2 * i, true) * scale[Math.floor(i / n)];
  return out;
}
function unit16(d) {                      // {shape, b64: uint16 of value / max, max} -> {shape, data}
  const u = u16(d.b64), out = new Float32Array(u.length);
  for (let i = 0; i < out.length; i++) out[i] = u[i] / 65535 * d.max;
  return {shape: d.shape, data: out};
}
function visible(d, mask) {               // {shape, b64}: float32 of the unmasked cells, row after row -> Float32Array
  const v = f32({shape: [-1], b64: d.b64}).data, out = new Float32Array(d.shape[0] * d.shape[1]);
  for (let i = 0, n = 0; i < out.length; i++) if (!mask[i]) out[i] = v[n++];
  return out;
}
function keyMask(d) {                     // {shape, from: first masked key per row} or {shape, bits} -> Uint8Array
  const [R, C] = d.shape, out = new Uint8Array(R * C);
  if (d.from) { for (let i = 0; i < R; i++) for (let j = d.from[i]; j < C; j++) out[i * C + j] = 1; return out; }
  const u = raw(d.bits);                  // row-major bits, least significant bit first
  for (let i = 0; i < R * C; i++) out[i] = (u[i >> 3] >> (i & 7)) & 1;
  return out;
}

// -- the attention view's payload (attention_lens/translate/payload.py) -> what lens.js draws ------------------------------------------
// A trajectory (v2: `steps`, every step of the sentence) or one step (v1: other tabs)
function decodeView(p) {
  const doc = {p, seq: p.seq, maps: {}, source: p.source, S: p.source.length, mode: p.mode,
               specials: new Set(p.specials || []), spans: null,
               off: new Set((p.ablated || []).map(a => a.join("|")))};  // heads switched off (Head ablation)
  for (const k of KINDS) doc.maps[k] = weights16(p.maps[k]);
  if (p.steps) {
    const s = p.steps;
    Object.assign(doc, {traj: true, n: s.n, ids: s.ids, pieces: s.pieces, forced: s.forced.map(Boolean),
      differs: (s.differs || []).map(Boolean),
      done: s.done.map(Boolean), greedy: s.greedy.map(i => s.vocab[i]), vocab: s.vocab, spans: s.spans,
      topk: {k: s.topk.k, ids: u16(s.topk.ids.b64), p: weights16(s.topk.p).data},
      texts: s.texts || null, text: s.text, ends: s.ends});
  } else {
    Object.assign(doc, {traj: false, n: p.target.length, pieces: p.target, forced: p.forced, cursor: p.cursor,
      differs: (p.differs || []).map(Boolean),
      next: p.next, doneNow: p.done, merged: !!p.words, rowLabels: p.rows || null, spans: p.words ? null : p.spans,
      step: p.step});
  }
  return doc;
}
// The translation shown at step t of a decoded trajectory: ends count UTF-16 code units, as String.slice does
function textAt(d, t) { return d.texts ? d.texts[t] : d.text.slice(0, d.ends[t]); }

// -- one head's payload (attention_lens/translate/inside_payload.py) -> what inside.js computes and draws -------------------------------
function headKey(p) { return `${p.ids.join(",")}|${p.kind}|${p.layer}|${p.head}`; }
function decodeHead(p) {
  const h = {p, kind: p.kind, layer: p.layer, head: p.head, dk: p.d_k, ids: p.ids.join(","), queries: p.queries,
             keys: p.keys, Tq: p.queries.length, Tk: p.keys.length, ablated: !!p.ablated, biased: !!p.biased,
             q: f32(p.q).data, k: f32(p.k).data, v: rows16(p.v), vn: f32(p.value_norms).data, mask: keyMask(p.mask),
             on: p.out_norms ? f32(p.out_norms).data : null,
             norms: {}, key: headKey(p)};
  // the library's numbers (transformer.interpret.inside): the panel reads them, it computes none of them
  h.raw = f32(p.raw).data; h.scores = f32(p.scores).data; h.out = f32(p.out).data;
  h.weights = visible(p.weights, h.mask); h.contribution = visible(p.contribution, h.mask);
  h.outLength = f32(p.out_lengths).data; h.contributionTotal = f32(p.contribution_totals).data;
  for (const kind of Object.keys(p.norms)) h.norms[kind] = unit16(p.norms[kind]);
  return h;
}

return {KINDS, decodeView, textAt, headKey, decodeHead};

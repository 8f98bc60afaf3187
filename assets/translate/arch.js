// attention-lens: the architecture strip beside the Translate view (attention_lens/translate/arch.py). Runs as the js_on_load of a
// gr.HTML (element, props, watch); props.value is {encoder_layers, decoder_layers, heads, d_model}, read from the
// loaded model. It draws the encoder and decoder stacks with their sublayers as the model computes them (pre-LN:
// x + sublayer(LayerNorm(x)), a last layer norm on each stack), highlights the kind and layer the Translate view
// (assets/shell/lens.js) shows, opens a clicked attention block there, and says where that map's queries, keys and
// values come from. Never quote a bare word that gr.HTML might take for an event name (see assets/atlas/atlas.js).
const NS = "http://www.w3.org/2000/svg";
const q = (role) => element.querySelector(`[data-role="${role}"]`);
const inst = {renders: 0, shown: null};
home.arch = inst;  // on this view's own element (#arch): docs/design.md
const W = 240;                                  // viewBox width; the SVG scales to its column
const COL = {enc: {x: 2, w: 100}, dec: {x: 122, w: 116}};
const NAMES = {encoder_self: "arch_self", decoder_self: "arch_masked", cross: "arch_cross"};  // attention_lens/texts [label]
const T = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // in the page's language

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function tip(g, s) { el("title", {}, g, s); }
// a text no wider than `width` (viewBox units): its font made smaller where its words need more ("normieren →
// Encoder-Ausgabe" ran past its box); measured once drawn (a strip not laid out yet measures 0 and keeps its size)
function fit(t, width) {
  const n = t.getComputedTextLength();
  if (!n && t.textContent) inst.unmeasured = true;  // drawn again once the strip is laid out (the observer below)
  if (n > width) t.setAttribute("font-size", (parseFloat(t.getAttribute("font-size")) * width / n).toFixed(2));
  return t;
}

// One sublayer row: [LN] [block] [⊕]. kind is an attention kind (clickable) or null for the feed-forward.
function row(svg, col, y, h, layer, kind, fs) {
  const x = col.x + 12, right = col.x + col.w;
  const ln = el("g", {"data-sublayer": "norm"}, svg);
  el("rect", {x, y, width: 16, height: h, rx: 2, class: "arch-ln"}, ln);
  el("text", {x: x + 8, y: y + h / 2, "font-size": fs - 2, class: "arch-t"}, ln, T("arch_ln"));
  tip(ln, T("arch_ln_tip"));
  const bx = x + 18, bw = right - 16 - bx;
  const g = el("g", kind ? {"data-kind": kind, "data-layer": layer, tabindex: 0, role: "button", class: "arch-attn"}
                         : {"data-sublayer": "ffn", class: "arch-ffn"}, svg);
  el("rect", {x: bx, y, width: bw, height: h, rx: 3}, g);
  fit(el("text", {x: bx + bw / 2, y: y + h / 2, "font-size": fs, class: "arch-t"}, g, T(kind ? NAMES[kind] : "arch_ffn")),
      bw - 2);
  tip(g, kind ? T("arch_block_tip", {l: layer + 1, what: T(`arch_long_${kind}`)}) : T("arch_ffn_tip", {l: layer + 1}));
  const add = el("g", {"data-sublayer": "residual"}, svg);
  el("circle", {cx: right - 7, cy: y + h / 2, r: Math.min(5, h / 2 - 1), class: "arch-add"}, add);
  el("text", {x: right - 7, y: y + h / 2, "font-size": fs, class: "arch-t"}, add, "+");
  tip(add, T("arch_add_tip"));
  return g;
}

// A stack: a heading, L layer boxes of sublayer rows, the last layer norm. Returns the y of each row by kind.
function stack(svg, col, title, input, L, kinds, h, fs, out) {
  fit(el("text", {x: col.x + col.w / 2, y: 8, "font-size": fs + 1, class: "arch-t arch-head"}, svg, title), col.w);
  fit(el("text", {x: col.x + col.w / 2, y: 20, "font-size": fs - 1, class: "arch-t arch-sub"}, svg, input), col.w);
  let y = 28;
  const rows = {};
  for (let l = 0; l < L; l++) {
    const n = kinds.length + 1, bh = n * h + (n - 1) * 2 + 6;
    el("rect", {x: col.x, y, width: col.w, height: bh, rx: 4, class: "arch-layer"}, svg);
    el("text", {x: col.x + 6, y: y + 3 + h / 2, "font-size": fs - 1, class: "arch-t arch-sub"}, svg, String(l + 1));
    [...kinds, null].forEach((kind, i) => {
      const ry = y + 3 + i * (h + 2);
      row(svg, col, ry, h, l, kind, fs);
      if (kind) (rows[kind] = rows[kind] || []).push(ry + h / 2);
    });
    y += bh + 4;
  }
  const last = el("g", {"data-sublayer": "final-norm"}, svg);
  el("rect", {x: col.x, y, width: col.w, height: h, rx: 3, class: "arch-ln"}, last);
  fit(el("text", {x: col.x + col.w / 2, y: y + h / 2, "font-size": fs - 1, class: "arch-t"}, last, out), col.w - 4);
  rows.out = y + h / 2;
  return {rows, bottom: y + h};
}

// Every block a target of 24 px at least (WCAG 2.5.8), 44 px where the pointer is a finger (2.5.5; assets/translate/layout.css
// does the same for the page's other controls): its height in the viewBox from the width the SVG is drawn at.
const COARSE = window.matchMedia("(pointer: coarse)");
const scaleNow = (svg) => (svg.clientWidth || Math.min(420, innerWidth - 24)) / W;
function render() {
  const a = props.value, svg = q("svg");
  if (!a || !a.encoder_layers || !a.decoder_layers) return;
  svg.textContent = ""; inst.unmeasured = false;
  const Le = a.encoder_layers, Ld = a.decoder_layers;
  inst.scale = scaleNow(svg);
  const h = Math.max(9, Math.min(15, Math.floor(190 / (3 * Ld + 1.5 * Ld))), Math.ceil((COARSE.matches ? 44 : 24) / inst.scale)),
        fs = Math.max(7, Math.min(10, h - 4));
  const enc = stack(svg, COL.enc, "Encoder", T("arch_source_in"), Le, ["encoder_self"], h, fs, T("arch_encoder_out"));
  const dec = stack(svg, COL.dec, "Decoder", T("arch_target_in"), Ld, ["decoder_self", "cross"], h, fs, T("arch_decoder_out"));
  // the encoder's output feeds every decoder layer's cross-attention (its keys and values)
  const gx = COL.dec.x - 8, ys = dec.rows.cross, top = Math.min(enc.rows.out, ...ys), bot = Math.max(enc.rows.out, ...ys);
  const mem = el("g", {class: "arch-mem"}, svg);
  el("path", {d: `M${COL.enc.x + COL.enc.w} ${enc.rows.out} H${gx} M${gx} ${top} V${bot}`}, mem);
  for (const y of ys) el("path", {d: `M${gx} ${y} H${COL.dec.x - 1} M${COL.dec.x - 4} ${y - 2.5} L${COL.dec.x - 1} ${y} L${COL.dec.x - 4} ${y + 2.5}`}, mem);
  tip(mem, T("arch_mem_tip"));
  svg.setAttribute("viewBox", `0 0 ${W} ${Math.ceil(Math.max(enc.bottom, dec.bottom) + 2)}`);
  svg.querySelectorAll("[data-kind]").forEach(g => {
    const open = () => select(g.dataset.kind, +g.dataset.layer);
    g.addEventListener("click", open);
    g.addEventListener("keydown", e => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); open(); } });
  });
  inst.shown = null;
  follow();
  element.dataset.renders = String(++inst.renders);
}

// -- the Translate view: follow what it shows, open what is clicked --------------------------------------------
const lens = () => find("attention", "lens");  // the attention view (assets/shell/lens.js), on its element
function select(kind, layer) {
  const v = lens(); if (!v || !v.select) return;
  v.select(kind, layer, v.state.head);    // the head stays; drawn now, or with the next sentence
  follow();
}
function show(kind, layer, head) {
  const key = `${kind}|${layer}|${head}`;
  if (inst.shown === key) return;
  inst.shown = key;
  element.querySelectorAll(".arch-on").forEach(g => g.classList.remove("arch-on"));
  const g = element.querySelector(`[data-kind="${kind}"][data-layer="${layer}"]`);
  if (g) g.classList.add("arch-on");
  q("qkv").textContent = where(kind, layer + 1, head);
}
function where(kind, l, head) {           // the block's text from the page's catalogue (attention_lens/shell/texts/en.toml "arch.<kind>")
  const a = props.value || {}, h = head === "mean" ? T("arch_mean") : T("arch_head_of", {h: head + 1, n: a.heads});
  const [stack, pieces] = kind === "encoder_self" ? ["encoder", "source"] : ["decoder", "target"];
  const from = l === 1 ? T(`arch_from_${pieces}`) : T(`arch_from_${stack}`, {n: l - 1});
  const said = find("explain_box", "explain")?.t(`arch.${kind}`) ?? kind;
  return said.replace("{l}", String(l)).replace("{h}", h).replace("{from}", from);
}
document.addEventListener("lens-explain", () => { inst.shown = null; render(); });  // the other version (explain.js)
function follow() {
  const v = lens(); if (!v || !v.state) return;
  show(v.state.kind, v.state.layer, v.state.head);
}
let watched = null;
function watchView() {                    // lens.js writes data-kind/-layer/-head on its element at every draw
  const box = document.getElementById("attention");
  if (!box || !lens()) { setTimeout(watchView, 200); return; }
  if (watched === box) return;
  watched = box;
  new MutationObserver(follow).observe(box, {subtree: true, attributes: true,
                                             attributeFilter: ["data-kind", "data-layer", "data-head"]});
  follow();
}
inst.where = where;
// drawn again when its width changes enough to change a block's height in px (a phone turned, the column resized)
new ResizeObserver(() => {
  const svg = q("svg");
  if (svg.clientWidth && (inst.unmeasured || Math.abs(scaleNow(svg) - inst.scale) > 0.02)) render(); })
  .observe(q("svg"));
COARSE.addEventListener("change", render);
render();
watchView();
watch("value", render);

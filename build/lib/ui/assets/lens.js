// attention-lens: draws the attention view from the compact payload in props.value.
// Runs as the js_on_load of a gr.HTML component: `element`, `props`, `trigger`, `watch` are given.
// Every token is set with textContent or escaped before Plotly sees it: user text is never HTML.
const KINDS = ["encoder_self", "decoder_self", "cross"];
const TITLES = {encoder_self: "Encoder self-attention", decoder_self: "Decoder self-attention (masked)",
                cross: "Cross-attention"};
const SPECIAL = new Set(["<s>", "</s>", "<pad>"]);
const COLORSCALE = "Viridis";
const q = (role) => element.querySelector(`[data-role="${role}"]`);
const st = {kind: "cross", layer: 0, head: 0, hide: false, p: null, maps: null};
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
// One instance per gr.HTML view; the main one (#attention) is also window.__lens for tests/benchmarks.
let root = element;
while (root && (!root.id || root.id.startsWith("html-"))) root = root.parentElement;
const rootId = root ? root.id : "attention";
const inst = {renders: 0, state: st, drawMs: 0};
window.__lensViews = window.__lensViews || {};
window.__lensViews[rootId] = inst;
if (rootId === "attention") window.__lens = inst;

function decode(d) {
  const bin = atob(d.b64), n = bin.length >> 1, out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8)) / 65535;
  return {shape: d.shape, data: out};
}
function matrix(m, l, h) {                      // (L, H, T, S) -> rows of T arrays of S
  const [, H, T, S] = m.shape, base = (l * H + h) * T * S, rows = [];
  for (let t = 0; t < T; t++) rows.push(Array.from(m.data.subarray(base + t * S, base + (t + 1) * S)));
  return rows;
}
function meanHeads(m, l) {
  const [, H] = m.shape; let acc = null;
  for (let h = 0; h < H; h++) {
    const r = matrix(m, l, h);
    acc = acc ? acc.map((row, i) => row.map((v, j) => v + r[i][j])) : r;
  }
  return acc.map(row => row.map(v => v / H));
}
function axes(kind, p) {
  const src = p.source, tgt = p.target;
  const rows = p.rows ? p.rows.map(esc)
    : tgt.map((t, i) => `${esc(t)} → ${esc(i + 1 < tgt.length ? tgt[i + 1] : (p.next ?? "?"))}`);
  if (kind === "encoder_self") return {x: src, y: src.map(esc), xraw: src};
  if (kind === "decoder_self") return {x: tgt, y: rows, xraw: tgt};
  return {x: src, y: rows, xraw: src};
}
function hideSpecials(z, xraw) {                // drop <s>/</s> key columns, renormalise rows
  const keep = xraw.map((t, j) => SPECIAL.has(t) ? -1 : j).filter(j => j >= 0);
  const zz = z.map(row => { const r = keep.map(j => row[j]); const s = r.reduce((a, b) => a + b, 0);
                            return s > 0 ? r.map(v => v / s) : r; });
  return {z: zz, keep};
}
function view(kind, l, h) {
  const m = st.maps[kind], p = st.p, ax = axes(kind, p);
  let z = h === "mean" ? meanHeads(m, l) : matrix(m, l, h), xlab = ax.x, keep = ax.x.map((_, j) => j);
  if (st.hide) { const r = hideSpecials(z, ax.xraw); z = r.z; keep = r.keep; xlab = keep.map(j => ax.x[j]); }
  return {z, x: xlab.map(esc), y: ax.y};
}
function bigFigure() {
  const {kind, layer, head} = st, v = view(kind, layer, head), S = v.x.length, T = v.y.length;
  const text = v.z.map((row, i) => row.map((w, j) => `query ${v.y[i]}<br>key ${v.x[j]}<br>weight ${w.toFixed(3)}`));
  const zmax = Math.max(1e-6, ...v.z.map(r => Math.max(...r)));
  const layout = {
    title: {text: `${TITLES[kind]} · layer ${layer + 1} · ${head === "mean" ? "mean of heads" : "head " + (head + 1)}`,
            font: {size: 14}},
    xaxis: {tickmode: "array", tickvals: [...Array(S).keys()], ticktext: v.x, tickangle: -60, title: {text: "keys"},
            showgrid: false, zeroline: false, automargin: true},
    yaxis: {tickmode: "array", tickvals: [...Array(T).keys()], ticktext: v.y, autorange: "reversed",
            title: {text: "queries"}, showgrid: false, zeroline: false, automargin: true},
    margin: {l: 10, r: 10, t: 36, b: 10}, height: Math.max(380, 140 + 22 * T), shapes: []};
  if (kind !== "encoder_self")
    layout.shapes.push({type: "rect", x0: -0.5, x1: S - 0.5, y0: st.p.cursor - 0.5, y1: st.p.cursor + 0.5,
                        line: {color: "#ff4136", width: 2}});
  return {data: [{type: "heatmap", z: v.z, x: [...Array(S).keys()], y: [...Array(T).keys()], text,
                  hoverinfo: "text", colorscale: COLORSCALE, zmin: 0, zmax}], layout};
}
function gridFigure() {
  // ONE heatmap trace holding every layer x head panel, separated by empty (NaN) rows/columns:
  // far cheaper to draw than L*H subplots, and every panel shares one colour scale.
  const m = st.maps[st.kind], [L, H] = m.shape;
  const first = view(st.kind, 0, 0), T = first.y.length, S = first.x.length;
  const rows = L * (T + 1) - 1, cols = H * (S + 1) - 1;
  const z = Array.from({length: rows}, () => new Array(cols).fill(null));
  const text = Array.from({length: rows}, () => new Array(cols).fill(""));
  let zmax = 1e-6;
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
    const v = l === 0 && h === 0 ? first : view(st.kind, l, h);
    for (let i = 0; i < T; i++) for (let j = 0; j < S; j++) {
      const w = v.z[i][j], r = l * (T + 1) + i, c = h * (S + 1) + j;
      z[r][c] = w; if (w > zmax) zmax = w;
      text[r][c] = `layer ${l + 1} · head ${h + 1}<br>${v.y[i]}<br>key ${v.x[j]}<br>weight ${w.toFixed(3)}`;
    }
  }
  const shapes = [], annotations = [];
  const hs = st.head === "mean" ? [...Array(H).keys()] : [st.head];
  for (const h of hs) shapes.push({type: "rect", x0: h * (S + 1) - 0.5, x1: h * (S + 1) + S - 0.5,
    y0: st.layer * (T + 1) - 0.5, y1: st.layer * (T + 1) + T - 0.5, line: {color: "#ff4136", width: 2}});
  for (let l = 0; l < L; l++) annotations.push({x: -0.5, y: l * (T + 1) + (T - 1) / 2, xanchor: "right",
    text: "L" + (l + 1), showarrow: false, font: {size: 11}});
  for (let h = 0; h < H; h++) annotations.push({x: h * (S + 1) + (S - 1) / 2, y: -0.5, yanchor: "bottom",
    text: "H" + (h + 1), showarrow: false, font: {size: 11}});
  return {data: [{type: "heatmap", z, text, hoverinfo: "text", colorscale: COLORSCALE, zmin: 0, zmax,
                  showscale: false, hoverongaps: false, xgap: 0, ygap: 0}],
          layout: {margin: {l: 26, r: 4, t: 18, b: 4}, height: Math.max(260, Math.min(640, 70 + L * (T + 1) * 9)),
                   xaxis: {visible: false, fixedrange: true}, yaxis: {visible: false, autorange: "reversed", fixedrange: true},
                   shapes, annotations, meta: {layers: L, heads: H, panels: L * H, T, S}}};
}
function fillSelect(sel, n, withMean, value) {
  const want = [...Array(n).keys()].map(String).concat(withMean ? ["mean"] : []);
  if ([...sel.options].map(o => o.value).join() !== want.join()) {
    sel.textContent = "";
    for (const v of want) { const o = document.createElement("option"); o.value = v;
      o.textContent = v === "mean" ? "mean" : String(+v + 1); sel.appendChild(o); }
  }
  sel.value = String(value);
}
function drawTokens() {
  const box = q("target"), p = st.p; box.textContent = "";
  p.target.forEach((t, i) => { const s = document.createElement("span"); s.className = "lens-tok";
    if (i === p.cursor && i > 0) s.classList.add("newest"); if (p.forced[i]) s.classList.add("forced");
    if (SPECIAL.has(t)) s.classList.add("special"); s.textContent = t; s.title = `position ${i}`; box.appendChild(s); });
  const mode = {reference: "Teacher-forced reference", beam: "Beam hypothesis (teacher-forced)",
                ablated: "Heads switched off"}[p.mode] || `Step ${p.step ?? p.cursor}`;
  const unit = p.words ? "words" : "pieces";
  q("status").textContent = `${mode} · ${p.source.length} source ${unit} · ${p.target.length} target ${unit}` +
    (p.done ? " · finished" : (p.next ? ` · next (greedy): ${p.next}` : ""));
}
function plotted(div, fig, cfg) { return Plotly.react(div, fig.data, fig.layout, cfg); }
function render() {
  inst.recvAt = performance.now();
  const p = props.value;
  if (!p || !p.source) { st.p = null; q("status").textContent = "Type a German sentence and press Start.";
    q("target").textContent = ""; if (window.Plotly) { Plotly.purge(q("big")); Plotly.purge(q("grid")); }
    element.dataset.renders = String(++inst.renders); return; }
  st.p = p;
  st.maps = {encoder_self: decode(p.maps.encoder_self), decoder_self: decode(p.maps.decoder_self),
             cross: decode(p.maps.cross)};
  drawAll();
}
function drawAll() {
  if (!st.p || !window.Plotly) return;
  if (!st.maps[st.kind]) st.kind = "cross";
  const [L, H] = st.maps[st.kind].shape;
  st.layer = Math.min(st.layer, L - 1); if (st.head !== "mean") st.head = Math.min(st.head, H - 1);
  fillSelect(q("layer"), L, false, st.layer); fillSelect(q("head"), H, true, st.head);
  element.querySelectorAll("[data-kind]").forEach(b => b.classList.toggle("active", b.dataset.kind === st.kind));
  q("grid-title").textContent = `${TITLES[st.kind]}: all ${L} layers × ${H} heads (click a panel)`;
  drawTokens();
  const cfg = {displaylogo: false, responsive: true, toImageButtonOptions: {filename: "attention"}};
  const t0 = performance.now();
  Promise.all([plotted(q("big"), bigFigure(), cfg),
               plotted(q("grid"), gridFigure(), {displayModeBar: false, responsive: true})]).then(() => {
    inst.drawMs = performance.now() - t0;
    element.dataset.renders = String(++inst.renders);
    element.dataset.kind = st.kind; element.dataset.layer = st.layer; element.dataset.head = st.head;
  });
}
let plotlySource = null;
async function exportHtml() {
  const big = q("big"); if (!big.data) return;
  if (plotlySource === null) {
    const tag = [...document.querySelectorAll("script[src]")].find(s => /plotly/.test(s.src));
    plotlySource = tag ? await (await fetch(tag.src)).text() : "";
  }
  const fig = JSON.stringify({data: big.data, layout: big.layout}).replace(/</g, "\\u003c");
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>attention-lens figure</title></head>` +
    `<body><div id="fig" style="width:100%;height:90vh"></div><script>${plotlySource.replace(/<\/script/gi, "<\\/script")}</` +
    `script><script>const f=${fig};Plotly.newPlot("fig",f.data,f.layout);</` + `script></body></html>`;
  const a = document.createElement("a"); a.href = URL.createObjectURL(new Blob([html], {type: "text/html"}));
  a.download = "attention.html"; document.body.appendChild(a); a.click(); a.remove();
}
q("png").addEventListener("click", () => { if (q("big").data) Plotly.downloadImage(q("big"), {format: "png", filename: "attention", scale: 2}); });
q("html").addEventListener("click", exportHtml);
element.querySelectorAll("[data-kind]").forEach(b => b.addEventListener("click", () => {
  if (st.maps && st.maps[b.dataset.kind]) { st.kind = b.dataset.kind; drawAll(); } }));
q("layer").addEventListener("change", e => { st.layer = +e.target.value; drawAll(); });
q("head").addEventListener("change", e => { st.head = e.target.value === "mean" ? "mean" : +e.target.value; drawAll(); });
q("hide").addEventListener("change", e => { st.hide = e.target.checked; drawAll(); });
function bindGridClick() {
  const g = q("grid");
  if (!g.on || g.__bound) return; g.__bound = true;
  g.on("plotly_click", ev => { const meta = g.layout.meta, pt = ev.points[0];
    const l = Math.floor(pt.y / (meta.T + 1)), h = Math.floor(pt.x / (meta.S + 1));
    if (l >= 0 && l < meta.layers && h >= 0 && h < meta.heads) { st.layer = l; st.head = h; drawAll(); } });
}
function ready() { render(); const g = q("grid"); const t = setInterval(() => { if (g.on) { bindGridClick(); clearInterval(t); } }, 50); }
if (window.Plotly) ready(); else { const t = setInterval(() => { if (window.Plotly) { clearInterval(t); ready(); } }, 30); }
watch("value", () => { render(); bindGridClick(); });

// attention-lens: draws the attention view from the compact payload in props.value.
// Runs as the js_on_load of a gr.HTML component: `element`, `props`, `trigger`, `watch` are given.
// Every token is set with textContent or escaped before Plotly sees it: user text is never HTML.
const KINDS = ["encoder_self", "decoder_self", "cross"];
const TITLES = {encoder_self: "Encoder self-attention", decoder_self: "Decoder self-attention (masked)",
                cross: "Cross-attention"};
const SPECIAL = new Set(["<s>", "</s>", "<pad>"]);
const COLORSCALE = "Viridis";
const q = (role) => element.querySelector(`[data-role="${role}"]`);
const st = {kind: "cross", layer: 0, head: 0, hide: false, doc: null, enc: null, p: null, maps: null};
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
window.__lens = {renders: 0, state: st};

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
  const rows = tgt.map((t, i) => `${esc(t)} → ${esc(i + 1 < tgt.length ? tgt[i + 1] : (p.next ?? "?"))}`);
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
  const m = st.maps[st.kind], [L, H] = m.shape, data = [], gap = 0.015;
  const layout = {margin: {l: 28, r: 4, t: 4, b: 4}, showlegend: false, height: Math.max(260, 110 * L),
                  annotations: []};
  let zmax = 1e-6; for (const v of m.data) if (v > zmax) zmax = v;
  for (let l = 0; l < L; l++) for (let h = 0; h < H; h++) {
    const i = l * H + h + 1, v = view(st.kind, l, h), xa = "x" + i, ya = "y" + i;
    data.push({type: "heatmap", z: v.z, xaxis: xa, yaxis: ya, colorscale: COLORSCALE, zmin: 0,
               zmax: st.hide ? 1 : zmax, showscale: false, name: `L${l + 1} H${h + 1}`,
               hovertemplate: `layer ${l + 1} · head ${h + 1}<br>weight %{z:.3f}<extra></extra>`});
    const x0 = h / H, y1 = 1 - l / L;
    layout["xaxis" + i] = {domain: [x0 + gap, x0 + 1 / H - gap], showticklabels: false, anchor: ya, fixedrange: true};
    layout["yaxis" + i] = {domain: [y1 - 1 / L + gap, y1 - gap], showticklabels: false, autorange: "reversed",
                           anchor: xa, fixedrange: true};
    if (l === st.layer && (h === st.head || st.head === "mean"))
      layout.annotations.push({xref: xa + " domain", yref: ya + " domain", x: 0.5, y: 1.0, text: "▼",
                               showarrow: false, font: {color: "#ff4136", size: 10}});
  }
  for (let l = 0; l < L; l++)
    layout.annotations.push({xref: "paper", yref: "paper", x: 0, y: 1 - (l + 0.5) / L, xanchor: "right",
                             text: "L" + (l + 1), showarrow: false, font: {size: 11}});
  return {data, layout};
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
  const mode = p.mode === "reference" ? "Teacher-forced reference" : `Step ${p.cursor}`;
  q("status").textContent = `${mode} · ${p.source.length} source pieces · ${p.target.length} target pieces` +
    (p.done ? " · finished" : (p.next ? ` · next (greedy): ${p.next}` : ""));
}
function plotted(div, fig, cfg) { return Plotly.react(div, fig.data, fig.layout, cfg); }
function render() {
  const p = props.value;
  if (!p || !p.source) { st.p = null; q("status").textContent = "Type a German sentence and press Start.";
    q("target").textContent = ""; if (window.Plotly) { Plotly.purge(q("big")); Plotly.purge(q("grid")); }
    element.dataset.renders = String(++window.__lens.renders); return; }
  if (p.maps.encoder_self) { st.enc = decode(p.maps.encoder_self); st.doc = p.doc; }
  st.p = p;
  st.maps = {encoder_self: st.doc === p.doc ? st.enc : null, decoder_self: decode(p.maps.decoder_self),
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
  Promise.all([plotted(q("big"), bigFigure(), cfg),
               plotted(q("grid"), gridFigure(), {displayModeBar: false, responsive: true})]).then(() => {
    element.dataset.renders = String(++window.__lens.renders);
    element.dataset.kind = st.kind; element.dataset.layer = st.layer; element.dataset.head = st.head;
  });
}
element.querySelectorAll("[data-kind]").forEach(b => b.addEventListener("click", () => {
  if (st.maps && st.maps[b.dataset.kind]) { st.kind = b.dataset.kind; drawAll(); } }));
q("layer").addEventListener("change", e => { st.layer = +e.target.value; drawAll(); });
q("head").addEventListener("change", e => { st.head = e.target.value === "mean" ? "mean" : +e.target.value; drawAll(); });
q("hide").addEventListener("change", e => { st.hide = e.target.checked; drawAll(); });
function bindGridClick() {
  const g = q("grid");
  if (!g.on || g.__bound) return; g.__bound = true;
  g.on("plotly_click", ev => { const cn = ev.points[0].curveNumber, H = st.maps[st.kind].shape[1];
    st.layer = Math.floor(cn / H); st.head = cn % H; drawAll(); });
}
function ready() { render(); const g = q("grid"); const t = setInterval(() => { if (g.on) { bindGridClick(); clearInterval(t); } }, 50); }
if (window.Plotly) ready(); else { const t = setInterval(() => { if (window.Plotly) { clearInterval(t); ready(); } }, 30); }
watch("value", () => { render(); bindGridClick(); });

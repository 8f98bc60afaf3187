// attention-lens, the attention view (assets/shell/lens.js): the big map exported as a figure, PNG or a standalone
// HTML page, through the vendored plotly.js, loaded on the first export only. Labels are escaped for Plotly: user
// text is never HTML. A part of the view's script (attention_lens/shell/components.py `script`, LENS_PARTS): the body of a function of
// `view`, in a scope of its own; what it takes from the view and the parts before it is named just below, what it
// gives is returned at the end (lens.js puts it in `view`).
const {st, q, lensRoot, cv, RED, axisLine, axisWords, languagesOf} = view;
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

function figure() {                       // the big view as a Plotly figure (labels escaped): for export only
  const b = cv.big, p = b.p, x = p.cols.map(esc), y = p.rows.map(esc), z = [], text = [];
  for (let i = 0; i < p.R; i++) {
    z.push(Array.from(p.z.subarray(i * p.stride, i * p.stride + p.C)));
    text.push(z[i].map((w, j) => `query ${y[i]}<br>key ${x[j]}<br>weight ${w.toFixed(3)}`));
  }
  const langs = languagesOf(st.doc), [rows, cols] = axisWords(st.kind, langs);  // what rows and columns are
  const layout = {title: {text: `${esc(q("title").textContent)}<br><sup>${esc(axisLine(st.kind, langs))}</sup>`,
                          font: {size: 14}},
    xaxis: {tickmode: "array", tickvals: [...x.keys()], ticktext: x, tickangle: -60, title: {text: `keys: ${esc(cols)} \u2192`},
            showgrid: false, zeroline: false, automargin: true},
    yaxis: {tickmode: "array", tickvals: [...y.keys()], ticktext: y, autorange: "reversed",
            title: {text: `queries: ${esc(rows)}`}, showgrid: false, zeroline: false, automargin: true},
    margin: {l: 10, r: 10, t: 56, b: 10}, width: Math.max(500, 200 + 24 * p.C), height: Math.max(380, 140 + 22 * p.R), shapes: []};
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

return {exportHtml, exportPng};

// attention-lens head atlas: every head of the three kinds coloured by the BLEU lost when it alone is switched
// off, labelled with its role; the pruning curve beside. Runs as the js_on_load of a gr.HTML (element, props).
// Clicking a head opens it in the Translate tab's view (no request: the view already holds the maps).
const KINDS = ["encoder_self", "decoder_self", "cross"];
const T = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label], the page's language
const TITLES = new Proxy({}, {get: (o, kind) => T(`kind_short_${kind}`)});  // "Encoder self", ... in the page's language
const roleName = (r, short) => { const k = `role_${short ? "short_" : ""}${r}`, s = T(k); return s === k ? r : s; };
// The cells' labels, the hover texts and the legend come from Python (attention_lens/atlas_tab.atlas_view), generated from
// the rule table in transformer/train/atlas.py. Never write a role such as self in quotes here: gr.HTML turns a quoted
// word of js_on_load that names a missing attribute into an event trigger in the config, which Gradio then fails
// to copy on every page load (tests/test_app.py).
const q = (role) => element.querySelector(`[data-role="${role}"]`);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
const inst = {renders: 0};
const mode = () => (find("explain_box", "explain")?.mode ?? "plain");
const lang = () => (find("explain_box", "explain")?.lang ?? "en");  // the page's language (assets/shell/i18n.js)
const tx = (a) => (a.texts_by_lang && a.texts_by_lang[lang()]) || a.texts;  // attention_lens/atlas/tab.py: in each language
function both(el, said) {                 // {plain, detail} as two spans; the page's CSS shows the one asked for
  el.textContent = "";
  for (const m of ["plain", "detail"]) {
    const s = document.createElement("span");
    s.className = `x-${m}`; s.textContent = said[m]; el.append(s);
  }
}
home.atlas = inst;  // on this view's own element (#atlas): docs/design.md
const kit = () => find("lesson", "lesson")?.kit;  // the tabs' helpers (assets/shell/views.js)

// A phone: the three kinds one under the other, each the screen's width, the cells' words 12 px
const NARROW = window.matchMedia("(max-width: 599px)");
function gridFigure(a) {
  const heads = a.heads, data = [], narrow = NARROW.matches,
    layout = {margin: {l: 40, r: 10, t: 30, b: 30}, height: 300, annotations: [], showlegend: false};
  const H = 1 + Math.max(...heads.map(h => h.head)), gap = narrow ? 0.09 : 0.04, w = (1 - 2 * gap) / 3;
  const zmax = Math.max(1e-6, ...heads.map(h => h.bleu_drop)), Ls = KINDS.map(k => 1 + Math.max(...heads.filter(h => h.kind === k).map(h => h.layer)));
  if (narrow) Object.assign(layout, {margin: {l: 34, r: 54, t: 44, b: 24}, height: 50 + KINDS.length * 30 + Ls.reduce((x, y) => x + y) * 40});
  KINDS.forEach((kind, i) => {
    const mine = heads.filter(h => h.kind === kind), L = Ls[i];
    const z = [...Array(L)].map(() => Array(H).fill(null)), text = z.map(r => r.map(() => "")),
          hover = z.map(r => r.map(() => "")), custom = z.map(r => r.map(() => null));
    for (const h of mine) {
      z[h.layer][h.head] = h.bleu_drop; text[h.layer][h.head] = esc(roleName(h.role, true));
      custom[h.layer][h.head] = [kind, h.layer, h.head];
      hover[h.layer][h.head] = lang() === "en" ? h.hover : h.hovers[lang()];  // attention_lens/atlas/tab.py hover_text, per language
    }
    const ax = i ? String(i + 1) : "", dom = [i * (w + gap), i * (w + gap) + w];
    data.push({type: "heatmap", z, text, texttemplate: "%{text}", hovertext: hover, hoverinfo: "text", customdata: custom,
               hoverlabel: {align: "left"}, colorscale: "Reds", zmin: 0, zmax, showscale: i === 2, xaxis: "x" + ax, yaxis: "y" + ax, xgap: 2, ygap: 2,
               colorbar: {title: {text: T("atlas_drop")}, thickness: 10}, ...(narrow ? {textfont: {size: 12}} : {})});
    const xa = {tickmode: "array", tickvals: [...Array(H).keys()], ticktext: [...Array(H).keys()].map(h => "H" + (h + 1)), fixedrange: true};
    const ya = {tickmode: "array", tickvals: [...Array(L).keys()], ticktext: [...Array(L).keys()].map(l => "L" + (l + 1)),
                autorange: "reversed", fixedrange: true, anchor: "x" + ax};
    if (narrow) {                         // stacked: x across the whole width, y a band of its own, the title above it
      const top = 1 - dom[0], bottom = 1 - dom[1];
      Object.assign(xa, {anchor: "y" + ax, side: "top", tickfont: {size: 11}});
      Object.assign(ya, {domain: [bottom, top], tickfont: {size: 11}});
      data[i].colorbar = {title: {text: T("atlas_drop"), side: "right", font: {size: 12}}, thickness: 10, tickfont: {size: 11}};
      layout.annotations.push({text: TITLES[kind], x: 0, xanchor: "left", y: top, yanchor: "bottom", yshift: 18, xref: "paper",
                               yref: "paper", showarrow: false, font: {size: 13}});
    } else {
      xa.domain = dom;
      layout.annotations.push({text: TITLES[kind], x: i * (w + gap) + w / 2, y: 1.08, xref: "paper", yref: "paper",
                               showarrow: false, font: {size: 13}});
    }
    layout["xaxis" + ax] = xa; layout["yaxis" + ax] = ya;
  });
  const pk = inst.picked, pi = pk ? KINDS.indexOf(pk.kind) : -1;
  if (pi >= 0) {                          // the head picked (clicked, or a link's atlas_head): outlined
    const ax = pi ? String(pi + 1) : "";
    layout.shapes = [{type: "rect", xref: "x" + ax, yref: "y" + ax, x0: pk.head - 0.5, x1: pk.head + 0.5,
                      y0: pk.layer - 0.5, y1: pk.layer + 0.5, line: {color: "#2563eb", width: 3}}];
  }
  return {data, layout};
}
function curveFigure(a) {
  const p = a.pruning || [];
  const labels = p.map(r => r.removed ? `${TITLES[r.removed[0]]} L${r.removed[1] + 1} H${r.removed[2] + 1}` : T("atlas_intact"));
  return {data: [{type: "scatter", mode: "lines+markers", x: p.map(r => r.heads_off), y: p.map(r => r.bleu),
                  text: labels, hovertemplate: T("atlas_hover") + "<extra></extra>"}],
          layout: {margin: {l: 50, r: 10, t: NARROW.matches ? 30 : 56, b: 40}, height: NARROW.matches ? 300 : 326,
                   // the title under the buttons' row, not on it (a phone shows no buttons)
                   title: {text: a.texts ? tx(a).curve_title[mode()] : "Pruning: least important heads first",
                           font: {size: 13}, y: 1, yref: "paper", yanchor: "bottom", pad: {b: 6}},
                   xaxis: {title: {text: T("atlas_off")}},
                   yaxis: {title: {text: T("atlas_bleu_axis", {set: esc(a.eval_short || a.split || "val"), n: a.sentences})}},
                   shapes: a.bleu !== undefined ? [{type: "line", xref: "paper", x0: 0, x1: 1, y0: a.bleu - 1, y1: a.bleu - 1,
                                                   line: {dash: "dot", color: "#888"}}] : []}};
}
function legendHtml(a) {
  const kinds = (ks) => ks.length === KINDS.length ? T("atlas_all_kinds") : ks.map(k => TITLES[k]).join(", ");
  const title = a.texts ? tx(a).legend : {detail: "<b>Roles</b> (after Voita et al. 2019; a head takes the rule it passes by most):"};
  const detail = `<div class="x-detail">${title.detail}<table>` +
    (a.legend || []).map(r => `<tr><td><b>${esc(roleName(r.role, true))}</b></td><td>${esc(roleName(r.role))}</td><td>${esc(tx(a).roles && tx(a).roles.detail ? tx(a).roles.detail[r.role] : r.description)}</td>` +
                             `<td>${esc((r.rules || {})[lang()] || r.rule)}</td><td>${esc(kinds(r.kinds))}</td></tr>`).join("") + "</table></div>";
  if (!a.texts) return detail;            // the plain one: what each label in the grid means
  return `<div class="x-plain">${title.plain}<table>` + (a.legend || []).map(r =>
    `<tr><td><b>${esc(roleName(r.role, true))}</b></td><td>${esc(tx(a).roles ? tx(a).roles.plain[r.role] : r.plain || r.description)}</td></tr>`).join("") + "</table></div>" + detail;
}
function openHead(kind, layer, head) {
  const lens = find("attention", "lens");  // the attention view, on its element
  if (lens && lens.select) lens.select(kind, layer, head);
  const tab = document.querySelector('#tabs button[role=tab][data-tab-id="translate"]');  // gr.Tab(id="translate")
  if (tab) tab.click();
  if (lens && lens.reveal) lens.reveal();  // the Translate view scrolled so that the opened head is in sight
  inst.opened = inst.picked = {kind, layer, head};
}
function render() {
  const a = props.value;
  if (!a || !a.heads || !window.Plotly) return;
  const n = a.prunable_within_1_bleu, on = a.eval_set || `${a.split}, ${a.sentences} sentences`;
  const d = `${a.heads.length} heads · intact BLEU ${a.bleu} (greedy) on ${on}` +
    (n !== undefined ? ` · ${n} head${n === 1 ? "" : "s"} can go for ≤ 1 BLEU` : "");
  const said = a.texts ? tx(a).summary : {plain: d, detail: d};
  both(q("summary"), a.rules_note ? {plain: said.plain + " " + a.rules_note, detail: said.detail + " · " + a.rules_note} : said);
  both(q("note"), a.texts ? tx(a).note : {plain: a.pruning_note || "", detail: a.pruning_note || ""});
  q("legend").innerHTML = legendHtml(a);
  const g = gridFigure(a), c = curveFigure(a), cfg = {displaylogo: false, responsive: true, displayModeBar: !NARROW.matches};
  g.layout.separators = c.layout.separators = find("explain_box", "explain")?.separators() ?? ".,";  // 0,5 in German
  Promise.all([Plotly.react(q("grid"), g.data, g.layout, cfg), Plotly.react(q("curve"), c.data, c.layout, cfg)]).then(() => {
    const grid = q("grid");
    if (!grid.__bound) {
      grid.__bound = true;
      grid.on("plotly_click", ev => { const d = ev.points[0].customdata; if (d) openHead(d[0], d[1], d[2]); });
    }
    element.dataset.renders = String(++inst.renders); inst.renders = +element.dataset.renders;
  });
}
inst.open = openHead;
// the head picked as a link parameter, atlas_head=c2.3 (e, d, c: the kind; layer and head 1-based; assets/shell/views.js)
const LETTER = {encoder_self: "e", decoder_self: "d", cross: "c"};
inst.linkView = {  // assets/shell/views.js finds it here
  ready: () => !!(props.value && props.value.heads && window.Plotly && kit()),
  get: () => (inst.picked ? {head: `${LETTER[inst.picked.kind]}${inst.picked.layer + 1}.${inst.picked.head + 1}`} : {}),
  async set(p, notes) {
    kit().unknown(notes, "atlas", p, ["head"]);
    if (p.head === undefined) return;
    const m = /^([edc])(\d{1,2})\.(\d{1,2})$/.exec(p.head), kind = m && KINDS.find(k => LETTER[k] === m[1]);
    const h = m && props.value.heads.find(x => x.kind === kind && x.layer === +m[2] - 1 && x.head === +m[3] - 1);
    if (!h) {
      const top = (f) => 1 + Math.max(...props.value.heads.map(f));
      notes.push(`atlas_head ${JSON.stringify(p.head.slice(0, 24))} (a head such as c2.3: e, d or c, ` +
                 `layer 1 to ${top(x => x.layer)}, head 1 to ${top(x => x.head)})`);
      return;
    }
    inst.picked = {kind, layer: h.layer, head: h.head};
    render();
  },
};
NARROW.addEventListener("change", render);  // a phone turned, a window narrowed: drawn again for its width
if (window.Plotly) render(); else { const t = setInterval(() => { if (window.Plotly) { clearInterval(t); render(); } }, 30); }
watch("value", render);
document.addEventListener("lens-explain", render);  // the curve's title in the mode asked for

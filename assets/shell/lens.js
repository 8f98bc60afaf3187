// attention-lens: the attention view, drawn in the browser from the compact payload in props.value
// (attention_lens/translate/payload.py writes it). Runs as the js_on_load of a gr.HTML component: `element`, `props`,
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
//
// The view's script is this file and its parts, files of assets/ each in a function scope of its own
// (attention_lens/shell/components.py `script`, LENS_PARTS): payload.js (decoding the payload), lens_maps.js (the maps' numbers at
// a step), lens_draw.js (the canvases), lens_labels.js (the DOM around them), lens_player.js (stepping, Play),
// lens_export.js (PNG / HTML). This file holds the view's state, draw(), what the view offers, the events, and
// the start; it gives the parts `view` (below) and mounts them in that order, each adding what it returns to `view`.
// No name is shared: each part names what it takes from `view` at its top and what it gives at its end.
// the views the Translate view updates, each on its own element (docs/design.md)
const inside = () => find("inside", "inside");  // Inside this head (assets/translate/inside.js)
const attribution = () => find("attribution", "attribution");  // ALTI+ / saliency
const topk = () => find("topk", "topk");  // the top-k list (assets/translate/topk.js)
const q = (role) => element.querySelector(`[data-role="${role}"]`);
function setText(el, s) { if (el.textContent !== s) el.textContent = s; }
const num = (x, d) => (find("explain_box", "explain")?.num(x, d) ?? x.toFixed(d));  // 0.741 / 0,741 (assets/shell/explain.js)
const tl = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label], the page's language

// One instance per gr.HTML view, kept on the view's own element (its `lens`): another view reads it there
// (document.getElementById("attention").lens), never from a page global. The main one (#attention) is also
// window.__lens, the one handle for tests and benchmarks, which no view reads (tests/test_code_shape.py).
const MAIN = home === element || home.id === "attention";  // `home`: this view's own element (none: the main one)
const st = {kind: "cross", layer: 0, head: 0, hide: false, words: false, k: 8, speed: 500,
            doc: null,      // what is drawn: a decoded payload (a trajectory, or one step)
            traj: null,     // the trajectory the step controls move through
            greedy: null,   // the trajectory Start gave: Reset returns to it after forcing
            t: 0,           // the step shown in `traj`
            back: null,     // {traj, t} a reference was opened from: "Leave the reference" goes back there
            timer: null,    // Play
            conceal: null}; // a live class's open question (assets/live/live.js): "where" hides the highlighted row's
                            // weights (map, grid, hovers, the line read aloud), "next" the piece after it
const inst = {renders: 0, state: st, drawMs: 0};
const lensRoot = element.querySelector(".lens");
const view = {element, props, trigger, find, home, q, setText, tl, MAIN, st, inst, lensRoot, draw};
for (const part of ["lens_maps", "lens_draw", "lens_labels", "lens_player", "lens_export"]) Object.assign(view, parts[part](view));
const {KINDS, decodeView, textAt} = parts.payload();
const {frame, mapsAt, axisLine, languagesOf, crossingHead, cv, scratch, drawBig, drawGrid, colourBar, drawChips, drawLegend,
       drawStatus, fillSelect, pushTopk, ctl, go, pause, play, exportHtml, exportPng} = view;
home.lens = inst;
if (MAIN) window.__lens = inst;  // the tests' and benchmarks' handle (above)
inst.select = (kind, layer, head) => {     // open one head (the head atlas calls this); drawn now or at the next payload
  if (KINDS.includes(kind)) st.kind = kind;
  st.layer = layer; st.head = head; cv.big = null; draw();
};
inst.conceal = (what) => {               // a live class's question opens ("where", "next") or is over (null)
  const v = what === "where" || what === "next" ? what : null;
  if (st.conceal === v) return;
  st.conceal = v; lensRoot.dataset.conceal = v || "";
  if (st.doc) { scratch.big.last = scratch.grid.last = null; cv.big = null; draw(); }
};
inst.reveal = () => {                     // bring the big map into sight once the view is shown (after a tab switch)
  let tries = 60;
  const look = () => {
    if (q("big").clientWidth > 0) q("big").scrollIntoView({block: "nearest"});
    else if (--tries > 0) requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
};

// -- one step drawn: the DOM (lens_labels.js), then the maps (lens_maps.js, lens_draw.js) ----------------------
function empty(msg) {
  st.doc = null; cv.big = cv.grid = null;
  if (MAIN) { q("intro").hidden = false; element.querySelector(".lens").dataset.empty = "1"; }  // what the map will show
  setText(q("status"), msg); q("target").textContent = ""; q("target").dataset.key = "";
  q("legend").textContent = ""; q("legend").dataset.key = "";
  q("marks").textContent = ""; q("marks").dataset.key = "";
  q("player").hidden = true; q("ylabels").textContent = ""; q("xlabels").textContent = "";
  for (const c of [q("canvas"), q("grid-canvas")]) { c.width = c.height = 0; c.style.height = "0px"; }
  q("plot").style.height = "0px"; setText(q("title"), ""); setText(q("axes"), ""); setText(q("grid-axes"), ""); setText(q("zmax"), ""); setText(q("note"), "");
  setText(q("said"), ""); q("canvas").setAttribute("aria-label", tl("map_aria"));  // no line of a map gone
  if (MAIN && topk()) topk().render({items: [], done: true});
  if (MAIN && inside()) inside().update();  // no rows of a sentence gone (assets/translate/inside.js)
  if (MAIN && attribution()) attribution().update();
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
  if (MAIN && inside()) inside().update();  // the inside panel follows (timed on its own)
  if (MAIN && attribution()) attribution().update();  // ALTI+ / saliency (assets/translate/attribution.js)
  element.dataset.renders = String(++inst.renders);
  element.dataset.kind = kind; element.dataset.layer = st.layer; element.dataset.head = st.head;
  element.dataset.step = d.traj ? st.t : "";
}

// -- what the view (its element's `lens`) offers other views, tests and benchmarks -----------------------------
inst.ctl = ctl;                           // the player's controls (lens_player.js)
inst.decode = decodeView;                 // a payload -> its decoded maps and steps (assets/compare/compare.js)
inst.axes = (kind, d) => axisLine(kind, languagesOf(d));  // what rows and columns are (assets/compare/compare.js)
inst.crossing = (d) => crossingHead(d || st.traj);  // the clearest crossing of cross-attention (assets/shell/tour.js)
// For Gradio events: [translation so far] (js-only: sets #translation)
inst.sync = () => [st.traj ? textAt(st.traj, st.t) : ""];
// The position the view shows, for the server: the step and the pieces that lead to it. Sent with each request
// that needs it (attention_lens/shell/components.py live_position puts it in the request's inputs); no box holds it
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
function caveats(list) {                 // kept for a view mounted later (a tab opened afterwards)
  inst.caveats = list;
  window.dispatchEvent(new CustomEvent("lens-caveats", {detail: list}));
}
function render() {
  inst.recvAt = performance.now();
  const p = props.value;
  if (!p || !p.source) {
    pause(); st.traj = st.greedy = null; empty(tl("lens_empty"));
    // the server empties the main view when the sentence ends (another model picked: a new start with no
    // sentence yet): every tab stops naming it (assets/shell/sentence.js), the notes of its buttons go (box_note.js)
    if (MAIN) { caveats([]); window.dispatchEvent(new CustomEvent("lens-started", {detail: null})); }
    return;
  }
  const doc = decodeView(p);
  if (doc.traj) {
    pause();
    if (p.ui && MAIN) { st.k = p.ui.k; st.words = !!p.ui.words; }
    if (MAIN && typeof p.input === "string") {  // a Start: every tab names this sentence (assets/shell/sentence.js)
      window.dispatchEvent(new CustomEvent("lens-started", {detail: p.input}));
      caveats(p.caveats || []);                // and what to say beside its translation (assets/translate/caveats.js)
    }
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
const hidden = (i) => st.conceal === "where" && cv.big && i === cv.big.row;  // the row a live question asks about
q("canvas").addEventListener("mousemove", e => {
  const b = cv.big; if (!b) return hideTip();
  const i = Math.floor(e.offsetY / b.ch), j = Math.floor(e.offsetX / b.cw), p = b.p;
  if (i >= 0 && i < p.R && p.nokeys && p.nokeys[i]) return showTip(e, `${tl("tip_query", {q: p.rows[i]})}\n${tl("nokey_tip")}`);
  if (i < 0 || j < 0 || i >= p.R || j >= p.C) return hideTip();
  const weight = hidden(i) ? tl("conceal_tip") : `${tl(b.measure)} ${num(p.z[i * p.stride + j], 3)}`;
  showTip(e, `${tl("tip_query", {q: p.rows[i]})}\n${tl("tip_key", {k: p.cols[j]})}\n${weight}`);
});
q("canvas").addEventListener("click", e => {   // a row of the big map: the query the inside panel opens
  const b = cv.big; if (!MAIN || !b || !inside()) return;
  const i = Math.floor(e.offsetY / b.ch);
  if (i >= 0 && i < b.p.R) inside().pick(b.spans ? b.spans[i][1] - 1 : i);
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
  if (c.i < p.R && p.nokeys && p.nokeys[c.i]) return showTip(e, `${tl("tip_layer_head", {l: c.l + 1, h: c.h + 1})}\n${tl("tip_query", {q: p.rows[c.i]})}\n${tl("nokey_tip")}`);
  if (c.i >= p.R || c.j >= p.C) return showTip(e, tl("tip_layer_head", {l: c.l + 1, h: c.h + 1}));
  const weight = hidden(c.i) ? tl("conceal_tip") : tl("tip_weight", {w: num(p.z[c.i * p.stride + c.j], 3)});
  showTip(e, `${tl("tip_layer_head", {l: c.l + 1, h: c.h + 1})}\n${tl("tip_query", {q: p.rows[c.i]})}\n${tl("tip_key", {k: p.cols[c.j]})}\n${weight}`);
});
q("grid-canvas").addEventListener("click", e => {
  const c = gridCell(e); if (!c) return;
  st.layer = c.l; st.head = c.h; draw();
});
for (const c of [q("canvas"), q("grid-canvas")]) c.addEventListener("mouseleave", hideTip);
// ← → Home End step whenever the Translate view is shown and the focus is not where those keys mean something else
// (a text box, a select, a slider, a radio group, the tabs): no click on the map first (which also picks a row)
const own = (t) => t instanceof Element && (t.isContentEditable || ["TEXTAREA", "SELECT"].includes(t.tagName) ||
  (t.tagName === "INPUT" && !["checkbox", "button", "submit"].includes(t.type)) || !!t.closest("[role=tablist]"));
if (MAIN) document.addEventListener("keydown", e => {
  if (!st.traj || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || own(e.target)) return;
  if (lensRoot.offsetParent === null) return;  // another tab is shown
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
q("png").addEventListener("click", () => { exportPng().catch(e => console.error("PNG export failed", e)); });
q("html").addEventListener("click", () => { exportHtml().catch(e => console.error("HTML export failed", e)); });

// redraw when the view's width changes (first shown, window resized, tab switched)
let lastWidth = -1;
new ResizeObserver(() => {
  const w = q("big").clientWidth;
  if (w !== lastWidth) { lastWidth = w; if (st.doc && w > 0) { cv.big = null; draw(); } }
}).observe(q("big"));
// -- Gradio's toasts (gr.Info, gr.Warning) cover no control: placed where the viewport has none, else least ---------
function placeToasts() {
  const wrap = document.querySelector(".toast-wrap"), r = wrap && wrap.getBoundingClientRect();
  if (!r || !wrap.children.length || !r.height) return;
  const W = innerWidth, H = innerHeight, m = 8, sel = "button, input, select, textarea, a[href], [role=tab], canvas";
  const boxes = [...document.querySelectorAll(sel)].filter(e => !wrap.contains(e) && e.offsetParent !== null)
    .map(e => e.getBoundingClientRect()).filter(b => b.width && b.height && b.bottom > 0 && b.top < H);
  const cover = (x, y) => boxes.reduce((s, b) => s + Math.max(0, Math.min(x + r.width, b.right) - Math.max(x, b.left)) *
    Math.max(0, Math.min(y + r.height, b.bottom) - Math.max(y, b.top)), 0);
  let best = null;
  for (const x of [W - r.width - m, m, (W - r.width) / 2].map(v => Math.max(0, v))) {
    for (let y = m; y === m || y + r.height <= H - m; y += 8) {
      const c = cover(x, y);
      if (!best || c < best.c) best = {x, y, c};
      if (!c) break;
    }
    if (!best.c) break;
  }
  Object.assign(wrap.style, {left: `${best.x}px`, top: `${best.y}px`, right: "auto"});
  wrap.dataset.cover = String(Math.round(best.c));
}
if (MAIN) {
  let toasts = null, pending = false;
  const later = () => { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; placeToasts(); }); } };
  const watchToasts = (tries) => {
    toasts = document.querySelector(".toast-wrap");
    if (toasts) new MutationObserver(() => setTimeout(later, 50)).observe(toasts, {childList: true, subtree: true});
    else if (tries > 0) setTimeout(() => watchToasts(tries - 1), 500);
  };
  watchToasts(60);
  addEventListener("scroll", () => { if (toasts && toasts.children.length) later(); }, {passive: true});
  addEventListener("resize", later);
}
colourBar();
find("explain_box", "explain")?.apply(element);  // the help (data-text), in the mode shown (assets/shell/explain.js)
inst.ready = true;
render();
watch("value", render);

// attention-lens, the attention view (assets/shell/lens.js): drawing the maps on canvases, the big map and the
// layers × heads grid. A part of the view's script (attention_lens/shell/components.py `script`, LENS_PARTS): the body of a function of
// `view`, in a scope of its own; what it takes from the view and the parts before it is named just below, what it
// gives is returned at the end (lens.js puts it in `view`). The maps' numbers come from
// lens_maps.js (mapsAt), the view's state and `q` from lens.js.
const {st, inst, q, MAIN, setText, tl, find, frame, panel, maxOf, axesOf, axisLine, languagesOf, normsFor} = view;
const num = (x, d) => (find("explain_box", "explain")?.num(x, d) ?? x.toFixed(d));  // 0.741 / 0,741 (assets/shell/explain.js)
//
// Each canvas is drawn from a scratch image of one pixel per cell, scaled up without smoothing; a step repaints
// only the rows and columns it revealed or hid (refresh), not the whole image.
const TITLES = {encoder_self: "Encoder self-attention", decoder_self: "Decoder self-attention (masked)",
                cross: "Cross-attention"};
const BG = [243, 244, 246];  // cells not revealed yet
const RED = "#ff4136";
const NARROW = window.matchMedia("(max-width: 599px)");  // a phone's layout (assets/translate/layout.css)
const MAP_H = 190;                        // the big map's rows take at most this height (px): it fits 1280x800 with its axis line
const NOKEY = "#c8c8c8";                  // a row with no key left once <s>/</s> are hidden

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

// The big map: one canvas; row and column labels are spans laid out once per shape (not per step)
function layoutBig(kind, res) {
  const plot = q("plot"), frame = plot.clientWidth || q("big").clientWidth;
  const key = [st.doc.seq, kind, st.words, st.hide, res.R, res.C, frame].join("|");
  if (cv.big && cv.big.key === key) return cv.big;
  const full = reservedLabels(kind);
  // a phone: a gutter of up to 45 % of the frame, so a row's label ("_Berlin → _tomorrow") is read whole
  const gutter = Math.min(NARROW.matches ? Math.max(110, Math.floor(frame * 0.45)) : 240, textWidth(full.rows) + 10);
  let cw = Math.max(1, Math.min(40, Math.floor((frame - gutter - 8) / Math.max(1, res.C))));
  if (NARROW.matches) cw = Math.max(cw, 16);  // a phone: cells a finger can tell apart, the frame scrolls (layout.css)
  const width = Math.max(frame, gutter + Math.max(1, res.C) * cw + 8);
  q("xlabels").style.width = q("ylabels").style.width = `${width}px`;
  const ch = Math.max(NARROW.matches ? 13 : 10,  // the map fits a laptop screen; on a phone every row has its label
    Math.min(26, cw, Math.floor(MAP_H / Math.max(1, res.R))));
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
  if (st.head === "mean") return off.length ? ` · ${tl("off_mean", {n: off.length, H})}` : "";
  return off.includes(st.head) ? ` · ${tl("off_head")}` : "";
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
  const secret = concealed(f, p.R);
  if (secret >= 0) { ctx.fillStyle = `rgb(${BG.join(",")})`; ctx.fillRect(0, secret * g.ch, Math.max(1, p.C) * g.cw, g.ch); }
  if (kind !== "encoder_self" && f.row >= 0) {
    ctx.strokeStyle = RED; ctx.lineWidth = 2;
    ctx.strokeRect(1, f.row * g.ch + 1, Math.max(1, p.C) * g.cw - 2, g.ch - 2);
  }
  const ys = q("ylabels").children, xs = q("xlabels").children;
  for (let i = 0; i < ys.length; i++) setText(ys[i], i < p.R ? String(p.rows[i]) : "");
  for (let j = 0; j < xs.length; j++) setText(xs[j], j < p.C ? String(p.cols[j]) : "");
  const roles = st.doc.p.roles || {}, role = st.head === "mean" ? null : ((roles[kind] || [])[st.layer] || [])[st.head];
  setText(q("title"), `${tl(`kind_${kind}`)} · ${tl("layer")} ${st.layer + 1} · ${st.head === "mean" ? tl("mean_heads") : tl("head") + " " + (st.head + 1)}` +
    (role ? ` · ${tl("role")}: ${tl(`role_${role}`)}` : "") + offNote(kind) + (normsFor(kind) ? ` · ${tl("title_contribution")}` : ""));
  setText(q("axes"), axisLine(kind, languagesOf(st.doc)));
  setText(q("zmax"), secret >= 0 ? "?" : maxOf(p) > 0 ? num(zmax, 3) : "–");
  setText(q("note"), none.length === 0 ? "" : (none.length === 1 ? tl("no_keys_row", {r: p.rows[none[0]]}) : tl("no_keys_rows", {n: none.length})) +
    tl("no_keys_why"));
  insideMark(ctx, kind, f, p, g);
  if (secret >= 0) { setText(q("said"), tl("conceal_tip")); q("canvas").setAttribute("aria-label", tl("map_aria")); }
  else sayRow(p, f.row >= 0 ? f.row : p.R - 1);
  cv.big = Object.assign(g, {p, zmax, row: f.row, spans: f.words ? (kind === "encoder_self" ? f.ss : f.ts) : null,
                             measure: normsFor(kind) ? "measure_contribution" : "measure_weight"});
}
// The row a live class's open "where" question asks about (assets/live/live.js, lens.js conceal): drawn as not revealed
// yet, on the big map and in every panel of the grid, until the teacher reveals the answer; -1: none
function concealed(f, R) { return st.conceal === "where" && f.row >= 0 && f.row < R ? f.row : -1; }
function sayRow(p, r) {                   // the map in words: the row's strongest keys, for a
  const z = r >= 0 && r < p.R ? p.z.subarray(r * p.stride, r * p.stride + p.C) : [];  // screen reader (a live line)
  const top = [...z.keys()].sort((a, b) => z[b] - z[a]).slice(0, 2).filter(j => z[j] > 0);
  const at = (j) => `${p.cols[j]} (${num(z[j], 2)})`;
  const text = top.length ? tl("row_looks", {q: p.rows[r], a: at(top[0])}) + (top[1] === undefined ? "" : tl("row_then", {b: at(top[1])})) : "";
  setText(q("said"), text); q("canvas").setAttribute("aria-label", text || tl("map_aria"));
}
function insideMark(ctx, kind, f, p, g) {   // the query row the inside panel opens (assets/translate/inside.js), dashed
  const I = MAIN && find("inside", "inside"), r = I ? I.queryRow() : -1;  // assets/translate/inside.js
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
  const secret = concealed(f, m.R);
  if (secret >= 0) {
    ctx.fillStyle = `rgb(${BG.join(",")})`;
    for (let l = 0; l < L; l++) for (let h = 0; h < H; h++)
      ctx.fillRect(left + h * (pw + gap), top + l * (ph + gap) + secret * cell, pw, Math.max(1, cell));
  }
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
  const gt = q("grid-title"), vars = {kind: tl(`kind_${kind}`), L, H};  // attention_lens/shell/texts/en.toml lens.grid_title, both versions
  const x = find("explain_box", "explain");
  if (x) x.put(gt, "lens.grid_title", vars);
  else setText(gt, `${TITLES[kind]}: all ${L} layers × ${H} heads (click a panel)`);
  setText(q("grid-axes"), axisLine(kind, languagesOf(st.doc)));
}
function colourBar() {                    // the colour bar beside the title: 0 .. the largest weight shown
  const c = q("colorbar"), g = c.getContext("2d"), img = g.createImageData(c.width, c.height);
  for (let x = 0; x < c.width; x++) {
    const v = Math.round(x / (c.width - 1) * 255) * 3;
    for (let y = 0; y < c.height; y++) { const o = (y * c.width + x) * 4;
      img.data[o] = LUT[v]; img.data[o + 1] = LUT[v + 1]; img.data[o + 2] = LUT[v + 2]; img.data[o + 3] = 255; }
  }
  g.putImageData(img, 0, 0);
}

return {RED, cv, scratch, drawBig, drawGrid, colourBar};

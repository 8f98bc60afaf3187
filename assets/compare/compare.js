// attention-lens: two sentences side by side (minimal pairs), the Compare tab (attention_lens/compare/tab.py). Runs as the
// js_on_load of the gr.HTML #compare: `element`, `props`, `watch` are given.
// "Start both" brings the two whole trajectories at once ({a, b}: the Translate tab's trajectory payloads, decoded
// by the attention view's own decoder, its element's lens.decode: assets/shell/payload.js decodeView), so one player (Step /
// Back / the slider / ← →) and one kind, layer and head move both with no request. Each side shows its step min(t, its end).
// Where the two sentences' pieces line up, the third map is A − B: piece i of A lines up with piece j of B when
// they are the same piece (ignoring capitals and the ▁ word mark) and the same occurrence of it (the 2nd "the" of
// A with the 2nd "the" of B); a changed span (fährt / flieg + t) lines up as a block with what stands in its place in
// B (the word a minimal pair is about gets a difference); cells whose query or key has no partner
// are grey. Text is set with textContent only.
const num = (x, d) => (find("explain_box", "explain")?.num(x, d) ?? x.toFixed(d));  // 0.741 / 0,741 (assets/shell/explain.js)
const q = (role) => element.querySelector(`[data-role="${role}"]`);
const KINDS = ["encoder_self", "decoder_self", "cross"];
const VIRIDIS = ["#440154", "#482878", "#3e4989", "#31688e", "#26828e", "#1f9e89", "#35b779", "#6ece58", "#b5de2b",
                 "#fde725"].map(h => [1, 3, 5].map(i => parseInt(h.slice(i, i + 2), 16)));
const NONE = "#d4d4d4", RED = "#ff4136", MAX_ROWS_PX = 250;
const st = {a: null, b: null, t: 0, kind: "cross", layer: 0, head: 0, geo: {}};
const picked = () => { const L = find("link_box", "link"); return L && L.model ? L.model() : null; };  // assets/shell/link.js
const inst = {state: st, renders: 0, model: element.querySelector(".cmp").dataset.model};  // the model the boxes
// and the view were last reset for: the page's first, then each switch's (received)
home.compare = inst;  // on this view's own element (#compare): docs/design.md
const kit = () => find("lesson", "lesson")?.kit;  // the tabs' helpers (assets/shell/views.js)

// -- the maps at a step -----------------------------------------------------------------------------------------
const end = (d) => d.n - 1;
const at = (d) => Math.min(st.t, end(d));
function text(d, t) { return d.texts ? d.texts[t] : d.text.slice(0, d.ends[t]); }
function mapOf(d, t) {                    // one head (or the mean of heads) of one side at its step: {rows, cols, z}
  const m = d.maps[st.kind], [, H, Tq, Tk] = m.shape, n = t + 1;
  const rows = st.kind === "encoder_self" ? d.source : d.pieces.slice(0, n);
  const cols = st.kind === "decoder_self" ? d.pieces.slice(0, n) : d.source;
  const R = rows.length, C = cols.length, z = new Float32Array(R * C);
  const heads = st.head === "mean" ? [...Array(H).keys()] : [st.head];
  for (const h of heads) {
    const base = (st.layer * H + h) * Tq * Tk;
    for (let i = 0; i < R; i++) for (let j = 0; j < C; j++) z[i * C + j] += m.data[base + i * Tk + j] / heads.length;
  }
  // a decoder row reads as in the Translate view: 'query → the piece it predicts' (the last: the greedy next piece)
  const labels = st.kind === "encoder_self" ? rows : rows.map((x, i) => `${x} \u2192 ${i + 1 < n ? rows[i + 1]
    : d.done[t] ? `(${w(x === "</s>" ? "finished" : "stopped")})` : d.greedy[t]}`);  // as the Translate view says
  return {rows, labels, cols, z, R, C, row: st.kind === "encoder_self" ? -1 : t};
}
const norm = (p) => p.replace(/^\u2581/, "").toLowerCase();
function align(a, b) {                    // for each piece of a: its partners in b (a list, empty: none)
  const where = new Map(), seen = new Map();
  b.forEach((p, j) => { const k = norm(p); if (!where.has(k)) where.set(k, []); where.get(k).push(j); });
  const out = a.map(p => {                // 1. the same piece, the same occurrence of it
    const k = norm(p), c = seen.get(k) || 0, js = where.get(k);
    seen.set(k, c + 1);
    return js && c < js.length ? [js[c]] : [];
  });
  // 2. a changed span (pieces of A with no such partner) lines up, as a block, with B's pieces that stand in its place:
  // those between the partners of its neighbours, in order, the last piece of A's span taking any B has left over
  // (fährt with flieg + t: a key's weight is the sum over B's pieces; a query row is its first partner's)
  const used = new Set(out.flat());
  for (let i = 0; i < a.length;) {
    if (out[i].length) { i++; continue; }
    let e = i;
    while (e < a.length && !out[e].length) e++;
    const lo = i > 0 ? out[i - 1][out[i - 1].length - 1] : -1, hi = e < a.length ? out[e][0] : b.length;
    const free = [];
    for (let j = lo + 1; j < hi; j++) if (!used.has(j)) free.push(j);
    free.forEach((j, n) => out[Math.min(i + n, e - 1)].push(j));
    i = e;
  }
  return out;
}
function difference(ma, mb) {             // A − B in A's rows and columns; NaN where a query or key has no partner
  const ri = align(ma.rows, mb.rows), cj = align(ma.cols, mb.cols), z = new Float32Array(ma.R * ma.C);
  let big = 0, where = null;
  for (let i = 0; i < ma.R; i++) for (let j = 0; j < ma.C; j++) {
    const ok = ri[i].length > 0 && cj[j].length > 0;
    const v = ok ? ma.z[i * ma.C + j] - cj[j].reduce((sum, c) => sum + mb.z[ri[i][0] * mb.C + c], 0) : NaN;
    z[i * ma.C + j] = v;
    if (ok && Math.abs(v) > Math.abs(big)) { big = v; where = [i, j]; }
  }
  return {rows: ma.rows, labels: ma.labels, cols: ma.cols, z, R: ma.R, C: ma.C, row: ma.row, big, where,
          rowsAligned: ri.filter(x => x.length).length, colsAligned: cj.filter(x => x.length).length};
}

// -- drawing ----------------------------------------------------------------------------------------------------
function viridis(x) {
  const f = Math.max(0, Math.min(1, x)) * (VIRIDIS.length - 1), i = Math.min(Math.floor(f), VIRIDIS.length - 2);
  const r = f - i;
  return `rgb(${[0, 1, 2].map(c => Math.round(VIRIDIS[i][c] * (1 - r) + VIRIDIS[i + 1][c] * r)).join(",")})`;
}
function diverging(x) {                   // −1 blue (B more) .. 0 white .. +1 red (A more)
  const a = Math.min(1, Math.abs(x)), to = x < 0 ? [33, 102, 172] : [178, 24, 43];
  return `rgb(${to.map(c => Math.round(255 + (c - 255) * a)).join(",")})`;
}
const FONT = "11px ui-monospace, monospace";
function draw(which, m, colour) {         // a map on its canvas: cells, row labels left, key labels below
  const c = q(`map-${which}`), g = c.getContext("2d"), width = c.parentElement.clientWidth;
  if (width <= 0) return;
  g.font = FONT;
  const lw = (xs) => Math.ceil(Math.max(0, ...xs.map(s => g.measureText(String(s)).width)));
  const gutter = Math.min(150, Math.floor(width * 0.45), lw(m.labels) + 8), bottom = Math.min(80, Math.ceil(lw(m.cols) * 0.87) + 14);
  const cw = Math.max(3, Math.min(28, Math.floor((width - gutter - 6) / Math.max(1, m.C))));
  const ch = Math.max(6, Math.min(cw, 24, Math.floor(MAX_ROWS_PX / Math.max(1, m.R))));
  const W = gutter + m.C * cw + 6, Hh = m.R * ch + bottom, dpr = window.devicePixelRatio || 1;
  c.width = Math.round(W * dpr); c.height = Math.round(Hh * dpr); c.style.width = `${W}px`; c.style.height = `${Hh}px`;
  g.setTransform(dpr, 0, 0, dpr, 0, 0); g.clearRect(0, 0, W, Hh); g.font = FONT;
  for (let i = 0; i < m.R; i++) for (let j = 0; j < m.C; j++) {
    const v = m.z[i * m.C + j];
    g.fillStyle = Number.isNaN(v) ? NONE : colour(v);
    g.fillRect(gutter + j * cw, i * ch, cw - (cw > 6 ? 1 : 0), ch - (ch > 6 ? 1 : 0));
  }
  g.fillStyle = "#333"; g.textBaseline = "middle"; g.textAlign = "right";
  const every = Math.ceil(12 / ch);
  m.labels.forEach((s, i) => { if (i % every === 0) g.fillText(String(s), gutter - 4, i * ch + ch / 2); });
  const everyC = Math.ceil(11 / cw);
  m.cols.forEach((s, j) => {
    if (j % everyC) return;
    g.save(); g.translate(gutter + (j + 0.5) * cw, m.R * ch + 4); g.rotate(-Math.PI / 3);
    g.fillText(String(s), 0, 0); g.restore();
  });
  if (m.row >= 0 && m.row < m.R) {        // the current step's row, boxed red as in the Translate view
    g.strokeStyle = RED; g.lineWidth = 2; g.strokeRect(gutter + 1, m.row * ch + 1, m.C * cw - 2, ch - 2);
  }
  st.geo[which] = {gutter, cw, ch, m};
}
function setText(el, s) { if (el.textContent !== s) el.textContent = s; }
const w = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label], the page's language
// an explanation in both versions (attention_lens/shell/texts/en.toml, assets/shell/explain.js), the key itself before the catalogue loads
function say(el, key, vars) { const x = find("explain_box", "explain"); if (x) x.put(el, key, vars); else setText(el, key); }
function fill(sel, n, value, mean) {      // option values are the labels shown: 1..n (and "mean")
  const want = [...Array(n).keys()].map(i => String(i + 1)).concat(mean ? ["mean"] : []);
  if ([...sel.options].map(o => o.value).join() !== want.join()) {
    sel.textContent = "";
    for (const v of want) {
      const o = document.createElement("option"); o.value = v; o.textContent = v === "mean" ? w("mean_heads") : v;
      sel.appendChild(o);
    }
  }
  sel.value = value === "mean" ? "mean" : String(value + 1);
}
function render() {
  const {a, b} = st;
  if (!a || !b) return;
  const [L, H] = a.maps[st.kind].shape, max = Math.max(end(a), end(b));
  st.layer = Math.min(st.layer, L - 1); if (st.head !== "mean") st.head = Math.min(st.head, H - 1);
  st.t = Math.max(0, Math.min(st.t, max));
  fill(q("layer"), L, st.layer, false); fill(q("head"), H, st.head, true);
  element.querySelectorAll("[data-kind]").forEach(x => x.classList.toggle("active", x.dataset.kind === st.kind));
  q("scrub").max = String(max); q("scrub").value = String(st.t);
  setText(q("stepno"), `${w("step_word")} ${st.t} / ${max}`);
  const ta = at(a), tb = at(b), ma = mapOf(a, ta), mb = mapOf(b, tb), md = difference(ma, mb);
  for (const [side, d, t] of [["a", a, ta], ["b", b, tb]]) {
    setText(q(`src-${side}`), d.p.input || d.source.join(" "));
    setText(q(`tr-${side}`), `→ ${text(d, t) || "…"}` + (d.done[t] ? `  (${w("finished")})` : `  (${w("step_word")} ${t})`));
  }
  const zmax = Math.max(1e-6, ...ma.z, ...mb.z), dmax = Math.max(1e-6, Math.abs(md.big));
  draw("a", ma, v => viridis(v / zmax)); draw("b", mb, v => viridis(v / zmax)); draw("d", md, v => diverging(v / dmax));
  say(q("scale"), "compare.scale", {zmax: num(zmax, 3)});
  say(q("dscale"), "compare.dscale", {dmax: num(dmax, 3)});
  const head = st.head === "mean" ? w("mean_heads") : `${w("head")} ${st.head + 1}`;
  setText(q("title"), `${w(`kind_${st.kind}`)} · ${w("layer")} ${st.layer + 1} · ${head}`);
  const lens = find("attention", "lens");
  setText(q("axes"), lens && lens.axes ? lens.axes(st.kind, a) : "");
  const big = md.where && `${md.big >= 0 ? "+" : ""}${num(md.big, 3)}`;
  say(q("align"), "compare.align", {rows: md.rowsAligned, R: md.R, cols: md.colsAligned, C: md.C,
    diff: (m) => find("explain_box", "explain").fill(md.where ? "compare.diff" : "compare.nodiff",
                                       md.where && {big, q: md.labels[md.where[0]], k: md.cols[md.where[1]]}, m)});
  inst.shown = {t: st.t, ta, tb, kind: st.kind, layer: st.layer, head: st.head,
                a: plain(ma), b: plain(mb), diff: plain(md),
                aligned: {rows: md.rowsAligned, cols: md.colsAligned}, big: md.big};
  element.dataset.renders = String(++inst.renders);
}
function plain(m) {
  const z = [];
  for (let i = 0; i < m.R; i++) {
    z.push(Array.from(m.z.subarray(i * m.C, (i + 1) * m.C), v => (Number.isNaN(v) ? null : v)));
  }
  return {rows: m.rows.slice(), labels: m.labels.slice(), cols: m.cols.slice(), z};
}

// -- the player and the head (one for both sides) -----------------------------------------------------------------
function go(t) { if (st.a) { st.t = t; render(); } }
const ctl = {step: () => go(st.t + 1), back: () => go(st.t - 1), go,
             select: (kind, layer, head) => {
               if (KINDS.includes(kind)) st.kind = kind;
               st.layer = layer; st.head = head; render();
             }};
inst.ctl = ctl;
inst.view = () => inst.shown || null;
q("step").addEventListener("click", ctl.step);
q("back").addEventListener("click", ctl.back);
q("scrub").addEventListener("input", e => go(+e.target.value));
element.querySelectorAll("[data-kind]").forEach(x => x.addEventListener("click", () => {
  st.kind = x.dataset.kind; render();
}));
q("layer").addEventListener("change", e => { st.layer = +e.target.value - 1; render(); });
q("head").addEventListener("change", e => {
  st.head = e.target.value === "mean" ? "mean" : +e.target.value - 1; render();
});
// ← → Home End step both whenever the tab is shown and the focus is not where those keys mean something else
// (a text box, a select, a slider, a radio group, the tabs): no click on the view first
const own = (t) => t instanceof Element && (t.isContentEditable || ["TEXTAREA", "SELECT"].includes(t.tagName) ||
  (t.tagName === "INPUT" && !["checkbox", "button", "submit"].includes(t.type)) || !!t.closest("[role=tablist]"));
document.addEventListener("keydown", e => {
  if (!st.a || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || own(e.target)) return;
  if (element.querySelector(".cmp").offsetParent === null) return;  // the Compare tab is not shown
  const act = {ArrowRight: ctl.step, ArrowLeft: ctl.back, Home: () => go(0), End: () => go(Infinity)}[e.key];
  if (act) { e.preventDefault(); act(); }
});
const tip = q("tip");
for (const which of ["a", "b", "d"]) {
  const c = q(`map-${which}`);
  c.addEventListener("mouseleave", () => { tip.hidden = true; });
  c.addEventListener("mousemove", e => {
    const g = st.geo[which], s = inst.shown; if (!g || !s) return;
    const i = Math.floor(e.offsetY / g.ch), j = Math.floor((e.offsetX - g.gutter) / g.cw);
    if (i < 0 || j < 0 || i >= g.m.R || j >= g.m.C) { tip.hidden = true; return; }
    const v = g.m.z[i * g.m.C + j];
    tip.textContent = `${w("tip_query", {q: g.m.labels[i]})}\n${w("tip_key", {k: g.m.cols[j]})}\n` + (which === "d"
      ? (Number.isNaN(v) ? w("tip_no_partner") : `A − B ${v >= 0 ? "+" : ""}${num(v, 3)}`)
      : w("tip_weight", {w: num(v, 3)}));  // the words of the Translate view's tooltip (assets/shell/lens.js)
    tip.hidden = false;
    tip.style.left = `${Math.min(e.clientX + 14, window.innerWidth - 240)}px`; tip.style.top = `${e.clientY + 14}px`;
  });
}

// -- the boxes: do they still hold the pair whose maps are shown? ---------------------------------------------------
const boxOf = (s) => document.querySelector(`#compare_${s} textarea`);
function stale() {                        // the hint shows while the boxes hold another pair than the maps
  const ea = boxOf("a"), eb = boxOf("b");
  const same = !st.a || !st.b || !ea || !eb || (ea.value === st.a.p.input && eb.value === st.b.p.input);
  if (q("stale").hidden !== same) q("stale").hidden = same;
}
document.addEventListener("input", e => {
  if (e.target instanceof Element && e.target.closest("#compare_a, #compare_b")) stale();
});

// -- the two trajectories from the server ---------------------------------------------------------------------------
// the first pair of the model the page opened with (attention_lens/compare/tab.py: the template's data-pair); on_model sends
// the next model's
try { inst.pair = JSON.parse(decodeURIComponent(element.querySelector(".cmp").dataset.pair || "")); }
catch (e) { inst.pair = null; }
function received() {
  const v = props.value, decode = find("attention", "lens")?.decode;
  if (v && v.for) { inst.model = v.for; inst.pair = v.pair || inst.pair; }  // the tab redrawn for this model, with its
  // first example pair (attention_lens/compare/tab.py on_model): the pair a view without compare_a / compare_b shows
  // a pair is drawn only under the model the tab was last reset for: an answer of the model before, still under
  // way when the picker changed, is one of the old state (it names its model: compare_tab.start_both)
  if (!v || !v.a || !v.b || (v.model && inst.model && v.model !== inst.model)) {
    st.a = st.b = null; q("bar").hidden = true; q("panels").hidden = true; q("scale").hidden = true; stale();
    setText(q("status"), w("cmp_pick")); return;
  }
  if (!decode) { setText(q("status"), w("cmp_not_loaded")); return; }
  st.a = decode(v.a); st.b = decode(v.b); st.t = 0;
  q("bar").hidden = false; q("panels").hidden = false; q("scale").hidden = false;
  status();
  stale(); render();
}
function status() {                       // the languages' names from the catalogue: "German → English"
  const v = props.value, langs = v && v.model ? v.model.split("-") : null;
  if (v && v.a) setText(q("status"), w("cmp_two", {model: langs ? langs.map(l => w(`lang_${l}`)).join(" → ") : ""}));
}
document.addEventListener("lens-explain", () => { q("head").textContent = ""; status(); render(); });
let lastWidth = -1;
new ResizeObserver(() => {
  const w = q("panels").clientWidth;
  if (w !== lastWidth) { lastWidth = w; if (w > 0) render(); }
}).observe(q("panels"));
received();
watch("value", received);

// -- the view as link parameters (assets/shell/views.js finds it here; assets/shell/link.js writes and opens them) ----------
const box = (id) => document.querySelector(`#${id} textarea, #${id} input`);
inst.linkView = {
  ready: () => !!box("compare_a") && !!kit() && inst.model === picked(),  // not before the model's reset
  get() {
    if (!st.a || !st.b) return {a: box("compare_a").value, b: box("compare_b").value};
    return {a: st.a.p.input, b: st.b.p.input, step: st.t, kind: st.kind, layer: st.layer + 1,
            head: st.head === "mean" ? "mean" : st.head + 1};
  },
  reset() {                               // a view without a pair of its own (a link's, a lesson's): the model's
    (inst.pair || []).forEach((v, i) => { // first pair in the boxes, not started: no map of the pair before
      const e = box(`compare_${"ab"[i]}`);
      if (e && e.value !== v) { e.value = v; e.dispatchEvent(new Event("input", {bubbles: true})); }
    });
    st.a = st.b = null; q("bar").hidden = true; q("panels").hidden = true; q("scale").hidden = true; stale();
    setText(q("status"), w("cmp_pick"));
  },
  async set(p, notes) {                   // both sentences started, then their step, kind, layer and head
    const K = kit(), known = ["a", "b", "step", "kind", "layer", "head"];
    K.unknown(notes, "compare", p, known);
    const texts = {};
    for (const s of ["a", "b"]) {
      const v = p[s];
      if (v === undefined) continue;
      if (v.trim() && [...v].length <= 2000) texts[s] = v;
      else notes.push(`compare_${s} (${[...v].length} characters; a sentence of 1 to 2000)`);
    }
    if (texts.a === undefined || texts.b === undefined) {
      if (p.a !== undefined || p.b !== undefined) notes.push("compare (both sentences are needed to start them)");
      return;
    }
    const n = inst.renders, mine = () => inst.renders > n && st.a && st.a.p.input === texts.a && st.b.p.input === texts.b;
    for (let tries = 0; tries < 3 && !mine(); tries++) {  // typed and pressed as a user does; again if no answer came
      for (const s of ["a", "b"]) {       // (a busy page can drop a click; a click while one is pending is ignored)
        const e = box(`compare_${s}`);
        if (e.value !== texts[s]) { e.value = texts[s]; e.dispatchEvent(new Event("input", {bubbles: true})); }
      }
      await K.until(() => !!document.getElementById("compare_start"), 10000);  // (re-drawn by a model's answer)
      await K.sleep(100);
      const start = document.getElementById("compare_start");
      if (start) start.click();
      inst.tries = tries + 1;             // (a test's report names it)
      await K.until(mine, 20000);
    }
    if (!mine()) { notes.push("compare (the two sentences were not started)"); return; }
    const kind = K.oneOf(notes, "compare_kind", p.kind, KINDS) || st.kind;
    const [L, H] = st.a.maps[kind].shape, max = Math.max(end(st.a), end(st.b));
    const layer = K.whole(notes, "compare_layer", p.layer, 1, L);
    const head = p.head === "mean" ? "mean" : K.whole(notes, "compare_head", p.head, 1, H);
    ctl.select(kind, layer === undefined ? st.layer : layer - 1,
               head === undefined ? st.head : head === "mean" ? head : head - 1);
    const t = K.whole(notes, "compare_step", p.step, 0, max);
    if (t !== undefined) go(t);
  },
};

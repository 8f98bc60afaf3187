// attention-lens: the guided tour, ten stops over the real page, for a first-time student. Runs as the js_on_load of
// the gr.HTML #tour_box (attention_lens/shell/link.py): `element` is given. It makes no request and loads no file until the tour
// starts; then it loads the vendored driver.js (assets/vendor) for the highlight and the popover.
// Each stop highlights an element, says what to do, and completes when the student does it (its state is polled,
// and clicks are watched), moving on by itself; Next / Prev and the numbered dots move without doing it. The page
// stays usable throughout: the highlight has no overlay that takes clicks, keys go to the page, and ✕ ends it.
// Where the tour is (stop, stops done) is kept in localStorage; the Tour button resumes there. On the first visit
// the button is offered once (never over a link to a view, assets/shell/link.js), never opened by itself.
const box = element.querySelector(".tour-box"), btn = element.querySelector("#tour"), dismiss = element.querySelector("[data-role=dismiss]");
const KEY = "attention-lens.tour", LINK_KEYS = ["model", "text", "step", "kind", "layer", "head", "row", "measure", "tab"];
const read = () => { try { return JSON.parse(localStorage.getItem(KEY)) || {}; } catch (e) { return {}; } };
const S = Object.assign({seen: false, stop: 0, done: {}, finished: false}, read());
const save = () => { try { localStorage.setItem(KEY, JSON.stringify(S)); } catch (e) { /* private mode: forget */ } };

// -- what the stops read from the page ---------------------------------------------------------------------------
const $ = (s) => document.querySelector(s);
const lens = () => find("attention", "lens");  // the attention view (assets/shell/lens.js), on its element
const st = () => (lens() && lens().state) || {};
const traj = () => st().traj || null;
const seq = () => (traj() ? traj().seq : null);
const ins = () => find("inside", "inside") || {ui: {}};  // assets/translate/inside.js, on its element
const seen = (e) => !!(e && (e.offsetParent !== null || (e.getClientRects().length && getComputedStyle(e).position === "fixed")));
const visible = (s) => [...document.querySelectorAll(s)].find(seen) || null;
const tabButton = (key) => document.querySelector(`#tabs button[role=tab][data-tab-id="${key}"]`);  // gr.Tab(id=key)
const TRANSLATE = {name: "translate", shown: () => seen($("#attention"))};
const atlasOpened = () => !!find("atlas", "atlas")?.opened;  // the head atlas (assets/atlas/atlas.js)
const STOPS = [
  {id: "start", el: "#sentence_row", begin: () => seq(), done: (b) => seq() !== null && seq() !== b},
  {id: "step", el: "#step", shows: "#attention [data-role=big]", map: true,
   begin: () => st().t, done: (b) => !!traj() && st().t > 0 && st().t !== b},
  {id: "cross", el: "#attention .lens-kinds", shows: "#attention [data-role=big], #run", arrive: () => openCrossing(), map: true,
   done: () => !!traj() && st().kind === "cross" && st().doc === traj() && st().t === traj().n - 1},
  {id: "decoder", el: "#attention [data-kind=decoder_self]", shows: "#attention [data-role=big]", map: true,
   done: () => st().kind === "decoder_self"},
  {id: "inside", el: "#attention [data-role=canvas]", shows: "#inside", map: true,
   begin: () => ins().ui.pick,            // a click on a row sets a new pick, even the same row again
   done: (b) => { const p = ins().ui.pick; return !!(p && p !== b && traj() && p.ids === traj().ids.join(",")); }},
  {id: "stages", el: "#inside [data-role=stages]", side: "left", map: true,
   shows: "#inside [data-role=table], #inside [data-role=code]",
   begin: () => new Set(),
   click: (t, b) => { const s = t.closest("#inside [data-stage]"); if (s) b.add(+s.dataset.stage); },
   done: (b) => { b.add(ins().ui.stage); return [1, 2, 3, 4, 5].every(s => b.has(s)); }},
  {id: "measure", el: "#attention .lens-measure", shows: "#attention [data-role=big]", map: true,
   done: () => !!ins().ui.measure},
  {id: "force", el: "#topk", shows: "#back", map: true,
   done: () => !!(traj() && traj().forced.some(Boolean))},
  {id: "ablation", el: "#ablate_cross", tab: {name: "ablation", shown: () => seen($("#tab_ablation"))},
   shows: "#ablate_run",
   done: () => { const v = find("attention_ablated", "lens");
     return !!(v && v.state.doc && v.state.doc.off && v.state.doc.off.size); }},
  {id: "atlas", el: () => visible("#atlas"), tab: {name: "atlas", shown: () => !!visible("#atlas")},
   begin: () => atlasOpened(), done: (b) => { const o = atlasOpened(); return !!o && o !== b; }},
];
const N = STOPS.length, END = {id: "end"};
// each stop's title and text from the page's catalogue (attention_lens/shell/texts/<lang>.toml "tour.<id>.title" / ".text"), plain
// or detailed, in the language and mode the page shows when the stop is shown (assets/shell/explain.js, i18n.js)
const NARROW = matchMedia("(max-width: 599px)"), TOUCH = matchMedia("(pointer: coarse)");
const PHONE = [[/<b>Inside this head<\/b>(, on the right,)?/g, "<b>Inside this head</b> (below the map)"],
  [/\(top right\)/g, "(at the top)"]], FINGER = [[/\bClick\b/g, "Tap"], [/\bclick\b/g, "tap"]];
const said = (key) => {                   // on a phone the words say where things are there
  let t = find("explain_box", "explain")?.t(key) ?? key;
  for (const [a, b] of [...(NARROW.matches ? PHONE : []), ...(TOUCH.matches ? FINGER : [])]) t = t.replace(a, b);
  return t;
};
for (const s of [...STOPS, END]) {
  Object.defineProperty(s, "title", {get: () => said(`tour.${s.id}.title`)});
  Object.defineProperty(s, "text", {get: () => said(`tour.${s.id}.text`)});
}

// -- what a stop does to the view: the crossing it opens (the view's crossing, assets/shell/lens_maps.js), the
// settings it gives back at the end --------------------------------------------------------------------------------
function openCrossing() {                 // the stop "look for the crossing" opens that head in the view
  const d = traj(), view = lens();
  T.note = "";
  if (!d || !d.maps.cross || !view || !view.crossing) return;
  const c = view.crossing(d);
  if (!c) return;
  view.select("cross", c.layer, c.head);
  if (T.found) Object.assign(T.found, {kind: "cross", layer: c.layer, head: c.head});  // kept after the tour
  const said = {l: c.layer + 1, h: c.head + 1};  // attention_lens/texts [label], in the page's language
  T.note = find("explain_box", "explain")?.fill(`label.${c.score > 0 ? "tour_opened" : "tour_opened_diagonal"}`, said) ?? "";
}
function found() {                        // the view's settings when the tour starts: given back when it ends
  const s = st(), m = document.querySelector("#attention .lens-measure input:checked");
  return {kind: s.kind, layer: s.layer, head: s.head, hide: !!s.hide, measure: m ? m.value : "weight"};
}
function giveBack(f) {
  const view = lens();
  if (!f || !view || !view.select) return;
  const m = [...document.querySelectorAll("#attention .lens-measure input")].find(r => r.value === f.measure);
  if (m && !m.checked) m.click();
  const hide = document.querySelector("#attention [data-role=hide]");
  if (hide && !!st().hide !== f.hide) hide.click();
  view.select(f.kind, f.layer, f.head);
}

// -- where the popover goes: beside the stop's element, leaving what the stop describes (`shows`) in sight and, as far
// as it can, every other control (Start above all: a press meant for it must not land on the popover) ---------------
const CONTROLS = "button, input, select, textarea, a[href], [role=tab], canvas";
function fit() {
  const pop = document.querySelector(".driver-popover.lens-tour");
  if (!pop || !T.drv || T.i >= N) return;
  const s = STOPS[T.i], W = innerWidth, H = innerHeight, m = 8, inView = (r) => r.width && r.height && r.bottom > 0 && r.top < H;
  // and never over the Start row's buttons: a press on Start there would hit the popover (its ✕), not Start
  const keep = [T.el, ...[...document.querySelectorAll((s.shows ? s.shows + ", " : "") + "#sentence_row > button")]
    .filter(seen)].filter(Boolean)
    .map(e => e.getBoundingClientRect()).filter(inView);
  const others = [...document.querySelectorAll(CONTROLS)].filter(e => seen(e) && !pop.contains(e) &&
    !(T.el && T.el.contains(e))).map(e => e.getBoundingClientRect()).filter(inView);
  const p = pop.getBoundingClientRect();
  const area = (rs, x, y) => rs.reduce((a, r) => a + Math.max(0, Math.min(x + p.width, r.right) - Math.max(x, r.left)) *
    Math.max(0, Math.min(y + p.height, r.bottom) - Math.max(y, r.top)), 0);
  if (!area(keep, p.left, p.top) && !area(others, p.left, p.top)) return;
  const el = keep[0] || {left: W / 2, right: W / 2, top: H / 2, bottom: H / 2};
  const cx = (el.left + el.right) / 2, cy = (el.top + el.bottom) / 2;
  const key = [T.i, Math.round(el.left), Math.round(el.top), Math.round(p.width), Math.round(p.height), W, H].join();
  let best = T.placed && T.placed.key === key ? T.placed : null;  // the same page as last time: the same place
  if (!best) {
    for (let x = m; x <= Math.max(m, W - p.width - m); x += 12) for (let y = m; y <= Math.max(m, H - p.height - m); y += 12) {
      const score = area(keep, x, y) * 1000 + area(others, x, y) + 20 * Math.hypot(x + p.width / 2 - cx, y + p.height / 2 - cy);
      if (!best || score < best.score) best = {x, y, score, key};
    }
    T.placed = best;
  }
  Object.assign(pop.style, {left: `${best.x}px`, top: `${best.y}px`, right: "auto", bottom: "auto"});
  pop.classList.add("tour-placed");       // its arrow would point at nothing
}

// -- a stop that shows the sentence's map, with no sentence started: the tour starts the box's sentence, or else the
// first example, as Start does, says so in the stop, and highlights the Start row until the map is drawn
function autoStart() {
  const typed = $("#source textarea"), L = find("link_box", "link"), model = L && L.model ? L.model() : "";
  let ex = "";
  try { ex = JSON.parse(element.querySelector(".tour-box").dataset.examples || "{}")[model] || ""; } catch (e) { ex = ""; }
  if (traj() || T.auto || !(STOPS[T.i] || {}).map || !typed) return;
  T.auto = {i: T.i, s: typed.value.trim() ? typed.value.trim() : ex};
  if (!typed.value.trim() && ex) {          // the model's first example in the box, as if typed (Gradio reads input)
    typed.value = ex; typed.dispatchEvent(new Event("input", {bubbles: true}));
  }
  if (typed.value.trim()) setTimeout(() => $("#start").click(), 0);
}
function autoNote() {                     // "starting … for you", "started … for you", or "Start a sentence first"
  const a = T.auto, k = traj() ? "started" : (find("source_hint", "sentence") || {}).refused ? "first" : "starting";
  if (T.i >= N || !STOPS[T.i].map || !a || (traj() && a.i !== T.i) || !find("explain_box", "explain")) return "";
  return find("explain_box", "explain").fill(`tour.${k}.text`, {s: a.s});
}

// -- the tour ----------------------------------------------------------------------------------------------------
const T = {drv: null, i: 0, base: null, el: null, ok: false, armed: false, timer: null, loading: null, note: "",
           found: null, arrived: null, placed: null, sx: 0, auto: null};
function target(i) {
  const s = STOPS[i];
  if (!s) return null;
  const tab = s.tab || TRANSLATE;
  if (!tab.shown()) return tabButton(tab.name) || null;  // on another tab: first the tab to open
  const e = (typeof s.el === "function" ? s.el() : visible(s.el)) || null, r = e && e.getBoundingClientRect();
  return s.map && !(traj() && r && r.width && r.height) ? visible("#sentence_row") : e;  // a map not drawn yet
}
function statusText(i) {
  if (i >= N) return "";
  if (T.ok) return w("tour_ok");          // the catalogue's words ([label] tour_*), in the page's language
  if (!T.armed) return w("tour_already");
  const tab = STOPS[i].tab || TRANSLATE, b = tabButton(tab.name);
  return (tab.shown() ? "" : `${w("tour_open").replace("{tab}", b ? b.innerText.trim() : tab.name)} `) +
    w(S.done[STOPS[i].id] ? "tour_again" : "tour_do");
}
function paint() {                        // the popover's status line and dots follow the stop's state
  const extra = document.querySelector(".lens-tour .tour-note");
  const line = [autoNote(), T.i < N && STOPS[T.i].arrive ? T.note : ""].filter(Boolean).join(" ");
  if (extra && extra.textContent !== line) extra.textContent = line;
  const note = document.querySelector(".lens-tour .tour-status");
  if (note) { note.textContent = statusText(T.i); note.classList.toggle("ok", T.ok); }
  document.querySelectorAll(".lens-tour .tour-dots button").forEach((d, k) => {
    d.classList.toggle("done", !!S.done[STOPS[k].id]); d.classList.toggle("now", k === T.i);
  });
}
function step(i) {
  const s = i < N ? STOPS[i] : END;
  return {element: i < N ? () => target(i) || undefined : undefined,
          popover: {title: i < N ? `${i + 1} / ${N} · ${s.title}` : s.title, side: s.side, align: s.side && "start",
                    description: s.text + '<div class="tour-note"></div><div class="tour-status"></div>'}};
}
function dots(pop) {                      // the stops as numbered dots: done, here; any one can be jumped to
  const row = Object.assign(document.createElement("div"), {className: "tour-dots"});
  STOPS.forEach((s, k) => {
    const d = Object.assign(document.createElement("button"), {type: "button", textContent: String(k + 1), title: s.title});
    d.addEventListener("click", () => go(k)); row.appendChild(d);
  });
  pop.footer.prepend(row); paint();
  pop.closeButton.setAttribute("aria-label", w("tour_close"));  // driver.js names its × "Close" in any language
}
function unblock() { document.body.classList.remove("driver-active"); }  // driver.js: all but the highlight deaf
function go(i) {
  if (!T.drv) return;
  if (i > N) { close(); return; }
  T.i = Math.max(0, i); T.ok = false;
  T.base = T.i < N && STOPS[T.i].begin ? STOPS[T.i].begin() : null;
  autoStart(); T.el = target(T.i);
  T.armed = T.i < N && !STOPS[T.i].done(T.base);  // already so when the stop opens: it waits to see it done
  if (T.i < N) S.stop = T.i; else { S.finished = true; S.stop = 0; }
  save(); label();
  bring(T.el);
  if (T.drv.isActive()) T.drv.moveTo(T.i); else T.drv.drive(T.i);
  unblock(); unshift();
  T.arrived = null; T.note = ""; arrive(); fit(); requestAnimationFrame(fit);
}
function arrive() {                       // a stop that acts on the view: on arriving, and again for a new sentence
  const s = STOPS[T.i];
  if (!s || !s.arrive || T.arrived === seq()) return;
  T.arrived = seq(); s.arrive(); paint();
}
function complete() {
  const i = T.i; T.ok = true; S.done[STOPS[i].id] = true; save(); paint();
  setTimeout(() => { if (T.drv && T.i === i && T.ok) go(i + 1); }, 900);
}
function tick() {
  if (!T.drv) return;
  if (!T.drv.isActive()) { ended(); return; } else if (T.i >= N) return;
  const el = target(T.i);
  if (el !== T.el) { T.el = el; bring(el); T.drv.moveTo(T.i); unblock(); }  // a tab opened, an element came: anew
  else T.drv.refresh();
  unshift();
  arrive(); fit(); requestAnimationFrame(fit);  // driver.js may place the popover again in the next frame
  const now = STOPS[T.i].done(T.base);
  if (!T.armed) T.armed = !now;
  else if (!T.ok && now) { complete(); return; }
  paint();
}
function bring(el) {                      // the stop's element scrolled into view by the page, up or down only:
  const r = el && el.getBoundingClientRect ? el.getBoundingClientRect() : null;  // driver.js's own scrollIntoView
  const top = NARROW.matches ? 8 : Math.max(8, (innerHeight - (r ? r.height : 0)) / 2);  // a phone: at the top, the
  if (r && r.height && (r.top < 0 || r.bottom > innerHeight || (NARROW.matches && r.top > innerHeight / 3)) &&  // popover
      getComputedStyle(el).position !== "fixed")  // under it; centred sideways too by driver.js
    scrollTo({left: T.sx, top: scrollY + r.top - top, behavior: "instant"});
}
function unshift() {                      // whatever moved sideways all the same goes back where it was
  if (scrollX !== T.sx) scrollTo({left: T.sx, top: scrollY, behavior: "instant"});
  for (let p = T.el && T.el.parentElement; p; p = p.parentElement)
    if (p.scrollLeft && /hidden|clip/.test(getComputedStyle(p).overflowX)) p.scrollLeft = 0;
}
function onClick(e) {                     // clicks a stop watches (quicker than polling: every one counts)
  const s = T.drv && STOPS[T.i];
  if (s && s.click && e.target instanceof Element) s.click(e.target, T.base);
}
function onKey(e) { if (T.drv && e.key === "Tab") e.stopPropagation(); }  // driver.js keeps Tab in its popover
function ended() {
  clearInterval(T.timer); T.timer = null; T.drv = null; T.auto = null; unshift();
  giveBack(T.found); T.found = null;      // the view as the tour found it (kind, layer, head, measure, <s>/</s>)
  removeEventListener("scroll", onScroll, true); document.removeEventListener("click", onClick, true);
  document.removeEventListener("keydown", onKey); label();
}
function close() { if (T.drv) T.drv.destroy(); ended(); }
let scrolled = false;                     // driver.js places the popover again on a scroll: keep it beside
function onScroll() { if (!scrolled) { scrolled = true; requestAnimationFrame(() => { scrolled = false; fit(); }); } }

function lib() {                          // driver.js and its CSS, fetched once, on the first start
  if (window.driver && window.driver.js) return Promise.resolve(window.driver.js.driver);
  if (!T.loading) T.loading = new Promise((ok, fail) => {  // both: without its CSS the popover sits in the page's
    const css = document.createElement("link"); css.rel = "stylesheet"; css.href = box.dataset.css;  // flow at the
    const js = document.createElement("script"); js.src = box.dataset.js;  // bottom, and focusing it scrolls there
    let n = 0; const one = () => { if (++n === 2) ok(window.driver.js.driver); };
    js.onload = css.onload = one;
    js.onerror = css.onerror = () => { T.loading = null; js.remove(); css.remove(); fail(new Error("could not load the tour's driver.js")); };
    document.head.append(css, js);
  });
  return T.loading;
}
async function start(i) {
  offer(false);
  if (T.drv) { go(i ?? T.i); return; }
  const driver = await lib();
  T.found = found(); T.sx = scrollX;
  T.drv = driver({steps: [...Array(N + 1).keys()].map(step), animate: false, overlayOpacity: 0,
    allowKeyboardControl: false, allowClose: true, stagePadding: 4,
    popoverClass: "lens-tour", nextBtnText: w("tour_next"), prevBtnText: w("tour_prev"), smoothScroll: !NARROW.matches,
    onPopoverRender: (pop) => dots(pop), onHighlightStarted: unblock, onHighlighted: unblock,
    onNextClick: () => go(T.i + 1), onPrevClick: () => go(T.i - 1), onCloseClick: close,
    onDestroyed: () => { if (T.drv) ended(); }});
  document.addEventListener("click", onClick, true); document.addEventListener("keydown", onKey);
  addEventListener("scroll", onScroll, true); T.timer = setInterval(tick, 250);
  go(i ?? (S.finished ? 0 : S.stop));
}
const w = (k) => (find("explain_box", "explain")?.t(`label.${k}`) ?? "▶ Tour");  // attention_lens/texts [label]; lens-explain
function label() {
  btn.classList.remove("offer");
  btn.textContent = T.drv ? w("tour_end") : (S.stop > 0 && !S.finished ? `${w("tour")} (${S.stop + 1}/${N})` : w("tour"));
}
function offer(on) {                      // the first visit's offer: the button says so, and ✕ declines
  dismiss.hidden = !on;
  if (on) { btn.classList.add("offer"); btn.textContent = w("tour_offer"); } else label();
}
document.addEventListener("lens-explain", () => offer(btn.classList.contains("offer")));
btn.addEventListener("click", () => {
  if (T.drv) { close(); return; }
  start().catch(() => { btn.textContent = w("tour_unavailable"); btn.title = w("tour_unavailable_tip"); });
});
dismiss.addEventListener("click", () => offer(false));
const tour = {start: (i) => start(i), go, close, stops: STOPS.map(s => s.id),
              state: () => ({active: !!T.drv, stop: T.i, ok: T.ok, done: {...S.done}, finished: S.finished,
                             loaded: !!(window.driver && window.driver.js)})};
home.tour = tour;  // on this view's own element (#tour_box)
const linked = LINK_KEYS.some(k => new URLSearchParams(location.search).has(k));
if (!S.seen && !linked) { S.seen = true; save(); offer(true); } else label();

// attention-lens: a live class. Runs as the js_on_load of the gr.HTML #class_box (attention_lens/live/page.py):
// `element`, `props`, `trigger`, `watch` are given; its stream comes through the gr.HTML #class_feed
// (its element's .feed: follow(data) starts the generator event, each snapshot becomes its value).
// The class's view is the page state a link holds (assets/shell/link.js url(): a query string). The teacher's page sends
// it whenever it changes (checked at each click, key and input, and every CHECK_MS while teaching: the step may move
// by the player); each student's page opens it as a link (#link_box's .link.open), so a class shows what a link shows.
// The student's language and explanation mode stay their own (PERSONAL). Students answer "where" by tapping a key
// on their own map (the attention view's big map, #attention's canvas: a click there is taken before the view's own
// click, which would pick another row), and "what next" by a piece; the bar's buttons give the same choices to the
// keyboard and screen readers. The teacher's panel draws the answers (#class_answers) and, after Reveal, the model's.
// A page in no class runs nothing of this but the Teach live button's listener (and a look at its URL and storage).
// The teacher's class is kept by her browser (localStorage: its code and token, never in the address bar): a reload,
// a reopened or second tab, a link or a lesson opened while teaching teach the same class. A student's class is kept
// by the tab (sessionStorage), so that Back, a reload or a view link of their own keeps them in it; the student is
// the browser (an id it keeps in localStorage, sent with each stream and answer: one student however many tabs, the
// same after a restart). A student's page says it read its stream's first snapshot ("here"): it counts from then.
// A student joins by the link, the QR code or the short code typed in #join_code. "Explore on my
// own" is an entry of the browser's history, and Back from it follows the teacher again. Every stream beats
// (attention_lens/live/registry.py BEAT_S): a page that hears nothing for DEAD_MS asks the server until it answers,
// with backoff, and follows again (after a restart the class is back from the server's database).
// Everything from the server or the URL is shown with textContent only: pieces and rows are user input.
const $ = (s) => element.querySelector(s);
const panel = $("#class_panel"), bar = $("#class_bar"), startBtn = $("#class_start");
const CHECK_MS = 250, PERSONAL = ["lang", "explain", "__theme", "class", "teach"];
const DEAD_MS = 12000, TIMEOUT_MS = 15000;  // > two beats (BEAT_S: 5 s); a request unanswered this long failed
const TEACHER_KEY = "attention-lens:class", FOLLOW_KEY = "attention-lens:following";  // her class; a tab's class
// what a page asks to learn that the server is up: Gradio's robots.txt, a few bytes (the page itself is its whole
// config: 60 pages asking it at once kept a restarted app from answering its own start-up check within 3 s)
const PROBE = new URL("robots.txt", `${location.origin}${location.pathname}`).href;
const inst = {role: null, code: null, token: null, snap: null, following: true, applied: null, sent: null,
              seq: 0, applying: false, errors: [], lastError: null, streams: 0, heard: 0, lost: false,
              reconnects: 0};
home.live = inst;  // on this view's own element (#class_box): docs/design.md
const link = () => find("link_box", "link");  // assets/shell/link.js, on its element
// the bar's room at the screen's bottom, where "Link copied" (assets/shell/link.js say) stands too: that line goes above the
// bar (attention_lens/shell/link.py LINK_CSS reads --class-bar-room), however tall the bar grows (a question, its chart)
new ResizeObserver(() => {
  const h = bar.hidden ? 0 : Math.ceil(bar.getBoundingClientRect().height);
  document.documentElement.style.setProperty("--class-bar-room", `${h ? h + 8 : 0}px`);
}).observe(bar);
const w = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);
const pct = (p) => (find("explain_box", "explain")?.pct(p, 0) ?? `${(100 * p).toFixed(0)}%`);  // 34% / 34 %

// -- requests (the box's event: attention_lens/live/page.py op) --------------------------------------------------------------
const pending = new Map();
let ids = 0;
function ask(data) {                     // an answer, or {ok: false, key: "timeout"} (no server: said nowhere)
  const id = `class-${Date.now()}-${++ids}`;
  return new Promise((ok) => {
    pending.set(id, ok); trigger("click", {...data, id});
    setTimeout(() => { if (pending.delete(id)) ok({id, ok: false, key: "timeout", error: ""}); }, TIMEOUT_MS);
  });
}
function kept(store, key) {               // what this browser (localStorage) or tab (sessionStorage) keeps, or null
  try { return JSON.parse(store.getItem(key) || "null"); } catch (e) { return null; }
}
function keep(store, key, value) {
  try { if (value === null) store.removeItem(key); else store.setItem(key, JSON.stringify(value)); }
  catch (e) { /* storage refused: this page alone keeps its class */ }
}
watch("value", () => {
  const a = props.value;
  if (a && pending.has(a.id)) { const ok = pending.get(a.id); pending.delete(a.id); ok(a); }
});
function said(a) {                        // a refusal: said in the panel or the bar
  if (a.ok) return true;
  if (a.key === "timeout") return false;  // no server now: the stream's watch says so (watchdog)
  inst.lastError = a.error; inst.errors.push(a.key);
  const msg = inst.role === "teacher" ? panel.querySelector(".class-msg") : bar.querySelector("[data-role=state]");
  msg.textContent = a.error;
  return false;
}

// -- the stream (#class_feed) --------------------------------------------------------------------------------------
function follow() {                      // a stream of its own (`n`: its snapshots are told from an old one's)
  const feed = find("class_feed", "feed");
  if (!feed) { setTimeout(follow, 100); return; }
  if (!feed.bound) { feed.bound = true; feed.watch("value", () => received(feed.props.value)); }
  inst.heard = Date.now(); inst.streams += 1;
  feed.follow(inst.role === "teacher" ? {code: inst.code, token: inst.token, n: inst.streams}
    : {code: inst.code, student: browserId(), n: inst.streams});
  if (!inst.watching) inst.watching = setInterval(watchdog, 1000);
}
// one browser is one student, however many tabs it follows with and however often it reconnects: an id it makes
// and keeps in this site's storage (one vote; after a restart its answer is still its own)
const norm = (c) => String(c ?? "").replace(/[\s-]/g, "").toUpperCase();  // attention_lens/live/access.py normalize
function browserId() {
  const KEY = "attention-lens.student";
  let id = null;
  try { id = localStorage.getItem(KEY); } catch (e) { /* storage off: this page's own id */ }
  if (!id || !/^[0-9a-f]{32}$/.test(id)) {
    id = inst.ownId || [...crypto.getRandomValues(new Uint8Array(16))].map(b => b.toString(16).padStart(2, "0")).join("");
    inst.ownId = id;
    try { localStorage.setItem(KEY, id); } catch (e) { /* kept for this page only */ }
  }
  return id;
}
async function watchdog() {               // nothing heard for DEAD_MS: the stream dropped (a restart, a network)
  if (!inst.role || inst.ended || inst.reconnecting || Date.now() - inst.heard < DEAD_MS) return;
  inst.reconnecting = true; inst.lost = true; draw();
  let wait = 500;
  for (;;) {                              // the server asked until it answers: 0.5, 1, 2, 4, 4... s, each +-25 %
    let up = false;
    try { up = (await fetch(PROBE, {cache: "no-store"})).ok; } catch (e) { up = false; }
    if (up || !inst.role || inst.ended) break;
    await new Promise((ok) => setTimeout(ok, wait * (0.75 + Math.random() / 2)));
    wait = Math.min(4000, 2 * wait);
  }
  inst.reconnecting = false;
  if (!inst.role || inst.ended) return;
  inst.reconnects += 1; follow();
  inst.heard = Date.now() - DEAD_MS + 5000;  // no snapshot within 5 s: asked again
}
function received(s) {                    // another class's, or an old stream's, is never shown
  if (!s || norm(s.code) !== norm(inst.code) || (s.n !== undefined && s.n !== inst.streams)) return;
  inst.heard = Date.now();
  if (inst.lost) { inst.lost = false; draw(); }
  if (s.error) {                          // (her own End class, answered by the stream first: her confirmation)
    if (inst.role === "teacher" && inst.closing) { stopTeaching(w("class_closed_teacher")); return; }
    said({ok: false, error: s.error, key: s.key}); inst.ended = true;
    if (inst.role === "teacher") { stopTeaching(inst.kept ? null : s.error); return; }  // a class this browser
    keep(sessionStorage, FOLLOW_KEY, null); draw();                                      // kept, ended since
    if (!inst.snap) { joinForm.hidden = false; joinBox.value = inst.code; }  // never in it (a wrong code): the box
    return;                                                                  // to type it again
  }
  inst.code = s.code;                     // as the server writes it (a code may be typed in any case)
  if (s.stream) ask({op: "here", code: inst.code, stream: s.stream}).then(said);  // read: this stream counts
  if (inst.snap && s.seq < inst.snap.seq && !s.ended) return;
  inst.snap = s; inst.seq = s.seq;
  if (s.you) { inst.student = s.you; keep(sessionStorage, FOLLOW_KEY, {code: inst.code}); }  // in it: this tab's
  if (s.ended) {
    inst.ended = true;
    if (inst.role === "teacher") { stopTeaching(w(inst.closing ? "class_closed_teacher" : "class_ended_teacher")); return; }
    keep(sessionStorage, FOLLOW_KEY, null);
  }
  if (inst.role === "student" && inst.following && !s.ended) applyView();
  if (inst.role === "teacher" && inst.resume) resume(s);
  draw();
}
async function applyView() {              // the teacher's view, opened as a link opens (assets/shell/link.js)
  const s = inst.snap;
  if (!s || !s.view || s.view === inst.applied || !link() || !link().open) return;
  if (inst.linkFirst && !link().opened) { setTimeout(applyView, 200); return; }  // the address's view opens first
  if (inst.applying) { inst.again = true; return; }
  inst.applying = true; inst.applied = s.view;
  try { await link().open(`?${s.view}`); } finally { inst.applying = false; }
  inst.appliedSeq = s.seq; inst.opened = (inst.opened || 0) + 1;
  if (inst.again) { inst.again = false; if (inst.following) applyView(); }
}

// -- the teacher: the view sent at each change ------------------------------------------------------------------
function viewNow() {
  const L = link();
  if (!L || !L.url || L.opening) return null;
  let u;
  try { u = new URL(L.url()); } catch (e) { return null; }
  for (const k of PERSONAL) u.searchParams.delete(k);
  return u.searchParams.toString();
}
function stepNow() {
  const L = find("attention", "lens"), st = L && L.state;
  return st && st.traj ? st.t : null;
}
function lessonNow() {                    // the teacher's lesson and its view (?lesson=...&view=N), or ""
  const q = new URLSearchParams(location.search), out = new URLSearchParams();
  if (!q.has("lesson")) return "";
  out.set("lesson", q.get("lesson"));
  if (q.has("view")) out.set("view", q.get("view"));
  return out.toString();
}
function ownView(q) {                     // the address names a view or a lesson of its own (a link opened)
  return [...q.keys()].some((k) => !PERSONAL.includes(k));
}
async function resume(s) {               // the teacher's page again: the class's view shown (its lesson reopened),
  inst.resume = false;                   // then sent on
  if (s.lesson) { location.replace(`${location.pathname}?${s.lesson}`); return; }
  if (s.view && link() && link().open) {
    inst.resuming = true;
    try { await link().open(`?${s.view}`); } finally { inst.resuming = false; }
  }
  inst.sent = viewNow() ?? s.view; inst.sentLesson = "";
}
let sending = false;
async function check() {
  if (inst.role !== "teacher" || inst.ended || inst.lost || sending || inst.resume || inst.resuming) return;
  if (inst.linkFirst && !(link() && link().opened)) return;  // the address's own view opened first
  const v = viewNow(), lesson = lessonNow();
  if (v === null || (v === inst.sent && lesson === inst.sentLesson)) return;
  sending = true;
  try {
    const a = await ask({op: "view", code: inst.code, token: inst.token, view: v, step: stepNow(), lesson});
    if (said(a)) { inst.sent = v; inst.sentLesson = lesson; inst.sends = (inst.sends || 0) + 1; }
  } finally { sending = false; }
}
const soon = () => setTimeout(check, 30);
let listening = false;
function teach(code, token) {
  inst.role = "teacher"; inst.code = code; inst.token = token; inst.ended = false;
  keep(localStorage, TEACHER_KEY, {code, token});  // this browser's other tabs and later pages teach it too
  if (!listening) {                       // a page that teaches no class listens to nothing of the page
    listening = true;
    for (const ev of ["click", "keyup", "change", "input"]) document.addEventListener(ev, soon, true);
  }
  document.body.classList.add("class-teaching");  // the panel's own room beside the page (attention_lens/live/page.py BOX_CSS)
  const base = `${location.origin}${location.pathname}`;
  $("#class_link").value = `${base}?class=${encodeURIComponent(code)}`;
  $("#class_teacher_link").value = `${base}?class=${encodeURIComponent(code)}&teach=${encodeURIComponent(token)}`;
  panel.hidden = false; startBtn.hidden = true; joinForm.hidden = true;
  showCode(code, token, $("#class_link").value);
  clearInterval(inst.timer); inst.timer = setInterval(check, CHECK_MS);
  follow(); check();
}
startBtn.addEventListener("click", async () => {
  startBtn.disabled = true;
  const a = await ask({op: "start"});
  startBtn.disabled = false;
  if (!a.ok) { const n = link() && link().say; if (n) n(a.error); inst.lastError = a.error; return; }
  teach(a.code, a.token);
  try { await navigator.clipboard.writeText($("#class_link").value); } catch (e) { /* shown in the panel */ }
});
for (const id of ["#class_link", "#class_teacher_link"]) $(id).addEventListener("focus", (e) => e.target.select());
function stopTeaching(why) {              // the class ended (here, in another tab, or on the server): Teach live again
  inst.ended = true; inst.closing = false; clearInterval(inst.timer);
  panel.hidden = true; startBtn.hidden = false; joinForm.hidden = false;
  inst.role = null; document.body.classList.remove("class-teaching");
  const mine = kept(localStorage, TEACHER_KEY);
  if (mine && mine.code === inst.code) keep(localStorage, TEACHER_KEY, null);
  if (why && link() && link().say) link().say(why);
}
// End class: her own confirmation, whichever comes first, the answer or the stream's last snapshot (which says
// "ended" to every page of the class: another tab of hers reads that it has ended, this one that she ended it)
$("#class_close").addEventListener("click", async () => {
  inst.closing = true;
  const a = await ask({op: "close", code: inst.code, token: inst.token});
  if (inst.role !== "teacher") return;    // stopped already by the stream, with her confirmation
  if (said(a)) stopTeaching(w("class_closed_teacher")); else inst.closing = false;
});

// -- the code to join by: large on the panel with its QR code, "Show code" over the whole screen (a projector) ---
const spaced = (c) => (c.length > 4 ? `${c.slice(0, 4)} ${c.slice(4)}` : c);  // read in two halves
const site = () => `${location.host}${location.pathname}`.replace(/\/$/, "");
async function showCode(code, token, url) {
  for (const id of ["#class_code", "#class_show_code"]) $(id).textContent = spaced(code);
  const a = await ask({op: "qr", code, token, url});  // made by the server (segno): attention_lens/live/page.py qr
  if (!a.ok || inst.code !== code) return;
  for (const id of ["#class_qr", "#class_show_qr"]) { $(id).src = a.qr; $(id).hidden = false; }
}
const shown = $("#class_show_box");
function closeShow() {
  if (shown.hidden) return;
  shown.hidden = true;
  if (document.fullscreenElement === shown) document.exitFullscreen().catch(() => {});
  $("#class_show").focus();
}
$("#class_show").addEventListener("click", () => {
  $("#class_show_say").textContent = w("class_show_go", {site: site()});
  shown.hidden = false; $("#class_show_close").focus();
  if (shown.requestFullscreen) shown.requestFullscreen().catch(() => { /* the page's whole window still */ });
});
$("#class_show_close").addEventListener("click", closeShow);
shown.addEventListener("keydown", (e) => { if (e.key === "Escape") closeShow(); });
document.addEventListener("fullscreenchange", () => {  // Esc left full screen: the code goes with it
  if (document.fullscreenElement === shown) shown.full = true;
  else if (shown.full) { shown.full = false; closeShow(); }
});
$("#class_teacher_open").addEventListener("click", (e) => {  // the teacher's own link, never on the panel itself
  const box = $("#class_teacher"), open = box.hidden;
  box.hidden = !open; e.currentTarget.setAttribute("aria-expanded", String(open));
  if (open) $("#class_teacher_link").focus();
});

// -- joining by the code typed on the plain page (Enter joins; a wrong one is said, the box kept to type again) --
const joinForm = $("#class_join"), joinBox = $("#join_code"), joinMsg = $("#join_msg");
joinForm.addEventListener("submit", async (e) => {
  e.preventDefault();
  const typed = joinBox.value;
  if (!norm(typed)) { joinMsg.textContent = w("join_tip"); joinBox.focus(); return; }
  joinMsg.textContent = "";
  const a = await ask({op: "check", code: typed});
  if (!a.ok) { joinMsg.textContent = a.error; inst.lastError = a.error; joinBox.focus(); joinBox.select(); return; }
  const u = new URL(location.href);      // the page's address is the class's link: a reload joins again
  for (const k of [...u.searchParams.keys()]) if (!["lang", "explain", "__theme"].includes(k)) u.searchParams.delete(k);
  u.searchParams.set("class", a.code);
  history.replaceState(history.state, "", u);
  student(a.code);
});
function student(code) {                  // a student of the class (a wrong or ended code: the server says so)
  inst.role = "student"; inst.code = code.slice(0, 100); inst.ended = false; inst.snap = null; inst.lastError = null;
  inst.student = browserId();
  inst.linkFirst = ownView(new URLSearchParams(location.search));  // opened by assets/shell/link.js before the class's
  joinForm.hidden = true; joinMsg.textContent = "";
  draw(); follow();
  document.body.classList.add("class-student");
  if (!student.listening) { student.listening = true; document.addEventListener("click", onMapClick, true); }
}

// -- questions ------------------------------------------------------------------------------------------------
function question(kind) {                 // {keys, model, row} of the view shown, or null
  const L = find("attention", "lens"), st = L && L.state, d = st && st.traj;
  if (!d || st.doc !== d) return null;
  if (kind === "where") {
    const v = L.view();
    if (!v || v.row === null || v.row === undefined || !v.z[v.row]) return null;
    const z = v.z[v.row], keep = v.x.map((_, j) => j).filter(j => !(Number.isNaN(z[j])));
    return {keys: keep.map(j => v.x[j]), model: keep.map(j => Math.min(1, Math.max(0, z[j] || 0))), row: v.y[v.row]};
  }
  const K = d.topk.k, keys = [], model = [];  // the pieces that may follow the ones read at step t: 0..t
  for (let r = 0; r < K; r++) { keys.push(d.vocab[d.topk.ids[st.t * K + r]]); model.push(d.topk.p[st.t * K + r]); }
  const text = d.pieces.slice(0, st.t + 1).filter(p => !d.specials.has(p)).join("").replace(/\u2581/g, " ").trim();
  return {keys, model, row: text.length > 60 ? `…${text.slice(-60)}` : text || "…"};
}
// A piece or a row's label as words for a question's and an answer's lines: no ▁ marks, <s> and </s> named; a piece
// that continues a word (no ▁ where the question's other pieces have one) starts with "…" ("…ter" after "sis")
const MARK = /\u2581/g;
function plain(s, pieces = false) {
  return String(s).split(" → ").map(x => x === "<s>" ? w("class_piece_start") : x === "</s>" ? w("class_piece_end")
    : pieces && /^[\p{L}\p{N}]/u.test(x) ? `…${x}` : x.replace(MARK, " ").trim() || "␣").join(" → ");
}
const keysOf = (q) => {                   // the question's choices as words (pieces: some carry ▁)
  const pieces = q.keys.some(k => k.includes("\u2581"));
  return q.keys.map(k => plain(k, pieces));
};
for (const kind of ["where", "next"]) {
  $(`#ask_${kind}`).addEventListener("click", async () => {
    const q = question(kind), msg = panel.querySelector(".class-msg");
    if (!q) { msg.textContent = w("class_no_row"); return; }
    msg.textContent = "";
    said(await ask({op: "ask", code: inst.code, token: inst.token, kind, ...q}));
  });
}
$("#reveal").addEventListener("click", async () => {
  const q = inst.snap && inst.snap.question;
  if (q) said(await ask({op: "reveal", code: inst.code, token: inst.token, question: q.id}));
});
async function answer(q, choice) {
  inst.mine = {id: q.id, choice};
  draw();
  said(await ask({op: "answer", code: inst.code, student: inst.student, question: q.id, choice}));
}
// "Where does this row look?" on the student's own map: a tap on a key (a column of the big map) is that answer
function mapChoice(e) {                   // the question's choice under a click on the big map, or null
  const s = inst.snap, q = s && s.question;
  if (inst.role !== "student" || inst.ended || !q || q.kind !== "where" || q.revealed) return null;
  if (!(e.target instanceof Element) || !e.target.matches("#attention [data-role=canvas]")) return null;
  const L = find("attention", "lens"), v = L && L.view && L.view();
  if (!v || v.row === null || v.row === undefined || !v.z[v.row]) return null;
  const z = v.z[v.row], keep = v.x.map((_, j) => j).filter(j => !Number.isNaN(z[j]));  // as question() asks it
  const keys = keep.map(j => v.x[j].slice(0, 40));  // attention_lens/live/registry.py MAX_KEY_CHARS
  if (keys.length !== q.keys.length || keys.some((k, i) => k !== q.keys[i])) return null;  // not the question's view
  const choice = keep.indexOf(Math.floor(e.offsetX / v.cell.w));
  return choice >= 0 ? choice : null;
}
function onMapClick(e) {
  const choice = mapChoice(e);
  if (choice === null) return;
  e.stopPropagation();                    // the map keeps the question's row (the view's click picks the row tapped)
  answer(inst.snap.question, choice);
}

// -- drawing (textContent only; again when the language or mode changes) ----------------------------------------
function chart(el, q, asked = true) {     // the class's answers per key, and the model's own once revealed
  el.textContent = "";                    // (`asked`: the question said above it, as the teacher's panel has it)
  if (!q || !q.counts) return;
  const legend = document.createElement("div"); legend.className = "class-legend";
  const head = document.createElement("div");
  head.textContent = (asked ? `${w(q.kind === "where" ? "class_q_where" : "class_q_next", {row: plain(q.row)})} · ` : "")
    + w(q.answered === 1 ? "class_answers_1" : "class_answers_n", {n: q.answered, of: inst.snap.students});
  const keys = keysOf(q);
  const sw = (color, text) => { const i = document.createElement("i"); i.style.background = color;
                                legend.append(i, document.createTextNode(text)); };
  sw("#16a34a", w("class_legend_students"));
  if (q.revealed) sw("#f97316", w("class_legend_model"));
  const grid = document.createElement("div"); grid.className = "class-chart";
  const most = Math.max(1, ...q.counts);
  keys.forEach((k, i) => {
    const key = document.createElement("span"); key.className = "key"; key.textContent = k;
    const bars = document.createElement("span");
    const b = document.createElement("div"); b.className = "bar"; b.style.width = `${100 * q.counts[i] / most}%`;
    bars.append(b);
    if (q.revealed && q.model) {
      const m = document.createElement("div"); m.className = "bar model"; m.style.width = `${100 * q.model[i]}%`;
      bars.append(m);
    }
    const n = document.createElement("span");
    n.textContent = q.revealed && q.model ? `${q.counts[i]} · ${pct(q.model[i])}` : String(q.counts[i]);
    grid.append(key, bars, n);
  });
  el.append(head, legend, grid);
}
function top(q) {
  let best = 0;
  q.model.forEach((p, i) => { if (p > q.model[best]) best = i; });
  return {key: keysOf(q)[best], p: pct(q.model[best])};
}
function drawStudentQuestion(el, q) {
  el.textContent = "";
  if (!q || inst.hiddenQ === `${q.id}:${q.revealed}`) return;  // hidden by the student until it changes
  const box = document.createElement("div"); box.className = "class-q";
  const hide = document.createElement("button"); hide.type = "button"; hide.className = "class-hide";
  hide.textContent = "✕"; hide.title = w("class_hide_question"); hide.setAttribute("aria-label", hide.title);
  hide.addEventListener("click", () => { inst.hiddenQ = `${q.id}:${q.revealed}`; draw(); });
  const mine = q.mine ?? (inst.mine && inst.mine.id === q.id ? inst.mine.choice : null);
  const picked = mine !== null && mine !== undefined;
  if (q.revealed && q.model) {            // the answer in one line, the chart on demand: the map stays in sight
    box.classList.add("revealed");        // (on a phone the question, the keys and the chart took ~40 % of the screen)
    const after = document.createElement("div"); after.className = "class-answer";
    after.textContent = w(q.kind === "where" ? "class_reveal_where" : "class_reveal_next", top(q))
      + (picked ? ` ${w("class_reveal_yours", {key: keysOf(q)[mine]})}` : "");
    const open = inst.chartFor === q.id;
    const more = document.createElement("button"); more.type = "button"; more.className = "class-chart-toggle";
    more.textContent = `${w("class_chart")} ${open ? "▾" : "▸"}`; more.title = w("class_chart_tip");
    more.setAttribute("aria-expanded", String(open));
    more.addEventListener("click", () => { inst.chartFor = open ? null : q.id; draw(); });
    box.append(after, more, hide);
    el.append(box);
    if (open) {
      const grid = document.createElement("div"); grid.className = "class-chart-wrap";
      grid.tabIndex = 0;                  // it may scroll: reachable by the keyboard (axe-core)
      chart(grid, q, false);
      el.append(grid);
    }
    return;
  }
  const text = document.createElement("span");
  text.textContent = w(q.kind === "where" ? "class_q_where" : "class_q_next", {row: plain(q.row)});
  box.append(text);
  const keys = document.createElement("span"); keys.className = "class-keys";  // "where": the map's row answers too
  keysOf(q).forEach((k, i) => {
    const b = document.createElement("button"); b.type = "button"; b.textContent = k; b.dataset.choice = String(i);
    b.setAttribute("aria-pressed", String(mine === i)); b.disabled = q.revealed;
    b.addEventListener("click", () => answer(q, i));
    keys.append(b);
  });
  box.append(keys, hide);
  el.append(box);
  if (picked) {
    const after = document.createElement("div"); after.className = "class-answer";
    after.textContent = w("class_answered", {key: keysOf(q)[mine]});
    el.append(after);
  }
}
function conceal(what) {                 // the map, its hovers and Inside this head hide the answer (assets/shell/lens.js)
  const L = find("attention", "lens");
  if (L && L.conceal) L.conceal(what);
  else if (what) setTimeout(() => draw(), 200);  // the view not mounted yet
}
// "Where does this row look?" on a phone: the map is screens away from the bar, its row scrolled out of sight; the
// page is brought to the map with the highlighted row just above the class's bar (the map's frame scrolled to its
// first key), once per question
function bringRow(tries = 40) {
  const L = find("attention", "lens"), v = L && L.view && L.view(), c = document.querySelector("#attention [data-role=canvas]");
  if (!v || v.row === null || v.row === undefined || !c || !c.offsetParent) {
    if (tries > 0) setTimeout(() => bringRow(tries - 1), 100);
    return;
  }
  const r = c.getBoundingClientRect(), top = r.top + v.row * v.cell.h, room = bar.getBoundingClientRect().top;
  if (top >= 0 && top + v.cell.h <= room) return;  // in sight already
  const big = document.querySelector("#attention [data-role=big]");
  const mapTop = big ? big.getBoundingClientRect().top : r.top;  // the map's title and the row, if they fit
  const y = top + v.cell.h - mapTop <= room - 8 ? mapTop - 8 : top - room / 2;
  window.scrollBy({top: y, behavior: "instant"});
}
function draw() {
  const s = inst.snap;
  if (inst.role === "teacher") {
    const msg = panel.querySelector(".class-msg"), lost = w("class_reconnecting");
    if (inst.lost) msg.textContent = lost; else if (msg.textContent === lost) msg.textContent = "";
    $("#class_count").textContent = s ? w(s.students === 1 ? "class_count_1" : "class_count", {n: s.students}) : "";
    const q = s && s.question;
    chart($("#class_answers"), q);
    $("#reveal").hidden = !q || q.revealed;
    return;
  }
  if (inst.role !== "student") return;
  bar.hidden = false; startBtn.hidden = true;  // a student teaches no class of their own while in one
  const state = bar.querySelector("[data-role=state]");
  const leave = $("#class_leave"), rejoin = $("#class_rejoin");
  if (inst.ended || !s) {
    document.body.classList.remove("class-hide-next"); conceal(null);
    if (inst.ended) state.textContent = inst.lastError || w("class_ended");
    else state.textContent = w(inst.lost ? "class_reconnecting" : "class_joining");
    leave.hidden = rejoin.hidden = true;
    if (inst.ended && inst.snap) drawStudentQuestion(bar.querySelector("[data-role=question]"), null);
    return;
  }
  const q = s.question;                   // an open question: what gives its answer away hidden until the reveal
  const open = q && !q.revealed ? q.kind : null;  // ("next": the model's own list; "where": the row's weights)
  document.body.classList.toggle("class-hide-next", open === "next");
  conceal(open);
  state.textContent = inst.lost ? w("class_reconnecting") : inst.following
    ? w(s.away ? "class_teacher_away" : "class_following")
    : (s.step === null || s.step === undefined ? w("class_at_start") : w("class_at_step", {step: s.step}));
  leave.hidden = !inst.following; rejoin.hidden = inst.following;
  drawStudentQuestion(bar.querySelector("[data-role=question]"), s.question);
  if (open === "where" && inst.following && inst.shownFor !== q.id) { inst.shownFor = q.id; bringRow(); }
}
function leave() {                        // an entry of the history: Back follows the teacher again
  inst.following = false; held = null; draw(); drawAsking();
  history.pushState({...(history.state || {}), classExplore: inst.code}, "", location.href);
}
$("#class_leave").addEventListener("click", leave);

// -- a student's tap that would leave the teacher's view while following: asked first (the head grid switched the
// head while the bar still said "following"); held, and done only once the student chose to explore on their own
const LEAVES = ["#attention [data-role=grid-canvas]", "#attention [data-role=canvas]", "#attention [data-kind]",
  "#attention select", "#attention [data-role=scrub]", "#attention [data-role=play]", "#attention [data-role=leave]",
  "#attention .lens-measure input", "#inside .inside-stages button", "#back", "#step", "#run", "#reset", "#start",
  "#tabs button[role=tab]"].join(", ");
const asking = document.createElement("div");
asking.className = "class-leave-ask"; asking.hidden = true; asking.setAttribute("aria-live", "polite");
bar.querySelector(".class-row").after(asking);
let held = null;                          // the tap held: {target, x, y}
function guard(e) {
  if (!e.isTrusted || inst.role !== "student" || !inst.following || inst.ended || !inst.snap) return;
  const t = e.target instanceof Element ? e.target.closest(LEAVES) : null;
  if (!t || (e.type === "click" && mapChoice(e) !== null)) return;  // a tap that answers "where" stays
  if (e.type === "mousedown" && t.tagName !== "SELECT") return;     // a select opens its list on mousedown
  e.preventDefault(); e.stopImmediatePropagation();
  held = {target: t, x: e.clientX, y: e.clientY};
  drawAsking();
}
for (const ev of ["mousedown", "click", "change", "input"]) document.addEventListener(ev, guard, true);
function drawAsking() {
  asking.textContent = "";
  asking.hidden = !held;
  if (!held) return;
  const say = document.createElement("span"); say.textContent = w("class_leave_ask");
  const go = document.createElement("button"); go.type = "button"; go.textContent = w("class_leave");
  const stay = document.createElement("button"); stay.type = "button"; stay.textContent = w("class_stay");
  go.addEventListener("click", () => {
    const h = held; leave();
    const t = h.target;                   // the tap, done now (on a canvas where it was)
    if (t.tagName === "CANVAS") {
      t.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, clientX: h.x, clientY: h.y}));
    } else if (t.tagName === "SELECT") { t.focus(); try { t.showPicker(); } catch (err) { /* focused: the keys */ } }
    else if (t.tagName === "INPUT" && t.type === "range") t.focus();
    else t.click();
  });
  stay.addEventListener("click", () => {  // a select or the slider moved before it was held: shown as it is again
    held = null; drawAsking(); find("attention", "lens")?.redraw?.();
  });
  asking.append(say, go, stay);
}
function rejoin() {                        // the teacher's view again, whatever the student opened meanwhile
  inst.following = true; inst.applied = null; draw(); applyView();
}
$("#class_rejoin").addEventListener("click", rejoin);
window.addEventListener("popstate", (e) => {
  if (inst.role === "student" && !inst.following && !inst.ended && !(e.state && e.state.classExplore)) rejoin();
});
document.addEventListener("lens-explain", () => { draw(); drawAsking(); });  // a language or mode switch: every text

// -- a page opened with ?class=<code> (a student), ?class=<code>&teach=<token> (the teacher link), or in a browser
// that teaches a class (localStorage) or a tab that follows one (sessionStorage) ----------------------------------
const q0 = new URLSearchParams(location.search);
const code0 = q0.get("class"), mine0 = kept(localStorage, TEACHER_KEY), follow0 = kept(sessionStorage, FOLLOW_KEY);
function unaddressed() {                  // the class's code and token out of the address bar (a projector shows it)
  const q = new URLSearchParams(location.search);
  q.delete("class"); q.delete("teach");
  history.replaceState(history.state, "", `${location.pathname}${q.toString() ? "?" + q : ""}${location.hash}`);
}
if (code0 && q0.get("teach")) {           // the teacher link: the class's view first, then her changes again
  unaddressed(); inst.resume = true; teach(norm(code0), q0.get("teach"));
} else if (mine0 && typeof mine0.code === "string" && typeof mine0.token === "string"
           && (!code0 || norm(code0) === norm(mine0.code))) {  // her class: a reload, a tab, a link or a lesson
  if (code0) unaddressed();
  inst.linkFirst = ownView(new URLSearchParams(location.search));  // the link's view leads; else the class's
  inst.resume = !inst.linkFirst; inst.kept = true; teach(mine0.code, mine0.token);
} else if (code0) {                       // a wrong or ended code: the server says so (one message for both)
  student(code0);
} else if (follow0 && typeof follow0.code === "string") {  // Back into the app, a reload of a view of its own
  student(follow0.code);
}
inst.check = check;

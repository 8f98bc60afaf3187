// attention-lens: a live class (issue 59). Runs as the js_on_load of the gr.HTML #class_box (attention_lens/live/page.py):
// `element`, `props`, `trigger`, `watch` are given; its stream comes through the gr.HTML #class_feed
// (its element's .feed: follow(data) starts the generator event, each snapshot becomes its value).
// The class's view is the page state a link holds (assets/link.js url(): a query string). The teacher's page sends
// it whenever it changes (checked at each click, key and input, and every CHECK_MS while teaching: the step may move
// by the player); each student's page opens it as a link (#link_box's .link.open), so a class shows what a link shows.
// The student's language and explanation mode stay their own (PERSONAL). Students answer "where" by tapping a key
// on their own map (the attention view's big map, #attention's canvas: a click there is taken before the view's own
// click, which would pick another row), and "what next" by a piece; the bar's buttons give the same choices to the
// keyboard and screen readers. The teacher's panel draws the answers (#class_answers) and, after Reveal, the model's.
// A page in no class runs nothing of this but the Teach live button's listener (and a look at its URL).
// Everything from the server or the URL is shown with textContent only: pieces and rows are user input.
const $ = (s) => element.querySelector(s);
const panel = $("#class_panel"), bar = $("#class_bar"), startBtn = $("#class_start");
const CHECK_MS = 250, PERSONAL = ["lang", "explain", "__theme", "class", "teach"];
const inst = {role: null, code: null, token: null, snap: null, following: true, applied: null, sent: null,
              seq: 0, applying: false, errors: [], lastError: null};
home.live = inst;  // on this view's own element (#class_box): docs/design.md
const link = () => find("link_box", "link");  // assets/link.js, on its element
// the bar's room at the screen's bottom, where "Link copied" (assets/link.js say) stands too: that line goes above the
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
function ask(data) {
  const id = `class-${Date.now()}-${++ids}`;
  return new Promise((ok) => { pending.set(id, ok); trigger("click", {...data, id}); });
}
watch("value", () => {
  const a = props.value;
  if (a && pending.has(a.id)) { const ok = pending.get(a.id); pending.delete(a.id); ok(a); }
});
function said(a) {                        // a refusal: said in the panel or the bar
  if (a.ok) return true;
  inst.lastError = a.error; inst.errors.push(a.key);
  const msg = inst.role === "teacher" ? panel.querySelector(".class-msg") : bar.querySelector("[data-role=state]");
  msg.textContent = a.error;
  return false;
}

// -- the stream (#class_feed) --------------------------------------------------------------------------------------
function follow() {
  const feed = find("class_feed", "feed");
  if (!feed) { setTimeout(follow, 100); return; }
  if (!feed.bound) { feed.bound = true; feed.watch("value", () => received(feed.props.value)); }
  feed.follow(inst.role === "teacher" ? {code: inst.code, token: inst.token} : {code: inst.code, student: browserId()});
}
// one browser is one student, however many tabs it follows with: an id kept in this site's storage (one vote)
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
function received(s) {
  if (!s || norm(s.code) !== norm(inst.code)) return;  // another class's (an old stream) is never shown
  if (!s.error) inst.code = s.code;       // as the server writes it (a code may be typed in any case)
  if (s.error) {
    said({ok: false, error: s.error, key: s.key}); inst.ended = true; draw();
    if (inst.role === "student" && !inst.snap) {  // never in the class (a wrong code): the box to type it again
      joinForm.hidden = false; joinBox.value = inst.code;
    }
    return;
  }
  if (s.stream) ask({op: "here", code: inst.code, stream: s.stream}).then(said);  // read: this page counts
  if (inst.snap && s.seq < inst.snap.seq && !s.ended) return;
  inst.snap = s; inst.seq = s.seq;
  if (s.you) inst.student = s.you;
  if (s.ended) inst.ended = true;
  if (inst.role === "student" && inst.following && !s.ended) applyView();
  if (inst.role === "teacher" && inst.resume) resume(s);
  draw();
}
async function applyView() {              // the teacher's view, opened as a link opens (assets/link.js)
  const s = inst.snap;
  if (!s || !s.view || s.view === inst.applied || !link() || !link().open) return;
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
async function resume(s) {               // the teacher's link opened again: the class's view shown, then sent on
  inst.resume = false;
  if (s.view && link() && link().open) {
    inst.resuming = true;
    try { await link().open(`?${s.view}`); } finally { inst.resuming = false; }
  }
  inst.sent = viewNow() ?? s.view;
}
let sending = false;
async function check() {
  if (inst.role !== "teacher" || inst.ended || sending || inst.resume || inst.resuming) return;
  const v = viewNow();
  if (v === null || v === inst.sent) return;
  sending = true;
  try {
    const a = await ask({op: "view", code: inst.code, token: inst.token, view: v, step: stepNow()});
    if (said(a)) { inst.sent = v; inst.sends = (inst.sends || 0) + 1; }
  } finally { sending = false; }
}
const soon = () => setTimeout(check, 30);
let listening = false;
function teach(code, token) {
  inst.role = "teacher"; inst.code = code; inst.token = token; inst.ended = false;
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
$("#class_close").addEventListener("click", async () => {
  const a = await ask({op: "close", code: inst.code, token: inst.token});
  if (said(a)) { inst.ended = true; clearInterval(inst.timer); panel.hidden = true; startBtn.hidden = false;
                 joinForm.hidden = false; inst.role = null; document.body.classList.remove("class-teaching"); }
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
function student(code) {
  inst.role = "student"; inst.code = code.slice(0, 100); inst.ended = false; inst.snap = null; inst.lastError = null;
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
  const K = d.topk.k, keys = [], model = [];
  for (let r = 0; r < K; r++) { keys.push(d.vocab[d.topk.ids[st.t * K + r]]); model.push(d.topk.p[st.t * K + r]); }
  const text = d.pieces.slice(0, st.t).join(" ") || "…";
  return {keys, model, row: text.length > 60 ? `…${text.slice(-60)}` : text};
}
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
  head.textContent = (asked ? `${w(q.kind === "where" ? "class_q_where" : "class_q_next", {row: q.row})} · ` : "")
    + w("class_answers_n", {n: q.answered, of: inst.snap.students});
  const sw = (color, text) => { const i = document.createElement("i"); i.style.background = color;
                                legend.append(i, document.createTextNode(text)); };
  sw("#16a34a", w("class_legend_students"));
  if (q.revealed) sw("#f97316", w("class_legend_model"));
  const grid = document.createElement("div"); grid.className = "class-chart";
  const most = Math.max(1, ...q.counts);
  q.keys.forEach((k, i) => {
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
  return {key: q.keys[best], p: pct(q.model[best])};
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
      + (picked ? ` ${w("class_reveal_yours", {key: q.keys[mine]})}` : "");
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
  text.textContent = w(q.kind === "where" ? "class_q_where" : "class_q_next", {row: q.row});
  box.append(text);
  const keys = document.createElement("span"); keys.className = "class-keys";  // on a phone, for screen readers and
  keys.classList.toggle("on-map", q.kind === "where");                          // keys only: the map answers "where"
  q.keys.forEach((k, i) => {
    const b = document.createElement("button"); b.type = "button"; b.textContent = k; b.dataset.choice = String(i);
    b.setAttribute("aria-pressed", String(mine === i)); b.disabled = q.revealed;
    b.addEventListener("click", () => answer(q, i));
    keys.append(b);
  });
  box.append(keys, hide);
  el.append(box);
  if (picked) {
    const after = document.createElement("div"); after.className = "class-answer";
    after.textContent = w("class_answered", {key: q.keys[mine]});
    el.append(after);
  }
}
function draw() {
  const s = inst.snap;
  if (inst.role === "teacher") {
    $("#class_count").textContent = s ? w("class_count", {n: s.students}) : "";
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
    document.body.classList.remove("class-hide-next");
    if (inst.ended) state.textContent = inst.lastError || w("class_ended");
    else state.textContent = w("class_joining");
    leave.hidden = rejoin.hidden = true;
    if (inst.ended && inst.snap) drawStudentQuestion(bar.querySelector("[data-role=question]"), null);
    return;
  }
  const q = s.question;                   // "What comes next?": the model's own list hidden until the reveal
  document.body.classList.toggle("class-hide-next", !!(q && q.kind === "next" && !q.revealed));
  state.textContent = inst.following ? w("class_following")
    : (s.step === null || s.step === undefined ? w("class_at_start") : w("class_at_step", {step: s.step}));
  leave.hidden = !inst.following; rejoin.hidden = inst.following;
  drawStudentQuestion(bar.querySelector("[data-role=question]"), s.question);
}
$("#class_leave").addEventListener("click", () => { inst.following = false; draw(); });
$("#class_rejoin").addEventListener("click", () => { inst.following = true; draw(); applyView(); });
document.addEventListener("lens-explain", draw);  // a language or mode switch: every text again

// -- a page opened with ?class=<code> (a student) or ?class=<code>&teach=<token> (the teacher again) ------------
const q0 = new URLSearchParams(location.search);
const code0 = q0.get("class");
if (code0 && q0.get("teach")) {           // the class's view first, then the teacher's changes again
  inst.resume = true; teach(code0, q0.get("teach"));
} else if (code0) {                       // a wrong or ended code: the server says so (one message for both)
  student(code0);                         // its map's clicks taken before the view's own click on its canvas
}
inst.check = check;

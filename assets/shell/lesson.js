// attention-lens: a lesson, a teacher's views in order with a note each, in one link. The js_on_load
// of the gr.HTML #lesson (attention_lens/shell/lesson.py), with assets/shell/views.js as its one part. The teacher opens the tools with
// Lesson… (beside Copy link), writes a note (#lesson_note) and adds the view shown (#lesson_add: the query Copy
// link would give, assets/shell/link.js), 1 to 8 times; Copy lesson link (#copy_lesson) gives /?lesson=<base64url JSON of
// [[query, note], ...]>. Nothing is stored on the server. A page opened with it shows the lesson bar (#lesson_bar:
// "View 2 of 4", the note, Back / Next) and opens each view as its own link would be opened (#link_box's .link.open).
// Everything from the URL is checked (sizes, shapes) and shown with textContent only.
const {tabs, kit} = parts.views({element, find});  // the tabs' registry and its helpers (assets/shell/views.js: a part, its own scope)
const LIMITS = JSON.parse(element.querySelector(".lesson").dataset.views || "{}");
const MAX_VIEWS = LIMITS.views || 8, MAX_NOTE = LIMITS.note || 140, MAX_LINK = LIMITS.link || 12000;
const bar = element.querySelector("#lesson_bar"), make = element.querySelector(".lesson-make");
const role = (root, r) => root.querySelector(`[data-role="${r}"]`);
const lesson = {made: [], views: null, at: -1, busy: false, last: null, want: null, tabs, kit};
home.lesson = lesson;  // on this view's own element (#lesson): docs/design.md
const link = () => find("link_box", "link");  // assets/shell/link.js, on its element
const say = (text, u) => { if (link() && link().say) link().say(text, u); };
const W = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label], the page's language

// -- the lesson as one URL parameter --------------------------------------------------------------------------
function encode(views) {                  // [[query, note], ...] -> base64url of its UTF-8 JSON
  const bytes = new TextEncoder().encode(JSON.stringify(views));
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
const RULE = () => W("lesson_rule", {views: MAX_VIEWS, note: MAX_NOTE, link: MAX_LINK});
function decode(param) {                  // -> {views} or {why}
  if (param.length > MAX_LINK) return {why: W("lesson_why_long", {n: param.length})};
  if (!/^[A-Za-z0-9_-]+$/.test(param)) return {why: W("lesson_why_b64")};
  let views;
  try {
    const bin = atob(param.replace(/-/g, "+").replace(/_/g, "/"));
    views = JSON.parse(new TextDecoder("utf-8", {fatal: true}).decode(Uint8Array.from(bin, c => c.charCodeAt(0))));
  } catch (e) { return {why: W("lesson_why_decode")}; }
  if (!Array.isArray(views) || views.length < 1 || views.length > MAX_VIEWS) {
    return {why: Array.isArray(views) ? W("lesson_why_views", {n: views.length}) : W("lesson_why_nolist")};
  }
  for (const [i, v] of views.entries()) {
    const ok = Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string";
    if (!ok) return {why: W("lesson_why_pair", {i: i + 1})};
    if ([...v[1]].length > MAX_NOTE) return {why: W("lesson_why_note", {i: i + 1, n: [...v[1]].length})};
    if (new URLSearchParams(v[0]).has("lesson")) return {why: W("lesson_why_nested", {i: i + 1})};
  }
  return {views};
}

// -- the student's bar ----------------------------------------------------------------------------------------
function noteNodes(el, text) {            // *word* in a note is set in italics; all of it as text
  el.textContent = "";
  text.split(/\*([^*\n]+)\*/).forEach((part, i) => {
    if (!part) return;
    if (i % 2) { const em = document.createElement("em"); em.textContent = part; el.appendChild(em); }
    else el.appendChild(document.createTextNode(part));
  });
}
// The browser's history follows the lesson: each view shown by Back / Next is an entry (?lesson=...&view=2), so
// the browser's Back and Forward walk through the lesson and never out of the app.
function viewUrl(i) {
  const q = new URLSearchParams(location.search);
  if (i > 0) q.set("view", String(i + 1)); else q.delete("view");
  return `${location.pathname}?${q}`;
}
async function show(i, how = "push") {    // how: "push" (Back / Next), "replace" (the first view), "none" (history)
  const views = lesson.views;
  if (!views || lesson.busy || i < 0 || i >= views.length) return;
  lesson.busy = true; lesson.at = i;
  if (how !== "replace") role(bar, "bad").hidden = true;  // a view was chosen: the bad view= is no longer the news
  if (how === "push") history.pushState({lesson: i}, "", viewUrl(i));
  else if (how === "replace") history.replaceState({lesson: i}, "", viewUrl(i));
  role(bar, "where").textContent = W("lesson_view_of", {i: i + 1, n: views.length});
  noteNodes(role(bar, "note"), views[i][1]);
  bar.querySelector("#lesson_back").disabled = true; bar.querySelector("#lesson_next").disabled = true;
  try { await link().open(views[i][0]); } finally {
    lesson.busy = false;
    bar.querySelector("#lesson_back").disabled = i === 0;
    bar.querySelector("#lesson_next").disabled = i === views.length - 1;
    lesson.shown = i;
    inSight();
    const want = lesson.want; lesson.want = null;
    if (want !== null && want !== undefined && want !== i) show(want, "none");  // Back pressed while it opened
  }
}
// The bar in sight (a view's restoring may scroll the page: a list opened), and Inside this head's sheet
// (assets/translate/inside.js, inside.css) ends below it: never over the bar, its note or Next. On a phone the bar stays at the
// top of the screen (attention_lens/shell/lesson.py CSS: sticky) and the page scrolls so that what the view is about (its map,
// tree, table: SUBJECT, the first one shown) starts right under it: the note and what it speaks of on one screen,
// not ~1,000 px apart under the tabs and the sentence box.
const PHONE = window.matchMedia("(max-width: 599px)");
const SUBJECT = {translate: ["#attention [data-role=big]"], compare: ["#compare"], ablation: ["#ablate_probs", "#ablate_tools"],
                 beam: ["#beam_tree", "#beam_choice"], layers: ["#rollout", "#align_matrix"], atlas: ["#atlas"],
                 learned: ["#learned_plot"], model: ["#model_card"]};
function subject() {                      // the view's subject on the tab shown, or null
  const tab = document.querySelector("#tabs button[role=tab][aria-selected=true]");
  for (const sel of SUBJECT[tab && tab.dataset.tabId] || []) {
    const e = document.querySelector(sel);
    if (e && e.getClientRects().length && e.getBoundingClientRect().height > 0) return e;
  }
  return null;
}
function inSight() {
  bar.scrollIntoView({block: PHONE.matches ? "start" : "nearest"});
  const s = PHONE.matches && subject();
  if (s) window.scrollBy(0, s.getBoundingClientRect().top - bar.getBoundingClientRect().bottom - 8);
  const below = Math.ceil(bar.getBoundingClientRect().bottom) + 4;
  document.documentElement.style.setProperty("--lesson-bar-bottom", `${Math.max(0, below)}px`);
}
window.addEventListener("popstate", () => {
  if (!lesson.views || !new URLSearchParams(location.search).has("lesson")) return;
  lesson.want = viewOf(location.search);  // shown now, or once the view being opened is
  if (!lesson.busy) show(lesson.want, "none");
});
function badView(search, at) {            // view= names no view of the lesson: the bar says so (once, as it opens)
  const v = new URLSearchParams(search).get("view"), el = role(bar, "bad");
  el.hidden = v === null || v === "" || String(at + 1) === v.replace(/^0+(?=\d)/, "");
  if (!el.hidden) el.textContent = W("lesson_no_view", {v: [...v].slice(0, 12).join(""), n: lesson.views.length});
}
function viewOf(search) {                 // ?view=2 -> 1 (0-based); missing or out of range: the first
  const v = new URLSearchParams(search).get("view"), n = lesson.views ? lesson.views.length : 1;
  return /^\d{1,2}$/.test(v || "") && +v >= 1 && +v <= n ? +v - 1 : 0;
}
bar.querySelector("#lesson_back").addEventListener("click", () => show(lesson.at - 1));
bar.querySelector("#lesson_next").addEventListener("click", () => show(lesson.at + 1));

// -- the teacher's tools --------------------------------------------------------------------------------------
function count() {
  const n = lesson.made.length;
  role(make, "count").textContent = W(n ? (n === 1 ? "lesson_count_1" : "lesson_count_n") : "lesson_count_0", {n, max: MAX_VIEWS});
  role(make, "drop").disabled = !n;
  if (lesson.views && lesson.at >= 0) role(bar, "where").textContent = W("lesson_view_of", {i: lesson.at + 1, n: lesson.views.length});
}
document.addEventListener("lens-explain", count);  // the catalogue is read once it has loaded, and again on a switch
function lessonUrl(views) {                 // the language shown goes with it, as with a link (assets/shell/i18n.js)
  const lang = link() && link().url ? new URL(link().url()).searchParams.get("lang") : null;
  return `${location.origin}${location.pathname}?lesson=${encode(views)}${lang ? `&lang=${lang}` : ""}`;
}
make.querySelector("#lesson_add").addEventListener("click", () => {
  if (!link() || !link().url) return;
  const S = find("source_hint", "sentence");  // assets/shell/sentence.js
  if (!S || S.started === null) { say(W("lesson_nothing")); return; }
  if (lesson.made.length >= MAX_VIEWS) { say(W("lesson_full", {max: MAX_VIEWS})); return; }
  const q = new URL(link().url()).searchParams;
  q.delete("lesson"); q.delete("lang");   // the lesson's language is the lesson link's own
  const input = make.querySelector("#lesson_note"), note = [...input.value.trim()].slice(0, MAX_NOTE).join("");
  const views = lesson.made.concat([[q.toString(), note]]);
  if (encode(views).length > MAX_LINK) {
    say(W("lesson_too_long", {max: MAX_LINK}));
    return;
  }
  lesson.made = views; input.value = ""; count();
  say(W(note ? "lesson_added" : "lesson_added_nonote", {n: views.length}));
});
role(make, "drop").addEventListener("click", () => { lesson.made.pop(); count(); });
make.querySelector("#copy_lesson").addEventListener("click", async () => {
  if (!lesson.made.length) { say(W("lesson_none")); return; }
  const u = lessonUrl(lesson.made);
  lesson.last = u;
  let copied = false;
  try { await navigator.clipboard.writeText(u); copied = true; } catch (e) { copied = false; }
  const one = lesson.made.length === 1;  // "1 view", not "1 views"
  const key = copied ? (one ? "lesson_copied_1" : "lesson_copied") : (one ? "lesson_copy_this_1" : "lesson_copy_this");
  say(W(key, {n: lesson.made.length}), u);
});
role(make, "close").addEventListener("click", () => { make.hidden = true; });
function bindOpen() {                     // Lesson… beside Copy link (attention_lens/shell/link.py LINK_HTML) opens the tools
  const b = document.getElementById("lesson_open");
  if (!b) { setTimeout(bindOpen, 200); return; }
  b.addEventListener("click", () => { make.hidden = !make.hidden; if (!make.hidden) make.querySelector("#lesson_note").focus(); });
}
bindOpen();
count();

// -- a page opened with a lesson --------------------------------------------------------------------------------
async function begin() {
  const param = new URLSearchParams(location.search).get("lesson");
  if (param === null) return;
  const view = () => find("attention", "lens");  // the attention view, on its element
  const ready = kit.until(() => link() && link().open && view()?.ready, 60000);
  if (!await ready) return;
  const {views, why} = decode(param);
  if (!views) {
    say(W("lesson_ignored", {why, rule: RULE()}));
    link().opened = true;
    return;
  }
  lesson.views = views;
  bar.hidden = false;
  const at = viewOf(location.search);
  badView(location.search, at);
  await show(at, "replace");
}
begin().catch(e => { lesson.busy = false; say(W("lesson_failed", {why: e.message || e})); });

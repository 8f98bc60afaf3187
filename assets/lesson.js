// attention-lens: a lesson, a teacher's views in order with a note each, in one link (issue 39 item 3). Runs after
// assets/views.js in the js_on_load of the gr.HTML #lesson (ui/lesson.py). The teacher opens the tools with
// Lesson… (beside Copy link), writes a note (#lesson_note) and adds the view shown (#lesson_add: the query Copy
// link would give, assets/link.js), 1 to 8 times; Copy lesson link (#copy_lesson) gives /?lesson=<base64url JSON of
// [[query, note], ...]>. Nothing is stored on the server. A page opened with it shows the lesson bar (#lesson_bar:
// "View 2 of 4", the note, Back / Next) and opens each view as its own link would be opened (window.__link.open).
// Everything from the URL is checked (sizes, shapes) and shown with textContent only.
const LIMITS = JSON.parse(element.querySelector(".lesson").dataset.views || "{}");
const MAX_VIEWS = LIMITS.views || 8, MAX_NOTE = LIMITS.note || 140, MAX_LINK = LIMITS.link || 12000;
const bar = element.querySelector("#lesson_bar"), make = element.querySelector(".lesson-make");
const role = (root, r) => root.querySelector(`[data-role="${r}"]`);
const lesson = {made: [], views: null, at: -1, busy: false, last: null};
window.__lesson = lesson;
const link = () => window.__link;
const say = (text, u) => { if (link() && link().say) link().say(text, u); };

// -- the lesson as one URL parameter --------------------------------------------------------------------------
function encode(views) {                  // [[query, note], ...] -> base64url of its UTF-8 JSON
  const bytes = new TextEncoder().encode(JSON.stringify(views));
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
const RULE = `a lesson holds 1 to ${MAX_VIEWS} views, each a link's query with a note of at most ${MAX_NOTE} ` +
             `characters, in a parameter of at most ${MAX_LINK} characters`;
function decode(param) {                  // -> {views} or {why}
  if (param.length > MAX_LINK) return {why: `it is ${param.length} characters long`};
  if (!/^[A-Za-z0-9_-]+$/.test(param)) return {why: "it is not base64url"};
  let views;
  try {
    const bin = atob(param.replace(/-/g, "+").replace(/_/g, "/"));
    views = JSON.parse(new TextDecoder("utf-8", {fatal: true}).decode(Uint8Array.from(bin, c => c.charCodeAt(0))));
  } catch (e) { return {why: "it does not decode to a lesson"}; }
  if (!Array.isArray(views) || views.length < 1 || views.length > MAX_VIEWS) {
    return {why: `it holds ${Array.isArray(views) ? views.length : "no list of"} views`};
  }
  for (const [i, v] of views.entries()) {
    const ok = Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string";
    if (!ok) return {why: `view ${i + 1} is not a [query, note] pair`};
    if ([...v[1]].length > MAX_NOTE) return {why: `the note of view ${i + 1} is ${[...v[1]].length} characters long`};
    if (new URLSearchParams(v[0]).has("lesson")) return {why: `view ${i + 1} holds a lesson`};
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
async function show(i) {
  const views = lesson.views;
  if (!views || lesson.busy || i < 0 || i >= views.length) return;
  lesson.busy = true; lesson.at = i;
  role(bar, "where").textContent = `View ${i + 1} of ${views.length}`;
  noteNodes(role(bar, "note"), views[i][1]);
  bar.querySelector("#lesson_back").disabled = true; bar.querySelector("#lesson_next").disabled = true;
  try { await link().open(views[i][0]); } finally {
    lesson.busy = false;
    bar.querySelector("#lesson_back").disabled = i === 0;
    bar.querySelector("#lesson_next").disabled = i === views.length - 1;
    lesson.shown = i;
    bar.scrollIntoView({block: "nearest"});  // a view's restoring may scroll the page (a list opened): the bar in sight
  }
}
bar.querySelector("#lesson_back").addEventListener("click", () => show(lesson.at - 1));
bar.querySelector("#lesson_next").addEventListener("click", () => show(lesson.at + 1));

// -- the teacher's tools --------------------------------------------------------------------------------------
function count() {
  const n = lesson.made.length;
  role(make, "count").textContent = n ? `${n} view${n === 1 ? "" : "s"} of at most ${MAX_VIEWS}` : "no views yet";
  role(make, "drop").disabled = !n;
}
function lessonUrl(views) {                 // the language shown goes with it, as with a link (assets/i18n.js)
  const lang = link() && link().url ? new URL(link().url()).searchParams.get("lang") : null;
  return `${location.origin}${location.pathname}?lesson=${encode(views)}${lang ? `&lang=${lang}` : ""}`;
}
make.querySelector("#lesson_add").addEventListener("click", () => {
  if (!link() || !link().url) return;
  if (lesson.made.length >= MAX_VIEWS) { say(`A lesson holds at most ${MAX_VIEWS} views: this one was not added.`); return; }
  const q = new URL(link().url()).searchParams;
  q.delete("lesson"); q.delete("lang");   // the lesson's language is the lesson link's own
  const input = make.querySelector("#lesson_note"), note = [...input.value.trim()].slice(0, MAX_NOTE).join("");
  const views = lesson.made.concat([[q.toString(), note]]);
  if (encode(views).length > MAX_LINK) {
    say(`This view was not added: the lesson's link would be over ${MAX_LINK} characters (shorter sentences fit).`);
    return;
  }
  lesson.made = views; input.value = ""; count();
  say(`View ${views.length} added to the lesson${note ? "" : " (no note)"}.`);
});
role(make, "drop").addEventListener("click", () => { lesson.made.pop(); count(); });
make.querySelector("#copy_lesson").addEventListener("click", async () => {
  if (!lesson.made.length) { say("Add at least one view to the lesson first."); return; }
  const u = lessonUrl(lesson.made);
  lesson.last = u;
  let copied = false;
  try { await navigator.clipboard.writeText(u); copied = true; } catch (e) { copied = false; }
  say(`${copied ? "Lesson link copied" : "Copy this lesson link"} (${lesson.made.length} views, in order):`, u);
});
role(make, "close").addEventListener("click", () => { make.hidden = true; });
function bindOpen() {                     // Lesson… beside Copy link (ui/link.py LINK_HTML) opens the tools
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
  const ready = window.__viewKit.until(() => link() && link().open && window.__lens && window.__lens.ready, 60000);
  if (!await ready) return;
  const {views, why} = decode(param);
  if (!views) {
    say(`This lesson link was ignored: ${why} (${RULE}).`);
    link().opened = true;
    return;
  }
  lesson.views = views;
  bar.hidden = false;
  await show(0);
}
begin().catch(e => { lesson.busy = false; say(`This lesson could not be opened: ${e.message || e}`); });

// The glossary: the words a newcomer stops at get a dotted underline where they appear on the
// page; hovering or clicking one shows its one-line meaning. Only text that is rendered as HTML is touched (the
// Markdown of the tabs, the views' help lines, notes and titles), never a component's own text, inputs, code,
// canvases or plots; scanned again (at most every 300 ms) when the page changes.
// The meanings live in the page's catalogue (attention_lens/shell/texts/<lang>.toml, "glossary.<term>"), plain or detailed and in the
// language the page shows (assets/shell/explain.js, i18n.js); the terms are these, found in every language's words.
const NAMES = ["teacher-forced", "rollout", "contribution", "mixed", "role", "ALTI+", "saliency", "cross-attention",
               "ablation", "beam-search"];
const meaning = (term) => (find("explain_box", "explain")?.t(`glossary.${term}`) ?? term);
const SKIP = "input, textarea, select, button, label, code, pre, canvas, svg, script, style, .gloss, .js-plotly-plot, " +
  ".lens-tok, .topk-list, [contenteditable]";
// each term's word in every language of the page (attention_lens/shell/texts/<lang>.toml [label] gloss_<term>: "Kreuz-Aufmerksamkeit")
const slot = (t) => `label.gloss_${t.replace(/\W/g, "_")}`;
const WORDS = () => new Map(NAMES.flatMap(t => [t, ...(find("explain_box", "explain")?.every(slot(t)) ?? [])]
  .map(w => [w.toLowerCase(), t])));
let words = null, pattern = null;
function ready() {                        // the pattern of every word, built once the catalogue is there
  if (pattern && words.size > NAMES.length) return;
  words = WORDS();
  pattern = new RegExp(`(^|[^\\p{L}\\w-])(${[...words.keys()].map(t => t.replace(/[+]/g, "\\+")).join("|")})(?![\\p{L}\\w-])`, "iu");
}

function gloss(node) {                  // wrap the first term of one text node
  const m = pattern.exec(node.nodeValue);
  if (!m) return false;
  const start = m.index + m[1].length, word = m[2];
  const key = words.get(word.toLowerCase());
  const rest = node.splitText(start), after = rest.splitText(word.length);
  const span = document.createElement("span");
  span.className = "gloss"; span.tabIndex = 0; span.textContent = word; span.title = meaning(key);
  span.dataset.term = key;
  rest.replaceWith(span);
  return after;
}
function scan(root) {
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {acceptNode: (n) =>
    !n.nodeValue.trim() || (n.parentElement && n.parentElement.closest(SKIP)) ? NodeFilter.FILTER_REJECT
      : NodeFilter.FILTER_ACCEPT});
  const nodes = [];
  while (walk.nextNode()) nodes.push(walk.currentNode);
  for (let n of nodes) { let guard = 0; while (n && guard++ < 4) n = gloss(n) || null; }
}
const tip = document.createElement("div");
tip.className = "gloss-tip"; tip.hidden = true; tip.setAttribute("role", "tooltip");
document.body.appendChild(tip);
function show(span) {
  tip.textContent = meaning(span.dataset.term); tip.dataset.term = span.dataset.term; tip.hidden = false;
  const r = span.getBoundingClientRect();
  tip.style.left = `${Math.min(r.left, window.innerWidth - 380)}px`; tip.style.top = `${r.bottom + 6 + window.scrollY}px`;
}
document.addEventListener("click", (e) => {
  const span = e.target.closest && e.target.closest(".gloss");
  if (span) { show(span); e.stopPropagation(); } else tip.hidden = true;
}, true);
document.addEventListener("keydown", (e) => { if (e.key === "Escape") tip.hidden = true; });
document.addEventListener("lens-explain", () => {   // the other version of every meaning shown
  for (const span of document.querySelectorAll(".gloss")) span.title = meaning(span.dataset.term);
  if (!tip.hidden && tip.dataset.term) tip.textContent = meaning(tip.dataset.term);
});
const ROOTS = ".prose, [class*='-help'], [class*='-note'], [class*='-title'], .lens-status";
function scanAll() { ready(); for (const root of document.querySelectorAll(ROOTS)) scan(root); }
let timer = null;
const observer = new MutationObserver(() => {
  if (timer) return;
  timer = setTimeout(() => { timer = null; observer.disconnect(); scanAll(); observe(); }, 300);
});
function observe() { observer.observe(document.body, {childList: true, subtree: true, characterData: true}); }
scanAll();
observe();
home.glossary = {get terms() { return Object.fromEntries(NAMES.map(n => [n, meaning(n)])); }, scan: scanAll};

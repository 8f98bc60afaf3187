// The glossary (issue 26 item 11): the words a newcomer stops at get a dotted underline where they appear on the
// page; hovering or clicking one shows its one-line meaning. Only text that is rendered as HTML is touched (the
// Markdown of the tabs, the views' help lines, notes and titles), never a component's own text, inputs, code,
// canvases or plots; scanned again (at most every 300 ms) when the page changes.
const TERMS = {
  "teacher-forced": "Teacher-forced: the decoder is fed the given pieces (a reference) instead of its own choices, " +
    "so every row shows what the model predicts after the right prefix.",
  "rollout": "Attention rollout (Abnar & Zuidema 2020): the layers' attention multiplied through, with the residual " +
    "counted as half, to estimate how much each input token reaches a position at the top.",
  "contribution": "Contribution ‖w·v·W_O‖ (Kobayashi et al. 2020): how much a key actually adds to the head's output " +
    "— its weight times the length of its value vector after the output projection.",
  "mixed": "Mixed (head atlas): no single rule describes this head; hover it in the atlas for the nearest rule.",
  "role": "Role (head atlas): what a head mostly does on 400 validation sentences (attend to the previous piece, " +
    "align with the source, ...), assigned by fixed rules from its statistics.",
  "ALTI+": "ALTI+ (Ferrando et al. 2022): how much each source and earlier target token contributes to a prediction " +
    "through every layer, residuals and layer norms included.",
  "saliency": "Saliency (gradient × input): how strongly the predicted piece's log-probability reacts to each input " +
    "embedding; one backward pass per step.",
  "cross-attention": "Cross-attention: decoder queries (the translation so far) look at the encoder's output for the " +
    "source sentence; its map often runs along the diagonal of the word order.",
  "ablation": "Ablation: switching heads off (their output zeroed for your request only) to see what they were for.",
};
const SKIP = "input, textarea, select, button, label, code, pre, canvas, svg, script, style, .gloss, .js-plotly-plot, " +
  ".lens-tok, .topk-list, [contenteditable]";
const pattern = new RegExp(`(^|[^\\w-])(${Object.keys(TERMS).map(t => t.replace(/[+]/g, "\\+")).join("|")})(?![\\w-])`,
  "i");

function gloss(node) {                  // wrap the first term of one text node
  const m = pattern.exec(node.nodeValue);
  if (!m) return false;
  const start = m.index + m[1].length, word = m[2];
  const key = Object.keys(TERMS).find(t => t.toLowerCase() === word.toLowerCase());
  const rest = node.splitText(start), after = rest.splitText(word.length);
  const span = document.createElement("span");
  span.className = "gloss"; span.tabIndex = 0; span.textContent = word; span.title = TERMS[key];
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
  tip.textContent = TERMS[span.dataset.term]; tip.hidden = false;
  const r = span.getBoundingClientRect();
  tip.style.left = `${Math.min(r.left, window.innerWidth - 380)}px`; tip.style.top = `${r.bottom + 6 + window.scrollY}px`;
}
document.addEventListener("click", (e) => {
  const span = e.target.closest && e.target.closest(".gloss");
  if (span) { show(span); e.stopPropagation(); } else tip.hidden = true;
}, true);
document.addEventListener("keydown", (e) => { if (e.key === "Escape") tip.hidden = true; });
const ROOTS = ".prose, [class*='-help'], [class*='-note'], [class*='-title'], .lens-status";
function scanAll() { for (const root of document.querySelectorAll(ROOTS)) scan(root); }
let timer = null;
const observer = new MutationObserver(() => {
  if (timer) return;
  timer = setTimeout(() => { timer = null; observer.disconnect(); scanAll(); observe(); }, 300);
});
function observe() { observer.observe(document.body, {childList: true, subtree: true, characterData: true}); }
scanAll();
observe();
window.__glossary = {terms: TERMS, scan: scanAll};

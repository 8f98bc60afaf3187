// attention-lens: "Explain: simply | in detail". Runs as the js_on_load of the gr.HTML
// #explain_box (attention_lens/shell/texts.py explain_box), after `const TEXTS = {lang: {key: {plain, detail} or a label}}`
// (attention_lens/shell/texts/<lang>.toml; a text German lacks is the English one). assets/shell/i18n.js, its part, called last, sets the language.
// The mode is a class on <body> ("explain-detail"): the page's CSS shows each Markdown text's plain or detailed
// version by it (attention_lens/shell/texts.py explained), so a switch needs no request. The views' own texts read
// document.getElementById("explain_box").explain.t(key) (this instance, kept on its element), write their numbers with
// its num(x, digits) / pct(p, digits) (the language's decimal comma or point), and redraw on the "lens-explain" event.
// A link's `explain=detail` opens in that mode (assets/shell/link.js writes it); anything else is plain.
const MODES = ["plain", "detail"];
const buttons = [...element.querySelectorAll("button[data-mode]")];
const FORMATS = new Map();                // the browser's own number formatters, one per language, digits and style
function formatter(lang, digits, style) {
  const key = `${lang} ${digits} ${style}`;
  if (!FORMATS.has(key)) FORMATS.set(key, new Intl.NumberFormat(lang, {style, minimumFractionDigits: digits,
    maximumFractionDigits: digits, useGrouping: false, signDisplay: "negative"}));  // -0.000 is 0.000
  return FORMATS.get(key);
}
const inst = {
  mode: "plain",
  lang: "en",
  t(key, mode, lang) {                    // the text of `key` in the language and mode shown (or `lang`, `mode`);
    const l = TEXTS[lang || inst.lang] || TEXTS.en;  // English when the language lacks it; the key when both do
    const e = key in l ? l[key] : TEXTS.en[key];
    return e === undefined ? key : typeof e === "string" ? e : e[mode || inst.mode];
  },
  num(x, digits, lang) {                  // a number as the page's language writes it: 0.741 / 0,741
    return formatter(lang || inst.lang, digits ?? 3, "decimal").format(x);
  },
  pct(p, digits, lang) {                  // a share (0..1) as a percentage: 33.5% / 33,5 %
    return formatter(lang || inst.lang, digits ?? 0, "percent").format(p);
  },
  separators(lang) {                      // Plotly's layout `separators` (decimal, group) of the language: ",." in German
    const parts = formatter(lang || inst.lang, 1, "decimal").formatToParts(0.5);
    const decimal = (parts.find(p => p.type === "decimal") || {value: "."}).value;
    return decimal === "," ? ",." : ".,";
  },
  every(key) {                            // a label's text in every language (the glossary's words)
    return [...new Set(Object.values(TEXTS).map(l => l[key]).filter(v => typeof v === "string"))];
  },
  fill(key, vars, mode) {                 // t(key) with its {blanks} filled; a blank may be a function of the mode
    const m = mode || inst.mode;
    return inst.t(key, m).replace(/\{(\w+)\}/g, (all, k) => (vars && k in vars ?
      (typeof vars[k] === "function" ? vars[k](m) : vars[k]) : all));
  },
  put(el, key, vars) {                    // both versions into `el` as spans the page's CSS shows by the mode
    const said = MODES.map(m => inst.fill(key, vars, m));
    if (el.dataset.said === said.join("\n")) return;
    el.dataset.said = said.join("\n"); el.textContent = "";
    MODES.forEach((m, i) => {               // as text; the catalogue's hint spans (keys / touch: layout.css) as spans
      const s = document.createElement("span"); s.className = `x-${m}`;
      said[i].split(/(<span class=hint-(?:keys|touch)>.*?<\/span>)/).forEach((part) => {
        const h = /^<span class=(hint-(?:keys|touch))>(.*?)<\/span>$/.exec(part);
        if (!h) { if (part) s.append(part); return; }
        const span = document.createElement("span"); span.className = h[1]; span.textContent = h[2]; s.append(span);
      });
      el.append(s);
    });
  },
  apply(root) {                           // fixed labels of a view's HTML: data-text="key" gets both versions (the
    for (const el of (root || document).querySelectorAll("[data-text]")) {  // catalogue's own markup, <sub> and all)
      const said = MODES.map(m => inst.fill(el.dataset.text, el.dataset.vars ? JSON.parse(el.dataset.vars) : null, m));
      if (el.dataset.said === said.join("\n")) continue;
      el.dataset.said = said.join("\n");
      el.innerHTML = MODES.map((m, i) => `<span class="x-${m}">${said[i]}</span>`).join("");
    }
    for (const el of (root || document).querySelectorAll("[data-tip]")) el.title = inst.t(el.dataset.tip);
    for (const el of (root || document).querySelectorAll("[data-label]")) el.setAttribute("aria-label", inst.t(el.dataset.label));
    for (const el of (root || document).querySelectorAll("[data-placeholder]")) el.placeholder = inst.t(el.dataset.placeholder);
    for (const el of (root || document).querySelectorAll("[data-opt]"))  // an <option>: text only, no spans
      el.textContent = inst.fill(el.dataset.opt, el.dataset.vars ? JSON.parse(el.dataset.vars) : null);
  },
  set(mode) {
    if (!MODES.includes(mode)) return;
    inst.mode = mode;
    inst.apply();
    document.body.classList.toggle("explain-detail", mode === "detail");
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.mode === mode));
    document.dispatchEvent(new CustomEvent("lens-explain", {detail: {mode, lang: inst.lang}}));
  },
};
for (const b of buttons) b.addEventListener("click", () => inst.set(b.dataset.mode));
// a view drawn later (a tab opened the first time, a panel made by its script) gets its fixed labels at once
const LABELLED = "[data-text], [data-tip], [data-label], [data-opt], [data-placeholder]";
let added = [];
new MutationObserver((records) => {
  for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1 && !n.closest(".lens-tok")) added.push(n);
  if (added.length === 0 || added.queued) return;
  added.queued = true;
  requestAnimationFrame(() => {
    const roots = added; added = [];
    for (const n of roots) if (n.isConnected && (n.matches(LABELLED) || n.querySelector(LABELLED))) inst.apply(n.parentElement || n);
  });
}).observe(document.body, {childList: true, subtree: true});
const asked = new URLSearchParams(location.search).get("explain");
inst.mode = asked === "detail" ? "detail" : "plain";   // set (and the page filled) by assets/shell/i18n.js's first setLang
// this instance, kept on the view's own element (#explain_box): every view reads its texts there
home.explain = inst;
parts.i18n({element, inst, TEXTS});     // the page's language (assets/shell/i18n.js: a part, its own scope)

// attention-lens: the page's language. A part of the js_on_load of the gr.HTML #explain_box
// (attention_lens/shell/texts.py explain_box `script`), in a scope of its own: assets/shell/explain.js calls it last with `view` =
// {element, inst (the texts' instance, #explain_box's .explain), TEXTS}.
// The language is a link's `lang=de`/`lang=en`, else the browser's (`de*` -> German, anything else -> English),
// and the switch #ui_language changes it at once, with no reload and no request: the page's CSS shows each text's
// `l-<lang>` element (attention_lens/shell/texts.py each, spans, both); the views' own texts (#explain_box's .explain.t) redraw on
// "lens-explain" and apply() refills [data-text]/[data-tip]/[data-label]; Gradio's component labels (gr.I18n) follow
// its own locale, changed by the `changeLocale` its core module exports (the module the page already loaded: no
// request). A cookie tells the server's handlers (attention_lens/shell/texts.py page_lang: toasts and plot titles of one user).
// assets/shell/link.js and assets/shell/lesson.js write `lang=de` into a link when German is shown.
const {element, inst, TEXTS} = view;
const LANGS = Object.keys(TEXTS);
const picker = element.querySelector("#ui_language");
function browserLang() { return /^de\b/i.test(navigator.language || "") ? "de" : "en"; }
function linkLang() { const q = new URLSearchParams(location.search).get("lang"); return LANGS.includes(q) ? q : null; }
async function gradioLocale(lang) {       // Gradio's own i18n store: its core module, found among the page's scripts
  const core = performance.getEntriesByType("resource").map(e => e.name)
    .find(n => /\/assets\/core-[\w-]+\.js(\?.*)?$/.test(n));
  if (!core) return false;
  const m = await import(/* @vite-ignore */ core);
  if (typeof m.changeLocale !== "function") return false;
  m.changeLocale(lang);
  return true;
}
// A workaround of one Gradio 6.31 behaviour: changeLocale relabels the tab shown, but a tab not shown yet keeps the
// label of the language the page loaded in (tests/test_gradio_behaviour_browser.py checks a bare gr.Tabs still does;
// when it stops, this goes). The page's tabs are named from the catalogue instead: `tab_<the gr.Tab's id>`.
function relabelTabs() {
  for (const b of document.querySelectorAll("#tabs [role=tablist] > button[role=tab][data-tab-id]")) {
    const t = inst.t(`label.tab_${b.dataset.tabId}`);
    if (t && !t.startsWith("label.") && b.textContent !== t) b.textContent = t;
  }
}
inst.gradioLocale = gradioLocale;
inst.browserLang = browserLang;
inst.setLang = (lang) => {
  if (!LANGS.includes(lang)) return;
  const changed = lang !== inst.lang || !inst.langSet;
  inst.lang = lang; inst.langSet = true;
  document.body.classList.toggle("lang-de", lang === "de");
  document.documentElement.lang = lang;
  document.cookie = `al_lang=${lang}; path=/; SameSite=Lax`;
  if (picker.value !== lang) picker.value = lang;
  if (lang !== browserLang() || inst.localeMoved) {  // Gradio chose the browser's language itself
    inst.localeMoved = true;
    gradioLocale(lang).then(() => { relabelTabs(); setTimeout(relabelTabs, 300); }).catch(() => {});
  }
  if (changed) inst.set(inst.mode);       // refills the texts and tells the views (lens-explain)
};
picker.addEventListener("change", () => inst.setLang(picker.value));
inst.setLang(linkLang() || browserLang());

// Buttons and pickers drawn by the page itself (ui/shell/controls.py): a gr.Button or gr.Dropdown on the first screen
// would make the browser fetch Gradio's code for it (7 and 4 files) before the page is ready (issue #29 item 1).
// A button's click fires this component's click event; a pick in a <select> sets its value (Gradio then fires its
// change event, as it does for a value the server sends) and fires its input event, as a Dropdown's pick does.
// the button fills its component's box (assets/layout.css): a click on the box is a click on the button (a
// script's document.querySelector("#step").click() reaches the box, not the button inside it)
const box = element.closest(".al-btn-box.block") || element;
box.addEventListener("click", (e) => {
  if (element.querySelector(".al-btn-group")) {  // a row of buttons (controls.buttons): the one clicked, by value
    const b = e.target.closest("button[data-value]");
    if (!b || b.disabled || !element.contains(b)) return;
    props.value = b.dataset.value;
    return trigger("click");
  }
  const b = element.querySelector("button");
  if (b && !b.disabled) trigger("click");
});
element.addEventListener("change", (e) => {
  const s = e.target.closest("select");
  if (!s || !element.contains(s)) return;
  props.value = s.value;
  trigger("input");
});
// a value (or choices) the server sends: the <select> shows it. Its options' `selected` attributes follow the
// template, but a <select> the user has touched keeps the user's pick, whatever its attributes say.
const sync = () => {
  const s = element.querySelector("select");
  if (s && props.value != null && s.value !== String(props.value)) s.value = String(props.value);
};
// an option's label or the picker's name may be a gr.I18n marker (ui/shell/texts.py label): shown in the page's language
// (window.__explain, ui/texts [label]) and again at a switch (assets/i18n.js fires "lens-explain")
const MARK = /__i18n__(\{[^}]*\})/g;
const said = (s) => s.replace(MARK, (m, j) => {
  let k; try { k = JSON.parse(j).key; } catch (e) { return m; }
  return window.__explain ? window.__explain.t(`label.${k}`) : k;
});
let host = element;                       // the component's block: Gradio may draw a new element inside it
while (host.parentElement && (!host.id || host.id.startsWith("html-"))) host = host.parentElement;
const localize = () => {
  for (const o of host.querySelectorAll("option")) {
    if (o.dataset.i18n === undefined) { if (!o.textContent.includes("__i18n__")) continue; o.dataset.i18n = o.textContent; }
    const t = said(o.dataset.i18n); if (o.textContent !== t) o.textContent = t;
  }
  const s = host.querySelector("select[data-i18n-label]");
  if (s) s.setAttribute("aria-label", said(s.dataset.i18nLabel));
};
localize();
document.addEventListener("lens-explain", localize);
new MutationObserver(localize).observe(host, {childList: true, subtree: true});  // options drawn again (a new value)
watch(["value", "choices"], () => { localize(); sync(); requestAnimationFrame(() => { localize(); sync(); }); });

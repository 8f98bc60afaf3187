// attention-lens: the tab bar's keys, as WAI-ARIA's tabs pattern has them: on a tab, ← / → move to
// the neighbouring tab and Home / End to the ends, choosing it. A workaround of one Gradio behaviour: gr.Tabs (Gradio
// 6.31) draws a role=tablist whose tabs answer clicks only (tests/test_gradio_behaviour_browser.py checks that a bare
// gr.Tabs still ignores the keys: when it stops ignoring them, this file goes). Runs as the js_on_load of an empty
// gr.HTML (#tab_keys, attention_lens/app.py).
document.addEventListener("keydown", (e) => {
  const tab = e.target.closest && e.target.closest("#tabs [role=tablist] > button[role=tab]");
  if (!tab) return;
  const all = [...tab.parentElement.querySelectorAll(":scope > button[role=tab]")].filter(b => b.getAttribute("aria-disabled") !== "true");
  const i = all.indexOf(tab), j = {ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: all.length - 1}[e.key];
  if (i < 0 || j === undefined) return;
  e.preventDefault();
  e.stopPropagation();                    // the attention view's own ← / → step through the sentence; not on the bar
  const b = all[(j + all.length) % all.length];
  b.focus();
  b.click();
}, true);

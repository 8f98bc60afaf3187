// attention-lens: the help under the intro row ("How to use it", #howto opens #howto_body: attention_lens/app.py HOWTO_JS)
// closes as a reader leaves a help text: on Esc, on a click outside it and on a change of tab. Runs as the
// js_on_load of an empty gr.HTML (#help_closer); closing is a click on the same gr.Button, so Gradio's own event
// hides the column (no request).
const body = () => document.getElementById("howto_body");
const open = () => { const b = body(); return !!b && b.offsetParent !== null; };
const close = () => { const h = document.getElementById("howto"); if (h && open()) h.click(); };
document.addEventListener("keydown", (e) => { if (e.key === "Escape") close(); });
document.addEventListener("click", (e) => {
  const t = e.target, h = document.getElementById("howto"), b = body();
  if (!(t instanceof Node) || (h && h.contains(t)) || (b && b.contains(t))) return;
  close();
});

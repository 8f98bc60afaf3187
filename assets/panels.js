// Tabs and folds drawn by the page itself (ui/shell/panels.py). A gr.Tabs or gr.Accordion on the first screen would make
// the browser fetch Gradio's code for it (4 and 2 files) before the page is ready (issue #29 item 1); these are one
// gr.HTML each, and Gradio's own js-only events show and hide the panels (gr.Column) they stand for.
// A click sets this component's value (the tab's name; "open N" / "closed N" for a fold) and fires its click
// event. The template draws the buttons from the value, so a redraw keeps aria-selected / aria-expanded right;
// the listeners sit on `element`, which outlives every redraw.
const tabs = () => [...element.querySelectorAll("button[role=tab]")];

function choose(b) {
  for (const x of tabs()) x.setAttribute("aria-selected", x === b ? "true" : "false");
  props.value = b.dataset.name;
  trigger("click");
}

element.addEventListener("click", (e) => {
  const tab = e.target.closest("button[role=tab]");
  if (tab && element.contains(tab)) return choose(tab);
  const fold = e.target.closest("button.al-fold");
  if (!fold || !element.contains(fold)) return;
  const open = fold.getAttribute("aria-expanded") !== "true";
  fold.setAttribute("aria-expanded", String(open));
  const n = parseInt(String(props.value || "").split(" ")[1] || "0", 10) + 1;
  props.value = (open ? "open " : "closed ") + n;
  trigger("click");
});

// A help fold (ui/shell/panels.py fold_head closes=True) closes on Esc, on a click outside it and on a change of tab, the
// way a reader leaves a help text; its body (#<id>_body) counts as inside.
const closing = () => element.querySelector("button.al-fold[data-closes]");  // redrawn with the value: look it up
if (closing()) {
  const body = () => document.getElementById(closing().dataset.closes);
  const close = () => { const b = closing(); if (b && b.getAttribute("aria-expanded") === "true") b.click(); };
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") close(); });
  document.addEventListener("click", (e) => {
    const t = e.target;
    if (!(t instanceof Node) || element.contains(t) || (body() && body().contains(t))) return;
    close();
  });
}

// the tab bar's keys, as WAI-ARIA's tabs pattern has them: ← / → move to the neighbouring tab, Home / End to the ends
element.addEventListener("keydown", (e) => {
  const all = tabs(), i = all.indexOf(document.activeElement);
  if (i < 0) return;
  const j = {ArrowLeft: i - 1, ArrowRight: i + 1, Home: 0, End: all.length - 1}[e.key];
  if (j === undefined) return;
  e.preventDefault();
  e.stopPropagation();  // the attention view's own ← / → step through the sentence; not while on the tab bar
  const b = all[(j + all.length) % all.length];
  b.focus();
  choose(b);
});

// attention-lens: "Explain: simply | in detail" (issue 39 item 5). Runs as the js_on_load of the gr.HTML
// #explain_box (ui/texts.py explain_box), after `const TEXTS = {key: {plain, detail}}` (ui/texts/en.toml).
// The mode is a class on <body> ("explain-detail"): the page's CSS shows each Markdown text's plain or detailed
// version by it (ui/texts.py explained), so a switch needs no request. The views' own texts read
// window.__explain.t(key) and redraw on the "lens-explain" event. A link's `explain=detail` opens in that mode
// (assets/link.js writes it); anything else is plain.
const MODES = ["plain", "detail"];
const buttons = [...element.querySelectorAll("button[data-mode]")];
const inst = window.__explain = {
  mode: "plain",
  t(key, mode) {                          // the text of `key` in the mode shown (or `mode`); the key when missing
    const e = TEXTS[key];
    return e ? e[mode || inst.mode] : key;
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
    MODES.forEach((m, i) => { const s = document.createElement("span"); s.className = `x-${m}`; s.textContent = said[i]; el.append(s); });
  },
  apply(root) {                           // fixed labels of a view's HTML: data-text="key" gets both versions (the
    for (const el of (root || document).querySelectorAll("[data-text]")) {  // catalogue's own markup, <sub> and all)
      const said = MODES.map(m => inst.fill(el.dataset.text, el.dataset.vars ? JSON.parse(el.dataset.vars) : null, m));
      if (el.dataset.said === said.join("\n")) continue;
      el.dataset.said = said.join("\n");
      el.innerHTML = MODES.map((m, i) => `<span class="x-${m}">${said[i]}</span>`).join("");
    }
    for (const el of (root || document).querySelectorAll("[data-tip]")) el.title = inst.t(el.dataset.tip);
  },
  set(mode) {
    if (!MODES.includes(mode)) return;
    inst.mode = mode;
    inst.apply();
    document.body.classList.toggle("explain-detail", mode === "detail");
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.mode === mode));
    document.dispatchEvent(new CustomEvent("lens-explain", {detail: {mode}}));
  },
};
for (const b of buttons) b.addEventListener("click", () => inst.set(b.dataset.mode));
const asked = new URLSearchParams(location.search).get("explain");
inst.set(asked === "detail" ? "detail" : "plain");

// The top-k next pieces as an HTML bar chart of buttons; clicking one forces it (what-if).
// Plain DOM (no Plotly): cheap to redraw on every step. Pieces are set with textContent only.
// Drawn from props.value (a server answer) and, on every local step, by the Translate view (assets/shell/lens_labels.js
// pushTopk calls #topk's .topk.render): the click sends the piece and the position the view shows.
const pct = (p) => (find("explain_box", "explain")?.pct(p, 1) ?? `${(100 * p).toFixed(1)}%`);  // 33.5% / 33,5 %
const list = element.querySelector(".topk-list"), note = element.querySelector(".topk-note");
let shown = {};
const w = (k, v) => (find("explain_box", "explain")?.fill(`label.${k}`, v) ?? k);  // attention_lens/texts [label]
function force(piece) {
  if (!shown.items || shown.done) return;
  const view = find("attention", "lens");  // the attention view (assets/shell/lens.js), on its element
  const position = view && view.position ? view.position() : "";
  trigger("click", {piece, position});
}
function render(v) {
  v = v || {}; shown = v;
  const items = v.items || [];
  list.textContent = "";
  note.textContent = v.note || (items.length ? (v.done ? w("topk_done")
                                            : "")  // the heading says what a click does
                                  : w("topk_empty"));
  items.forEach(([piece, p], i) => {
    const b = document.createElement("button"); b.type = "button"; b.dataset.piece = piece; b.disabled = !!v.done;
    b.title = w("force", {piece}); if (i === 0) b.classList.add("greedy");
    const bar = document.createElement("span"); bar.className = "topk-bar"; bar.style.width = `${(100 * p).toFixed(1)}%`;
    const name = document.createElement("span"); name.className = "topk-piece"; name.textContent = piece;
    const pr = document.createElement("span"); pr.className = "topk-p"; pr.textContent = pct(p);
    b.append(bar, name, pr); b.addEventListener("click", () => force(piece)); list.appendChild(b);
  });
  inst.renders++;
}
const inst = {render, renders: 0};
home.topk = inst;  // where the Translate view finds it (docs/design.md)
render(props.value);
watch("value", () => render(props.value));

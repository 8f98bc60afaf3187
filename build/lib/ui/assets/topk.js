// The top-k next pieces as an HTML bar chart of buttons; clicking one forces it (what-if).
// Plain DOM (no Plotly): cheap to redraw on every step. Pieces are set with textContent only.
const list = element.querySelector(".topk-list"), note = element.querySelector(".topk-note");
function force(piece) { if (props.value && !props.value.done) trigger("click", {piece}); }
function render() {
  const v = props.value || {}, items = v.items || [];
  list.textContent = "";
  note.textContent = items.length ? (v.done ? "Decoding finished: step back to force another piece."
                                            : "Click a piece to force it instead of the greedy choice.")
                                  : "Start a sentence to see the most probable next pieces.";
  items.forEach(([piece, p], i) => {
    const b = document.createElement("button"); b.type = "button"; b.dataset.piece = piece; b.disabled = !!v.done;
    b.title = `force ${piece}`; if (i === 0) b.classList.add("greedy");
    const bar = document.createElement("span"); bar.className = "topk-bar"; bar.style.width = `${(100 * p).toFixed(1)}%`;
    const name = document.createElement("span"); name.className = "topk-piece"; name.textContent = piece;
    const pr = document.createElement("span"); pr.className = "topk-p"; pr.textContent = `${(100 * p).toFixed(1)}%`;
    b.append(bar, name, pr); b.addEventListener("click", () => force(piece)); list.appendChild(b);
  });
  window.__topkRenders = (window.__topkRenders || 0) + 1;
}
render();
watch("value", render);

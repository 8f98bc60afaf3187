// The top-k next pieces as a bar chart plus buttons; clicking one forces it (what-if).
const plot = element.querySelector(".topk-plot"), list = element.querySelector(".topk-list"),
      note = element.querySelector(".topk-note");
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
function force(piece) { if (props.value && !props.value.done) trigger("click", {piece}); }
function render() {
  const v = props.value || {}, items = v.items || [];
  list.textContent = "";
  note.textContent = items.length ? (v.done ? "Decoding finished: step back to force another piece."
                                            : "Click a piece to force it instead of the greedy choice.")
                                  : "Start a sentence to see the most probable next pieces.";
  items.forEach(([piece, p], i) => { const b = document.createElement("button"); b.type = "button";
    b.textContent = `${piece}  ${(100 * p).toFixed(1)}%`; b.dataset.piece = piece; b.disabled = !!v.done;
    if (i === 0) b.classList.add("greedy"); b.addEventListener("click", () => force(piece)); list.appendChild(b); });
  if (!window.Plotly) return;
  const ys = items.map((_, i) => i);
  Plotly.react(plot, [{type: "bar", orientation: "h", x: items.map(it => it[1]), y: ys,
      marker: {color: items.map((_, i) => i === 0 ? "#0074d9" : "#7fb3e6")},
      text: items.map(it => (100 * it[1]).toFixed(1) + "%"), textposition: "auto", hoverinfo: "none"}],
    {margin: {l: 90, r: 10, t: 6, b: 30}, height: 230,
     xaxis: {range: [0, 1], title: {text: "probability of the next piece"}, fixedrange: true},
     yaxis: {tickmode: "array", tickvals: ys, ticktext: items.map(it => esc(it[0])), autorange: "reversed",
             fixedrange: true}},
    {displayModeBar: false, responsive: true}).then(() => {
      window.__topkRenders = (window.__topkRenders || 0) + 1;
      if (!plot.__bound && plot.on) { plot.__bound = true;
        plot.on("plotly_click", ev => { const it = (props.value.items || [])[ev.points[0].pointNumber]; if (it) force(it[0]); }); }
    });
}
if (window.Plotly) render(); else { const t = setInterval(() => { if (window.Plotly) { clearInterval(t); render(); } }, 30); }
watch("value", render);

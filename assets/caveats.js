// Caveats beside the translation (transformer/caveats.py: longer than what the model learned from, repeating
// itself, another language, unknown characters). A Start's answer carries them (payload.caveats) and
// assets/lens.js announces them (window event lens-caveats); a Start without any, or the view cleared (another
// model picked), hides them. A caveat never blocks: it explains. Text is set with textContent only: a message
// may quote the user's input.
const list = element.querySelector(".caveats");
function paint(items) {
  list.replaceChildren(...items.map((c) => {
    const li = document.createElement("li");
    li.dataset.kind = String(c.kind);
    li.textContent = `\u26a0 ${c.message}`;
    return li;
  }));
  list.hidden = !items.length;
}
window.addEventListener("lens-caveats", (ev) => paint(Array.isArray(ev.detail) ? ev.detail : []));
paint(window.__lensCaveats || []);

// The note under input boxes (attention_lens/shell/components.py box_note): why the last request of a button started nothing, drawn
// by the page from the component's value ({n, texts: {box id: text sent}, said}) while every box named in
// props.boxes still holds the text that was sent; hidden once one is edited, a sentence is started (lens-started)
// or the next request is taken (a value with nothing said). Text is set with textContent only: it quotes user input.
const boxes = String(props.boxes || "").split(",").filter(Boolean);
const text = (id) => {
  const t = document.querySelector(`#${id} textarea, #${id} input`);
  return t ? t.value : "";
};
let note = null;
const paint = () => {
  const n = element.querySelector(".box-note");
  if (!n) return;
  const show = Boolean(note && note.said && boxes.every((id) => text(id) === ((note.texts || {})[id] ?? "")));
  n.hidden = !show;
  n.textContent = show ? note.said : "";
};
const read = () => {
  try { note = typeof props.value === "string" && props.value ? JSON.parse(props.value) : null; }
  catch (e) { note = null; }
  paint();
};
document.addEventListener("input", (ev) => {
  if (ev.target && ev.target.closest && boxes.some((id) => ev.target.closest(`#${id}`))) paint();
}, true);
window.addEventListener("lens-started", () => { note = null; paint(); });
watch("value", read);
read();

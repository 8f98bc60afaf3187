// Caveats beside the translation (transformer/decode/caveats.py: longer than what the model learned from, repeating
// itself, another language, unknown characters). A Start's answer carries them (payload.caveats) and
// assets/shell/lens.js announces them (window event lens-caveats); a Start without any, or the view cleared (another
// model picked), hides them. A caveat never blocks: it explains. Text is set with textContent only: a message
// may quote the user's input.
const list = element.querySelector(".caveats");
function paint(items) {
  list.replaceChildren(...items.map((c) => {
    const li = document.createElement("li");
    li.dataset.kind = String(c.kind);
    li.textContent = `\u26a0 ${said(c)}`;
    return li;
  }));
  list.hidden = !items.length;
}
// In another language than English, the catalogue's words for the kind (attention_lens/shell/texts/<lang>.toml [label] caveat_<kind>),
// filled with the caveat's details; the library's English message otherwise (and for a kind the catalogue lacks)
function said(c) {
  const x = find("explain_box", "explain"), key = `label.caveat_${c.kind}`;
  if (!x || x.lang === "en" || x.t(key) === key) return c.message;
  const name = (code) => (x.t(`label.lang_${code}`) !== `label.lang_${code}` ? x.t(`label.lang_${code}`) : c.name || code);
  return x.fill(key, {words: c.words, pieces: Array.isArray(c.pieces) ? c.pieces.join("").replace(/\u2581/g, " ").trim()
    : c.pieces, p99_words: c.p99_words, p99_pieces: c.p99_pieces, times: c.times, name: name(c.code),
    chars: (c.characters || []).join(" ")});
}
window.addEventListener("lens-caveats", (ev) => paint(Array.isArray(ev.detail) ? ev.detail : []));
const kept = () => find("attention", "lens")?.caveats || [];  // the attention view's, on its element
document.addEventListener("lens-explain", () => paint(kept()));
paint(kept());

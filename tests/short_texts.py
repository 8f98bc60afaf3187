"""The page's SHORT texts as a reader of one language meets them (issue 44): a word or three on a control, an
option, a placeholder, a table's head, an aria-label, a plot's title, axis title, legend or hover text. The walk of
tests/plain.py checks texts of 4 words or more with transformer.decode.language.detect, which cannot tell a short text's
language; here each word of a short text is looked up instead: a word far more common in English than in German
(wordfreq) is English, unless it is a term the German page uses too (TERMS) or a word of the data (the sentence,
the model's output, its pieces)."""
from __future__ import annotations

import re

from wordfreq import zipf_frequency

from transformer.decode import language

# terms the German texts keep (the catalogue's German uses them as they are), and English that is German too
TERMS = {"top", "alti", "saliency", "beam", "bleu", "encoder", "decoder", "token", "tokens", "softmax", "transformer",
         "encoders", "decoders", "feed", "forward", "nats", "ln", "pre", "eos", "log", "prob", "val",
         "multi", "tatoeba", "rollout", "npz", "json", "html", "csv", "png", "svg", "max", "min", "id", "pdf", "link",
         "plotly", "attention", "lens", "gradio", "api", "cc", "by", "www", "org", "anki", "manythings", "kontext",
         "k", "q", "v", "w", "d", "o", "l", "h", "s", "unk"}
# Gradio's own English, hard-coded in its components (no gr.I18n key reaches it): the tables' menu, a slider's reset
GRADIO_ENGLISH = re.compile(r"^(Copy table data|Copied to clipboard|Table actions|Reset to default value|"
                            r"number input for .*|range slider for .*)$")
# a text of this many words or more is the walk's (tests/plain.py), read by transformer.decode.language.detect
MIN_WORDS = 4
ENGLISH_OVER = 1.0   # a word whose English frequency (Zipf) exceeds its German one by this much is English
ENGLISH_MIN = 1.5    # ... and is at least this common in English

# Visible short texts (JS): each block's own text, the options of visible pickers, placeholders, aria-labels and
# titles of visible elements, table heads, and the plots' titles, axis titles, legend names, annotations and hover
# templates. Never the user's boxes' values, the map's pieces, table cells (pieces) or code.
SHORT = """() => {
  const SKIP = "script, style, textarea, code, pre, .lens-tok, .topk-list, .cmp-src, .cmp-tr, [data-role=target], " +
    "[data-role=source], td, footer, .icon-button-wrapper, .js-plotly-plot, .lang-box";  // the switch: both
  const seen = (e) => e.checkVisibility({checkOpacity: true, checkVisibilityCSS: true});
  const out = [], blocks = new Map();  // a text is its block's (a sentence across <b> or <em> stays whole)
  const blockOf = (e) => { while (e.parentElement && getComputedStyle(e).display === "inline") e = e.parentElement;
    return e; };
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const n = walk.currentNode, e = n.parentElement;
    if (!e || !n.nodeValue.trim() || e.closest(SKIP) || e.closest("option") || !seen(e)) continue;
    const b = blockOf(e);
    blocks.set(b, (blocks.get(b) || "") + n.nodeValue);
  }
  for (const t of blocks.values()) out.push(["text", t]);
  for (const s of document.querySelectorAll("select")) if (seen(s) && !s.closest(".lang-box"))
    for (const o of s.options) out.push(["option", o.textContent]);
  for (const e of document.querySelectorAll("input[placeholder], textarea[placeholder]"))
    if (seen(e) && e.placeholder.trim()) out.push(["placeholder", e.placeholder]);
  for (const e of document.querySelectorAll("[aria-label]"))
    if (!e.closest(".js-plotly-plot") && (seen(e) || e.closest("svg") && seen(e.closest("svg"))))
      out.push(["aria-label", e.getAttribute("aria-label")]);
  for (const e of document.querySelectorAll("[title]"))
    if (e.title.trim() && !e.closest(".js-plotly-plot") && seen(e)) out.push(["title", e.title]);
  for (const e of document.querySelectorAll("th")) if (seen(e)) out.push(["th", e.innerText]);
  for (const gd of document.querySelectorAll(".js-plotly-plot")) {
    if (!gd.checkVisibility() || !gd.layout) continue;
    const l = gd.layout, t = (x) => x && (typeof x === "string" ? x : x.text);
    out.push(["plot title", t(l.title)]);
    for (const k of Object.keys(l)) if (/^[xy]axis\\d*$/.test(k)) out.push(["axis title", t(l[k].title)]);
    for (const a of l.annotations || []) out.push(["annotation", a.text]);
    for (const d of gd.data || []) {
      if (d.colorbar) out.push(["colorbar", t(d.colorbar.title)]);
      if (d.name && d.showlegend !== false) out.push(["legend", d.name]);
      if (typeof d.hovertemplate === "string") out.push(["hover", d.hovertemplate]);
      for (const h of new Set([d.hovertext].flat(3))) if (typeof h === "string") out.push(["hovertip", h]);  // not "…text": a long one is read word by word too
    }
  }
  return out.filter(([, s]) => s && /[A-Za-z]{2}/.test(s))
    .map(([w, s]) => [w, s.replace(/<[^>]+>|%\\{[^}]*\\}|\\{[^}]*\\}/g, " ").replace(/\\s+/g, " ").trim()]);
}"""  # noqa: E501 (a script's lines, as the browser runs them)


def english_words(text: str) -> list[str]:
    """The words of `text` that are English (not terms)."""
    bad = []
    for w in re.findall(r"[^\W\d_]+", text):
        low = w.lower()
        if low in TERMS or len(low) < 2:
            continue
        en, de = zipf_frequency(low, "en"), zipf_frequency(low, "de")
        if en >= ENGLISH_MIN and en - de >= ENGLISH_OVER:
            bad.append(w)
    return bad


def english(short: list[list[str]], data: list[str]) -> list[str]:
    """'where: text [words]' of every short text with an English word, each once: the data (`data`: the sentences,
    the model's outputs, the examples and their glosses, longest first) and pieces (▁word) taken out; a text of
    MIN_WORDS words or more in the page's flow (a block's text, a tooltip) is left to language.detect; Gradio's own
    English (GRADIO_ENGLISH) aside."""
    out, words = set(), {w.lower() for d in data for w in re.findall(r"[^\W\d_]+", d)}
    for where, text in short:
        if GRADIO_ENGLISH.match(text):
            continue
        if "__i18n__" in text:  # a gr.I18n marker nobody said in the page's language
            out.add(f"{where}: {text} ['__i18n__']")
            continue
        rest = text
        for d in data:
            rest = rest.replace(d, " ")
        rest = re.sub(r"▁\S*", " ", rest)
        if words and {w.lower() for w in re.findall(r"[^\W\d_]+", rest)} <= words:
            continue  # only words of the data: a table's cell, a piece
        if where.endswith(("text", "title")) and len(re.findall(r"[^\W\d_]{2,}", rest)) >= MIN_WORDS:
            continue
        bad = english_words(rest)
        if bad:
            out.add(f"{where}: {text} {bad}")
    return sorted(out)


def offending(said, lang: str, data: list[str]) -> list[str]:
    """The texts of MIN_WORDS words or more (data taken out) that detect does not find in `lang`."""
    bad = []
    for t in said:
        rest = t
        for d in data:
            rest = rest.replace(d, " ")
        if len(re.findall(r"[^\W\d_]{2,}", rest)) >= MIN_WORDS and language.detect(rest)[0] != lang:
            bad.append(t)
    return sorted(set(bad))

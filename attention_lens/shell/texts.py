"""The page's explanations: one catalogue per language, `attention_lens/shell/texts/<lang>.toml`,
where every text
has a plain version, shown by default, and a detailed one, one click away ("Explain: simply | in detail", the
box of assets/shell/explain.js, remembered in links as `explain=detail`).

Python builders put `explained(key)` into a gr.Markdown: both versions, each in a div the page's CSS shows or hides
by the mode (`EXPLAIN_CSS`), so switching needs no request and every text, a note set later included, follows it.
The JS views read the same catalogue (`document.getElementById("explain_box").explain.t(key)`, given to the page
by `explain_box`). Keys are dotted paths into the TOML: "beam.intro", "glossary.rollout", "look_for.de-en".

Languages: every text is in the page in each language of LANGS (a German key missing falls back to
English: `missing`), each in an element of class `l-<lang>` that the page's CSS shows by the language chosen
(`body.lang-de`, set by assets/shell/i18n.js from the browser's language, a link's `lang=de` or the switch
#ui_language), so a switch needs no request and no reload, as the mode's. Gradio's own component labels come from
the catalogues' [label] tables through gr.I18n (`I18N`, `label(key)`); texts a handler makes for one user (toasts,
plot titles) read the page's language from the request (`page_lang`: the cookie i18n.js sets), and write their
decimal numbers with `number` (0,741 on the German page).
"""
from __future__ import annotations

import functools
import html
import json
import re
import tomllib
from pathlib import Path

import gradio as gr

from attention_lens.shell.components import script

TEXTS_DIR = Path(__file__).parent / "texts"
MODES = ("plain", "detail")
LANGS = ("en", "de")  # the first: what a missing text falls back to
TEXTS_PARTS = ("shell/i18n.js",)  # explain_box's script's part (assets/shell/explain.js calls it last): the language
LANG_COOKIE = "al_lang"  # the page's language, for handlers (assets/shell/i18n.js sets it)
EXPLAIN_CSS = ("body:not(.explain-detail) .x-detail, body.explain-detail .x-plain { display: none !important; }"
               "body:not(.lang-de) .l-de, body.lang-de .l-en { display: none !important; }"
               # a button's text in these spans keeps the button's colour (Gradio's `.prose *` gives every element
               # inside a Markdown or HTML view the body's text colour: dark on an active blue button, 3.2:1)
               ".gradio-container button :is(.x-plain, .x-detail, .l-en, .l-de, [data-text]) { color: inherit; }"
               "#intro #explain_box { flex: 0 0 auto !important; width: auto !important; }"
               "#intro #explain_box .html-container { padding: 0 !important; }")
BOX_CSS = (".explain-box { white-space: nowrap; font-size: 13px; display: flex; flex-direction: column; gap: 2px; }"
           ".explain-box .explain-label { font-size: 10.5px; color: var(--body-text-color-subdued, #555); }"
           ".explain-box .explain-modes { display: flex; }"
           ".explain-box button { font: inherit; font-size: 12px; padding: 2px 8px; margin: 0; cursor: pointer;"
           " border: 1px solid var(--border-color-primary, #d1d5db); background: var(--background-fill-secondary,"
           " #f9fafb); color: var(--body-text-color, #111); }"
           ".explain-box button:first-child { border-radius: 6px 0 0 6px; }"
           ".explain-box button:last-child { border-radius: 0 6px 6px 0; border-left: none; }"
           ".explain-box button[aria-pressed=true] { background: #fff7ed; border-color: #fb923c; color: #7c2d12; }")
EXPLAIN_HTML = ('<div class="explain-box" role="group" aria-labelledby="explain_label">'
                '<span class="explain-label" id="explain_label" data-text="label.explain_label">Explanations</span>'
                '<span class="explain-modes"><button type="button" id="explain_plain" data-mode="plain"'
                ' aria-pressed="true" data-tip="label.explain_plain_tip" data-text="label.explain_plain">'
                'simply</button>'
                '<button type="button" id="explain_detail" data-mode="detail" aria-pressed="false"'
                ' data-tip="label.explain_detail_tip" data-text="label.explain_detail">in detail</button></span></div>'
                '<div class="lang-box"><label class="explain-label" for="ui_language">Sprache · Language</label>'
                '<select id="ui_language"><option value="en" lang="en">English</option>'
                '<option value="de" lang="de">Deutsch</option></select></div>')
LANG_BOX_CSS = (".explain-wrap { display: flex; gap: 8px; align-items: flex-end; }"
                ".lang-box { display: flex; flex-direction: column; gap: 2px; font-size: 13px; }"
                "#ui_language { font: inherit; font-size: 12px; min-height: 24px; padding: 1px 4px; border-radius: 6px;"
                " border: 1px solid var(--border-color-primary, #d1d5db); background: var(--background-fill-secondary,"
                " #f9fafb); color: var(--body-text-color, #111); cursor: pointer; }"
                "@media (pointer: coarse) { #ui_language, .explain-box button { min-height: 44px; } }")


@functools.cache
def catalogue(lang: str = "en") -> dict:
    """The catalogue of one language as nested dicts (read once)."""
    with open(TEXTS_DIR / f"{lang}.toml", "rb") as f:
        return tomllib.load(f)


def entry(key: str, lang: str = "en") -> dict:
    """{"plain", "detail"} of a dotted key in `lang`'s catalogue; KeyError names the key."""
    node = catalogue(lang)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"no text {key!r} in attention_lens/shell/texts/{lang}.toml")
        node = node[part]
    if not (isinstance(node, dict) and set(MODES) <= set(node)):
        raise KeyError(f"text {key!r} needs both a plain and a detail version")
    return node


def text(key: str, mode: str = "plain", lang: str = "en") -> str:
    """The text of `key` in `mode` and `lang`; a text German lacks is the English one (`missing` lists them)."""
    try:
        return entry(key, lang)[mode]
    except KeyError:
        if lang == LANGS[0]:
            raise
        return entry(key, LANGS[0])[mode]


def labels(lang: str = "en") -> dict[str, str]:
    """The [label] table of `lang`: short texts of components and controls (a missing one: the English)."""
    return {**catalogue(LANGS[0]).get("label", {}), **catalogue(lang).get("label", {})}


def words(lang: str = "en") -> dict[str, str]:
    """The [label] table and the [said] table of `lang` (a missing one: the English): every short text a handler
    can say. [said]'s words stay on the server: neither gr.I18n nor the page's scripts get them."""
    return {**labels(lang), **catalogue(LANGS[0]).get("said", {}), **catalogue(lang).get("said", {})}


def missing(lang: str = "de") -> list[str]:
    """The keys of English texts, labels and said words that `lang`'s catalogue lacks (they are shown in English)."""
    have, own, own_said = flat(lang), catalogue(lang).get("label", {}), catalogue(lang).get("said", {})
    return ([k for k in flat(LANGS[0]) if k not in have] + [f"label.{k}" for k in labels(LANGS[0]) if k not in own]
            + [f"said.{k}" for k in catalogue(LANGS[0]).get("said", {}) if k not in own_said])


# Gradio's own status-line words that its German locale lacks (it would say the key, or English, there); the
# placeholders are Gradio's. tests/test_i18n.py reads Gradio's built status tracker for the keys it uses.
GRADIO_OWN = {"en": {"common.complete": "complete", "common.progress": "progress",
                     "status.queue_position": "In queue: {position} of {size}"},
              "de": {"common.complete": "fertig", "common.progress": "Fortschritt",
                     "status.queue_position": "In der Warteschlange: {position} von {size}"}}
LABEL_CALL = re.compile(r"""label\(\s*(f?)(["'])(.+?)\2""")


@functools.cache
def gradio_keys() -> frozenset[str]:
    """The [label] keys Gradio shows: those attention_lens/*.py passes to `label` (an f-string's: every key its pattern
    matches). Only these travel in the page's config (gr.I18n, in both languages); the scripts read every label from the
    catalogues in the bundle (`payload`). The page's HTML was over 400 kB with all 438 in it."""
    pats = [re.sub(r"\\\{.*?\\\}", r"\\w+", re.escape(key)) if f else re.escape(key)
            for path in Path(__file__).parents[1].rglob("*.py")
            for f, _, key in LABEL_CALL.findall(path.read_text(encoding="utf-8"))]
    return frozenset(k for k in labels() if any(re.fullmatch(p, k) for p in pats))


I18N = gr.I18n(**{lang: {**{k: v for k, v in labels(lang).items() if k in gradio_keys()}, **GRADIO_OWN[lang]}
                  for lang in LANGS})  # Gradio's labels (attention_lens/app.py)


def label(key: str) -> str:
    """A component's label (or placeholder, info, an HTML's value) by the [label] key: Gradio shows it in the page's
    language (gr.I18n: one marker per string). KeyError for an unknown key, or one `gradio_keys` did not find."""
    if key not in labels():
        raise KeyError(f"no label {key!r} in attention_lens/shell/texts/en.toml [label]")
    if key not in gradio_keys():
        raise KeyError(f"label {key!r} is not in gr.I18n: name it in a label() call in attention_lens/*.py")
    return str(I18N(key))


def shown(value: str, lang: str = "en") -> str:
    """A string with a label's marker as the page shows it in `lang` (what Gradio's frontend does with one)."""
    m = re.search(r'__i18n__(\{[^}]*\})', value)
    return value if m is None else value[:m.start()] + labels(lang)[json.loads(m.group(1))["key"]] + value[m.end():]


def page_lang() -> str:
    """The language of the page whose event is running (the cookie assets/shell/i18n.js sets; else the browser's
    Accept-Language); English outside an event."""
    from gradio.context import LocalContext
    req = LocalContext.request.get(None)
    if req is None or getattr(req, "request", None) is None:
        return LANGS[0]
    said = req.request.cookies.get(LANG_COOKIE, "")
    if said in LANGS:
        return said
    return "de" if req.request.headers.get("accept-language", "").lower().startswith("de") else LANGS[0]


DECIMAL = {"en": ".", "de": ","}  # each language's decimal separator (the browser's, assets/shell/explain.js num: Intl)


def number(x: float, digits: int | None = 2, lang: str | None = None) -> str:
    """`x` with `digits` decimals (None: the digits it has, as a stored metric's 38.1) as the user's page's language
    (or `lang`) writes it: 0.741 / 0,741; no grouping, and no sign on a zero (-0.000 is 0.000), as the
    page's scripts write theirs. Every decimal number a handler puts into a page text (a toast, a plot's title or
    hover, a table, a choice) goes through here; machine formats (the API's JSON, CSV) keep Python's own."""
    s = str(x) if digits is None else f"{float(x):.{int(digits)}f}"
    if s.startswith("-") and float(s) == 0:
        s = s[1:]
    return s.replace(".", DECIMAL.get(lang or page_lang(), "."))


def shown_table(rows: list[list], lang: str | None = None) -> dict:
    """A gr.Dataframe's `metadata` that shows each decimal number of `rows` as the user's page writes it (Gradio's
    display_value: the table keeps its numbers, to sort and for programs; 0,1234 on the German page)."""
    cell = lambda v: number(v, None, lang) if isinstance(v, float) else str(v)
    return {"display_value": [[cell(v) for v in r] for r in rows], "styling": [["" for _ in r] for r in rows]}


def separators(lang: str | None = None) -> str:
    """Plotly's layout `separators` (decimal, thousands) for the user's page's language (or `lang`): a figure's
    ticks and hovers written as the page writes its numbers."""
    return ",." if DECIMAL.get(lang or page_lang(), ".") == "," else ".,"


def said(key: str, lang: str | None = None, **fill) -> str:
    """A [label] or [said] text for one user (a toast, a plot's title), in their page's language, {blanks} filled."""
    w = words(lang or page_lang())[key]
    return w.format(**fill) if fill else w


def each(make) -> str:
    """Markdown of texts made per language and mode, `make(mode, lang)`, each in the div the page shows or hides."""
    return "\n".join(f'<div class="x-{mode} l-{lang}" lang="{lang}">\n\n{make(mode, lang)}\n\n</div>'
                     for lang in LANGS for mode in MODES)


def explained(*keys: str) -> str:
    """Markdown holding the texts of `keys` (joined by a space, in order) in every language and both versions; the
    page's language and mode show one."""
    return each(lambda mode, lang: " ".join(text(k, mode, lang) for k in keys))


def versions(plain: str, detail: str) -> str:
    """Markdown of a plain and a detailed text of one language only, each in the div the page's mode shows or hides
    (blank lines around each, so the Markdown inside the divs is rendered). Texts of the page use `each`."""
    return "\n".join(f'<div class="x-{mode}">\n\n{body}\n\n</div>' for mode, body in zip(MODES, (plain, detail)))


def spans(key: str, **fill) -> str:
    """HTML of a text in every language and both versions, as spans the page's language and mode show or hide (for
    HTML templates; the catalogue's own markup, such as <sub>, is kept; {blanks} filled from `fill`)."""
    shown = lambda mode, lang: text(key, mode, lang).format(**fill) if fill else text(key, mode, lang)
    return "".join(f'<span class="x-{mode} l-{lang}" lang="{lang}">{shown(mode, lang)}</span>'
                   for lang in LANGS for mode in MODES)


def both(key: str, **fill) -> str:
    """HTML of a [label] text in every language, as spans the page's language shows or hides ({blanks} filled)."""
    return "".join(f'<span class="l-{lang}" lang="{lang}">{html.escape(labels(lang)[key].format(**fill))}</span>'
                   for lang in LANGS)


def flat(lang: str = "en") -> dict[str, dict]:
    """Every text of a catalogue by its dotted key, in the catalogue's order: {key: {"plain", "detail"}}."""
    out = {}

    def walk(node, path):
        if isinstance(node, dict) and set(MODES) <= set(node):
            out[".".join(path)] = {m: node[m] for m in MODES}
        elif isinstance(node, dict):
            for k, v in node.items():
                if k not in ("taught", "label", "said") or path:
                    walk(v, path + [k])
    walk(catalogue(lang), [])
    return out


def payload() -> dict:
    """What the page's scripts read: {lang: {key: {plain, detail} or a label's text}}; German holds only its own."""
    return {lang: {**flat(lang), **{f"label.{k}": v for k, v in catalogue(lang).get("label", {}).items()}}
            for lang in LANGS}


def explain_box() -> gr.HTML:
    """'Explain: simply | in detail' (assets/shell/explain.js) and the language switch (assets/shell/i18n.js), with the
    catalogues the page's scripts read."""
    data = json.dumps(payload(), ensure_ascii=False).replace("</", "<\\/")
    return gr.HTML(None, html_template=f'<div class="explain-wrap">{EXPLAIN_HTML}</div>',
                   css_template=BOX_CSS + LANG_BOX_CSS, elem_id="explain_box", head=f"<style>{EXPLAIN_CSS}</style>",
                   js_on_load=f"const TEXTS = {data};\n" + script("shell/explain.js", *TEXTS_PARTS))

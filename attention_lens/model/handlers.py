"""The Model card tab's handlers: plain functions of (translator, inputs) -> outputs; bad input raises
gr.Error."""
from __future__ import annotations

import re

from attention_lens.model import eval_sets as E
from attention_lens.shell.models import LOOK_FOR, direction_label
from attention_lens.shell.texts import labels, number, said, text, words
from transformer.decode.decoding import Translator
from transformer.interpret.roles import load_atlas
from transformer.model.device import describe
from transformer.train.corpus import ATTRIBUTION

# The card in either version (attention_lens/shell/texts/en.toml "card.*"): "detail" as it always read, "plain" in
# everyday words

VAL_ROWS = (("multi30k", "val"), ("tatoeba", "tatoeba_val"))  # (domain: [said] card_val_<domain>, split)
PLAIN_SETS = {"picture captions": "picture descriptions"}  # the sets' words, plainly (eval_sets.SETS)
SHORT_SETS = {"picture captions": "pictures"}  # in the plain rows' labels (a narrow column on a phone)


def device_words(device: str, lang: str) -> str:
    """A device as transformer.model.device.describe and metrics.json say it ('CPU (2 threads; fine-tuned on 1)') in the
    words of `lang` ([said] device_threads, device_fine_tuned); a name (a GPU's) stays as it is."""
    device = re.sub(r"\bfine-tuned on (\d+)", lambda m: said("device_fine_tuned", lang, n=m[1]), device)
    return re.sub(r"\b(\d+) threads?\b", lambda m: said("device_thread" if m[1] == "1" else "device_threads", lang,
                                                        n=m[1]), device)  # '1 threads': as older runs wrote it


def _n(x, lang: str) -> str | None:
    """A stored score (BLEU 38.1) with the digits it has, as `lang` writes it (38,1 in German); None stays None."""
    return None if x is None else number(x, None, lang)


def _row(key: str, mode: str, lang: str = "en", **fill) -> tuple[str, str]:
    """A row of the card: its label and value from the catalogue, filled."""
    return text(f"card.{key}", mode, lang).format(**fill), text(f"card.{key}_value", mode, lang).format(**fill)


def set_words(what: str, lang: str = "en", short: bool = False) -> str:
    """A set's words ('picture captions') as the plain card says them: 'picture descriptions', 'pictures' (short),
    or the catalogue's in another language ([label] set_<what>, set_<what>_short)."""
    if lang == "en":
        return (SHORT_SETS if short else PLAIN_SETS).get(what, what)
    key = f"set_{what.split()[0]}" + ("_short" if short else "")
    return labels(lang).get(key, what)


def plain_set(metrics: dict, split: str, lang: str = "en") -> str:
    """'1,014 picture descriptions': a set's size and what it holds, without its file name."""
    what = E.SETS.get(split, (split, "sentences"))[1]
    n = E.size(metrics, split)
    return f"{E.count(n, lang)} {set_words(what, lang)}" if n else set_words(what, lang)


def validation_rows(metrics: dict, mode: str = "detail", lang: str = "en") -> list[tuple[str, str]]:
    """Validation BLEU, saying of which weights: `val_bleu` was scored in fp32 when training or averaging chose
    the weights, before they were saved in fp16; `evaluate --split val --save` scores the weights as shipped.
    A model trained on both corpora gets a row per domain (`val_by_domain`; its `val_bleu` is their mean)."""
    by_domain, w = metrics.get("val_by_domain") or {}, words(lang)
    if len(by_domain) < 2:
        return _validation_row(w["card_val_one"], metrics, "val", metrics.get("val_bleu"), mode, lang)
    rows = [r for domain, split in VAL_ROWS
            for r in _validation_row(w[f"card_val_{domain}"], metrics, split, by_domain.get(f"bleu_{domain}"), mode,
                                     lang)]
    if mode == "plain":  # the mean of the two rows above says nothing new
        return rows
    return rows + [(w["card_val_mean"], w["card_val_mean_value"].format(bleu=_n(metrics.get("val_bleu"), lang),
                                                                         weights=weights_words(metrics, lang)))]


def weights_words(metrics: dict, lang: str = "en") -> str:
    """metrics.json's "weights" as read: an average over a window of one epoch is that epoch; in `lang`'s words."""
    w, said_as = str(metrics.get("weights", "?")), words(lang)
    avg = re.fullmatch(r"average of epochs (\d+)\.\.(\d+)", w)
    one = re.fullmatch(r"epoch (\d+)", w)
    if avg and int(avg.group(1)) == int(avg.group(2)) or one:
        return said_as["card_weights_epoch"].format(n=int((avg or one).group(1)))
    return said_as["card_weights_average"].format(a=avg.group(1), b=avg.group(2)) if avg else w


def _validation_row(label: str, metrics: dict, split: str, chosen, mode: str = "detail",
                    lang: str = "en") -> list[tuple[str, str]]:
    shipped = metrics.get("test", {}).get(f"{split}/greedy", {}).get("bleu")
    if mode == "plain":
        bleu = shipped if shipped is not None else chosen
        what = E.SETS.get(split, (split, "sentences"))[1]
        return [] if bleu is None else [_row("val", mode, lang, what=set_words(what, lang, True), bleu=_n(bleu, lang),
                                             on=plain_set(metrics, split, lang))]
    w = words(lang)
    parts = [w["card_val_shipped"].format(bleu=_n(shipped, lang))] if shipped is not None else []
    if chosen is not None:
        parts.append(w["card_val_chosen"].format(bleu=_n(chosen, lang), weights=weights_words(metrics, lang)))
    return [(label, w["card_val_on"].format(parts="; ".join(parts), on=E.words(metrics, split, lang)))] if parts else []


def _atlas_rows(tr, mode: str, lang: str = "en") -> list[tuple[str, str]]:
    atlas = load_atlas(tr.checkpoint_dir) if tr.checkpoint_dir else None
    rows = E.atlas_row(atlas, tr, lang)
    if mode == "plain" and rows:
        return [_row("atlas", mode, lang, bleu=_n(atlas["bleu"], lang), n=atlas.get("sentences") or "its")]
    return rows


def model_card(tr: Translator, metrics: dict, mode: str = "detail", lang: str = "en") -> str:
    """The Model tab's card, a Markdown table, in either version ("plain" or "detail") and `lang` (the catalogue's;
    a detailed row the catalogue does not word, such as a file's name, stays as it is)."""
    c, w = tr.config, labels(lang)
    look = ([(text("card.look_for", mode, lang), text(f"look_for.{c.direction}", mode, lang))]
            if c.direction in LOOK_FOR else [])
    direction = direction_label(tr) if lang == "en" else f"{w['lang_' + c.src_lang]} → {w['lang_' + c.tgt_lang]}"
    built = "built" if tr.origin is None else "built_hf"  # ours, or a Hugging Face model's (transformer/hf)
    rows = [(w["card_translates"], direction), *look,
            _row(built, mode, lang, enc=c.n_encoder_layers, dec=c.n_decoder_layers, heads=c.n_heads,
                 d_model=c.d_model, d_ff=c.d_ff, arch=getattr(tr, "architecture", "")),
            *([_row("origin", mode, lang, origin=tr.origin)] if tr.origin is not None else []),
            _row("size", mode, lang, n=E.count(tr.model.num_parameters(), lang)),
            _row("vocabulary", mode, lang, n=c.vocab_size),
            (text("card.device", mode, lang), device_words(describe(tr.device), lang))]
    for split, name, what in TEST_ROWS:
        test = metrics.get("test", {}).get(f"{split}/greedy", {})
        if test:
            rows.append(_row("test", mode, lang, name=words(lang)[name], what=set_words(what, lang, True),
                             bleu=_n(test.get("bleu"), lang), bleu_lc=_n(test.get("bleu_lc"), lang),
                             chrf=_n(test.get("chrf"), lang),
                             on=E.words(metrics, split, lang) if mode == "detail" else plain_set(metrics, split, lang)))
    rows += validation_rows(metrics, mode, lang) + _atlas_rows(tr, mode, lang)
    if metrics.get("train_seconds"):
        device = device_words(str(metrics.get("device", "?")), lang)
        minutes, epochs = f"{metrics['train_seconds'] / 60:.0f}", metrics.get("epochs")
        still = said("card_still_training", lang, epochs=epochs, planned=metrics.get("epochs_planned")) \
            if metrics.get("in_training") else ""
        rows.append(_row("training", mode, lang, epochs=epochs, s="" if epochs == 1 else "s", minutes=minutes,
                         device=device, still=still))
    rows += data_rows(metrics, mode, lang)
    return f"| {w['card_property']} | {w['card_value']} |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)


TEST_ROWS = (("test_2016_flickr", "card_name_flickr", "picture captions"),  # (split, [said] its name, what)
             ("tatoeba_test", "card_name_tatoeba_test", "everyday sentences"))


def data_rows(metrics: dict, mode: str = "detail", lang: str = "en") -> list[tuple[str, str]]:
    """What the model was trained on, with the attribution Tatoeba's licence asks for wherever a model trained on
    it is shown. Checkpoints from before the Tatoeba recipe record no "data": they saw Multi30k only."""
    data = str(metrics.get("data") or "Multi30k task 1 training captions")
    tatoeba = "tatoeba" in data.lower()
    rows = [_row("data", mode, lang, value=data.replace("|", "/"))]
    if not tatoeba and (mode == "plain" or lang != "en"):  # the recorded words are English
        rows = [(rows[0][0], labels(lang)["card_data_pictures"])]
    if tatoeba:
        rows.append((labels(lang)["card_attribution"], ATTRIBUTION if lang == "en" else labels(lang)["attribution"]))
    return rows

"""The handlers of the other tabs: head ablation, beam search, across layers, attention being learned, and
the Model tab's card. Plain functions of (translator, inputs) -> outputs; bad input raises gr.Error."""
from __future__ import annotations

import re

import gradio as gr
import numpy as np

from transformer.interpret import analysis, figures
from transformer.decode.beam import beam_search, check_beam_size
from transformer.interpret.capture import layers_of
from transformer.train.corpus import ATTRIBUTION
from transformer.decode.decoding import DecodingSession, Translator, attend_ids
from transformer.model.device import describe
from transformer.interpret.history import AttentionHistory, describe_epoch, epoch_point
from transformer.interpret.roles import load_atlas

from . import ablation_help as A
from . import eval_sets as E
from . import learned_help
from .models import LOOK_FOR, direction_label
from .texts import LANGS, each, labels, page_lang, said, text, words
from . import payload as P
from .decoding_views import at_position
from .figures import alignment_figure, axis_words, beam_tree_figure, figure, with_axes
from .inputs import TOPK, check_k, choice_index, fail, need_session, parse_head_labels


# -- Head ablation -----------------------------------------------------------------------------------

def head_choices(tr: Translator, kind: str) -> list[str]:
    layers = layers_of(tr.model, kind)
    return [f"L{l + 1} H{h + 1}" for l in range(layers) for h in range(tr.config.n_heads)]


def ablate(tr: Translator, session, enc_heads, dec_heads, cross_heads, k: int = TOPK):
    """Intact vs heads-switched-off on the sequence the view shows (forced pieces kept on both sides): translations,
    top-k at the step shown (at the end: the last that predicts a piece), chosen-token probabilities, maps."""
    s = need_session(session)
    k = check_k(k)
    heads = (parse_head_labels("encoder_self", enc_heads) + parse_head_labels("decoder_self", dec_heads)
             + parse_head_labels("cross", cross_heads))
    w = labels(page_lang())  # the user's page's language; English for programs (ui/texts [label])
    if not heads:
        raise gr.Error(w["err_tick_head"], print_exception=False)
    plan = A.forced_plan(s)  # the sequence the view shows, forced pieces included, decoded by both models
    try:
        intact_run, ablated_run, a = A.replays(tr, s, plan, heads)  # in one batch
    except ValueError as e:
        fail(e)
    ids = intact_run.target_ids
    p0, p1 = tr.token_probs(s.source_ids, ids), tr.token_probs(s.source_ids, ids, heads)
    pieces = tr.tokenizer.pieces(ids)
    probs = [[i + 1, pieces[i + 1], round(float(x), 4), round(float(y), 4), round(float(y - x), 4)]
             for i, (x, y) in enumerate(zip(p0, p1))]
    step = A.topk_step(tr, s)  # at the end: the last step that predicts a piece
    ti, ta = s.topk(k, position=step), a.topk(k, position=step)
    topk = [[r + 1, ti[r][0], round(ti[r][1], 4), ta[r][0], round(ta[r][1], 4)] for r in range(k)
            if max(round(ti[r][1], 4), round(ta[r][1], 4)) > 0]  # a row reading p 0 on both sides says nothing
    summary = A.summary(tr, len(heads), s, step, plan, intact_run.translation == ablated_run.translation)
    if len(topk) < k:
        summary += w["ablation_topk_short"].format(n=len(topk), k=k)
    return (intact_run.translation, ablated_run.translation, probs, topk, P.session_payload(a.view(), mode="ablated"),
            summary)


def ablate_at(tr: Translator, session, enc_heads, dec_heads, cross_heads, k: int = TOPK, position=None):
    """ablate at the position the browser shows (at_position)."""
    return ablate(tr, at_position(tr, session, position), enc_heads, dec_heads, cross_heads, k)


# -- Beam search -------------------------------------------------------------------------------------

def beam(tr: Translator, text: str, size):
    """Beam search of `text` (the API's /beam): the tree, the hypotheses, and the attention of the best one."""
    try:
        source_ids = tr.source_ids(text)
    except ValueError as e:
        fail(e)
    return beam_ids(tr, source_ids, size)


def beam_started(tr: Translator, session, size):
    """Beam search of the sentence started in the Translate tab (the tab's button), as every tab uses it."""
    return beam_ids(tr, need_session(session).source_ids, size)


def beam_ids(tr: Translator, source_ids: list[int], size):
    """The tree, the hypotheses, and the attention of the best one."""
    try:
        size = check_beam_size(int(size) if isinstance(size, float) and size.is_integer() else size)
        result = beam_search(tr.model, source_ids, size)
    except ValueError as e:
        fail(e)
    # the ranking score: log-probability per piece (beam_search's default length_penalty 1)
    choices = [f"{i + 1}. {tr.tokenizer.decode(h.ids)}  (log-prob {h.score:.2f} / {len(h.ids)} "
               f"piece{'s' if len(h.ids) != 1 else ''} = "
               f"{h.normalized:.3f} per piece{'' if h.finished else ', unfinished'})"
               for i, h in enumerate(result.hypotheses)]
    state = {"source_ids": result.source_ids, "hyps": [h.ids for h in result.hypotheses],
             "paths": [h.path for h in result.hypotheses], "tree": result.tree, "model": tr.config.direction}
    fig = beam_tree_figure(result.tree, tr.tokenizer.piece, highlight_path=result.hypotheses[0].path)
    return state, figure(fig), gr.update(choices=choices, value=choices[0]), beam_payload(tr, state, 0)


def beam_payload(tr: Translator, state: dict, i: int) -> dict:
    tgt = [tr.config.bos_id] + list(state["hyps"][i])
    maps = attend_ids(tr.model, state["source_ids"], tgt)
    return P.attention_payload(maps, tr.tokenizer.pieces(state["source_ids"]), tr.tokenizer.pieces(tgt),
                               cursor=len(tgt) - 1, done=True, mode="beam", doc=f"beam {i + 1}")  # which one


def beam_pick(tr: Translator, state, choice):
    if not isinstance(state, dict) or not state.get("hyps"):
        raise gr.Error("Run the beam search first.", print_exception=False)
    m = re.match(r"^(\d+)\.", choice if isinstance(choice, str) else "")
    i = int(m.group(1)) - 1 if m else -1
    if not 0 <= i < len(state["hyps"]):
        raise gr.Error("pick one of the listed hypotheses", print_exception=False)
    fig = beam_tree_figure(state["tree"], tr.tokenizer.piece, highlight_path=state["paths"][i])
    return figure(fig), beam_payload(tr, state, i)


# -- Across layers -----------------------------------------------------------------------------------

def across_layers(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15):
    """Encoder attention rollout, and the source-target alignment from cross-attention (lines + matrix)."""
    s = need_session(session)
    maps = s.attention
    layer = None if layer_choice in (None, "all layers") else choice_index(layer_choice, "layer", maps.cross.shape[0])
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool) or not 0 < threshold <= 1:
        raise gr.Error("threshold must be in (0, 1]", print_exception=False)
    roll = analysis.rollout(maps.encoder_self)[-1]  # (S, S) through all encoder layers
    src = [figures.label(p) for p in maps.source_tokens]
    languages = (tr.config.src_lang, tr.config.tgt_lang)  # each figure says what its rows and columns are
    fig_roll = with_axes(figures.heatmap(roll, src, src, said("rollout_title")),
                         "encoder_self", languages)
    # row t of cross-attention is the query at target token t: it predicts token t+1
    predicted = list(maps.target_tokens[1:]) + ([] if s.done else [tr.tokenizer.piece(s.positions[s.cursor].greedy)])
    align = analysis.alignment(maps.cross, layer)[:len(predicted)]  # (T', S)
    which = said("all_layers") if layer is None else f"{said('layer')} {layer + 1}"
    fig_lines = alignment_figure(align, maps.source_tokens, predicted, threshold=float(threshold))
    rows_words, cols_words = axis_words("cross", languages)
    fig_lines["layout"]["title"] = {"text": said("lines_title", which=which)}
    fig_lines["layout"]["yaxis"]["ticktext"] = [rows_words, cols_words]  # the target's row below, the source's on top
    fig_lines["layout"]["margin"]["l"] = 150
    rows = [f"{figures.label(q)} → {figures.label(p)}" for q, p in zip(maps.target_tokens, predicted)]  # as Translate
    fig_mat = with_axes(figures.heatmap(align, src, rows,
                                        said("matrix_title", which=which)),
                        "cross", languages)
    for fig, kind in ((fig_roll, "encoder_self"), (fig_mat, "cross")):  # "queries"/"keys" said in the languages
        rows_words, cols_words = axis_words(kind, languages)
        fig.update_layout(xaxis_title_text=f"{cols_words} →", yaxis_title_text=f"↓ {rows_words}")
    return fig_roll, figure(fig_lines), fig_mat


def across_layers_at(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15,
                     position=None):
    """across_layers at the position the browser shows (at_position)."""
    return across_layers(tr, at_position(tr, session, position), layer_choice, threshold)


def across_layers_follow(tr: Translator, session, layer_choice: str = "all layers", threshold: float = 0.15,
                         position=None):
    """across_layers_at when the tab is shown or the step changes: quietly nothing before Start."""
    if not isinstance(session, DecodingSession):
        return gr.skip(), gr.skip(), gr.skip()
    return across_layers_at(tr, session, layer_choice, threshold, position)


# -- Attention being learned --------------------------------------------------------------------------

def learned(history: AttentionHistory | None, example, epoch, layer: str = "all layers",
            head: str = "mean of heads"):
    """Cross-attention of one example sentence at one recorded epoch (0, a fraction of epoch 1, or a whole
    epoch), and its greedy translation then."""
    if history is None or not history.epochs:
        raise gr.Error("this checkpoint has no attention history", print_exception=False)
    if isinstance(example, float) and example.is_integer():
        example = int(example)
    if isinstance(epoch, float) and epoch.is_integer():
        epoch = int(epoch)
    try:
        cross, src, tgt = history.cross(example, epoch), history.source(example), history.target(example, epoch)
    except (ValueError, KeyError, TypeError) as e:
        raise gr.Error(f"pick one of the example sentences and an epoch from {history.epochs[0]} to "
                       f"{history.epochs[-1]} ({e})", print_exception=False) from None
    L, H = cross.shape[:2]
    ls = range(L) if layer in (None, "all layers") else [choice_index(layer, "layer", L)]
    hs = range(H) if head in (None, "mean of heads") else [choice_index(head, "head", H)]
    w = cross[list(ls)][:, list(hs)].mean(axis=(0, 1))  # (T, S)
    rows = figures.row_labels(tgt, None)[:w.shape[0]]
    lang = page_lang()  # the plot's title in the user's page's language (ui/texts.py)
    fig = figures.heatmap(w, [figures.label(p) for p in src], rows,
                          said("learned_title", lang, when=epoch_words(epoch, "detail", lang)), zmax=1.0)
    text = "".join(p for p in tgt if p not in ("<s>", "</s>")).replace("▁", " ").strip()
    return fig, text



def learned_at(history: AttentionHistory | None, example, point, layer: str = "all layers",
               head: str = "mean of heads"):
    """`learned` at the slider's snapshot `point` (1 = history.epochs[0]), and what that point is."""
    if history is None or not history.epochs:
        raise gr.Error("this checkpoint has no attention history", print_exception=False)
    if isinstance(point, float) and point.is_integer():
        point = int(point)
    n = len(history.epochs)
    if isinstance(point, bool) or not isinstance(point, int) or not 1 <= point <= n:
        raise gr.Error(f"snapshot must be 1..{n}, got {str(point)[:40]!r}", print_exception=False)
    epoch = history.epochs[point - 1]
    fig, text = learned(history, example, epoch, layer, head)
    z = np.asarray(fig.data[0].z, dtype=float)
    ex = int(example) if isinstance(example, float) else example
    told = {(mode, lang): learned_help.explain(history, ex, epoch, z, mode, lang)
            for mode in ("plain", "detail") for lang in LANGS}
    e = float(epoch)
    what = ("learned_what_before" if e == 0 else "learned_what_one" if e == 1 else
            "learned_what_whole" if e.is_integer() else "learned_what_into")

    def line(mode, lang):
        why = told[mode, lang][1] if told[mode, lang] else ""
        head = said("snapshot", lang, point=point, n=n, when=epoch_words(epoch, mode, lang))
        head = (f"**{head}.**" if mode == "plain" else
                f"**{head}** ({said(what, lang, n=int(e), next=int(e) + 1)}).")
        return head + (" " + why if why else "")
    shown = told["detail", page_lang()]
    return fig, shown[0] if shown else text, each(line)


def epoch_words(epoch, mode: str = "plain", lang: str = "en") -> str:
    """A recorded point in words of `lang`: plainly in passes over the data, in detail in epochs."""
    if lang == "en":
        return learned_help.plain_epoch(epoch) if mode == "plain" else describe_epoch(epoch)
    whole, percent = epoch_point(epoch)
    key = "before" if not whole and percent is None else "after" if percent is None else "into"
    return said(f"epoch_{key}_{mode}", lang, n=whole, next=whole + 1, pct=f"{percent or 0:g}")


# -- Model card --------------------------------------------------------------------------------------
# The card in either version (ui/texts/en.toml "card.*"): "detail" as it always read, "plain" in everyday words

VAL_ROWS = (("multi30k", "val"), ("tatoeba", "tatoeba_val"))  # (domain: [said] card_val_<domain>, split)
PLAIN_SETS = {"picture captions": "picture descriptions"}  # the sets' words, plainly (eval_sets.SETS)
SHORT_SETS = {"picture captions": "pictures"}  # in the plain rows' labels (a narrow column on a phone)


def device_words(device: str, lang: str) -> str:
    """A device as transformer.model.device.describe and metrics.json say it ('CPU (2 threads; fine-tuned on 1)') in the
    words of `lang` ([said] device_threads, device_fine_tuned); a name (a GPU's) stays as it is."""
    device = re.sub(r"\bfine-tuned on (\d+)", lambda m: said("device_fine_tuned", lang, n=m[1]), device)
    return re.sub(r"\b(\d+) threads?\b", lambda m: said("device_thread" if m[1] == "1" else "device_threads", lang,
                                                        n=m[1]), device)  # '1 threads': as older runs wrote it


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
    return rows + [(w["card_val_mean"], w["card_val_mean_value"].format(bleu=metrics.get("val_bleu"),
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
        return [] if bleu is None else [_row("val", mode, lang, what=set_words(what, lang, True), bleu=bleu,
                                             on=plain_set(metrics, split, lang))]
    w = words(lang)
    parts = [w["card_val_shipped"].format(bleu=shipped)] if shipped is not None else []
    if chosen is not None:
        parts.append(w["card_val_chosen"].format(bleu=chosen, weights=weights_words(metrics, lang)))
    return [(label, w["card_val_on"].format(parts="; ".join(parts), on=E.words(metrics, split, lang)))] if parts else []


def _atlas_rows(tr, mode: str, lang: str = "en") -> list[tuple[str, str]]:
    atlas = load_atlas(tr.checkpoint_dir) if tr.checkpoint_dir else None
    rows = E.atlas_row(atlas, tr, lang)
    if mode == "plain" and rows:
        return [_row("atlas", mode, lang, bleu=atlas["bleu"], n=atlas.get("sentences") or "its")]
    return rows


def model_card(tr: Translator, metrics: dict, mode: str = "detail", lang: str = "en") -> str:
    """The Model tab's card, a Markdown table, in either version ("plain" or "detail") and `lang` (the catalogue's;
    a detailed row the catalogue does not word, such as a file's name, stays as it is)."""
    c, w = tr.config, labels(lang)
    look = ([(text("card.look_for", mode, lang), text(f"look_for.{c.direction}", mode, lang))]
            if c.direction in LOOK_FOR else [])
    direction = direction_label(tr) if lang == "en" else f"{w['lang_' + c.src_lang]} → {w['lang_' + c.tgt_lang]}"
    rows = [(w["card_translates"], direction), *look,
            _row("built", mode, lang, enc=c.n_encoder_layers, dec=c.n_decoder_layers, heads=c.n_heads,
                 d_model=c.d_model, d_ff=c.d_ff),
            _row("size", mode, lang, n=E.count(tr.model.num_parameters(), lang)),
            _row("vocabulary", mode, lang, n=c.vocab_size),
            (text("card.device", mode, lang), device_words(describe(tr.device), lang))]
    for split, name, what in TEST_ROWS:
        test = metrics.get("test", {}).get(f"{split}/greedy", {})
        if test:
            rows.append(_row("test", mode, lang, name=words(lang)[name], what=set_words(what, lang, True),
                             bleu=test.get("bleu"),
                             bleu_lc=test.get("bleu_lc"), chrf=test.get("chrf"),
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

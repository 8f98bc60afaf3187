"""Export of the maps at the position the view shows (.npz, .json, .html), kept per user session, bounded.

The files are written into Gradio's own file cache (`gradio_cache()`), where Gradio serves them as they are
instead of copying them, so the copy a user downloads is the one pruned here, and pruning is never racing a
copy Gradio makes after the handler returns. Layout: gradio_cache() / attention-lens-export-<pid> / <session> /
<one folder per export>, <session> being the user's Gradio session (gr.Request.session_hash; "local" for calls
without one: a notebook, the tests). Each export, once its own files are written, prunes the others:
- a session keeps its newest EXPORTS_PER_SESSION exports while it lives; the files go when the user closes the
  page (`end_session`, wired to demo.unload) or when its newest export is older than the session's time to live
  (SESSION_TTL_S: the user's state is gone by then);
- all sessions together keep at most EXPORTS_MAX exports, the oldest going first: a public link's disk stays
  bounded even with many users (only past that many users exporting at once can one lose an older file).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path

import gradio as gr
import numpy as np

from attention_lens.shell.components import SESSION_TTL_S
from attention_lens.shell.inputs import need_session
from attention_lens.translate.handlers import at_position
from transformer.decode.decoding import Translator
from transformer.interpret.capture import KINDS

LAYOUT = "maps are [layer][head][query][key]; decoder row t predicts target_tokens[t+1]"
EXPORT_PREFIX = "attention-lens-export-"
FILES_PER_EXPORT = 3
EXPORTS_PER_SESSION = 2  # a user's newest exports, downloadable while the session lives
EXPORTS_MAX = 32  # all users together: past this the oldest exports go first
LOCAL = "local"  # the session of calls without a Gradio request


def export_maps(tr: Translator, session, request: gr.Request | None = None) -> list[str]:
    """The current maps (all kinds, layers, heads) with their tokens: .npz, .json, and an .html page of figures,
    in the folder of the user's session (`request`); then the older exports are pruned (module docstring)."""
    s = need_session(session)
    maps = s.attention
    out = new_export_dir(request)
    name = f"{EXPORT_PREFIX}step{s.cursor}"
    np.savez_compressed(out / f"{name}.npz", encoder_self=maps.encoder_self, decoder_self=maps.decoder_self,
                        cross=maps.cross, source_tokens=np.array(maps.source_tokens),
                        target_tokens=np.array(maps.target_tokens), translation=np.array(s.translation))
    d = maps.to_dict(decimals=6)
    d.update(translation=s.translation, step=s.cursor,
             layout=LAYOUT)
    (out / f"{name}.json").write_text(json.dumps(d, ensure_ascii=False))
    languages = (s.translator if hasattr(s, "translator") else tr).config
    (out / f"{name}.html").write_text(figures_html(maps, (languages.src_lang, languages.tgt_lang)), encoding="utf-8")
    prune_exports(delivering=out)
    return [str(out / f"{name}.npz"), str(out / f"{name}.json"), str(out / f"{name}.html")]


def figures_html(maps, languages: tuple[str, str] | None = None) -> str:
    """One standalone page: each kind's layers × heads grid (AttentionMaps.figure), plotly.js inlined once; each
    says what its rows and columns are in the model's `languages` (source, target codes), as the view does."""
    from attention_lens.shell.components import VENDOR
    from attention_lens.shell.figures import figure_words, with_axes
    words = figure_words()  # in the user's page's language, as the view's
    figs = [with_axes(maps.figure(kind, words=words), kind, languages) for kind in KINDS]
    parts = [fig.to_html(full_html=False, include_plotlyjs=False) for fig in figs]
    js = (VENDOR / "plotly-cartesian.min.js").read_text(encoding="utf-8").replace("</script", "<\\/script")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>attention-lens maps</title>"
            f"<script>{js}</script></head><body>" + "".join(parts) + "</body></html>")


_prune_lock = threading.Lock()


def gradio_cache() -> Path:
    """Gradio's file cache (GRADIO_TEMP_DIR, else <tmp>/gradio): a file there is served without a copy."""
    return Path(gr.utils.get_upload_folder())


_rooted: set[Path] = set()  # the caches this process has made its export root in (and pruned)


def export_root() -> Path:
    """This process's export folder in Gradio's cache. The first time it is made in a cache, the export folders
    of processes that no longer exist (a killed server's) are removed: nothing else would ever prune them."""
    cache = gradio_cache()
    root = cache / f"{EXPORT_PREFIX}{os.getpid()}"
    root.mkdir(parents=True, exist_ok=True)
    if cache not in _rooted:
        _rooted.add(cache)
        prune_dead_processes(cache)
    return root


def prune_dead_processes(cache: Path) -> list[Path]:
    """Remove the export folders (EXPORT_PREFIX<pid>) in `cache` whose process is gone; -> the removed ones."""
    removed = []
    for folder in cache.glob(f"{EXPORT_PREFIX}*"):
        pid = folder.name[len(EXPORT_PREFIX):]
        if folder.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not _process_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: nothing is sent, the process is only looked up
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process, or a platform that cannot tell: keep its folder
    return True


def new_export_dir(request: gr.Request | None) -> Path:
    """A new folder in the one of the user's Gradio session (under the lock: pruning removes empty folders)."""
    with _prune_lock:
        folder = export_root() / session_key(request)
        folder.mkdir(exist_ok=True)
        return Path(tempfile.mkdtemp(prefix="export-", dir=folder))


def session_key(request: gr.Request | None) -> str:
    key = getattr(request, "session_hash", None) if request is not None else None
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(key))[:64] if key else LOCAL


def prune_exports(delivering: Path | None = None, now: float | None = None) -> None:
    """Remove the exports that are no longer kept (module docstring), never `delivering`, the export being
    handed out by the calling request."""
    now = time.time() if now is None else now
    with _prune_lock:
        kept, doomed = [], []
        for folder in export_root().iterdir():
            exports = sorted((e for e in folder.iterdir() if e.is_dir()), key=_mtime, reverse=True) \
                if folder.is_dir() else []
            if exports and now - _mtime(exports[0]) > SESSION_TTL_S:
                doomed += exports  # the session's state has expired: the user cannot be shown these again
            else:
                kept += exports[:EXPORTS_PER_SESSION]
                doomed += exports[EXPORTS_PER_SESSION:]
        doomed += sorted(kept, key=_mtime, reverse=True)[EXPORTS_MAX:]
        for export in doomed:
            if export != delivering:
                shutil.rmtree(export, ignore_errors=True)
        for folder in export_root().iterdir():
            _remove_if_empty(folder)


def end_session(request: gr.Request) -> None:
    """demo.unload: the user closed the page, so their exports go."""
    if request is not None and session_key(request) != LOCAL:
        with _prune_lock:
            shutil.rmtree(export_root() / session_key(request), ignore_errors=True)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def export_at(tr: Translator, session, position=None, request: gr.Request | None = None) -> list[str]:
    """export_maps at the position the browser shows."""
    return export_maps(tr, at_position(tr, session, position), request)


def export_event():
    """The Export button's handler: export_at in the user's session, with the model it was started with (Gradio
    passes a gr.Request to a parameter annotated so; functools.partial would hide the annotation)."""
    def export(session, position=None, request: gr.Request = None) -> list[str]:
        return export_at(need_session(session).translator, session, position, request)
    return export

"""Export of the maps at the position the view shows (.npz, .json, .html), in a bounded file cache."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np

from transformer.capture import KINDS
from transformer.decoding import Translator

from .decoding_views import at_position
from .inputs import need_session

LAYOUT = "maps are [layer][head][query][key]; decoder row t predicts target_tokens[t+1]"
EXPORTS_KEPT = 4  # the newest exports stay downloadable; older files (ours and Gradio's cached copies) go
EXPORT_PREFIX = "attention-lens-export-"
FILES_PER_EXPORT = 3


def export_maps(tr: Translator, session) -> list[str]:
    """The current maps (all kinds, layers, heads) with their tokens: .npz, .json, and an .html page of figures.

    Files live in a bounded cache: each export removes all but the newest EXPORTS_KEPT exports, both our
    own folders and the copies Gradio made of them in its cache, so a public link's disk cannot fill."""
    s = need_session(session)
    maps = s.attention
    out = Path(tempfile.mkdtemp(prefix=EXPORT_PREFIX, dir=export_root()))
    name = f"{EXPORT_PREFIX}step{s.cursor}"
    np.savez_compressed(out / f"{name}.npz", encoder_self=maps.encoder_self, decoder_self=maps.decoder_self,
                        cross=maps.cross, source_tokens=np.array(maps.source_tokens),
                        target_tokens=np.array(maps.target_tokens), translation=np.array(s.translation))
    d = maps.to_dict(decimals=6)
    d.update(translation=s.translation, step=s.cursor,
             layout=LAYOUT)
    (out / f"{name}.json").write_text(json.dumps(d, ensure_ascii=False))
    (out / f"{name}.html").write_text(figures_html(maps), encoding="utf-8")
    prune_exports()
    return [str(out / f"{name}.npz"), str(out / f"{name}.json"), str(out / f"{name}.html")]


def figures_html(maps) -> str:
    """One standalone page: each kind's layers × heads grid (AttentionMaps.figure), plotly.js inlined once."""
    from .components import VENDOR
    parts = [maps.figure(kind).to_html(full_html=False, include_plotlyjs=False) for kind in KINDS]
    js = (VENDOR / "plotly-cartesian.min.js").read_text(encoding="utf-8").replace("</script", "<\\/script")
    return ("<!doctype html><html><head><meta charset='utf-8'><title>attention-lens maps</title>"
            f"<script>{js}</script></head><body>" + "".join(parts) + "</body></html>")


_prune_lock = threading.Lock()


def export_root() -> Path:
    root = Path(tempfile.gettempdir()) / f"{EXPORT_PREFIX}{os.getpid()}"
    root.mkdir(exist_ok=True)
    return root


def gradio_cache() -> Path:
    return Path(os.environ.get("GRADIO_TEMP_DIR") or Path(tempfile.gettempdir()) / "gradio")


def prune_exports(keep: int = EXPORTS_KEPT) -> None:
    """Keep the newest `keep` export folders of ours and the newest keep * FILES_PER_EXPORT export files in
    Gradio's cache."""
    with _prune_lock:
        ours = sorted(export_root().glob(f"{EXPORT_PREFIX}*"), key=_mtime, reverse=True)
        for folder in ours[keep:]:
            shutil.rmtree(folder, ignore_errors=True)
        cached = sorted(gradio_cache().glob(f"*/{EXPORT_PREFIX}*"), key=_mtime, reverse=True)
        for f in cached[FILES_PER_EXPORT * keep:]:
            f.unlink(missing_ok=True)
            try:
                f.parent.rmdir()  # Gradio's per-file hash folder, when now empty
            except OSError:
                pass


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def export_at(tr: Translator, session, position=None) -> list[str]:
    """export_maps at the position the browser shows."""
    return export_maps(tr, at_position(tr, session, position))

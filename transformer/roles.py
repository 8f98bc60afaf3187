"""The head atlas's roles as the views read them: the checkpoint's head_atlas.json and each head's role."""
from __future__ import annotations

import json
import threading
from pathlib import Path

ATLAS = "head_atlas.json"
_cache: dict = {}  # path -> ((mtime_ns, size), atlas): re-read when the file changes
_lock = threading.Lock()


def load_atlas(checkpoint_dir) -> dict | None:
    """The checkpoint's head_atlas.json, or None when it has none (or an unreadable one). Read again whenever
    the file's modification time or size changes, so a rewritten atlas is never served stale."""
    if checkpoint_dir is None:
        return None
    path = Path(checkpoint_dir) / ATLAS
    try:
        st = path.stat()
    except OSError:
        return None
    key = (st.st_mtime_ns, st.st_size)
    with _lock:
        hit = _cache.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    try:
        atlas = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    atlas = atlas if isinstance(atlas, dict) and isinstance(atlas.get("heads"), list) else None
    with _lock:
        _cache[path] = (key, atlas)
    return atlas


def head_roles(atlas: dict | None) -> dict:
    """{kind: [[role of head h] per layer]} ({} without an atlas)."""
    out: dict = {}
    for h in (atlas or {}).get("heads", []):
        layers = out.setdefault(h["kind"], [])
        while len(layers) <= h["layer"]:
            layers.append([])
        row = layers[h["layer"]]
        while len(row) <= h["head"]:
            row.append(None)
        row[h["head"]] = h.get("role")
    return out

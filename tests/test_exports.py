"""Exports of the maps (attention_lens/shell/exports.py): kept per user session while it lives, bounded for all users
together, served by Gradio where they were written (no copy escapes the pruning), and an export's own files are never
pruned by the request that hands them out."""
import os
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import httpx
import pytest

from attention_lens.shell import exports
from attention_lens.shell.components import SESSION_TTL_S
from tests.conftest import DEVICE
from tests.serving import serving
from transformer.decode.decoding import Translator

SENTENCES = ["Ein Hund rennt.", "Eine Katze schläft.", "Ein Mann sitzt.", "Ein Kind springt."]


@pytest.fixture(scope="module")
def tr(tiny_trained):
    return Translator.load(tiny_trained, device=DEVICE)


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """Gradio's file cache for this test alone (read by Gradio when a Blocks is made, and by exports.py)."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    return tmp_path / "gradio"


def user(name: str):
    return SimpleNamespace(session_hash=name)  # what exports.py reads of a gr.Request


def on_disk() -> dict[str, list[Path]]:
    """{session: its export folders, oldest first}."""
    root = exports.export_root()
    return {d.name: sorted(d.iterdir(), key=lambda p: p.stat().st_mtime) for d in root.iterdir() if d.is_dir()}


def test_two_users_keep_their_exports_while_their_sessions_live(tr, cache):
    from gradio_client import Client
    with serving(tr) as url:
        ann, bob = (Client(url, verbose=False, download_files=False) for _ in range(2))
        for c, text in ((ann, SENTENCES[0]), (bob, SENTENCES[1])):
            c.predict(text, 8, api_name="/start")
            c.predict(8, api_name="/run")
        ann_files = ann.predict(api_name="/export")
        bob_files = []
        for i in range(3 * exports.EXPORTS_PER_SESSION):
            bob.predict(i % 4, 8, api_name="/goto")
            bob_files.append(bob.predict(api_name="/export"))
        # Ann's one export outlived Bob's many: on disk and over HTTP, byte for byte
        assert len(ann_files) == exports.FILES_PER_EXPORT
        for f in ann_files:
            r = httpx.get(f["url"], timeout=30)
            assert r.status_code == 200 and r.content == Path(f["path"]).read_bytes()
        # Bob keeps his newest exports, the older ones are gone
        kept, gone = bob_files[-exports.EXPORTS_PER_SESSION:], bob_files[:-exports.EXPORTS_PER_SESSION]
        assert all(os.path.exists(f["path"]) for files in kept for f in files)
        assert not any(os.path.exists(f["path"]) for files in gone for f in files)
        assert httpx.get(bob_files[-1][0]["url"], timeout=30).status_code == 200
        # one folder per session, and Gradio served the files where they were written: no copy in its cache
        assert sorted(map(len, on_disk().values())) == [1, exports.EXPORTS_PER_SESSION]
        served = [Path(f["path"]) for files in [ann_files, *kept] for f in files]
        assert all(p.parent.parent.parent == exports.export_root() for p in served)
        assert {p for p in cache.rglob(f"{exports.EXPORT_PREFIX}*") if p.is_file()} == set(served)
        ann.close()  # Ann leaves: her session ends (demo.unload), and her files with it
        deadline = time.time() + 30
        while len(on_disk()) > 1 and time.time() < deadline:
            time.sleep(0.2)
        assert list(on_disk().values()) == [[Path(bob_files[-2][0]["path"]).parent,
                                             Path(bob_files[-1][0]["path"]).parent]]
        bob.close()


def test_all_users_together_keep_at_most_exports_max_the_oldest_going_first(tr, cache, monkeypatch):
    monkeypatch.setattr(exports, "EXPORTS_MAX", 3)
    session = tr.start(SENTENCES[0]).run()
    made = {}
    for i in range(5):
        made[f"u{i}"] = exports.export_maps(tr, session, user(f"u{i}"))
        assert all(map(os.path.exists, made[f"u{i}"]))  # handed out whole, whatever the cap
    assert sorted(on_disk()) == ["u2", "u3", "u4"]
    assert not any(os.path.exists(f) for u in ("u0", "u1") for f in made[u])


def test_an_export_is_never_pruned_by_the_request_that_hands_it_out(tr, cache, monkeypatch):
    monkeypatch.setattr(exports, "EXPORTS_MAX", 0)  # a cap that every other export is over
    session = tr.start(SENTENCES[1]).run()
    for i in range(3):
        files = exports.export_maps(tr, session, user(f"u{i}"))
        assert len(files) == exports.FILES_PER_EXPORT and all(map(os.path.exists, files))
        assert sum(map(len, on_disk().values())) == 1


def test_a_session_keeps_its_newest_exports(tr, cache):
    runs = [tr.start(s).run() for s in SENTENCES]
    made = [exports.export_maps(tr, runs[i % 4], user("ann")) for i in range(10)]
    assert len(on_disk()["ann"]) == exports.EXPORTS_PER_SESSION
    assert [all(map(os.path.exists, m)) for m in made] == [False] * 8 + [True] * 2


def test_a_session_that_ended_leaves_nothing_and_others_keep_theirs(tr, cache):
    session = tr.start(SENTENCES[2]).run()
    for name in ("ann", "bob", "cid"):
        exports.export_maps(tr, session, user(name))
    exports.end_session(user("ann"))  # ann closed the page (demo.unload)
    assert sorted(on_disk()) == ["bob", "cid"]
    # bob's newest export is older than a session lives: the next export, anyone's, removes his
    old = time.time() - SESSION_TTL_S - 60
    for folder in on_disk()["bob"]:
        os.utime(folder, (old, old))
    exports.export_maps(tr, session, user("cid"))
    assert sorted(on_disk()) == ["cid"] and len(on_disk()["cid"]) == 2


def test_calls_without_a_request_share_the_local_session(tr, cache):
    session = tr.start(SENTENCES[3]).run()
    files = exports.export_maps(tr, session)
    assert Path(files[0]).parent.parent.name == exports.LOCAL
    exports.end_session(None)  # nothing to end: a notebook's exports stay
    assert all(map(os.path.exists, files))


def test_the_app_passes_the_users_session_and_ends_it_on_unload(tr):
    from attention_lens import build_demo
    demo = build_demo(tr)
    fns = list(demo.fns.values())
    unloads = [f.fn for f in fns if (None, "unload") in f.targets]  # the exports' and the live class's
    assert exports.end_session in unloads
    (export,) = [f for f in fns if f.api_name == "export"]
    import gradio as gr
    from gradio.utils import get_type_hints
    assert get_type_hints(export.fn).get("request") is gr.Request  # so Gradio hands it the user's request


def test_the_test_session_writes_no_export_into_the_real_temp_dir(tr):
    """tests/conftest.py gives the whole session a temporary GRADIO_TEMP_DIR (removed at its end): an export made
    without a test's own cache lands there, and nothing of this process is left in the machine's <tmp>/gradio."""
    import tempfile
    real = Path(tempfile.gettempdir()) / "gradio"
    session_dir = Path(os.environ.get("GRADIO_TEMP_DIR", real))
    assert session_dir.resolve() != real.resolve() and real.resolve() not in session_dir.resolve().parents
    assert session_dir.name.startswith(f"attention-lens-tests-gradio-{os.getpid()}-")  # a killed session's is pruned
    files = exports.export_maps(tr, tr.start(SENTENCES[0]).run())
    assert all(session_dir.resolve() in Path(f).resolve().parents for f in files)
    assert not (real / f"{exports.EXPORT_PREFIX}{os.getpid()}").exists()


def test_the_export_folders_of_processes_that_are_gone_are_pruned(cache):
    """The export root is per process: a killed server's would stay forever. The first export root made in a
    cache removes the folders of processes that no longer exist (and keeps those of live ones)."""
    import subprocess
    import sys
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid names no process now
    dead, alive = cache / f"{exports.EXPORT_PREFIX}{gone.pid}", cache / f"{exports.EXPORT_PREFIX}{os.getppid()}"
    other = cache / "someone-elses-folder"
    for folder in (dead / "local" / "export-1", alive / "local" / "export-1", other):
        folder.mkdir(parents=True)
        (folder / "maps.npz").write_bytes(b"x")
    root = exports.export_root()
    assert root == cache / f"{exports.EXPORT_PREFIX}{os.getpid()}" and root.is_dir()
    assert not dead.exists() and (alive / "local" / "export-1" / "maps.npz").exists() and other.exists()

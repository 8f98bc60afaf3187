import gzip
import http.server
import threading
from functools import partial

import pytest

from transformer.train import data as D
from transformer.train.synthetic import tiny_corpus


def test_reads_gzipped_and_plain(tmp_path):
    (tmp_path / "train.de").write_text("Hallo Welt.\nZwei\n")
    with gzip.open(tmp_path / "train.en.gz", "wt") as f:
        f.write("Hello world.\nTwo\n")
    assert D.load_pairs(tmp_path, "train") == [("Hallo Welt.", "Hello world."), ("Zwei", "Two")]


def test_missing_and_misaligned(tmp_path):
    with pytest.raises(D.DataError, match="--download"):
        D.load_pairs(tmp_path, "train")
    (tmp_path / "val.de").write_text("a\nb\n")
    (tmp_path / "val.en").write_text("a\n")
    with pytest.raises(D.DataError, match="2 de lines but 1 en"):
        D.load_pairs(tmp_path, "val")


def test_download_from_file_url(tmp_path):
    (tmp_path / "remote").mkdir()
    src = tiny_corpus(tmp_path / "remote")
    written = D.download(tmp_path / "local", base_url=src.as_uri())
    assert len(written) == 6
    assert D.load_pairs(tmp_path / "local", "train") == D.load_pairs(src, "train")


def test_download_from_local_http_server(tmp_path):
    remote = tmp_path / "remote"
    remote.mkdir()
    tiny_corpus(remote)
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(remote))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        D.download(tmp_path / "local", base_url=url, splits=("val",))
        assert D.load_pairs(tmp_path / "local", "val") == D.load_pairs(remote, "val")
        with pytest.raises(D.DataError, match="could not download"):
            D.download(tmp_path / "x", base_url=url + "/missing", splits=("val",))
    finally:
        server.shutdown()


def test_download_offline_gives_clear_error(tmp_path):
    with pytest.raises(D.DataError, match="offline"):
        D.download(tmp_path, base_url="http://127.0.0.1:9", splits=("val",), timeout=2)


def test_make_batches_respects_token_budget():
    lengths = [(n % 17 + 1, n % 13 + 2) for n in range(500)]
    batches = D.make_batches(lengths, 64, seed=3)
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        assert len(b) == 1 or max(max(lengths[i]) for i in b) * len(b) <= 64


"""Smoke tests: the benchmarks run and print their figures (their numbers are never asserted)."""
from benchmarks import decode


def test_bench_decode_prints_figures(tiny_trained, capsys):
    decode.main(["--checkpoint", str(tiny_trained), "--device", "cpu", "--split", "", "--repeats", "1",
                "--sentence", "Ein Hund rennt. Eine Katze schläft."])
    out = capsys.readouterr().out
    for line in ("captured session step", "at 30 target tokens: uncaptured step", "no cache", "cache speed-up"):
        assert line in out

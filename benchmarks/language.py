"""python -m benchmarks.language [--split test|val] [--tokenizer PATH] [--tatoeba FILE] [--data-dir DIR]

Which method tells German from English, measured on a Tatoeba split (tatoeba_test by default): every pair's
German side and English side (10,000 sentences for the test split, repeated sentences kept as the split has
them). For each candidate: accuracy on the German side, on the English side, overall and on sentences of 1-3
words (len(text.split()) <= 3), an unknown answer ("") counting as wrong; the share answered right with
confidence >= language.CONFIDENT and the number answered wrong with it (what hint() would act on); ms a
sentence; the time and RSS growth to load (model + first call, in a fresh process); how many junk probes it
answers unknown or below CONFIDENT. A candidate whose library is not installed is named and skipped (lingua:
pip install lingua-language-detector==2.1.1). Then transformer.decode.language.unreadable_share on probes and on the
split with the shipped tokenizer. Prints figures; asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from transformer.decode import language as L
from transformer.model.tokenizer import Tokenizer
from transformer.train import corpus as C
from transformer.train import data as D

from .common import ms, pct

JUNK = ["asdfgh 🙂", "12345", "", "🙂🙂", "xkcd qwrtz zzgh", "qwertz", "Anddicallywning", "lorem ipsum dolor sit amet",
        "Привет, как дела?"]
PROBES = JUNK + ["Ich bin müde.", "I love you", "The quick brown fox jumps over the lazy dog.",
                 "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich."]
UMLAUT = re.compile("[äöüÄÖÜß]")
ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "checkpoints" / "de-en" / "tokenizer.model"  # the shipped tokenizer


def rss_mb() -> float:
    """This process's resident memory in MB (Linux; nan elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024
    except (OSError, StopIteration):
        return float("nan")


def py3langid_two():
    """py3langid restricted to de/en with set_languages, on an own instance."""
    from py3langid import langid
    ident = langid.LanguageIdentifier.from_model_file(langid.MODEL_FILE, norm_probs=True)
    ident.set_languages(["de", "en"])
    return ident.classify


def detect_with_umlaut_rule():
    """detect(), except that a text with ä, ö, ü or ß is German."""
    L.load()
    return lambda text: ("de", 1.0) if UMLAUT.search(text) else L.detect(text)


def lingua(low_accuracy: bool):
    def make():
        from lingua import Language, LanguageDetectorBuilder
        builder = LanguageDetectorBuilder.from_languages(Language.GERMAN, Language.ENGLISH)
        detector = (builder.with_low_accuracy_mode() if low_accuracy else builder).build()
        codes = {Language.GERMAN: "de", Language.ENGLISH: "en"}

        def classify(text):
            values = detector.compute_language_confidence_values(text)
            if not values or values[0].value <= 0:
                return "", 0.0
            return codes[values[0].language], values[0].value
        return classify
    return make


CANDIDATES = {  # key -> (description, () -> (text -> (code, confidence))); loading happens in the call
    "detect": ("detect(): py3langid de/en/zxx [chosen]", lambda: (L.load(), L.detect)[1]),
    "py3langid": ("py3langid de/en (set_languages)", py3langid_two),
    "umlaut": ("detect() + umlaut/ß rule", detect_with_umlaut_rule),
    "lingua": ("lingua de/en", lingua(False)),
    "lingua-low": ("lingua de/en, low-accuracy mode", lingua(True)),
}


def load_only(key):
    """Child-process mode: load one candidate from scratch, print {"load_s", "rss_mb"} as JSON."""
    import numpy  # noqa: F401  (not counted: every candidate needs it or its own runtime)
    before, t0 = rss_mb(), time.perf_counter()
    classify = CANDIDATES[key][1]()  # kept referenced: the RSS below is of a loaded model
    classify("Ein Hund rennt.")
    print(json.dumps({"load_s": time.perf_counter() - t0, "rss_mb": rss_mb() - before}))


def load_cost(key) -> str:
    """'load X s, RSS +Y MB' measured in a fresh process (lingua caches its models process-wide)."""
    r = subprocess.run([sys.executable, "-m", "benchmarks.language", "--load-only", key], capture_output=True,
                       text=True, cwd=ROOT, check=False)
    if r.returncode:
        return "load failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    cost = json.loads(r.stdout.strip().splitlines()[-1])
    return f"load {cost['load_s']:.2f} s, RSS +{cost['rss_mb']:.0f} MB"


def score(classify, data) -> dict:
    """Accuracy figures and per-sentence times of `classify` on [(text, code)]."""
    answers, times = [], []
    for text, _ in data:
        t0 = time.perf_counter()
        answers.append(classify(text))
        times.append(time.perf_counter() - t0)
    right = [a[0] == code for a, (_, code) in zip(answers, data)]

    def acc(keep):
        kept = [r for r, (text, code) in zip(right, data) if keep(text, code)]
        return sum(kept) / len(kept) if kept else float("nan")
    return {"de": acc(lambda t, c: c == "de"), "en": acc(lambda t, c: c == "en"), "all": acc(lambda t, c: True),
            "short": acc(lambda t, c: len(t.split()) <= 3),
            "sure_right": sum(r and a[1] >= L.CONFIDENT for r, a in zip(right, answers)) / len(data),
            "sure_wrong": sum(not r and a[0] in L.LANGUAGES and a[1] >= L.CONFIDENT for r, a in zip(right, answers)),
            "times": times, "wrong": [(t, a) for r, (t, _), a in zip(right, data, answers) if not r]}


def bench_candidate(key, data):
    name, make = CANDIDATES[key]
    try:
        classify = make()
    except ImportError as e:
        print(f"{name}: not installed ({e})")
        return
    s = score(classify, data)
    unsure = sum(1 for text in JUNK if (a := classify(text))[0] not in L.LANGUAGES or a[1] < L.CONFIDENT)
    print(f"{name}: German {s['de']:.2%}, English {s['en']:.2%}, overall {s['all']:.2%}, 1-3 words {s['short']:.2%}"
          f" | confidence >= {L.CONFIDENT}: right {s['sure_right']:.2%}, wrong {s['sure_wrong']}"
          f" | {ms(s['times'])} a sentence | {load_cost(key)} | junk unknown/unsure {unsure}/{len(JUNK)}",
          flush=True)
    wrong = "; ".join(f"{t!r} -> {a[0] or '?'} {a[1]:.2f}" for t, a in s["wrong"][:8])
    print(f"    wrong ({len(s['wrong'])}, the first 8): {wrong}")


def bench_unreadable(path, pairs):
    if not os.path.exists(path):
        print(f"unreadable_share: no tokenizer at {path}")
        return
    tok = Tokenizer.load(path)
    print(f"unreadable_share with {path} (hint() warns from {L.UNREADABLE}):")
    print("    " + "; ".join(f"{t!r} {L.unreadable_share(tok, t):.2f}" for t in PROBES))
    for side, lang in ((0, "German"), (1, "English")):
        shares = sorted(((L.unreadable_share(tok, p[side]), p[side]) for p in pairs), reverse=True)
        values = [v for v, _ in shares]
        print(f"    {lang} side: mean {statistics.mean(values):.3f}, p99 {pct(values, 99):.3f}, max {values[0]:.3f}"
              f" ({shares[0][1]!r}), >= {L.UNREADABLE}: {sum(v >= L.UNREADABLE for v in values)} of {len(values)}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--split", choices=["test", "val"], default="test")
    p.add_argument("--tokenizer", default=str(TOKENIZER))
    p.add_argument("--tatoeba", default=str(C.DEFAULT_TATOEBA))
    p.add_argument("--data-dir", default=str(D.DEFAULT_DATA_DIR))
    p.add_argument("--load-only", choices=list(CANDIDATES), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.load_only:
        load_only(a.load_only)
        return
    pairs = getattr(C.tatoeba_split(a.tatoeba, a.data_dir), a.split)
    data = [(de, "de") for de, _ in pairs] + [(en, "en") for _, en in pairs]
    short = sum(len(t.split()) <= 3 for t, _ in data)
    print(f"tatoeba_{a.split}: {len(data)} sentences ({short} of 1-3 words) | {platform.platform()}, "
          f"{os.cpu_count()} CPUs, Python {platform.python_version()}, OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}", flush=True)
    for key in CANDIDATES:
        bench_candidate(key, data)
    print("transformer.decode.language.detect uses: py3langid restricted to de/en/zxx (the first row)")
    bench_unreadable(a.tokenizer, pairs)


if __name__ == "__main__":
    main()

"""`transformers` is an optional extra: the app and the library open without it (transformer.hf is imported by the
launcher, and imports it only in load_hf), and opening a Hugging Face model without it says what to install."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = """
import sys
sys.modules["transformers"] = None  # as where the extra is not installed: importing it raises ImportError
import attention_lens.launch, attention_lens.app
from transformer.hf import is_hf_checkpoint, load_hf
assert is_hf_checkpoint("hf:Helsinki-NLP/opus-mt-de-en") and not is_hf_checkpoint("checkpoints/de-en")
try:
    load_hf("hf:Helsinki-NLP/opus-mt-de-en")
except ImportError as e:
    print(e)
"""


def test_the_app_opens_without_transformers_and_says_what_to_install():
    out = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, check=False, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    assert "pip install 'attention-lens[hf]'" in out.stdout

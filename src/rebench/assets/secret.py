"""Per-prepare secrets: the randomness behind held-out material (which text is held out, the
permutation an environment applies) comes from bytes drawn at `prepare` with the `secrets`
module and stored only in the environment's `protected/` folder. Nothing in the package, a
spec or the public assets determines it, so code the agent can read cannot rebuild it.

Each use derives its own key with HMAC-SHA256(secret, purpose), so one secret serves several
purposes without one revealing another.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path

import numpy as np

from rebench.core.errors import RebenchError

SECRET_FILE = "secret.bin"
SECRET_BYTES = 32


class SecretError(RebenchError):
    """A stored secret is missing or malformed."""


def draw_secret() -> bytes:
    """Fresh randomness from the operating system."""
    return secrets.token_bytes(SECRET_BYTES)


def store_secret(protected_dir: Path, secret: bytes) -> Path:
    """Write the secret into `protected_dir` (owner-only permissions)."""
    path = protected_dir / SECRET_FILE
    path.write_bytes(secret)
    path.chmod(0o600)
    return path


def load_secret(protected_dir: Path) -> bytes:
    """The secret stored by `store_secret`."""
    path = protected_dir / SECRET_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SecretError(f"{path}: no prepare secret ({exc.strerror})") from exc
    if len(data) != SECRET_BYTES:
        raise SecretError(f"{path}: expected {SECRET_BYTES} bytes, found {len(data)}")
    return data


def derive(secret: bytes, purpose: str) -> bytes:
    """32 bytes for one `purpose`, independent of every other purpose's."""
    if len(secret) < 16:
        raise SecretError("a secret needs at least 16 bytes")
    return hmac.new(secret, purpose.encode(), hashlib.sha256).digest()


def secret_rng(secret: bytes, purpose: str) -> np.random.Generator:
    """A NumPy generator seeded from the secret for one `purpose`."""
    return np.random.Generator(np.random.PCG64(int.from_bytes(derive(secret, purpose), "big")))

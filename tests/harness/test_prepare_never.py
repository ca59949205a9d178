"""REBENCH_PREPARE=never: assets already prepared are used; missing ones are a clear error
instead of minutes of training (a node that must use assets prepared elsewhere; the fast
test tier)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rebench.core.discovery import load_spec
from rebench.core.errors import NotPreparedError, PrepareDisabledError
from rebench.harness.prepare import prepare_environment


def test_never_uses_prepared_assets_and_refuses_to_build(
        toy_env: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(toy_env)
    profile = spec.profile("cpu")
    monkeypatch.setenv("REBENCH_CACHE", str(tmp_path / "cache"))
    built = prepare_environment(spec, profile)
    monkeypatch.setenv("REBENCH_PREPARE", "never")
    assert prepare_environment(spec, profile) == built  # intact: used as it is
    monkeypatch.setenv("REBENCH_CACHE", str(tmp_path / "elsewhere"))
    with pytest.raises(PrepareDisabledError, match="REBENCH_PREPARE=never") as refused:
        prepare_environment(spec, profile)
    assert isinstance(refused.value, NotPreparedError)  # the CLI's clean one-line error
    assert f"rebench prepare {toy_env} --profile cpu" in str(refused.value)
    assert not (tmp_path / "elsewhere").exists()  # nothing half-built left behind

"""One rule for a user's isolation choice (sandbox.resolve_isolation), which the CLI, the
Inspect task and a Ray node each wrap in their own warning and error."""

from __future__ import annotations

import pytest

from rebench.core.errors import RebenchError
from rebench.sandbox import Isolation, resolve_isolation
from rebench.sandbox.bwrap import bwrap_available


def test_local_is_taken_as_asked_and_the_rest_never_falls_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_isolation("local") is Isolation.LOCAL
    expected = Isolation.BWRAP if bwrap_available() else None
    assert resolve_isolation("auto") is expected and resolve_isolation("bwrap") is expected
    with pytest.raises(ValueError):
        resolve_isolation("docker")
    monkeypatch.setattr("rebench.sandbox.bwrap.bwrap_available", lambda: False)
    assert resolve_isolation("auto") is None  # not LOCAL: no silent fall back


def test_each_front_end_refuses_without_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> None:
    from rebench.cli_common import resolve_isolation as cli
    from rebench.scale.node import ScaleError, resolve_node_isolation

    monkeypatch.setattr("rebench.sandbox.bwrap.bwrap_available", lambda: False)
    with pytest.raises(RebenchError, match="--isolation local"):
        cli("auto")
    with pytest.raises(ScaleError, match="bubblewrap is not available"):
        resolve_node_isolation("bwrap")
    assert cli("local") is Isolation.LOCAL

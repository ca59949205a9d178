"""`ensure_bwrap`: what it says and does in each situation (the system is faked)."""

from __future__ import annotations

import pytest

from rebench.sandbox import bwrap, setup


@pytest.fixture
def fake_system(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    state: dict[str, object] = {"available": False, "which": {"apt-get"}, "uid": 0,
                                "calls": [], "install_works": True}

    def which(name: str) -> str | None:
        return f"/usr/bin/{name}" if name in state["which"] else None  # type: ignore[operator]

    monkeypatch.setattr(setup.shutil, "which", which)
    monkeypatch.setattr(setup.os, "geteuid", lambda: state["uid"])
    monkeypatch.setattr(bwrap, "bwrap_available", lambda: state["available"])
    monkeypatch.setattr(bwrap, "reset_probe", lambda: None)
    return state


def runner(state: dict[str, object]) -> setup.Runner:
    def run(argv: list[str]) -> int:
        state["calls"].append(argv)  # type: ignore[attr-defined]
        if argv[:2] == ["apt-get", "install"] and state["install_works"]:
            state["available"] = True
            state["which"].add("bwrap")  # type: ignore[attr-defined]
        return 0 if state["install_works"] else 100
    return run


def test_working_bwrap_is_left_alone(fake_system: dict[str, object]) -> None:
    fake_system["available"] = True
    result = setup.ensure_bwrap(runner=runner(fake_system))
    assert result.ok and fake_system["calls"] == []


def test_installs_with_apt_as_root(fake_system: dict[str, object]) -> None:
    result = setup.ensure_bwrap(runner=runner(fake_system))
    assert result.ok and "installed" in result.message
    assert ["apt-get", "install", "-y", "bubblewrap"] in fake_system["calls"]  # type: ignore[operator]


def test_not_root_says_what_to_do(fake_system: dict[str, object]) -> None:
    fake_system["uid"] = 1000
    result = setup.ensure_bwrap(runner=runner(fake_system))
    assert not result.ok and "sudo apt-get install bubblewrap" in result.message
    assert fake_system["calls"] == []


def test_failed_install_is_reported(fake_system: dict[str, object]) -> None:
    fake_system["install_works"] = False
    result = setup.ensure_bwrap(runner=runner(fake_system))
    assert not result.ok and "could not install" in result.message


def test_installed_but_broken_explains_namespaces(fake_system: dict[str, object]) -> None:
    fake_system["which"] = {"apt-get", "bwrap"}
    result = setup.ensure_bwrap(runner=runner(fake_system))
    assert not result.ok and "does not work" in result.message


def test_no_install_flag(fake_system: dict[str, object]) -> None:
    result = setup.ensure_bwrap(install=False, runner=runner(fake_system))
    assert not result.ok and "missing" in result.message and fake_system["calls"] == []

"""Test-wide isolation: every test session gets its own cache, runs root, calibration
file and score-log key, so tests never touch ~/.cache/rebench, ./runs or the user's key."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from env_bench import FIXTURE_ENVIRONMENTS, EnvBench
from hypothesis import settings
from suite_split import environment_of_nodeid, is_timing, timing_environments

# Property tests check properties, not speed: no per-example deadline (hypothesis's default
# 200 ms failed tests/core/test_normalize.py on the 2-core machine under the suite's own
# load, 2026-12-07). Speed belongs in benchmarks/.
settings.register_profile("rebench", deadline=None)
settings.load_profile("rebench")

# `make test-fast` (REBENCH_TEST_TIER=fast): no environment is prepared but those whose cpu
# prepare takes a second; a test that needs another prepare is skipped with the reason
# (REBENCH_PREPARE=never makes the prepare raise PrepareDisabledError, turned into a skip
# below). `make test` prepares everything.
FAST_TIER = os.environ.get("REBENCH_TEST_TIER", "").strip().lower() == "fast"
CHEAP_PREPARES = ("triton_cumsum",)


def _shared_cache(tmp_path_factory: pytest.TempPathFactory, root: Path) -> Path:
    """The session's cache of prepared assets. $REBENCH_TEST_CACHE names one that several
    sessions share (`make test` runs two passes: the second reuses the first's prepares
    and built solutions). Under pytest-xdist every worker has its own session (and temp
    folder): the workers of one run share the cache beside their folders. Either way no
    environment is prepared twice (harness/prepare.py locks a prepare across processes;
    the others wait and reuse it)."""
    if os.environ.get("REBENCH_TEST_CACHE"):
        shared = Path(os.environ["REBENCH_TEST_CACHE"])
        shared.mkdir(parents=True, exist_ok=True)
        return shared
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "rebench-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return root / "cache"


@pytest.fixture(scope="session", autouse=True)
def rebench_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Per session (per xdist worker): runs, calibration, key; the cache is shared."""
    root = tmp_path_factory.mktemp("rebench-home")
    names = ("REBENCH_CACHE", "REBENCH_RUNS", "REBENCH_CALIBRATION", "REBENCH_KEY_FILE",
             "REBENCH_PREPARE")
    saved = {k: os.environ.get(k) for k in names}
    os.environ["REBENCH_CACHE"] = str(_shared_cache(tmp_path_factory, root))
    os.environ["REBENCH_RUNS"] = str(root / "runs")
    os.environ["REBENCH_CALIBRATION"] = str(root / "calibration.json")
    os.environ["REBENCH_KEY_FILE"] = str(root / "keys" / "score-log.key")
    if FAST_TIER:
        from rebench.core.discovery import load_spec
        from rebench.harness.prepare import prepare_environment

        for env_id in CHEAP_PREPARES:
            spec = load_spec(env_id)
            prepare_environment(spec, spec.profile("cpu"))
        os.environ["REBENCH_PREPARE"] = "never"
    yield root
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture(scope="session")
def env_bench(rebench_dirs: Path, tmp_path_factory: pytest.TempPathFactory) -> EnvBench:
    """Official scorings of environments' own solutions and timing environments' local
    anchors, made once per session and key (tests/env_bench.py)."""
    return EnvBench(tmp_path_factory)


@pytest.fixture
def toy_env(monkeypatch: pytest.MonkeyPatch) -> str:
    """toy_probe discoverable (also by `rebench` subprocesses, which inherit the
    environment) and prepared; returns its id."""
    from rebench.core.discovery import environment_ids, load_spec
    from rebench.harness.prepare import prepare_environment

    monkeypatch.setenv("REBENCH_ENVIRONMENTS_PATH", str(FIXTURE_ENVIRONMENTS))
    monkeypatch.delenv("REBENCH_PREPARE", raising=False)  # prepares in milliseconds
    assert "toy_probe" in environment_ids()
    spec = load_spec("toy_probe")
    prepare_environment(spec, spec.profile("cpu"))
    return "toy_probe"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under CI a missing sandbox is a failure, not a skip: the tests of the trust boundary
    skip without bubblewrap, and a green run without them would prove nothing."""
    from rebench.sandbox.bwrap import bwrap_available

    if os.environ.get("CI", "").lower() in ("true", "1") and not bwrap_available():
        pytest.exit("CI=true but bubblewrap (bwrap) is missing or cannot create a sandbox "
                    "here: the sandbox tests would all skip. Install the 'bubblewrap' "
                    "package (scripts/setup.sh does as root) or run `rebench setup-sandbox` "
                    "to see why it fails.", returncode=3)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `timing` tests (`make test` runs them after the others, alone on the cores);
    skip `gpu` tests where no CUDA device is available."""
    timing_envs = timing_environments()
    for item in items:
        if is_timing(item, timing_envs):
            item.add_marker(pytest.mark.timing)
    try:
        import torch

        has_cuda = bool(torch.cuda.is_available())
    except ImportError:
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        # The marker, not `"gpu" in item.keywords`: keywords also hold the names of the
        # folders above the test, so a checkout in a folder named gpu skipped every test.
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` here: each environment's tests are one unit of work, run on one
    worker, where its session fixtures (the prepare, built solutions) are made once; the
    other tests are spread one by one. (xdist's own loadgroup reads `xdist_group` marks
    through a node-id suffix that pytest 9.2 no longer keeps: pytest-xdist#1386.) Units
    go out largest first (xdist's loadscope order), so the long environments start at
    once and the small tests fill in at the end."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    from rebench.core.discovery import environment_ids

    env_ids = tuple(environment_ids())

    class EnvironmentScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            env_id = environment_of_nodeid(nodeid, env_ids)
            return f"environment:{env_id}" if env_id else nodeid

    return EnvironmentScheduling(config, log)


def _prepare_refused(outcome: object) -> None:
    """In the fast tier, a test that needs a real environment prepared is skipped, saying
    which (any other error stays an error)."""
    from rebench.core.errors import PrepareDisabledError

    excinfo = outcome.excinfo  # type: ignore[attr-defined]
    if FAST_TIER and excinfo is not None and isinstance(excinfo[1], PrepareDisabledError):
        outcome.force_exception(  # type: ignore[attr-defined]
            pytest.skip.Exception(f"fast tier: {str(excinfo[1]).split(' and ')[0]}",
                                  _use_item_location=True))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    _prepare_refused((yield))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    _prepare_refused((yield))

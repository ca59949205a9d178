"""Trusted judging of Rust programs: static checks, compilation cached by hash, and test runs
with time, memory and output limits. Every compiler and program process is started by the
caller's runner (processes.Runner: sandboxed for the official score, plain for the local
tool), never here.

The judge only ever sees code strings; expected outputs stay in this process and each test
input reaches the program on its stdin (a pipe), never as a path it could look at.
"""

from __future__ import annotations

import enum
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .processes import Outcome, Request, Runner, run_local
from .toolchain import find_rustc, rustc_version

MAX_SOURCE_BYTES = 256 * 1024
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
COMPILE_TIMEOUT_S = 60.0
COMPILE_MEMORY_MB = 4096
RUSTC_FLAGS = ("--edition", "2021", "-O")
CHECKS_VERSION = "3"  # part of the cache key: a rule change invalidates cached builds
# Compile-time file and environment access would let a program embed held-out data or secrets.
# Three layers, none of which trusts the others: (1) the compiler runs in the caller's sandbox,
# in a folder holding only the source (the primary defence: there is nothing to read);
# (2) rustc's own dependency list (dep-info) must name no file but the source and no
# environment variable, whatever macro produced the access; (3) identifiers that reach files
# or the assembler are refused wherever they appear: stable Rust cannot build an identifier,
# so a `macro_rules!` indirection still has to name them (`grab!(include_str, ...)`).
FORBIDDEN_WORDS = re.compile(
    r"(?<![\w$])(?:r#)?(include_str|include_bytes|include|global_asm|asm|naked_asm"
    r"|concat_idents|cfg_attr|proc_macro\w*)\b"
)
# `env`/`option_env` also name the std module `std::env`, which only reads at run time.
FORBIDDEN_ENV = re.compile(r"(?<![\w$:.])(?:r#)?(env|option_env)\b(?!\s*::)")
FORBIDDEN_ATTRS = re.compile(r"#\s*!?\s*\[\s*(path|feature|link\w*)\b")
# A contest program needs no other process: `Command` (std's only way to start one) and
# `extern` (a C function such as execve or dlopen declared by hand) are refused, so a
# "Rust" program cannot be a shim that hands the work to python3 or another interpreter
# the run sandbox can see (a red-team policy, 2026-12-07). `std::process::exit` stays.
FORBIDDEN_SPAWN = re.compile(r"(?<![\w$])(?:r#)?(Command\w*|extern)\b")
SOURCE_NAME = "main.rs"


def forbidden_construct(source: str) -> str | None:
    """The first construct that could read files or the environment at compile time, or
    start another program at run time."""
    for pattern in (FORBIDDEN_WORDS, FORBIDDEN_ENV, FORBIDDEN_ATTRS, FORBIDDEN_SPAWN):
        match = pattern.search(source)
        if match:
            return match.group(0)
    return None


def undeclared_inputs(dep_info: str) -> list[str]:
    """Files other than the source, and environment variables, that rustc read (dep-info)."""
    found: list[str] = []
    for line in dep_info.splitlines():
        if line.startswith("# env-dep:"):
            found.append("environment variable " + line[len("# env-dep:"):].split("=")[0])
        elif ":" in line and not line.startswith("#"):
            deps = line.split(":", 1)[1].split()
            found += [d for d in deps if d != SOURCE_NAME]
    return sorted(set(found))


class Verdict(enum.Enum):
    """The outcome of judging one program on one problem."""

    PASSED = "passed"
    EMPTY = "empty"
    FORBIDDEN = "forbidden"
    COMPILE_ERROR = "compile_error"
    WRONG_ANSWER = "wrong_answer"
    RUNTIME_ERROR = "runtime_error"
    TIME_LIMIT = "time_limit"
    OUTPUT_LIMIT = "output_limit"


@dataclass(frozen=True)
class TestCase:
    input: str
    output: str


@dataclass(frozen=True)
class JudgeResult:
    verdict: Verdict
    tests_passed: int
    tests_total: int
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED


def _limits(cpu_s: float, memory_mb: int, fsize: int) -> list[str]:
    """A prefix that limits one process (inside the runner's sandbox, which shows the OS's
    prlimit); the runner's own wall clock and output cap come on top."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        return []
    return [prlimit, f"--cpu={max(1, int(cpu_s + 1))}", f"--as={memory_mb * 1024 * 1024}",
            f"--fsize={fsize}", "--core=0", "--"]


def _minimal_env(workdir: Path) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workdir), "LANG": "C.UTF-8"}
    return env


class Judge:
    """Compiles (cached by source hash) and tests programs, each compiler and program process
    through `runner`; safe to call from threads."""

    def __init__(self, cache_dir: Path, runner: Runner = run_local, rustc: str | None = None,
                 memory_mb: int = 256, static_checks: bool = True) -> None:
        self.cache_dir = cache_dir
        self.static_checks = static_checks  # off only to test the sandbox alone
        self.runner = runner
        self.rustc = rustc or find_rustc()
        self.memory_mb = memory_mb
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self._version = rustc_version(self.rustc)

    def source_key(self, source: str) -> str:
        payload = "\0".join((self._version, CHECKS_VERSION, str(self.static_checks),
                             *RUSTC_FLAGS, source))
        return hashlib.sha256(payload.encode()).hexdigest()

    def compile(self, source: str) -> tuple[Path | None, str]:
        """(binary, "") or (None, reason). A binary is cached by hash of source and rustc."""
        if not source.strip():
            return None, "empty program"
        if len(source.encode()) > MAX_SOURCE_BYTES:
            return None, f"program over {MAX_SOURCE_BYTES // 1024} KiB"
        construct = forbidden_construct(source) if self.static_checks else None
        if construct:
            return None, f"forbidden construct {construct!r}"
        entry = self.cache_dir / self.source_key(source)
        if (entry / "main").is_file():
            return entry / "main", ""
        if (entry / "error.txt").is_file():
            return None, (entry / "error.txt").read_text()
        return self._build(source, entry)

    def _build(self, source: str, entry: Path) -> tuple[Path | None, str]:
        with tempfile.TemporaryDirectory(prefix="rebench-rustc-") as tmp:
            work = Path(tmp)
            (work / SOURCE_NAME).write_text(source)
            argv = [*_limits(COMPILE_TIMEOUT_S, COMPILE_MEMORY_MB, 256 * 1024 * 1024),
                    self.rustc, *RUSTC_FLAGS, "--emit=dep-info,link", SOURCE_NAME, "-o", "main"]
            done = self.runner(Request(tuple(argv), work, _minimal_env(work), COMPILE_TIMEOUT_S,
                                       writable=True))
            staging = Path(tempfile.mkdtemp(prefix=".build-", dir=self.cache_dir))
            inputs = self._read_inputs(work / "main.d") if self.static_checks else []
            if inputs:  # rustc's error text could quote what it read: none of it is kept
                reason = f"forbidden construct: the program reads {', '.join(inputs)[:200]}"
                (staging / "error.txt").write_text(reason)
                result: tuple[Path | None, str] = (None, reason)
            elif _succeeded(done) and (work / "main").is_file():
                shutil.copyfile(work / "main", staging / "main")
                os.chmod(staging / "main", 0o755)
                result = (entry / "main", "")
            else:
                reason = ("compilation timed out" if done.timed_out
                          else done.stderr_tail[-4000:] or "rustc failed")
                (staging / "error.txt").write_text(reason)
                result = (None, reason)
            try:
                os.rename(staging, entry)
            except OSError:  # another thread built the same source first
                shutil.rmtree(staging, ignore_errors=True)
            return result

    @staticmethod
    def _read_inputs(dep_file: Path) -> list[str]:
        try:  # written by rustc inside the sandbox: read bounded, never followed as a link
            fd = os.open(dep_file, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return []  # rustc stopped before expansion: it read nothing else either
        with os.fdopen(fd, "rb") as fh:
            return undeclared_inputs(fh.read(1024 * 1024).decode(errors="replace"))

    def run_tests(self, binary: Path, tests: Sequence[TestCase], time_limit_s: float
                  ) -> JudgeResult:
        """Run tests in order, stopping at the first failure."""
        with tempfile.TemporaryDirectory(prefix="rebench-run-") as tmp:
            # The program sees only a folder holding its own binary, outside the cache.
            rundir = Path(tmp) / "bin"
            rundir.mkdir()
            shutil.copyfile(binary, rundir / "main")
            os.chmod(rundir / "main", 0o755)
            for i, test in enumerate(tests):
                verdict, detail = self._run_one(rundir, test, time_limit_s)
                if verdict is Verdict.RUNTIME_ERROR and detail == "exit code 126":
                    # ETXTBSY: another thread forked while this binary was being written
                    time.sleep(0.2)
                    verdict, detail = self._run_one(rundir, test, time_limit_s)
                if verdict is not Verdict.PASSED:
                    return JudgeResult(verdict, i, len(tests), f"test {i + 1}: {detail}")
        return JudgeResult(Verdict.PASSED, len(tests), len(tests))

    def _run_one(self, rundir: Path, test: TestCase, time_limit_s: float
                 ) -> tuple[Verdict, str]:
        argv = [*_limits(time_limit_s, self.memory_mb + 64, MAX_OUTPUT_BYTES),
                str(rundir / "main")]
        wall = time_limit_s * 2 + 1.0  # sandbox start-up is not the program's fault
        done = self.runner(Request(tuple(argv), rundir, _minimal_env(rundir), wall,
                                   stdin=test.input.encode(),
                                   max_output_bytes=MAX_OUTPUT_BYTES - 1))
        if done.timed_out:
            return Verdict.TIME_LIMIT, f"over {time_limit_s:.1f} s"
        if done.output_capped:  # MAX_OUTPUT_BYTES or more
            return Verdict.OUTPUT_LIMIT, "output too large"
        code = done.returncode
        if code != 0:
            if code in (-9, -24, 137, 152) and done.seconds > time_limit_s:
                return Verdict.TIME_LIMIT, f"over {time_limit_s:.1f} s"
            return Verdict.RUNTIME_ERROR, f"exit code {code}"
        if done.stdout.decode(errors="replace").split() != test.output.split():
            return Verdict.WRONG_ANSWER, "wrong answer"
        return Verdict.PASSED, ""

    def judge(self, source: str, tests: Sequence[TestCase], time_limit_s: float) -> JudgeResult:
        """Compile and test one program."""
        if not source.strip():
            return JudgeResult(Verdict.EMPTY, 0, len(tests), "no program")
        binary, reason = self.compile(source)
        if binary is None:
            verdict = Verdict.FORBIDDEN if reason.startswith("forbidden") else Verdict.COMPILE_ERROR
            return JudgeResult(verdict, 0, len(tests), reason[-2000:])
        return self.run_tests(binary, tests, time_limit_s)

    def judge_many(self, jobs: Mapping[str, tuple[str, Sequence[TestCase], float]],
                   workers: int | None = None) -> dict[str, JudgeResult]:
        """Judge several programs in parallel threads (rustc and tests are processes)."""
        workers = workers or max(1, os.cpu_count() or 1)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {key: pool.submit(self.judge, *job) for key, job in jobs.items()}
            return {key: fut.result() for key, fut in futures.items()}


def _succeeded(done: Outcome) -> bool:
    return done.returncode == 0 and not done.timed_out and not done.output_capped

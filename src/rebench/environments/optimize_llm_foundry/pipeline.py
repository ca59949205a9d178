"""Trusted helpers around a finetuning folder: lay one out (solution code + fresh public
inputs + a data file) and run its finetune.sh as a plain local process (prepare and the
benchmarks run our own starting pipeline this way; scoring runs the agent's sandboxed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rebench.core.discovery import environment_dir

DATA_FILE = "train_data.jsonl"
# Outputs and caches removed before every run: nothing computed earlier can be reused.
WIPED = ("trained_model", "finetuning_tokens", "checkpoints", DATA_FILE)
# Inputs always laid fresh from the public assets (the agent may not bring its own).
FRESH_INPUTS = ("base_model", "tokenizer.json")


class PipelineError(RuntimeError):
    """Our own (starting) pipeline failed at prepare time: a harness problem."""


@dataclass(frozen=True)
class PipelineRun:
    """One finetune.sh run: seconds from start to return, exit code, output tail."""

    seconds: float
    returncode: int | None  # None: timed out
    output_tail: str


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def lay_out(workdir: Path, public: Path, data_file: Path) -> None:
    """Wipe outputs and caches in `workdir` (already holding the solution's code), lay the
    public inputs fresh and put `data_file` in place as train_data.jsonl."""
    for name in (*WIPED, *FRESH_INPUTS):
        _remove(workdir / name)
    shutil.copytree(public / "base_model", workdir / "base_model")
    shutil.copyfile(public / "tokenizer.json", workdir / "tokenizer.json")
    for name in ("finetune.yaml", "foundry/model.py"):  # only where the solution lacks them
        if not (workdir / name).exists():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(public / name, workdir / name)
    shutil.copyfile(data_file, workdir / DATA_FILE)


def starting_folder(workdir: Path, public: Path, solution: str = "starting") -> None:
    """`workdir` with the starting code (and `solution`'s files over it) and public files."""
    env_dir = environment_dir("optimize_llm_foundry")
    for folder in dict.fromkeys(("starting", solution)):
        shutil.copytree(env_dir / folder, workdir, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(public, workdir, dirs_exist_ok=True)


def local_env(threads: int | None = None) -> dict[str, str]:
    """A plain environment for our own pipeline: this interpreter first on PATH, no
    PYTHONPATH (the pipeline imports only third-party packages and its own files)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("REBENCH_") and k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    return env


def run_local(workdir: Path, timeout_s: float, threads: int | None = None) -> PipelineRun:
    """Run `bash finetune.sh` in `workdir` on the host (our own code only)."""
    start = time.monotonic()
    try:
        proc = subprocess.run(["bash", "finetune.sh"], cwd=workdir, env=local_env(threads),
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return PipelineRun(time.monotonic() - start, None, out[-3000:])
    return PipelineRun(time.monotonic() - start, proc.returncode,
                       (proc.stdout + proc.stderr)[-3000:])

"""The trusted judge: verdicts, limits, and hostile programs (infinite loops, huge outputs,
fork bombs, memory bombs, compile-time file reads). Sandbox-only defences (reading files,
using the network) run under bwrap and are skipped where it is not available."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.environments.rust_codecontests_inference.judge import (
    Judge,
    Verdict,
)
from rebench.environments.rust_codecontests_inference.judge import (
    TestCase as Case,
)

ECHO_SUM = """use std::io::Read;
fn main() {
    let mut s = String::new();
    std::io::stdin().read_to_string(&mut s).unwrap();
    let v: i64 = s.split_whitespace().map(|x| x.parse::<i64>().unwrap()).sum();
    println!("{}", v);
}
"""
TESTS = [Case("1 2\n", "3\n"), Case("5 5 5\n", "15")]


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Judge:
    return Judge(tmp_path_factory.mktemp("build"))


def test_correct_program_passes_and_is_cached(judge: Judge) -> None:
    assert judge.judge(ECHO_SUM, TESTS, 2.0).passed
    start = time.monotonic()
    assert judge.judge(ECHO_SUM, TESTS, 2.0).passed
    assert judge.compile(ECHO_SUM)[0] is not None
    assert time.monotonic() - start < 2.0  # no second compilation


@pytest.mark.parametrize("source,verdict", [
    ("", Verdict.EMPTY),
    ("Here is my solution:\n```rust\nfn main() {}\n```", Verdict.COMPILE_ERROR),
    ('fn main() { println!("4"); }', Verdict.WRONG_ANSWER),
    ('fn main() { panic!("boom"); }', Verdict.RUNTIME_ERROR),
    ('const D: &str = include_str!("/etc/passwd");\nfn main() { print!("{}", D); }',
     Verdict.FORBIDDEN),
    ('fn main() { println!("{}", env!("HOME")); }', Verdict.FORBIDDEN),
])
def test_verdicts(judge: Judge, source: str, verdict: Verdict) -> None:
    assert judge.judge(source, TESTS, 2.0).verdict is verdict


def _timed(judge: Judge, source: str, limit: float = 1.0) -> tuple[Verdict, float]:
    start = time.monotonic()
    result = judge.judge(source, TESTS, limit)
    return result.verdict, time.monotonic() - start


def test_infinite_loop_times_out(judge: Judge) -> None:
    verdict, elapsed = _timed(judge, "fn main() { let mut x: u64 = 0; loop { x = "
                              "x.wrapping_add(1); if x == 7 { std::hint::black_box(x); } } }")
    assert verdict is Verdict.TIME_LIMIT
    assert elapsed < 15


def test_huge_output_is_cut(judge: Judge) -> None:
    verdict, elapsed = _timed(judge, 'use std::io::Write;\nfn main() { let s = "x".repeat(1 << 20);'
                              ' let mut o = std::io::stdout(); loop { if o.write_all(s.as_bytes())'
                              '.is_err() { break; } } }', limit=5.0)
    assert verdict in (Verdict.OUTPUT_LIMIT, Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT)
    assert elapsed < 30


def test_memory_bomb_fails(judge: Judge) -> None:
    verdict, _ = _timed(judge, "fn main() { let mut v: Vec<Vec<u8>> = Vec::new(); "
                        "loop { v.push(vec![1u8; 1 << 26]); } }", limit=5.0)
    assert verdict in (Verdict.RUNTIME_ERROR, Verdict.TIME_LIMIT)


BOUNDED_FORK_BOMB = """use std::process::Command;
fn main() {
    // Each process starts two copies of itself, down to depth 5 (63 processes), then all sleep.
    let depth: u32 = std::env::var("REBENCH_FORK_DEPTH").ok().and_then(|d| d.parse().ok())
        .unwrap_or(0);
    if depth < 5 {
        for _ in 0..2 {
            let _ = Command::new("/proc/self/exe")
                .env("REBENCH_FORK_DEPTH", (depth + 1).to_string()).spawn();
        }
    }
    std::thread::sleep(std::time::Duration::from_secs(3600));
}
"""


def _count_processes(marker: str) -> int:
    count = 0
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes().decode(errors="ignore")
            if proc.name.isdigit() and marker in environ:
                count += 1
        except OSError:
            continue
    return count


def test_fork_bomb_is_refused_and_killed(judge: Judge, tmp_path: Path) -> None:
    """Refused by the static checks (it names `Command`, since 1.3.1); the layer below,
    with the checks off, still kills the whole tree at the time limit."""
    assert judge.judge(BOUNDED_FORK_BOMB, TESTS, 1.0).verdict is Verdict.FORBIDDEN
    verdict, elapsed = _timed(Judge(tmp_path / "build", static_checks=False),
                              BOUNDED_FORK_BOMB, limit=1.0)
    assert verdict is Verdict.TIME_LIMIT
    assert elapsed < 15
    time.sleep(0.5)
    assert _count_processes("REBENCH_FORK_DEPTH=") == 0  # the whole tree was killed


def test_program_cannot_read_hidden_files(sandboxed_judge: Callable[..., Judge],
                                          tmp_path: Path) -> None:
    secret_dir = tmp_path / "protected"
    secret_dir.mkdir()
    (secret_dir / "answer.txt").write_text("42\n")
    judge = sandboxed_judge(hidden=(secret_dir,))
    path = secret_dir / "answer.txt"
    source = (f'fn main() {{ let s = std::fs::read_to_string("{path}")'
              '.unwrap_or("denied".into()); print!("{}", s); }')
    assert judge.judge(source, [Case("", "42")], 2.0).verdict is Verdict.WRONG_ANSWER


def test_program_has_no_network(sandboxed_judge: Callable[..., Judge]) -> None:
    judge = sandboxed_judge()
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        server.settimeout(20)
        try:
            conn, _ = server.accept()
            conn.sendall(b"42\n")
            conn.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    source = ("use std::io::Read;\nfn main() { let mut s = String::new(); match "
              f'std::net::TcpStream::connect("127.0.0.1:{port}") {{ Ok(mut c) => {{ '
              "c.read_to_string(&mut s).unwrap(); } Err(_) => { s = \"offline\".into(); } } "
              'print!("{}", s); }')
    try:
        assert judge.judge(source, [Case("", "42")], 2.0).verdict is Verdict.WRONG_ANSWER
    finally:
        server.close()

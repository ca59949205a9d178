"""Compile-time file and environment access, however it is spelled, gains nothing: each program
below would print the content of a secret file (or variable) if the compiler let it read it.
The judge rejects them without relying on one regex over the source: rustc's own dependency
list (dep-info) is checked after every compilation, identifiers that reach files are refused
wherever they appear (so a `macro_rules!` indirection still names them), and under bwrap the
compiler sees nothing but the source and the toolchain."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from rebench.environments.rust_codecontests_inference.judge import (
    Judge,
    Verdict,
)
from rebench.environments.rust_codecontests_inference.judge import TestCase as Case

SECRET = "424242"
INDIRECT = "macro_rules! grab {{ ($m:ident, $p:expr) => {{ $m!($p) }}; }}\n"

# name -> program; {txt} is a file holding SECRET, {rs} one holding the Rust literal "SECRET",
# {mod} a module file defining `pub const D: &str = SECRET`.
TRICKS = {
    "include_str_direct": 'fn main() {{ print!("{{}}", include_str!("{txt}")); }}',
    "include_str_macro": INDIRECT + 'fn main() {{ print!("{{}}", grab!(include_str, "{txt}")); }}',
    "include_str_raw_ident": 'fn main() {{ print!("{{}}", r#include_str!("{txt}")); }}',
    "include_str_concat": INDIRECT + 'fn main() {{ print!("{{}}", grab!(include_str, '
                          'concat!("{txt_dir}", "/", "secret.txt"))); }}',
    "include_bytes_macro": INDIRECT + 'fn main() {{ let b: &[u8] = grab!(include_bytes, "{txt}");'
                           ' print!("{{}}", std::str::from_utf8(b).unwrap()); }}',
    "include_macro": INDIRECT + 'fn main() {{ let s: &str = grab!(include, "{rs}"); '
                     'print!("{{}}", s); }}',
    "env_macro": INDIRECT + 'fn main() {{ print!("{{}}", grab!(env, "RUST_TRICK_SECRET")); }}',
    "option_env_macro": INDIRECT + 'fn main() {{ let v: Option<&str> = grab!(option_env, '
                        '"RUST_TRICK_SECRET"); print!("{{}}", v.unwrap_or("none")); }}',
    "path_attribute": '#[path = "{mod}"]\nmod m;\nfn main() {{ print!("{{}}", m::D); }}',
    "path_via_cfg_attr": '#[cfg_attr(all(), path = "{mod}")]\nmod m;\n'
                         'fn main() {{ print!("{{}}", m::D); }}',
    "global_asm_incbin": 'std::arch::global_asm!(".section .rodata", ".global SECRETX", '
                         '"SECRETX:", ".incbin \\"{txt}\\"", ".text");\n'
                         'extern "C" {{ static SECRETX: [u8; 6]; }}\n'
                         'fn main() {{ unsafe {{ print!("{{}}", '
                         'std::str::from_utf8(&*std::ptr::addr_of!(SECRETX)).unwrap()); }} }}',
    "asm_macro_indirection": 'macro_rules! a {{ ($m:ident) => {{ std::arch::$m!(".section '
                             '.rodata", ".global SECRETX", "SECRETX:", ".incbin \\"{txt}\\"", '
                             '".text"); }}; }}\na!(global_asm);\n'
                             'extern "C" {{ static SECRETX: [u8; 6]; }}\n'
                             'fn main() {{ unsafe {{ print!("{{}}", '
                             'std::str::from_utf8(&*std::ptr::addr_of!(SECRETX)).unwrap()); }} }}',
}


@pytest.fixture(scope="module")
def secret_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("protected")
    (folder / "secret.txt").write_text(SECRET)
    (folder / "secret.rs").write_text(f'"{SECRET}"\n')
    (folder / "m.rs").write_text(f'pub const D: &str = "{SECRET}";\n')
    return {"txt": str(folder / "secret.txt"), "rs": str(folder / "secret.rs"),
            "mod": str(folder / "m.rs"), "txt_dir": str(folder)}


@pytest.fixture(scope="module")
def local_judge(tmp_path_factory: pytest.TempPathFactory) -> Judge:
    return Judge(tmp_path_factory.mktemp("build"))


@pytest.mark.parametrize("name", sorted(TRICKS))
def test_compile_time_reads_are_forbidden_without_a_sandbox(
        name: str, secret_files: dict[str, str], local_judge: Judge,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUST_TRICK_SECRET", SECRET)
    source = TRICKS[name].format(**secret_files)
    result = local_judge.judge(source, [Case("", SECRET)], 2.0)
    assert result.verdict is Verdict.FORBIDDEN, (result.verdict, result.detail)
    assert SECRET not in result.detail  # nothing of the file comes back in the message


def test_a_plain_program_using_std_env_still_compiles(local_judge: Judge) -> None:
    source = ('use std::env;\nfn main() { let n = env::args().count(); '
              'let path = vec![n]; println!("{}", path.len() + std::env::args().count() - n); }')
    assert local_judge.judge(source, [Case("", "1")], 2.0).verdict is Verdict.PASSED


def test_the_compiler_sees_no_file_but_the_source_under_bwrap(
        secret_files: dict[str, str], sandboxed_judge: Callable[..., Judge],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The primary defence: with the static checks switched off, bwrap alone (the secret's
    folder hidden, as the scorer hides the asset cache) leaves every trick nothing to read.
    The judge runs rustc through the official scorer's runner."""
    judge = sandboxed_judge(hidden=(Path(secret_files["txt_dir"]),), static_checks=False)
    monkeypatch.setenv("RUST_TRICK_SECRET", SECRET)
    for name, template in TRICKS.items():
        result = judge.judge(template.format(**secret_files), [Case("", SECRET)], 2.0)
        assert not result.passed, name


@pytest.mark.parametrize("name", sorted(n for n in TRICKS if "env" not in n))
def test_control_every_file_trick_reads_the_secret_when_nothing_stops_it(
        name: str, secret_files: dict[str, str], tmp_path: Path) -> None:
    """The attacks are real: without the checks and without a sandbox they pass. (The
    compiler's environment is always the judge's minimal one, so `env!` reads no secret.)"""
    judge = Judge(tmp_path / "build", static_checks=False)
    result = judge.judge(TRICKS[name].format(**secret_files), [Case("", SECRET)], 2.0)
    assert result.verdict is Verdict.PASSED, (result.verdict, result.detail)


# A "Rust" program that hands the work to another interpreter of the run sandbox: the
# model asked for Python and its answer wrapped (red team, 2026-12-07).
SPAWNS = {
    "command": 'use std::process::Command;\nfn main() {{ let o = Command::new("{python}")'
               '.arg("-c").arg("print(6 * 7)").output().unwrap(); '
               'print!("{{}}", String::from_utf8_lossy(&o.stdout)); }}',
    "command_glob": 'use std::process::*;\nfn main() {{ let s = Command::new("{python}")'
                    '.args(["-c", "print(6 * 7)"]).status().unwrap(); exit(s.code().unwrap()); }}',
    "extern_system": 'use std::ffi::CString;\nextern "C" {{ fn system(c: *const i8) -> i32; }}\n'
                     'fn main() {{ let c = CString::new("{python} -c \'print(6 * 7)\'").unwrap(); '
                     'unsafe {{ system(c.as_ptr()); }} }}',
}


@pytest.mark.parametrize("name", sorted(SPAWNS))
def test_a_program_that_starts_another_program_is_forbidden(name: str, local_judge: Judge,
                                                             tmp_path: Path) -> None:
    """Each shim prints python3's answer when nothing stops it (the run sandbox shows the
    OS's interpreters) and is refused before it compiles otherwise."""
    python = shutil.which("python3")
    assert python is not None
    source = SPAWNS[name].format(python=python)
    unchecked = Judge(tmp_path / "build", static_checks=False).judge(source, [Case("", "42")],
                                                                      5.0)
    assert unchecked.verdict is Verdict.PASSED, (unchecked.verdict, unchecked.detail)
    result = local_judge.judge(source, [Case("", "42")], 2.0)
    assert result.verdict is Verdict.FORBIDDEN, (result.verdict, result.detail)


def test_exit_and_words_that_hold_the_names_still_compile(local_judge: Judge) -> None:
    source = ('fn main() { let external_commands = 2; let commander = 3; '
              'println!("{}", external_commands + commander); std::process::exit(0); }')
    assert local_judge.judge(source, [Case("", "5")], 2.0).verdict is Verdict.PASSED

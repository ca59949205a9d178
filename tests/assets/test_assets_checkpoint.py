"""Bounded-memory archive checks: attacks that make torch.load allocate far more than the
file's size are refused from the zip directory and the pickle alone, before torch runs."""

from __future__ import annotations

import io
import pickle
import zipfile
from pathlib import Path

import pytest
import torch

from rebench.assets.checkpoint import ArchiveRefused, check_archive
from rebench.assets.gpt import GPT, GPTConfig

TINY = GPTConfig(vocab_size=97, block_size=16, n_layer=1, n_head=1, n_embd=16)
MODEL_BYTES = sum(v.numel() * 4 for v in GPT(TINY).state_dict().values())


def _saved(tmp_path: Path, obj: object, name: str = "m.pth") -> Path:
    path = tmp_path / name
    torch.save(obj, path)
    return path


def _rewrite(src: Path, dst: Path, compress: int = zipfile.ZIP_STORED,
             replace: dict[str, bytes] | None = None) -> Path:
    """Copy a torch archive member by member, optionally compressed or with members replaced."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", compression=compress) as zout:
        for info in zin.infolist():
            data = (replace or {}).get(info.filename.split("/", 1)[1], zin.read(info))
            zout.writestr(info.filename, data)
    return dst


def test_a_plain_state_dict_passes(tmp_path: Path) -> None:
    path = _saved(tmp_path, GPT(TINY).state_dict())
    check_archive(path, MODEL_BYTES)
    # What torch.save writes for a model's state_dict() loads after the check.
    assert set(torch.load(path, weights_only=True)) == set(GPT(TINY).state_dict())


def test_tensors_larger_than_the_model_are_refused(tmp_path: Path) -> None:
    state = GPT(TINY).state_dict()
    state["padding"] = torch.zeros(MODEL_BYTES)  # 4x the model's bytes
    with pytest.raises(ArchiveRefused, match="more than the model"):
        check_archive(_saved(tmp_path, state), 2 * MODEL_BYTES)


def test_compressed_zeros_are_refused_before_torch_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's attack: a few MB of deflated zeros that torch.load inflates to GBs.
    Here 40 MB of zeros compress to about 40 kB; the check refuses without inflating."""
    big = _saved(tmp_path, {"w": torch.zeros(10_000_000)}, "big.pth")
    bomb = _rewrite(big, tmp_path / "bomb.pth", zipfile.ZIP_DEFLATED)
    assert bomb.stat().st_size < 1_000_000
    monkeypatch.setattr(zipfile.ZipFile, "read", _no_inflate(zipfile.ZipFile.read))
    with pytest.raises(ArchiveRefused, match="compressed"):
        check_archive(bomb, 100 * 1024**2)


def _no_inflate(read):  # type: ignore[no-untyped-def]
    def guarded(self, name, pwd=None):  # type: ignore[no-untyped-def]
        name_s = name if isinstance(name, str) else name.filename
        assert name_s.endswith("data.pkl"), f"the check read {name_s}"
        return read(self, name, pwd)
    return guarded


def test_a_pickle_declaring_a_huge_storage_is_refused(tmp_path: Path) -> None:
    """A small file whose pickle names a 1.8 GB storage (torch would allocate it)."""
    path = _saved(tmp_path, {"w": torch.zeros(4)})
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("data.pkl"))
        pkl = z.read(name)
    # numel is pickled as BININT1 4 (b"K\x04"); declare 450M elements instead (BININT).
    forged = pkl.replace(b"K\x04t", b"J" + (450_000_000).to_bytes(4, "little") + b"t", 1)
    assert forged != pkl
    bad = _rewrite(path, tmp_path / "forged.pth", replace={"data.pkl": forged})
    with pytest.raises(ArchiveRefused, match="more than the model"):
        check_archive(bad, MODEL_BYTES)
    with pytest.raises(ArchiveRefused, match="does not match its declared size"):
        check_archive(bad, 10**10)


def test_a_lying_directory_size_is_refused(tmp_path: Path) -> None:
    """The zip directory may declare a member far larger than its bytes (a reader that
    trusts it allocates that much)."""
    path = _saved(tmp_path, {"w": torch.zeros(4)})
    data = bytearray(path.read_bytes())
    start = 0
    while True:  # the central-directory record of the storage member
        start = data.find(b"PK\x01\x02", start)
        assert start >= 0
        name_len = int.from_bytes(data[start + 28:start + 30], "little")
        if data[start + 46:start + 46 + name_len].endswith(b"data/0"):
            break
        start += 4
    data[start + 24:start + 28] = (1 << 30).to_bytes(4, "little")  # uncompressed size
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveRefused):
        check_archive(path, 10**10)


def test_objects_other_than_plain_tensors_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ArchiveRefused, match="unsupported object"):
        check_archive(_saved(tmp_path, {"w": torch.nn.Parameter(torch.zeros(3))}), 10**6)
    with pytest.raises(ArchiveRefused, match="unsupported object"):
        check_archive(_saved(tmp_path, {"w": torch.zeros(3).to_sparse()}), 10**6)


def test_non_archives_are_refused(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy.pth"
    torch.save({"w": torch.zeros(3)}, legacy, _use_new_zipfile_serialization=False)
    with pytest.raises(ArchiveRefused, match="zip archive"):
        check_archive(legacy, 10**6)
    raw = tmp_path / "raw.pth"
    raw.write_bytes(pickle.dumps({"w": [0.0] * 3}))
    with pytest.raises(ArchiveRefused, match="zip archive"):
        check_archive(raw, 10**6)
    junk = io.BytesIO()
    with zipfile.ZipFile(junk, "w") as z:
        z.writestr("x/other.txt", b"hello")
    (tmp_path / "junk.pth").write_bytes(junk.getvalue())
    with pytest.raises(ArchiveRefused, match=r"data\.pkl"):
        check_archive(tmp_path / "junk.pth", 10**6)

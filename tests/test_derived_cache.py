"""generator.base.cache.cached_value (a small value derived from many packaged files, kept in the
user cache by their stamps: path, size, modification time) and its first user, the config-group
keys of every packaged schema: a hit gives the same value without computing it, an edit to any
file is a miss, and a corrupt, forged or foreign entry is ignored and rewritten, never trusted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from generator.base import cache


@pytest.fixture()
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.SWITCH_ENV, raising=False)
    out = []
    for name, text in (("a.json", '{"x": 1}'), ("b.json", '{"y": 2}')):
        path = tmp_path / name
        path.write_text(text)
        out.append(path)
    return out


def _entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "data").glob("*.json"))


def _valid(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


class _Counter:
    def __init__(self, value: list[str]) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> list[str]:
        self.calls += 1
        return list(self.value)


def test_a_hit_is_not_computed_again(files: list[Path], tmp_path: Path) -> None:
    compute = _Counter(["critic", "data"])
    assert cache.cached_value("keys", files, compute, _valid) == ["critic", "data"]
    assert cache.cached_value("keys", files, compute, _valid) == ["critic", "data"]
    assert compute.calls == 1 and len(_entries(tmp_path)) == 1


def _rewritten(path: Path, text: str) -> None:
    """`path` written anew, its modification time a moment later (a clock tick can hold two
    quick writes: an edit by hand is far slower than that)."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def test_the_key_changes_with_any_file_its_name_or_the_value_name(files: list[Path], tmp_path: Path) -> None:
    compute = _Counter(["x"])
    cache.cached_value("keys", files, compute, _valid)
    _rewritten(files[1], '{"y": 3}')  # same size, other bytes
    cache.cached_value("keys", files, compute, _valid)
    cache.cached_value("other keys", files, compute, _valid)
    renamed = files[0].with_name("c.json")
    files[0].rename(renamed)
    cache.cached_value("keys", [renamed, files[1]], compute, _valid)
    assert compute.calls == 4 and len(_entries(tmp_path)) == 4


@pytest.mark.parametrize("content", [b"{not json", b"[]", b"\xff\xfe", b'{"format": 3, "key": "KEY", "data": [1]}',
                                     b'{"format": 3, "key": "OTHER", "data": ["forged"]}',
                                     b'{"format": 3, "key": "KEY"}'])
def test_a_corrupt_or_forged_entry_is_ignored_and_rewritten(files: list[Path], tmp_path: Path,
                                                            content: bytes) -> None:
    compute = _Counter(["good"])
    cache.cached_value("keys", files, compute, _valid)
    [entry] = _entries(tmp_path)
    key = json.dumps(json.loads(entry.read_text())["key"])[1:-1].encode()
    entry.write_bytes(content.replace(b"KEY", key))
    assert cache.cached_value("keys", files, compute, _valid) == ["good"] and compute.calls == 2
    assert json.loads(entry.read_text())["data"] == ["good"]  # written afresh


def test_an_entry_others_may_write_or_a_link_is_not_trusted(files: list[Path], tmp_path: Path) -> None:
    compute = _Counter(["good"])
    cache.cached_value("keys", files, compute, _valid)
    [entry] = _entries(tmp_path)
    document = json.loads(entry.read_text())
    document["data"] = ["forged"]
    entry.write_text(json.dumps(document))
    os.chmod(entry, 0o666)
    assert cache.cached_value("keys", files, compute, _valid) == ["good"]
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(document))
    entry.unlink()
    entry.symlink_to(elsewhere)
    assert cache.cached_value("keys", files, compute, _valid) == ["good"] and compute.calls == 3


def test_an_unreadable_file_or_no_cache_computes(files: list[Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    compute = _Counter(["v"])
    assert cache.cached_value("keys", [*files, tmp_path / "missing.json"], compute, _valid) == ["v"]
    monkeypatch.setenv(cache.SWITCH_ENV, "1")
    assert cache.cached_value("keys", files, compute, _valid) == ["v"]
    assert compute.calls == 2 and not _entries(tmp_path)


def test_group_keys_from_the_cache_equal_the_schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from generator.schema import guess
    from generator.schema.releases import packaged_releases

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.SWITCH_ENV, raising=False)
    direct = guess._group_keys(packaged_releases())
    assert {"model_engine", "critic"} <= direct
    guess.group_keys.cache_clear()
    try:
        assert guess.group_keys() == direct  # computed and written
        monkeypatch.setattr(guess, "_group_keys", lambda releases: pytest.fail("computed on a hit"))
        guess.group_keys.cache_clear()
        assert guess.group_keys() == direct  # read back
    finally:
        guess.group_keys.cache_clear()

"""The cache of schemas composed from a config folder (generator/base/cache.py): a hit gives the
same schema without reading the YAML, an edit misses, and a corrupt, foreign or hostile entry is
ignored, never trusted. Each test has its own cache folder and its own small config tree."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from generator.base import cache
from generator.base.files import digest_of
from generator.schema.release_schema import _from_dir

YAML = "data:\n  train_batch_size: 64\n  max_prompt_length: 512\ntrainer:\n  n_gpus_per_node: 8\n  total: ???\n"


@pytest.fixture()
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.SWITCH_ENV, raising=False)
    folder = tmp_path / "verl" / "trainer" / "config"
    folder.mkdir(parents=True)
    (folder / "_generated_ppo_trainer.yaml").write_text(YAML)
    return folder


def _entries(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache" / "schemas").glob("*.json"))


def _no_yaml(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the YAML was read although the cache had it")

    # Every name the schema's YAML is read through (each module binds it at import).
    for module in ("generator.schema.yamlload", "generator.schema.generated", "generator.schema.compose"):
        monkeypatch.setattr(f"{module}.load_yaml_file", refuse)


def test_a_hit_gives_the_same_schema_without_reading_yaml(tree: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    first = _from_dir("0.9.0+project", tree)
    assert first.configs["ppo_trainer"]["data.train_batch_size"] == 64
    assert len(_entries(tmp_path)) == 1
    _no_yaml(monkeypatch)
    again = _from_dir("0.9.0+project", tree)
    assert again.configs == first.configs and again.mandatory_by_config == first.mandatory_by_config


def test_an_edit_is_a_miss(tree: Path, tmp_path: Path) -> None:
    _from_dir("x", tree)
    (tree / "_generated_ppo_trainer.yaml").write_text(YAML.replace("64", "128"))
    assert _from_dir("x", tree).configs["ppo_trainer"]["data.train_batch_size"] == 128
    assert len(_entries(tmp_path)) == 2


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"format": 1}', b"\xff\xfe",
                                     b'{"format": 1, "key": "KEY", "configs": {"ppo_trainer": 5}, "mandatory": {}}',
                                     b'{"format": 1, "key": "OTHER", "configs": {"ppo_trainer": {}}, "mandatory": {}}'])
def test_a_corrupt_or_forged_entry_is_ignored_and_rewritten(tree: Path, tmp_path: Path, content: bytes) -> None:
    good = _from_dir("x", tree)
    [entry] = _entries(tmp_path)
    key = entry.stem
    entry.write_bytes(content.replace(b"KEY", key.encode()))
    assert _from_dir("x", tree).configs == good.configs  # composed again
    assert json.loads(entry.read_text())["key"] == key  # and the entry written afresh


def test_an_entry_others_may_write_is_not_trusted(tree: Path, tmp_path: Path) -> None:
    _from_dir("x", tree)
    [entry] = _entries(tmp_path)
    document = json.loads(entry.read_text())
    document["configs"]["ppo_trainer"]["data.train_batch_size"] = 999  # a forged value
    entry.write_text(json.dumps(document))
    os.chmod(entry, 0o666)
    assert cache.load_entry(entry.stem, tree, digest_of) is None
    assert _from_dir("x", tree).configs["ppo_trainer"]["data.train_batch_size"] == 64


def test_a_link_is_not_followed(tree: Path, tmp_path: Path) -> None:
    _from_dir("x", tree)
    [entry] = _entries(tmp_path)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(entry.read_bytes())
    entry.unlink()
    entry.symlink_to(elsewhere)
    assert cache.load_entry(entry.stem, tree, digest_of) is None


def test_off_and_unwritable(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.SWITCH_ENV, "1")
    assert cache.cache_dir() is None
    assert _from_dir("x", tree).configs["ppo_trainer"]["trainer.n_gpus_per_node"] == 8
    assert not _entries(tmp_path)
    monkeypatch.delenv(cache.SWITCH_ENV)
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker))  # a file where the folder would be
    assert _from_dir("x", tree).configs["ppo_trainer"]["trainer.n_gpus_per_node"] == 8


def test_the_default_place_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.delenv(cache.SWITCH_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache.cache_dir() == tmp_path / "verl-gen" / "schemas"


def test_a_hit_keeps_why_a_stale_generated_file_was_passed_over_without_reading_yaml(
        tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tree / "ppo_trainer.yaml").write_text(YAML + "extra:\n  added_by_fork: 1\n")  # the generated file lacks it
    first = _from_dir("x", tree)
    assert first.configs["ppo_trainer"]["extra.added_by_fork"] == 1
    assert len(first.notes) == 1 and "stale" in first.notes[0] and "extra.added_by_fork" in first.notes[0]
    _no_yaml(monkeypatch)
    monkeypatch.setattr("generator.schema.compose.compose", lambda *_a, **_k: pytest.fail("composed on a hit"))
    again = _from_dir("x", tree)
    assert again.notes == first.notes and again.configs == first.configs


@pytest.mark.parametrize("notes", [None, "a note", [1], [None]])
def test_an_entry_with_malformed_notes_is_ignored(tree: Path, tmp_path: Path, notes: object) -> None:
    _from_dir("x", tree)
    [entry] = _entries(tmp_path)
    document = json.loads(entry.read_text())
    document["notes"] = notes
    entry.write_text(json.dumps(document))
    assert cache.load_entry(entry.stem, tree, digest_of) is None

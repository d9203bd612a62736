"""Packaged schemas, version choice, snapshot mapping, migrations data, the schema builder."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from generator import schema as schema_pkg
from generator.base.errors import InputError
from generator.schema import (
    HEAD_SCHEMA, available, load, packaged_releases, removed_values, renames, resolve_version, snapshot_version,
)
from generator.schema.compose import compose, flatten
from generator.schema.migrations import MOVES, bad_value
from generator.schema.releases import HEAD_2608_SCHEMA
from generator.schema.resolution import resolve
from generator.schema.yamlload import load_yaml_file
from generator.verl.versions import parse

REPO = Path(__file__).resolve().parent.parent


def test_every_release_and_head_is_packaged() -> None:
    # The releases are the plain ids among the packaged schema files, oldest first.
    releases = packaged_releases()
    assert releases[0] == "0.4.1" and {"0.7.0", "0.9.1"} <= set(releases)
    assert releases == sorted(releases, key=parse) and all("+" not in r for r in releases)
    assert set(available()) == set(releases) | {HEAD_SCHEMA, HEAD_2608_SCHEMA}
    assert available() == sorted(available(), key=lambda v: (parse(v), "+" in v))


def test_load_is_cached_and_needs_no_hydra() -> None:
    # Loading a packaged schema must not import Hydra (its import alone costs ~300 ms per `gen` start);
    # the time itself is a benchmark figure (bench/schema_config.py), not a test.
    code = ("import sys; from generator.schema import load; s=load('0.9.1'); s.has('trainer.nnodes'); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('hydra', 'omegaconf')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            cwd=REPO).stdout.strip()
    assert loaded == "[]", loaded
    assert load("0.7.0") is load("v0.7.0")


def test_loading_does_not_import_heavy_modules() -> None:
    code = "import sys; from generator.schema import load; load('0.7.0'); print(sorted(m for m in ('hydra','omegaconf','yaml','verl') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.strip() == "[]"


def test_unknown_release_is_one_line_input_error() -> None:
    with pytest.raises(InputError) as err:
        load("0.3.9")
    message = str(err.value)
    assert "\n" not in message and "0.4.1" in message and "0.9.1" in message


def test_schema_api() -> None:
    s = load("0.7.0")
    assert s.has("actor_rollout_ref.actor.megatron.tensor_model_parallel_size")
    assert s.has("actor_rollout_ref.actor.megatron")  # an inner node
    assert not s.has("actor_rollout_ref.actor.megatron.nope")
    assert "actor_rollout_ref.rollout.name" in s.mandatory
    assert s.defaults()["actor_rollout_ref.rollout.name"] == "???"
    copy = s.defaults("ppo_trainer")
    copy["trainer.nnodes"] = 99
    assert s.defaults("ppo_trainer")["trainer.nnodes"] == 1
    assert "actor_rollout_ref.actor.fsdp_config.param_offload" in s.keys("ppo_trainer")
    assert not load("0.4.1").mandatory  # rollout.name had a default (vllm) before 0.6.0
    with pytest.raises(InputError):
        s.defaults("no_such_config")


def test_interpolations_are_kept_verbatim() -> None:
    value = load("0.7.0").defaults()["actor_rollout_ref.ref.megatron.tensor_model_parallel_size"]
    assert value == "${oc.select:actor_rollout_ref.actor.megatron.tensor_model_parallel_size,1}"


# --- packaged data = verl's own YAML (the corpus snapshots) -----------------------------------------

@pytest.mark.parametrize("tag", ["v0.4.1", "v0.5.0", "v0.6.0", "v0.6.1", "v0.7.0", "HEAD"])
def test_packaged_schema_equals_the_snapshot_yaml(verl_config_dir: Path, tag: str) -> None:
    config_dir = verl_config_dir / tag / "verl" / "trainer" / "config"
    packaged = load(snapshot_version(tag))
    for name in ("ppo_trainer", "ppo_megatron_trainer"):
        generated = config_dir / f"_generated_{name}.yaml"
        expected = flatten(load_yaml_file(generated)) if generated.exists() else flatten(compose(config_dir, name))
        assert packaged.configs[name] == expected, (tag, name)


@pytest.mark.parametrize("tag", ["v0.5.0", "v0.7.0", "HEAD"])
def test_defaults_list_merge_equals_the_generated_yaml(verl_config_dir: Path, tag: str) -> None:
    config_dir = verl_config_dir / tag / "verl" / "trainer" / "config"
    for name in ("ppo_trainer", "ppo_megatron_trainer"):
        assert flatten(compose(config_dir, name)) == flatten(load_yaml_file(config_dir / f"_generated_{name}.yaml"))


def _write_tree(root: Path) -> None:
    (root / "engine").mkdir(parents=True)
    (root / "actor").mkdir()
    (root / "engine" / "megatron.yaml").write_text("tp: 1\npp: 1\nextra: {}\n")
    (root / "actor" / "base.yaml").write_text("lr: 1e-6\nmini: 256\nmicro: null\n")
    (root / "actor" / "megatron_actor.yaml").write_text(
        "defaults:\n  - ../engine@megatron: megatron\n  - base\n  - _self_\nmini: 64\nname: ???\n")
    (root / "trainer.yaml").write_text(
        "defaults:\n  - actor@actor_rollout_ref.actor: megatron_actor\n  - _self_\n"
        "actor_rollout_ref:\n  actor:\n    megatron:\n      tp: 2\n"
        "  ref:\n    tp: ${oc.select:actor_rollout_ref.actor.megatron.tp,1}\n"
        "trainer:\n  nnodes: 1\n")


def test_compose_matches_hydra_on_a_small_tree(tmp_path: Path) -> None:
    import logging

    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    logging.disable(logging.WARNING)
    _write_tree(tmp_path)
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
            expected = OmegaConf.to_container(hydra_compose("trainer"), resolve=False)
    finally:
        GlobalHydra.instance().clear()
    assert flatten(compose(tmp_path, "trainer")) == flatten(expected)


def test_build_tool_from_dir(tmp_path: Path) -> None:
    _write_tree(tmp_path / "cfg")
    (tmp_path / "cfg" / "ppo_megatron_trainer.yaml").write_text((tmp_path / "cfg" / "trainer.yaml").read_text())
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(REPO / "tools" / "build_schemas.py"), "--from-dir", str(tmp_path / "cfg"),
                    "--id", "9.9.9+test", "--out", str(out)], check=True, capture_output=True, cwd=REPO)
    doc = json.loads((out / "9.9.9+test.json").read_text())
    flat = doc["configs"]["ppo_megatron_trainer"]
    assert flat["actor_rollout_ref.actor.megatron.tp"] == 2
    assert flat["actor_rollout_ref.actor.mini"] == 64 and flat["actor_rollout_ref.actor.lr"] == 1e-6
    assert flat["actor_rollout_ref.actor.megatron.extra"] == {}
    assert flat["actor_rollout_ref.ref.tp"] == "${oc.select:actor_rollout_ref.actor.megatron.tp,1}"
    assert doc["mandatory"]["ppo_megatron_trainer"] == ["actor_rollout_ref.actor.name"]
    assert "ppo_trainer" not in doc["configs"]


# --- version choice ------------------------------------------------------------------------------------

def _no_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "verl" else real(name, *a))


def _fake_verl(monkeypatch: pytest.MonkeyPatch, package: Path) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args):
        if name == "verl":
            return SimpleNamespace(submodule_search_locations=[str(package)], origin=str(package / "__init__.py"))
        return real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_explicit_version(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_verl(monkeypatch)
    assert resolve_version("0.6.1") == ("0.6.1", "--verl-version")
    assert resolve_version("v0.7.0") == ("0.7.0", "--verl-version")
    for unknown in ("0.7.5", "9.9", "0.7"):  # not packaged: an error, never a silent stand-in
        with pytest.raises(InputError, match=f"^--verl-version: unknown verl release '{unknown}'"):
            resolve_version(unknown)
    with pytest.raises(InputError, match="^--to: unknown verl release '9.9'"):  # named as the user wrote it
        resolve_version("9.9", "--to")
    with pytest.raises(InputError):
        resolve_version("banana")
    with pytest.raises(InputError):
        resolve_version("0.3.0")


def test_newest_packaged_without_verl(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_verl(monkeypatch)
    assert resolve_version(None) == (packaged_releases()[-1], "newest packaged")


def test_installed_packaged_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "site" / "verl"
    (package / "version").mkdir(parents=True)
    (package / "version" / "version").write_text("0.6.1\n")
    _fake_verl(monkeypatch, package)
    version, how = resolve_version(None)
    assert version == "0.6.1" and how == f"installed verl 0.6.1 at {package}"


def test_installed_version_from_dist_info(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "site" / "verl"
    package.mkdir(parents=True)
    meta = tmp_path / "site" / "verl-0.5.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: verl\nVersion: 0.5.0\n")
    _fake_verl(monkeypatch, package)
    assert resolve_version(None)[0] == "0.5.0"


def test_installed_unpackaged_release_reads_its_yaml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "site" / "verl"
    (package / "version").mkdir(parents=True)
    (package / "version" / "version").write_text("0.11.0")
    config_dir = package / "trainer" / "config"
    config_dir.mkdir(parents=True)
    (config_dir / "_generated_ppo_megatron_trainer.yaml").write_text(
        "trainer:\n  nnodes: 1\n  brand_new: 3\nactor_rollout_ref:\n  rollout:\n    name: ???\n")
    _fake_verl(monkeypatch, package)
    version, how = resolve_version(None)
    assert version == "0.11.0" and how == f"installed verl 0.11.0 at {package}"  # named, never another release
    installed = load("0.11.0")
    assert installed.has("trainer.brand_new") and installed.mandatory == {"actor_rollout_ref.rollout.name"}
    # The same answer as a script's resolution, and never listed as a packaged release that
    # --verl-version or a migration could name.
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    found = resolve(str(script))
    assert (found.release, found.reason, found.config_dir) == ("0.11.0", how, config_dir)
    assert "0.11.0" not in available()
    with pytest.raises(InputError, match="unknown verl release '0.11.0'"):
        resolve_version("0.11.0")


def test_installed_unpackaged_without_yaml_maps_to_nearest_older(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    package = tmp_path / "site" / "verl"
    (package / "version").mkdir(parents=True)
    (package / "version" / "version").write_text("0.6.5")
    _fake_verl(monkeypatch, package)
    version, how = resolve_version(None)
    assert version == "0.6.1" and "nearest older" in how


def test_snapshot_versions() -> None:
    assert snapshot_version("v0.4.1") == "0.4.1"
    assert snapshot_version("v0.7.0") == "0.7.0"
    assert snapshot_version("HEAD") == HEAD_SCHEMA
    assert snapshot_version("verl-recipe@48ea0a7") == HEAD_SCHEMA
    for version in schema_pkg.SNAPSHOTS.values():
        assert version in available()
    with pytest.raises(InputError):
        snapshot_version("v9")


# --- migrations -----------------------------------------------------------------------------------------

def _pairs() -> list[tuple[str, str]]:
    ids = available()
    return [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]]


def test_every_rename_maps_an_old_key_to_a_new_key() -> None:
    for old, new in _pairs():
        old_schema, new_schema = load(old), load(new)
        for item in renames(old, new):
            assert item.old_key in old_schema.all_keys(), (old, new, item)
            if item.new_key is not None:
                assert item.new_key in new_schema.all_keys(), (old, new, item)
            else:
                assert item.old_key not in new_schema.all_keys() or item.backend, (old, new, item)
            assert parse(old) <= parse(item.since) <= parse(new), (old, new, item)


def test_every_removed_key_is_explained() -> None:
    for old, new in _pairs():
        explained = {r.old_key for r in renames(old, new)}
        gone = {k for k in load(old).all_keys()
                if not any(load(new).has(k, name) for name in load(new).config_names())}
        assert gone <= explained, (old, new, sorted(gone - explained)[:5])


def test_every_hand_written_move_fires_somewhere() -> None:
    fired = set()
    for old, new in _pairs():
        for item in renames(old, new):
            for move in MOVES:
                hit = item.old_key == move.old or (move.old.endswith(".") and item.old_key.startswith(move.old))
                if hit and (move.new is None or item.new_key is not None):
                    fired.add(move.old)
    assert fired == {m.old for m in MOVES}, {m.old for m in MOVES} - fired


def test_known_moves() -> None:
    by_old = {r.old_key: r for r in renames("0.5.0", "0.6.0")}
    assert by_old["ray_init.num_cpus"].new_key == "ray_kwargs.ray_init.num_cpus"
    assert by_old["trainer.profile_steps"].new_key == "global_profiler.steps"
    by_old = {r.old_key: r for r in renames("0.6.0", "0.6.1")}
    assert by_old["algorithm.rollout_is_threshold"].new_key == "algorithm.rollout_correction.rollout_is_threshold"
    by_old = {r.old_key: r for r in renames("0.7.0", HEAD_SCHEMA)}
    assert (by_old["actor_rollout_ref.rollout.update_weights_bucket_megabytes"].new_key
            == "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes")
    by_old = {r.old_key: r for r in renames("0.4.1", "0.7.0")}
    recompute = by_old["actor_rollout_ref.model.enable_gradient_checkpointing"]
    assert recompute.backend == "megatron" and recompute.new_key.endswith("recompute_granularity")
    assert "actor_rollout_ref.model.enable_gradient_checkpointing" not in {r.old_key for r in renames("0.7.0", "0.9.1")}


def test_removed_values() -> None:
    assert bad_value("actor_rollout_ref.rollout.mode", "sync", "0.7.0").new_value == "async"
    assert bad_value("actor_rollout_ref.rollout.mode", "sync", "0.6.1") is None
    assert bad_value("actor_rollout_ref.rollout.mode", "async", "0.7.0") is None
    assert {c.key for c in removed_values("0.6.0")} >= {"actor_rollout_ref.rollout.load_format"}
    assert "actor_rollout_ref.rollout.mode" not in {c.key for c in removed_values("0.6.1")}
    for change in removed_values():
        assert any(load(v).has(change.key) for v in available())

"""Hostile or broken config trees under --config-path: bounded work, one line, exit 2 (issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from generator.base.errors import InputError
from generator.schema.compose import MAX_LOADS, compose
from generator.schema.yamlload import MAX_EXPANDED_BYTES, MAX_EXPANDED_NODES, InvalidYaml, load_yaml_file, load_yaml_text

REPO = Path(__file__).resolve().parent.parent


def _fan_out(root: Path, per_level: int, levels: int) -> None:
    """ppo_trainer.yaml whose defaults list names `per_level` configs, each naming `per_level`
    more, `levels` deep: per_level**levels loads for Hydra."""
    root.mkdir(parents=True, exist_ok=True)
    for level in range(levels):
        children = [f"l{level + 1}_{i}" for i in range(per_level)] if level < levels - 1 else []
        names = ["ppo_trainer"] if level == 0 else [f"l{level}_{i}" for i in range(per_level)]
        for name in names:
            text = "defaults:\n" + "".join(f"  - {c}\n" for c in children) + "  - _self_\n" if children else ""
            (root / f"{name}.yaml").write_text(text + f"{name}_key: 1\n")


def _alias_bomb(levels: int = 9) -> str:
    lines = ['l0: &l0 ["x","x","x","x","x","x","x","x","x"]']
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ",".join([f"*l{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def _gen_check(script: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "generator", "check", str(script), *extra],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_defaults_fan_out_is_refused_quickly(tmp_path: Path) -> None:
    _fan_out(tmp_path / "conf", per_level=10, levels=5)  # 10^4 leaves: took 42 s before the budget
    start = time.perf_counter()
    with pytest.raises(InputError, match=f"more than {MAX_LOADS} config loads"):
        compose(tmp_path / "conf", "ppo_trainer")
    assert time.perf_counter() - start < 10


def test_a_tree_within_the_budget_composes_each_file_once(tmp_path: Path) -> None:
    _fan_out(tmp_path / "conf", per_level=3, levels=3)  # 1 + 3 + 9 loads
    tree = compose(tmp_path / "conf", "ppo_trainer")
    assert tree["ppo_trainer_key"] == 1 and tree["l2_2_key"] == 1 and len(tree) == 1 + 3 + 3


def test_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb())
    assert path.stat().st_size < 1000
    with pytest.raises(InputError, match=f"more than {MAX_EXPANDED_NODES} nodes"):
        load_yaml_file(path)
    with pytest.raises(InputError):
        load_yaml_text("a: &a [*a]\n")  # an alias inside itself never ends
    assert load_yaml_text(_alias_bomb(levels=3))["l2"][0][0] == ["x"] * 9  # small reuse is fine


def test_a_large_value_reused_by_aliases_is_refused_by_its_bytes(tmp_path: Path) -> None:
    """Issue 35: the node count stays at 2,003 while the text grows to 1 GB once expanded (2 GB of
    memory and a 955 MB cache file before the byte budget)."""
    value = "x" * 1_000_000
    path = tmp_path / "ppo_trainer.yaml"
    path.write_text(f"big: &b {value}\nrefs:\n" + "".join(f"  r{i}: *b\n" for i in range(1000)))
    start = time.perf_counter()
    with pytest.raises(InputError, match="more than 4 MiB of values .*YAML byte limit"):
        load_yaml_file(path)
    assert time.perf_counter() - start < 5
    fits = MAX_EXPANDED_BYTES // 1_000_000 - 1  # a value reused a few times stays fine
    loaded = load_yaml_text(f"big: &b {value}\nrefs: [{', '.join(['*b'] * (fits - 1))}]\n")
    assert len(loaded["refs"]) == fits - 1 and loaded["refs"][0] == value


def test_the_compositions_of_one_run_share_one_byte_budget(tmp_path: Path) -> None:
    """Issue 35: calls x configs. Each composition stays under MAX_LOAD_BYTES; together they are
    bounded by MAX_RUN_LOAD_BYTES until the next run starts."""
    from generator.schema.compose import MAX_RUN_LOAD_BYTES, start_run

    conf = tmp_path / "conf"
    (conf / "g").mkdir(parents=True)
    (conf / "g" / "big.yaml").write_text("".join(f"k{i}: {'v' * 60}\n" for i in range(20_000)))  # 1.3 MB
    fits = MAX_RUN_LOAD_BYTES // (conf / "g" / "big.yaml").stat().st_size
    for i in range(fits + 1):
        (conf / f"c{i}.yaml").write_text("defaults:\n  - g: big\n  - _self_\n")
    start_run()
    for i in range(fits):
        assert compose(conf, f"c{i}")["g"]["k0"] == "v" * 60
    with pytest.raises(InputError, match="calls compose more than 8 MB of YAML in all .*calls x configs"):
        compose(conf, f"c{fits}")
    start_run()
    assert compose(conf, f"c{fits}")["g"]["k1"] == "v" * 60


def test_not_yaml_is_a_value_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("a: [1\n")
    with pytest.raises(InvalidYaml, match=f"{path}: not valid YAML"):
        load_yaml_file(path)
    path.write_text("a: !!python/object/apply:os.system ['true']\n")
    with pytest.raises(InvalidYaml):
        load_yaml_file(path)


def test_fifo_and_oversized_yaml_are_refused_before_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "conf.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        load_yaml_file(fifo)  # never blocks
    big = tmp_path / "big.yaml"
    with big.open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: costs no disk
    with pytest.raises(InputError, match="too large|limit"):
        load_yaml_file(big)


@pytest.mark.parametrize("case", ["fan-out", "alias-bomb"])
def test_check_on_a_hostile_config_path_is_one_line_exit_2(tmp_path: Path, case: str) -> None:
    conf = tmp_path / "conf"
    if case == "fan-out":
        _fan_out(conf, per_level=10, levels=5)
    else:
        conf.mkdir()
        (conf / "ppo_trainer.yaml").write_text(_alias_bomb())
    script = tmp_path / "run.sh"
    script.write_text(f"python3 -m verl.trainer.main_ppo --config-path={conf} --config-name=ppo_trainer a=1\n")
    result = _gen_check(script, "--verl-version", "0.7.0")
    assert result.returncode == 2
    errors = result.stderr.splitlines()
    assert len(errors) == 1 and errors[0].startswith("gen: error: ") and "refused" in errors[0]

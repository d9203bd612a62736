"""The recipe library: format validation, loading (packaged + user), search, and `gen list`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.base.errors import InputError
from generator.library.recipe_format import recipe_from_mapping, recipe_to_mapping
from generator.library.store import load_library, read_recipe, user_library_dir
from generator.base.resources import recipes_dir

PACKAGED = sorted(recipes_dir().glob("*.yaml"))
BOX_CHARS = set("┏┓┗┛━┃│─┼┡┩╇┳┻└┘┌┐")
ANSI = re.compile(r"\x1b\[")
COLOUR = re.compile(r"\x1b\[[0-9;]*3[0-9](;[0-9]+)*m")

MINIMAL = """\
name: my-recipe
model: Qwen2.5-7B-Instruct
algorithm: grpo
gpus: 8
verl_versions: ["0.7.0"]
config:
  layout: {tp: 2, pp: 1}
  batch: {train_batch_size: 64, ppo_mini_batch_size: 16, micro_batch_per_gpu: 2}
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- packaged recipes


def test_packaged_library_has_verl_layouts_and_reads_cleanly():
    lib = load_library(packaged=True)
    assert lib.errors == []
    assert len(PACKAGED) >= 30
    verl_rows = [r for r in lib.recipes.values() if r.name.startswith("verl-")]
    assert len(verl_rows) >= 30
    assert sum("verl-tested" in r.tags for r in verl_rows) >= 20
    assert all(r.provenance.startswith("modelled on verl ") for r in verl_rows)


@pytest.mark.parametrize("path", [p for p in PACKAGED if p.stem.startswith("verl-")], ids=lambda p: p.stem)
def test_a_recipe_is_labelled_tested_only_when_its_own_verdict_fits(path):
    """Issue 23: the library tells the truth. Over by our memory model -> predicted-over (or the
    published OOM's known-oom), never verl-tested; fits -> verl-tested."""
    from generator.library.verdict import KNOWN_OOM_TAG, OVER_TAG, TESTED_TAG, recipe_verdict

    recipe = read_recipe(path, origin="packaged")
    verdict = recipe_verdict(recipe)
    assert verdict is not None
    if verdict.fits:
        assert TESTED_TAG in recipe.tags and OVER_TAG not in recipe.tags, verdict.text()
    else:
        assert TESTED_TAG not in recipe.tags and (OVER_TAG in recipe.tags or KNOWN_OOM_TAG in recipe.tags), \
            verdict.text()


def test_the_3124_layout_is_a_known_oom_rendered_only_with_force_and_its_fix_fits():
    from typer.testing import CliRunner

    from generator.cli import app

    runner = CliRunner()
    refused = runner.invoke(app, ["recipe", "verl-qwen2.5-32b-grpo-8xh20", "-o", "-"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert "predicted not to fit 8 x h20: optimizer_step needs" in refused.stderr
    assert "#3124" in refused.stderr and "--force renders it anyway" in refused.stderr
    forced = runner.invoke(app, ["recipe", "verl-qwen2.5-32b-grpo-8xh20", "-o", "-", "--force"])
    assert forced.exit_code == 0 and "rendered because of --force" in forced.stderr
    fixed = runner.invoke(app, ["recipe", "fixed-qwen2.5-32b-grpo-8xh20-cpu-optimizer", "-o", "-"])
    assert fixed.exit_code == 0, fixed.stderr
    assert "predicted not to fit" not in fixed.stderr


@pytest.mark.parametrize("path", PACKAGED, ids=lambda p: p.stem)
def test_packaged_recipe_is_consistent(path):
    from generator.layout import derive
    from generator.library.convert import recipe_gpu, recipe_model

    recipe = read_recipe(path, origin="packaged")
    assert recipe.name == path.stem, "file name and recipe name must agree (gen show NAME finds the file)"
    model = recipe_model(recipe)
    gpu = recipe_gpu(recipe)
    lay = recipe.config.layout
    layout = derive.Layout(gpus=recipe.gpus, tp=lay.tp, pp=lay.pp, cp=lay.cp, ep=lay.ep, etp=lay.etp,
                           vpp=lay.vpp, first_stage_layers=lay.first_stage_layers,
                           last_stage_layers=lay.last_stage_layers, gpus_per_node=recipe.gpus_per_node)
    assert derive.layout_problems(layout, model) == []
    assert derive.rollout_problems(recipe.gpus, recipe.config.rollout_tp, gpus_per_node=recipe.gpus_per_node,
                                   model=model) == []
    assert recipe.gpus_per_node <= 16 and gpu.memory_gib > 0
    cfg = recipe.config
    if cfg.use_dynamic_bsz:
        # verl's D7 rule: every token cap x CP covers one whole sequence
        assert cfg.token_budget * lay.cp >= cfg.prompt_len + cfg.response_len
    # a mapping round trip keeps every field
    again = recipe_from_mapping(recipe_to_mapping(recipe), where="roundtrip", path=path, origin="packaged")
    assert again == recipe


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("edit, field, words", [
    (lambda t: t.replace("name: my-recipe\n", ""), "name", "missing"),
    (lambda t: t.replace("gpus: 8", "gpus: eight"), "gpus", "expected an integer"),
    (lambda t: t.replace("gpus: 8", "gpus: 0"), "gpus", ">= 1"),
    (lambda t: t.replace("algorithm: grpo", "algorithm: sft"), "algorithm", "not one of"),
    (lambda t: t.replace("tp: 2", "tp: 2, tq: 1"), "config.layout.tq", "unknown field"),
    (lambda t: t.replace("micro_batch_per_gpu: 2", "micro_batch_per_gpu: true"),
     "config.batch.micro_batch_per_gpu", "expected an integer"),
    (lambda t: t.replace('["0.7.0"]', '["seven"]'), "verl_versions", "not a release"),
    (lambda t: t.replace("ppo_mini_batch_size: 16", "ppo_mini_batch_size: 128"),
     "config.batch.ppo_mini_batch_size", "larger than train_batch_size"),
    (lambda t: t + "colour: red\n", "colour", "unknown field"),
    (lambda t: t.replace("name: my-recipe", "name: My Recipe"), "name", "lower-case"),
    (lambda t: t.replace("micro_batch_per_gpu: 2}", "micro_batch_per_gpu: 2, use_dynamic_bsz: true}"),
     "config.batch.token_budget", "required"),
])
def test_validation_errors_are_one_line_and_name_file_and_field(tmp_path, edit, field, words):
    path = write(tmp_path, "r.yaml", edit(MINIMAL))
    with pytest.raises(InputError) as err:
        read_recipe(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert f"field '{field}'" in message
    assert words in message


@pytest.mark.parametrize("content, words", [
    (b"name: [unclosed\n", "invalid YAML at line"),
    (b"\xff\xfe\x00bad", "not UTF-8"),
    (b"- just\n- a list\n", "expected a mapping"),
    (b"!!python/object:os.system {}\n", "invalid YAML"),
])
def test_unreadable_recipe_files(tmp_path, content, words):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_recipe(path)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_defaults_fill_the_optional_fields(tmp_path):
    recipe = read_recipe(write(tmp_path, "r.yaml", MINIMAL))
    assert (recipe.nodes, recipe.gpu, recipe.backend) == (1, "h100", "megatron")
    assert recipe.config.rollout_tp == 2  # follows training TP when unset
    assert recipe.config.layout.cp == 1 and recipe.config.overrides == {}


# --------------------------------------------------------------------------- the user library


def test_user_library_location(monkeypatch, tmp_path):
    monkeypatch.delenv("VERL_GEN_LIBRARY", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert user_library_dir() == tmp_path / "xdg" / "verl-gen" / "recipes"
    monkeypatch.setenv("VERL_GEN_LIBRARY", str(tmp_path / "env"))
    assert user_library_dir() == tmp_path / "env"
    assert user_library_dir(tmp_path / "flag") == tmp_path / "flag"


def test_user_recipes_join_shadow_and_fail_alone(tmp_path):
    user = tmp_path / "lib"
    write(user, "mine.yaml", MINIMAL)
    shadow = (recipes_dir() / "verl-qwen2-7b-grpo-8gpu.yaml").read_text().replace("gpus: 8", "gpus: 16") \
        .replace("nodes: 1", "nodes: 2")
    write(user, "shadow.yaml", shadow)
    write(user, "broken.yaml", "name: [\n")
    lib = load_library(user)
    assert lib.recipes["my-recipe"].origin == "user"
    assert lib.recipes["verl-qwen2-7b-grpo-8gpu"].gpus == 16  # the user's copy wins
    assert len(lib.errors) == 1 and "broken.yaml" in lib.errors[0]
    assert len(lib.recipes) == len(PACKAGED) + 1


def test_unknown_recipe_suggests_close_names():
    with pytest.raises(InputError, match="close names: verl-qwen2-7b-grpo-8gpu"):
        load_library().get("verl-qwen2-7b-grpo-8gp")


def test_search_filters():
    lib = load_library()
    by_model = lib.search(model="qwen3-30b")
    assert by_model and all("30B-A3B" in r.model for r in by_model)
    assert all(r.gpus == 32 for r in lib.search(gpus=32))
    assert {r.algorithm for r in lib.search(algo="PPO")} == {"ppo"}
    assert all("lora" in r.tags for r in lib.search(tag="lora"))
    assert lib.search(model="qwen2.5-7b", algo="dapo", gpus=64)[0].name == "verl-qwen2.5-7b-dapo-64gpu"
    assert lib.search(model="no-such-model") == []
    # names users type resolve through the model registry when no name contains them
    assert {r.model for r in lib.search(model="Qwen/Qwen2.5-7B-Instruct")} == {"Qwen2.5-7B", "Qwen2.5-7B-Instruct"}
    assert {r.name for r in lib.search(model="/models/Qwen3-8B-Base", algo="dapo")} == {
        "verl-qwen3-8b-dapo-8gpu", "planned-qwen3-8b-dapo-8gpu"}


# --------------------------------------------------------------------------- gen list


runner = CliRunner()


def test_list_json_fields():
    result = runner.invoke(app, ["list", "--format", "json", "--model", "deepseek-v3"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert document["schema_version"] == 1
    rows = document["recipes"]
    assert {"name", "model", "algo", "gpus", "nodes", "gpu", "verl_versions"} <= set(rows[0])
    names = {r["name"] for r in rows}
    assert "verl-deepseek-v3-grpo-96xh20" in names
    row = next(r for r in rows if r["name"] == "verl-deepseek-v3-grpo-96xh20")
    assert (row["gpus"], row["nodes"], row["gpu"], row["layout"]["pp"]) == (96, 12, "h20", 12)


def test_list_names_the_algorithm_each_script_runs():
    """verl's GPG example renders as GRPO with GPG's estimator: the ALGO column says gpg, and
    `--algo gpg` finds it; verl's DeepSeek-V3 GRPO example keeps its KL loss: grpo, not dapo."""
    rows = json.loads(runner.invoke(app, ["list", "--format", "json"]).stdout)["recipes"]
    algo = {r["name"]: r["algo"] for r in rows}
    assert algo["verl-qwen2-7b-gpg-8gpu"] == "gpg"
    assert algo["example-main2608-grpo-deepseek-v3-671b"] == "grpo"
    found = json.loads(runner.invoke(app, ["list", "--format", "json", "--algo", "gpg"]).stdout)["recipes"]
    assert [r["name"] for r in found] == ["verl-qwen2-7b-gpg-8gpu"]


def test_list_piped_is_plain_text(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    result = runner.invoke(app, ["list", "--gpus", "8", "--algo", "ppo"])
    assert result.exit_code == 0
    out = result.stdout
    assert not BOX_CHARS & set(out) and not ANSI.search(out)
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["NAME", "MODEL", "ALGO", "GPUS"]
    assert any(line.startswith("verl-qwen2-7b-ppo-8gpu ") and "TP2 PP2" in line for line in lines)
    assert all(line == line.rstrip() for line in lines)


def test_list_on_a_terminal_draws_a_table(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    out = runner.invoke(app, ["list", "--gpus", "8", "--algo", "ppo"]).stdout
    assert BOX_CHARS & set(out) and COLOUR.search(out)
    assert "verl-qwen2-7b-ppo-8gpu" in out


def test_list_no_color_keeps_the_table_without_colour(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    out = runner.invoke(app, ["list", "--gpus", "8", "--algo", "ppo"]).stdout
    assert BOX_CHARS & set(out)
    assert not COLOUR.search(out)


def test_list_bad_options_are_one_line_exit_2(tmp_path):
    result = runner.invoke(app, ["list", "--format", "xml"])
    assert result.exit_code == 2 and "--format" in result.stderr and result.stdout == ""
    missing = tmp_path / "nope"
    result = runner.invoke(app, ["list", "--library", str(missing)])
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_list_includes_user_recipes_and_warns_about_broken_ones(tmp_path):
    write(tmp_path, "mine.yaml", MINIMAL)
    write(tmp_path, "broken.yaml", "gpus: [\n")
    result = runner.invoke(app, ["list", "--library", str(tmp_path), "--format", "json", "--model", "my-recipe"])
    assert result.exit_code == 0
    assert [r["name"] for r in json.loads(result.stdout)["recipes"]] == ["my-recipe"]
    assert "broken.yaml" in result.stderr


# --------------------------------------------------------------------------- gen show NAME output modes


def test_show_recipe_piped_is_plain(monkeypatch):
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    result = runner.invoke(app, ["show", "verl-qwen2.5-0.5b-ppo-8gpu"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert not ANSI.search(out) and not BOX_CHARS & set(out)
    assert out.splitlines()[0] == "verl-qwen2.5-0.5b-ppo-8gpu"
    assert "  layout     TP2 PP2 VPP2 CP2" in out


def test_show_recipe_on_a_terminal_and_with_no_color(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = runner.invoke(app, ["show", "verl-qwen2.5-0.5b-ppo-8gpu"]).stdout
    assert COLOUR.search(coloured)
    monkeypatch.setenv("NO_COLOR", "1")
    plain = runner.invoke(app, ["show", "verl-qwen2.5-0.5b-ppo-8gpu"]).stdout
    assert not COLOUR.search(plain)
    assert "\x1b" not in plain  # honest NO_COLOR: no bold either
    listed = runner.invoke(app, ["list"]).stdout
    assert "\x1b" not in listed and "│" in listed  # the box stays on a terminal, escapes go
    assert "TP2 PP2 VPP2 CP2" in re.sub(r"\x1b\[[0-9;]*m", "", plain)


def test_list_on_a_narrow_terminal_drops_columns_not_rows(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "80")
    out = runner.invoke(app, ["list", "--gpus", "8", "--algo", "ppo"]).stdout
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in out.splitlines()]
    assert all(len(line) <= 80 for line in lines)
    assert "TAGS" not in lines[1] and "LAYOUT" in lines[1]
    body = [line for line in lines if line.startswith("│")]
    assert len(body) == len(load_library().search(gpus=8, algo="ppo"))  # one line per recipe

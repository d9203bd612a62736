"""Hostile and broken input at the command line (issue 13): bounded, one line, exit 2 — never a
crash, a hang or a silent pass. Each test makes its own input."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.base import files as files_mod
from generator.cli import app

CALL = (
    "python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer \\\n"
    "    trainer.n_gpus_per_node=8 \\\n"
    "    data.train_batch_size=60 \\\n"
    "    actor_rollout_ref.rollout.n=4 \\\n"
    "    actor_rollout_ref.actor.ppo_mini_batch_size={mini} \\\n"
    "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n"
    "    trainer.experiment_name={name} \\\n"
    "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2\n"
)


def script(tmp_path: Path, mini: int = 24, name: str = "run", filename: str = "run.sh") -> Path:
    path = tmp_path / filename
    path.write_text("#!/bin/bash\n" + CALL.format(mini=mini, name=name))
    return path


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def gen(*args: str, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    """The real command line in a child process (a hang becomes a test failure, not a stuck suite)."""
    env = dict(os.environ, NO_COLOR="1")
    return subprocess.run([sys.executable, "-m", "generator", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False)


def one_error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in text
    return lines[0]


# --- reading -----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "show", "fix", "explain"])
def test_a_fifo_is_refused_without_hanging(tmp_path, command):
    fifo = tmp_path / "pipe.sh"
    os.mkfifo(fifo)
    done = gen(command, str(fifo), timeout=30)
    assert done.returncode == 2
    assert "FIFO" in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_diff_refuses_a_fifo_without_hanging(tmp_path):
    fifo = tmp_path / "pipe.sh"
    os.mkfifo(fifo)
    done = gen("diff", str(fifo), str(script(tmp_path)), timeout=30)
    assert done.returncode == 2 and "FIFO" in done.stderr


def test_check_dev_zero_is_refused_at_once():
    done = gen("check", "/dev/zero", timeout=30)
    assert done.returncode == 2
    assert one_error_line(done.stderr) == "gen: error: /dev/zero: is a device, not a regular file"


def test_check_refuses_a_file_over_the_cap_before_reading(tmp_path):
    big = tmp_path / "big.sh"
    with open(big, "wb") as handle:  # sparse: no data blocks, 2 GiB of size
        handle.truncate(2 * 1024 ** 3)
    result = run("check", str(big))
    assert result.exit_code == 2
    assert result.stderr == f"gen: error: {big}: 2048.0 MB is too large for a launch script (limit 1 MB)\n"
    assert result.stdout == ""


def test_stdin_is_read_as_dash(tmp_path):
    result = CliRunner().invoke(app, ["check", "-", "--format", "json"],
                                input="python3 -m verl.trainer.main_ppo data.train_batch_size=oops\n")
    assert json.loads(result.stdout)["files"][0]["path"] == "-"


@pytest.mark.parametrize("name", ["config.yaml", "model.json", "settings.toml"])
def test_check_refuses_a_config_file(tmp_path, name):
    path = tmp_path / name
    path.write_text("data:\n  train_batch_size: 8\n")
    result = run("check", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"gen: error: {path}: ") and "not a launch script" in result.stderr


def test_binary_file_names_the_path_once(tmp_path):
    path = tmp_path / "x.sh"
    path.write_bytes(b"\0\1\2")
    result = run("check", str(path))
    assert result.exit_code == 2
    assert result.stderr == f"gen: error: {path}: binary file (contains NUL bytes), not a shell script\n"
    assert str(path) not in result.stdout


@pytest.mark.parametrize("command", ["check", "explain", "fix", "show"])
def test_a_syntax_error_is_exit_2_in_every_command(tmp_path, command):
    path = tmp_path / "broken.sh"
    path.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8\nif [[ ; then ( fi\n")
    result = run(command, str(path))
    assert result.exit_code == 2
    assert "bash syntax error at line 2 (the rest was read)" in result.output


@pytest.mark.parametrize("command", ["check", "fix"])
@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_rule_codes_are_bad_input(tmp_path, command, option):
    result = run(command, str(script(tmp_path)), option, "VB1O6")
    assert result.exit_code == 2
    assert "unknown rule code 'VB1O6'" in one_error_line(result.output)


def test_known_prefixes_still_select(tmp_path):
    result = run("check", str(script(tmp_path)), "--select", "VB,vb1")
    assert result.exit_code == 1


# --- machine-readable formats when the run fails --------------------------------------------------


def test_json_error_document_on_a_global_failure(tmp_path):
    result = run("check", str(script(tmp_path)), "--format", "json", "--verl-version", "not-a-version")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["error"] and doc["files"] == [] and doc["schema_version"] == 1


def test_sarif_error_document_on_a_global_failure(tmp_path):
    result = run("check", str(script(tmp_path)), "--format", "sarif", "--model-config", str(tmp_path / "none.json"))
    assert result.exit_code == 2
    run_ = json.loads(result.stdout)["runs"][0]
    invocation = run_["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert invocation["toolExecutionNotifications"][0]["message"]["text"]


def test_github_error_annotation_on_a_global_failure(tmp_path):
    result = run("check", str(script(tmp_path)), "--format", "github", "--select", "NOPE")
    assert result.exit_code == 2
    assert result.stdout.startswith("::error title=gen check::--select: unknown rule code 'NOPE'")


def test_sarif_uri_is_percent_encoded(tmp_path, monkeypatch):
    folder = tmp_path / "my scripts%"
    folder.mkdir()
    script(folder)
    monkeypatch.chdir(tmp_path)
    result = run("check", "my scripts%/run.sh", "--format", "sarif")
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(result.stdout)["runs"][0]["results"]}
    assert uris == {"my%20scripts%25/run.sh"}


def test_sarif_names_the_tool_not_verl(tmp_path):
    from generator import __version__

    driver = json.loads(run("check", str(script(tmp_path)), "--format", "sarif").stdout)["runs"][0]["tool"]["driver"]
    assert driver["version"] == __version__
    assert "verl-project/verl" not in driver.get("informationUri", "")
    assert "volcengine/verl" not in driver.get("informationUri", "")


# --- terminal escapes ----------------------------------------------------------------------------


ESC_VALUE = "'run\x1b]0;pwned\x07\x1b[2J'"


def test_escape_sequences_in_script_values_are_shown_not_obeyed(tmp_path):
    path = script(tmp_path, mini=24, name=ESC_VALUE)
    for command in ("check", "show", "explain"):
        result = run(command, str(path))
        assert "\x1b" not in result.output and "\x07" not in result.output, command
    shown = run("show", str(path)).output
    assert "\\x1b]0;pwned\\x07" in shown


def test_escape_sequences_in_a_file_name_are_shown_not_obeyed(tmp_path):
    path = script(tmp_path, filename="a\x1b[31mb.sh")
    result = run("check", str(path))
    assert "\x1b" not in result.output and "a\\x1b[31mb.sh" in result.output


def test_escape_sequences_in_a_recipe_description(tmp_path):
    library = tmp_path / "lib"
    library.mkdir()
    import yaml

    source = Path(__file__).resolve().parent.parent / "recipes"
    recipe = yaml.safe_load(sorted(source.rglob("*.yaml"))[0].read_text())
    recipe.update(name="evil", description="about \x1b[31mred\x07")
    (library / "evil.yaml").write_text(yaml.safe_dump(recipe))
    shown = run("show", "evil", "--library", str(library))
    listed = run("list", "--library", str(library))
    for result in (shown, listed):
        assert "\x1b" not in result.output and "\x07" not in result.output
    assert "\\x1b[31mred\\x07" in shown.output


# --- writing -------------------------------------------------------------------------------------


RECIPE = ("recipe", "--model", "qwen2-7b", "--gpus", "8")


@pytest.mark.parametrize("target", [".", "/", "somedir"])
def test_recipe_output_onto_a_directory_is_one_line(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "somedir").mkdir()
    result = run(*RECIPE, "-o", target, "--force")
    assert result.exit_code == 2
    assert "is a directory" in one_error_line(result.output)


def test_recipe_output_with_a_300_character_name(tmp_path):
    result = run(*RECIPE, "-o", str(tmp_path / ("r" * 300 + ".sh")))
    assert result.exit_code == 2
    assert "too long" in one_error_line(result.output)
    assert list(tmp_path.iterdir()) == []


def test_recipe_output_on_a_full_disk(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files_mod.os, "fsync", full)
    result = run(*RECIPE, "-o", str(tmp_path / "run.sh"))
    assert result.exit_code == 2
    assert "No space left on device" in one_error_line(result.output)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["fifo", "device-link"])
def test_recipe_output_never_replaces_a_special_file(tmp_path, kind):
    target = tmp_path / "out.sh"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/null")
    result = run(*RECIPE, "-o", str(target), "--force")
    assert result.exit_code == 2
    assert "nothing written" in one_error_line(result.output)
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(target).st_mode)
    else:
        assert target.is_symlink()


def test_recipe_output_refuses_a_read_only_file_even_with_force(tmp_path):
    target = tmp_path / "run.sh"
    target.write_text("mine\n")
    target.chmod(0o444)
    result = run(*RECIPE, "-o", str(target), "--force")
    assert result.exit_code == 2
    assert "read-only" in one_error_line(result.output)
    assert target.read_text() == "mine\n"


def test_fix_write_refuses_a_file_changed_while_it_ran(tmp_path, monkeypatch):
    path = script(tmp_path, mini=24)
    from generator.fix import engine

    real = engine.fix_source

    def fix_then_someone_edits(*args, **kwargs):
        result = real(*args, **kwargs)
        path.write_text(path.read_text() + "# edited meanwhile\n")
        return result

    monkeypatch.setattr(engine, "fix_source", fix_then_someone_edits)
    result = run("fix", str(path), "--write", "--unsafe")
    assert result.exit_code == 2
    assert "changed since it was read" in result.output
    assert path.read_text().endswith("# edited meanwhile\n")


def test_fix_write_refuses_to_split_hard_links(tmp_path):
    path = script(tmp_path, mini=24)
    os.link(path, tmp_path / "same.sh")
    before = path.read_bytes()
    result = run("fix", str(path), "--write", "--unsafe")
    assert result.exit_code == 2 and "hard links" in result.output
    assert path.read_bytes() == before == (tmp_path / "same.sh").read_bytes()


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_fix_write_keeps_owner_and_group(tmp_path):
    path = script(tmp_path, mini=24)
    os.chown(path, 65534, 65534)
    os.chmod(tmp_path, 0o777)
    result = run("fix", str(path), "--write", "--unsafe")
    assert "fixed" in result.output
    st = path.stat()
    assert (st.st_uid, st.st_gid) == (65534, 65534)


@pytest.mark.parametrize("command", ["show", "check", "fix", "explain"])
def test_thousands_of_trainer_calls_are_refused_by_every_reader(tmp_path, command):
    path = tmp_path / "calls.sh"
    path.write_text("".join(f"python3 -m verl.trainer.main_ppo data.train_batch_size={i}\n" for i in range(300)))
    result = run(command, str(path))
    assert result.exit_code == 2
    refused = [line for line in result.stderr.splitlines() if "more than 256 trainer calls" in line]
    assert len(refused) == 1 and str(path) in refused[0] and "Traceback" not in result.output


def test_the_largest_accepted_number_of_calls_is_read(tmp_path):
    path = tmp_path / "calls.sh"
    path.write_text("".join(f"python3 -m verl.trainer.main_ppo data.train_batch_size={i}\n" for i in range(256)))
    result = run("show", str(path), "--format", "json")
    assert result.exit_code == 0
    assert len(json.loads(result.stdout)["files"][0]["invocations"]) == 256


@pytest.mark.parametrize("argv", [["show", "nope.sh", "--format", "bad"], ["diff", "a.sh", "b.sh", "--format", "json"],
                                  ["plan", "--model", "no-such-model", "--gpus", "8", "--format", "json"],
                                  ["explain", "x.sh", "--format", "json", "--verl-version", "9.9"]])
def test_json_formats_print_an_error_document_when_the_command_fails(tmp_path, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    result = run(*argv)
    assert result.exit_code == 2
    if "--format" in argv and argv[argv.index("--format") + 1] == "json":
        document = json.loads(result.stdout)
        assert document["schema_version"] == 1 and document["error"]


@pytest.mark.parametrize("kind", ["fifo", "sparse"])
def test_model_config_is_bounded(tmp_path, kind):
    config = tmp_path / "config.json"
    if kind == "fifo":
        os.mkfifo(config)
    else:
        with open(config, "wb") as handle:
            handle.truncate(2 * 1024 ** 3)
    done = gen("check", str(script(tmp_path)), "--model-config", str(config), timeout=60)
    assert done.returncode == 2
    assert "FIFO" in done.stderr or "too large" in done.stderr
    assert "Traceback" not in done.stderr


def test_model_config_nested_too_deeply_is_one_line(tmp_path):
    config = tmp_path / "config.json"
    config.write_text("[" * 100_000 + "]" * 100_000)
    result = run("check", str(script(tmp_path)), "--model-config", str(config))
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_a_huge_sparse_recipe_is_skipped_without_reading_it(tmp_path):
    library = tmp_path / "lib"
    library.mkdir()
    with open(library / "huge.yaml", "wb") as handle:
        handle.truncate(2 * 1024 ** 3)
    done = gen("list", "--library", str(library), timeout=60)
    assert done.returncode == 0
    assert "huge.yaml" in done.stderr and "too large for a recipe" in done.stderr


_GOOD_CONFIG = {"model_type": "qwen2", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
                "num_key_value_heads": 2, "intermediate_size": 4096, "vocab_size": 32000}


@pytest.mark.parametrize("field, value, text", [
    ("head_dim", "128", None),                       # a string where a size belongs
    ("head_dim", -64, None),                         # negative: was accepted
    ("head_dim", float("nan"), "NaN"),               # NaN: 'cannot convert float NaN to integer' before
    ("num_attention_heads", 0, None),
    ("num_attention_heads", 10**9, None),            # huge heads
    ("num_hidden_layers", 10**12, None),             # hung the planner before
    ("hidden_size", 1e300, None),
    ("num_experts", float("inf"), "Infinity"),
    ("num_experts", None, "1" * 5000),               # a 5,000-digit integer: a ValueError inside json before
    ("moe_intermediate_size", "wide", None),         # with experts set below
    ("hidden_size", 4, None),                        # smaller than the head count: head_dim 0
])
def test_crafted_model_configs_are_one_line_exit_2(tmp_path, field, value, text):
    cfg = dict(_GOOD_CONFIG)
    if field == "moe_intermediate_size":
        cfg["num_experts"] = 8
    cfg[field] = value
    body = json.dumps(cfg, allow_nan=True)
    if text is not None:  # values json.dumps cannot write as the attack needs
        body = body.replace('"' + field + '": ' + json.dumps(value, allow_nan=True), f'"{field}": {text}')
    config = tmp_path / "config.json"
    config.write_text(body)
    result = run("check", str(script(tmp_path)), "--model-config", str(config))
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    assert field in result.output or "config.json" in result.output


# --- values built by repetition: exponential growth in a few lines -------------------------

MAIN = "python3 -m verl.trainer.main_ppo"
GROWING = {
    "string doubled": "x=a\n" + "x=$x$x\n" * 60 + f"{MAIN} trainer.project_name=$x\n",
    "string quadrupled in quotes": "x=a\n" + 'x="${x}${x}${x}${x}"\n' * 30 + f"{MAIN} trainer.project_name=$x\n",
    "pattern replacement": "x=aaaaaaaaaa\n" + "x=${x//a/aaaaaaaaaa}\n" * 12 + f"{MAIN} trainer.project_name=$x\n",
    "array doubled": "a=(x)\n" + 'a=("${a[@]}" "${a[@]}")\n' * 40 + f'{MAIN} "${{a[@]}}"\n',
    "array appended to itself": "a=()\n" + 'a+=("${a[@]}" "${a[@]}" x)\n' * 40 + f'{MAIN} trainer.project_name="${{a[*]}}"\n',
    "positional doubled": "set -- a\n" + 'set -- "$@" "$@"\n' * 40 + f'{MAIN} trainer.project_name="$*"\n',
    # not exponential, but each line copied the whole list: quadratic, minutes at 1 MiB
    "array appended line after line": "a=()\n" + "a+=(x)\n" * 140_000 + f'{MAIN} "${{a[@]}}"\n',
    "string appended line after line": "s=\n" + "s+=x\n" * 190_000 + f"{MAIN} trainer.project_name=$s\n",
    "digits doubled then arithmetic": "x=9\n" + 'x="$x$x"\n' * 25 + f"{MAIN} trainer.nnodes=$((x*x))\n",
    "many stars on a long value": "x=" + "a" * 3000 + "\ncase $x in\n  *a*a*a*a*a*a*a*a*b) N=1;;\nesac\n"
                                  + "if [[ $x == *a*a*a*a*a*a*a*c ]]; then N=2; fi\ny=${x%%a*a*a*a*b}\n"
                                  + f"{MAIN} trainer.nnodes=$N trainer.project_name=$y\n",
}


@pytest.mark.parametrize("name", GROWING)
def test_values_built_by_repetition_stay_bounded_and_explicit(tmp_path, name):
    """Each input would need 2^40 characters (or n^8 regex steps) if followed: the reader
    stops the value at its caps and says so, or refuses the script in one line when even the
    capped values cost more than its work budget; show answers at once (the child process has
    a 30 s timeout for the whole run, measured 1 s)."""
    path = tmp_path / "grow.sh"
    path.write_text(GROWING[name])
    shown = gen("show", str(path), "--format", "json", timeout=30)
    document = json.loads(shown.stdout)["files"][0]
    if shown.returncode == 2:
        assert "steps of expansion" in document["error"] and "\n" not in document["error"]
    else:
        assert shown.returncode == 0, shown.stderr
        text = json.dumps(document["invocations"][0])
        assert len(text) < 400_000  # no value past the caps reaches the report
        if name == "digits doubled then arithmetic":
            assert "x is not known" in text
        elif name != "many stars on a long value":
            assert "<?too-large>" in text
    checked = gen("check", str(path), "--verl-version", "0.7.0", timeout=30)
    assert checked.returncode in (0, 1, 2) and "Traceback" not in checked.stderr
    assert (checked.returncode == 2) == (shown.returncode == 2)


def test_a_value_referenced_thousands_of_times_is_refused_in_every_command(tmp_path):
    # 4,096 parts copied 3,000 times: 12 million copies; the work budget stops it at 300,000.
    path = tmp_path / "refs.sh"
    path.write_text("x=a\n" + 'x="$x$x"\n' * 12 + "y=$x\n" * 3000 + f"{MAIN} trainer.nnodes=1\n")
    for command in ("show", "check", "fix", "explain"):
        result = gen(command, str(path), timeout=60)
        assert result.returncode == 2, (command, result.stdout, result.stderr)
        assert "steps of expansion" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["yaml-flow", "yaml-block", "toml"])
def test_a_config_nested_too_deeply_names_that_file_not_the_script(tmp_path, kind):
    script = tmp_path / "run.sh"
    script.write_text(f"{MAIN} data.train_batch_size=8\n")
    if kind == "toml":
        config = tmp_path / ".verl-gen.toml"
        config.write_text("select = " + "[" * 100_000 + "]" * 100_000 + "\n")
        options: list[str] = []
    else:
        folder = tmp_path / "conf"
        folder.mkdir()
        config = folder / "ppo_trainer.yaml"
        config.write_text("a: " + "[" * 50_000 + "]" * 50_000 + "\n" if kind == "yaml-flow"
                          else "a:\n" + "".join("  " * i + "k:\n" for i in range(1, 1500)))
        options = ["--config-dir", str(folder)]
    result = gen("check", str(script), *options, timeout=60)
    assert result.returncode == 2
    assert f"{config}: the {'TOML' if kind == 'toml' else 'YAML'} nests too deeply to read" in result.stderr
    assert "Traceback" not in result.stderr


def test_diff_keeps_a_file_name_or_value_with_a_newline_on_one_line(tmp_path):
    odd = tmp_path / "evil\x1b[2Jname\n.sh"
    odd.write_text(f"{MAIN} data.train_batch_size=8 trainer.project_name=$'a\\nb'\n")
    plain = tmp_path / "ok.sh"
    plain.write_text(f"{MAIN} data.train_batch_size=16 trainer.project_name=c\n")
    result = run("diff", str(odd), str(plain), "--verl-version", "0.7.0")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"A: {tmp_path}/evil\\x1b[2Jname\\n.sh (script)"
    assert "\x1b" not in result.output
    assert not any(line.startswith(".sh") for line in lines)
    # the value's newline is a Hydra grammar error: its note is one line too
    assert any(line.endswith("(token recognition error at: '\\n')") for line in lines)

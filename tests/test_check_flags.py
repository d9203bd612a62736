"""`gen check`'s everyday flags (issue 22), the line order and columns of its findings, the
suppression verdicts (VS718/VS719) and the project's `exclude` / `per-file-ignores`; `gen fix`'s
dry-run exit code and `gen fix -`. Each test writes its own scripts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from text_report import finding_line, finding_lines, findings

# Two errors (VB106 at line 9, VB102-free), a warning-free info (VS705 at line 11), all at 0.7.0.
SCRIPT = (
    "#!/bin/bash\n"
    "set -x\n"
    "python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer \\\n"
    "    algorithm.adv_estimator=grpo \\\n"
    "    trainer.n_gpus_per_node=8 \\\n"
    "    data.train_batch_size=60 \\\n"
    "    data.filter_overlong_prompts=True \\\n"
    "    actor_rollout_ref.rollout.n=4 actor_rollout_ref.rollout.name=vllm \\\n"
    "    actor_rollout_ref.actor.ppo_mini_batch_size=24 \\\n"
    "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n"
    "    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 trainer.logger=[console] \\\n"
    "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2\n"
)


def run(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, list(args), input=stdin)


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "run.sh"
    path.write_text(SCRIPT)
    return path


def check(path: Path, *options: str):
    return run("check", str(path), "--verl-version", "0.7.0", *options)


def test_findings_come_in_line_order_with_columns(script: Path) -> None:
    result = check(script, "--format", "concise")
    found = findings(result.output)
    assert found, result.output
    positions = [(line or 0, col or 0) for _p, line, col, _c in found]
    assert positions == sorted(positions)
    vb106 = finding_line(result.output, "VB106")
    assert vb106.startswith(f"{script}:9:5: VB106 error:")  # the key starts at column 5 of line 9
    vs705 = finding_line(result.output, "VS705")
    assert vs705.startswith(f"{script}:11:")


def test_the_default_text_shows_the_source_line_with_a_caret(script: Path) -> None:
    out = check(script).output
    lines = out.splitlines()
    header = lines.index(finding_line(out, "VB106"))
    gutter, source, caret = lines[header + 1:header + 4]
    assert source.endswith("9 |     actor_rollout_ref.actor.ppo_mini_batch_size=24 \\")
    start = source.index("actor_rollout_ref")
    assert caret[start:] == "^" * len("actor_rollout_ref.actor.ppo_mini_batch_size=24")
    assert gutter.strip() == "|"
    assert "  = docs: gen rule VB106" in lines[header + 4:header + 7]
    # concise: header lines only, the same ones
    concise = check(script, "--format", "concise").output
    assert finding_lines(concise) == finding_lines(out)
    assert not any(line.startswith("  ") for line in concise.splitlines())


def test_long_keys_are_never_cut(tmp_path: Path) -> None:
    key = "actor_rollout_ref.actor.megatron.override_transformer_config." + "x" * 150
    path = tmp_path / "long.sh"
    path.write_text(SCRIPT.replace("trainer.logger=[console]", f"{key}=1"))
    out = check(path).output
    unknown = next(line for line in finding_lines(out) if key[:60] in line)
    assert key in unknown and "…" not in unknown


def test_json_and_sarif_carry_columns(script: Path) -> None:
    data = json.loads(check(script, "--format", "json").stdout)
    item = next(f for f in data["files"][0]["findings"] if f["code"] == "VB106")
    assert (item["line"], item["column"]) == (9, 5)
    assert item["end_column"] == 5 + len("actor_rollout_ref.actor.ppo_mini_batch_size=24")
    assert data["schema_version"] == 1  # fields added, none changed


def test_severity_threshold(script: Path) -> None:
    every = {c for *_x, c in findings(check(script, "--format", "concise").output)}
    errors = {c for *_x, c in findings(check(script, "--format", "concise", "--severity", "error").output)}
    assert "VS705" in every and "VS705" not in errors and "VB106" in errors
    assert errors < every
    bad = check(script, "--severity", "loud")
    assert bad.exit_code == 2 and "--severity must be one of error, warning, info" in bad.output


def test_exit_zero(script: Path) -> None:
    assert check(script).exit_code == 1
    passed = check(script, "--exit-zero")
    assert passed.exit_code == 0 and "VB106" in passed.output
    # bad input is still bad input
    assert run("check", str(script.parent / "missing.sh"), "--exit-zero").exit_code == 2


def test_statistics(script: Path) -> None:
    result = check(script, "--statistics")
    rows = result.output.splitlines()
    assert result.exit_code == 1
    vb106 = next(r for r in rows if " VB106 " in r)
    assert vb106.split()[0] == "1" and "local-batch-not-divisible-by-mini" in vb106
    assert any(" VS705  [*] " in r for r in rows)  # gen fix repairs it
    counts = [int(r.split()[0]) for r in rows]
    assert counts == sorted(counts, reverse=True)
    assert not finding_lines(result.output)


def test_quiet_prints_the_findings_only(script: Path) -> None:
    loud = check(script, "--format", "concise").output
    quiet = check(script, "--format", "concise", "--quiet").output
    assert quiet.splitlines() == finding_lines(loud)
    assert "file checked" in loud and "file checked" not in quiet and "checked against" not in quiet


def test_output_file(script: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    result = check(script, "--format", "json", "--output-file", str(target))
    assert result.exit_code == 1 and result.stdout == ""
    assert json.loads(target.read_text())["files"][0]["path"] == str(script)


# --- suppressions ----------------------------------------------------------------------------

CALL = ("python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\\n"
        "    actor_rollout_ref.rollout.n=4 trainer.logger=[console]\n")


def codes_at(path: Path, *options: str) -> list[tuple[int | None, str]]:
    out = run("check", str(path), "--format", "concise", "--verl-version", "0.7.0", *options).output
    return [(line, code) for _p, line, _c, code in findings(out)]


def test_a_comment_above_a_command_silences_its_shell_findings(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("set -x\n" + CALL)
    assert (4, "VS705") in codes_at(path)  # on the command's third line
    path.write_text("set -x\n# verl-gen: ignore[VS705]\n" + CALL)
    found = codes_at(path)
    assert not any(code == "VS705" for _l, code in found) and not any(code.startswith("VS71") for _l, code in found)


def test_gen_fix_honours_the_same_comment(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("set -x\n# verl-gen: ignore[VS705]\n" + CALL)
    result = run("fix", str(path), "--verl-version", "0.7.0")
    assert "VS705" not in result.output


def test_unknown_bare_and_unused_suppressions_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/bash\n# verl-gen: ignore[VB999]\nset -x\n# verl-gen: ignore\n"
                    "# verl-gen: ignore[VP]\n" + CALL)
    found = codes_at(path)
    assert (2, "VS718") in found  # unknown code
    assert (4, "VS718") in found  # a bare ignore
    assert (5, "VS719") in found  # no parallel-layout rule fires on this command
    out = run("check", str(path), "--format", "concise", "--verl-version", "0.7.0").output
    assert "VB999, which is no rule's code" in out and "silences nothing: no VP finding" in out


def test_a_used_suppression_is_not_reported(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("set -x\n# verl-gen: ignore[VS705]\n" + CALL)
    assert not any(code in ("VS718", "VS719") for _l, code in codes_at(path))


def test_a_rule_that_did_not_run_is_not_judged_unused(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text("set -x\n# verl-gen: ignore[VP]\n" + CALL)
    assert (2, "VS719") in codes_at(path)
    assert (2, "VS719") not in codes_at(path, "--select", "VS")  # the VP rules did not run


# --- project configuration ------------------------------------------------------------------

def test_project_exclude_and_per_file_ignores(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the project's root: its configuration is found up to here, never above
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.sh").write_text("set -x\n" + CALL)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "a.sh").write_text("set -x\n" + CALL)
    (tmp_path / "b.sh").write_text("set -x\n" + CALL)
    (tmp_path / ".verl-gen.toml").write_text('exclude = ["legacy/*"]\n[per-file-ignores]\n"examples/*.sh" = ["VS705"]\n')
    result = run("check", str(tmp_path), "--format", "json", "--verl-version", "0.7.0")
    files = {Path(f["path"]).relative_to(tmp_path).as_posix(): {x["code"] for x in f["findings"]}
             for f in json.loads(result.stdout)["files"]}
    assert "legacy/old.sh" not in files
    assert "VS705" not in files["examples/a.sh"] and "VS705" in files["b.sh"]
    # a named file that `exclude` matches is skipped too (pre-commit names every changed file)
    named = run("check", str(tmp_path / "legacy" / "old.sh"), "--format", "json")
    assert json.loads(named.stdout)["files"] == []
    fixed = run("fix", str(tmp_path / "legacy" / "old.sh"))
    assert fixed.exit_code == 0 and "VS705" not in fixed.output


def test_project_per_file_ignores_refuse_an_unknown_code(tmp_path: Path) -> None:
    (tmp_path / ".verl-gen.toml").write_text('[per-file-ignores]\n"*.sh" = ["VS7O5"]\n')
    (tmp_path / "run.sh").write_text(CALL)
    result = run("check", str(tmp_path / "run.sh"))
    assert result.exit_code == 2 and "unknown rule code 'VS7O5'" in result.output


def test_check_fix_and_explain_read_a_files_project_settings_alike(tmp_path: Path) -> None:
    """One order for every command: the project's `exclude` is decided before the file is read
    (gen fix read it first, and failed on an excluded file gen check skipped), and its
    per-file-ignores are validated for explain as for check (explain skipped them)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "legacy").mkdir()
    os.mkfifo(tmp_path / "legacy" / "old.sh")  # a file no command may read (it would block)
    (tmp_path / ".verl-gen.toml").write_text('exclude = ["legacy/*"]\n')
    from generator.fix.per_file import fix_files

    fixed = list(fix_files([str(tmp_path / "legacy" / "old.sh")], write=False, select=(), ignore=(), unsafe=False,
                           verl_version="0.7.0", env={}))
    assert fixed == []  # skipped, as `gen check` skips it; not an error for a file never to be read
    (tmp_path / ".verl-gen.toml").write_text('[per-file-ignores]\n"*.sh" = ["VS7O5"]\n')
    (tmp_path / "run.sh").write_text(CALL)
    for command in ("check", "explain"):
        result = run(command, str(tmp_path / "run.sh"))
        assert result.exit_code == 2 and "unknown rule code 'VS7O5'" in result.output, (command, result.output)


# --- gen fix ---------------------------------------------------------------------------------

CLEAN = SCRIPT.replace("ppo_mini_batch_size=24", "ppo_mini_batch_size=20")  # no error; VS705 at line 11


def test_fix_dry_run_exits_1_while_a_fix_is_pending(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text(CLEAN)
    pending = run("fix", str(path), "--select", "VS705", "--verl-version", "0.7.0")
    assert pending.exit_code == 1 and "'trainer.logger=[console]'" in pending.stdout
    written = run("fix", str(path), "--select", "VS705", "--verl-version", "0.7.0", "--write")
    assert written.exit_code == 0
    clean = run("fix", str(path), "--select", "VS705", "--verl-version", "0.7.0")
    assert clean.exit_code == 0 and clean.stdout == ""


def test_fix_stdin_prints_the_fixed_script(tmp_path: Path) -> None:
    text = CLEAN
    for options in ((), ("--write",)):
        result = run("fix", "-", "--select", "VS705", "--verl-version", "0.7.0", *options, stdin=text)
        assert result.exit_code == 0, result.output
        assert result.stdout == text.replace("trainer.logger=[console]", "'trainer.logger=[console]'")
        assert "no such file" not in result.output
    diff = run("fix", "-", "--diff", "--select", "VS705", "--verl-version", "0.7.0", stdin=text)
    assert diff.stdout.startswith("---") and diff.exit_code == 1

"""`gen check`, `gen rules`, `gen rule`, `gen explain` end to end (typer runner, self-written scripts)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from generator.cli import app
from text_report import finding_line

HEADER = "#!/bin/bash\nset -x\n"
CALL = (
    "python3 -m verl.trainer.main_ppo --config-name ppo_megatron_trainer \\\n"
    "    algorithm.adv_estimator=grpo \\\n"
    "    trainer.n_gpus_per_node=8 \\\n"
    "    data.train_batch_size=60 \\\n"
    "    data.filter_overlong_prompts=True \\\n"
    "    actor_rollout_ref.rollout.n=4 \\\n"
    "    actor_rollout_ref.rollout.name=vllm \\\n"
    "    actor_rollout_ref.actor.ppo_mini_batch_size={mini} \\\n"
    "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n"
    "    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\\n"
    "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2\n"
)


@pytest.fixture()
def scripts(tmp_path):
    bad = tmp_path / "bad.sh"
    bad.write_text(HEADER + CALL.format(mini=24))
    good = tmp_path / "good.sh"
    good.write_text(HEADER + CALL.format(mini=20))
    return bad, good


def run(*args):
    return CliRunner().invoke(app, list(args))


def test_error_finding_exits_1_with_equation(scripts):
    bad, _ = scripts
    result = run("check", str(bad), "--verl-version", "0.7.0")
    assert result.exit_code == 1, result.output
    line = finding_line(result.output, "VB106")
    assert line.startswith(f"{bad}:10:5: VB106 error: local batch = G/DP = 240/4 = 60")
    # The mini-batch fix changes the update count: `gen fix` applies it only with --unsafe.
    assert "(60 % 24 = 12)" in line and line.endswith("[*] with --unsafe")
    assert "1 more with `gen fix --unsafe`" in result.output


def test_clean_script_exits_0(scripts):
    _, good = scripts
    result = run("check", str(good), "--verl-version", "0.7.0")
    assert result.exit_code == 0, result.output
    assert "0 error(s)" in result.output


def test_unreadable_file_exits_2_and_others_still_checked(scripts, tmp_path):
    bad, good = scripts
    result = run("check", str(bad), str(tmp_path / "missing.sh"), str(good), "--format", "json",
                 "--verl-version", "0.7.0")
    assert result.exit_code == 2
    data = json.loads(result.stdout)
    assert [f["error"] for f in data["files"]] == [None, "no such file", None]
    assert data["summary"]["files"] == 3 and data["summary"]["failed_files"] == 2
    codes = [f["code"] for f in data["files"][0]["findings"]]
    assert "VB106" in codes
    finding = next(f for f in data["files"][0]["findings"] if f["code"] == "VB106")
    assert finding["invocation_line"] == 3 and finding["line"] == 10
    assert finding["fix"]["applicability"] == "unsafe"
    assert finding["fix"]["edits"][0] == {"key": "actor_rollout_ref.actor.ppo_mini_batch_size", "from": 24, "to": 20}


def test_select_and_ignore(scripts):
    bad, _ = scripts
    only = json.loads(run("check", str(bad), "--format", "json", "--select", "VB106", "--verl-version", "0.7.0").stdout)
    assert {f["code"] for f in only["files"][0]["findings"]} == {"VB106"}
    result = run("check", str(bad), "--ignore", "VB1", "--verl-version", "0.7.0")
    assert "VB106" not in result.output and result.exit_code == 0


def test_sarif_and_github_formats(scripts):
    bad, _ = scripts
    sarif = json.loads(run("check", str(bad), "--format", "sarif", "--verl-version", "0.7.0").stdout)
    assert sarif["version"] == "2.1.0"
    run0 = sarif["runs"][0]
    rule_ids = [r["id"] for r in run0["tool"]["driver"]["rules"]]
    result = next(r for r in run0["results"] if r["ruleId"] == "VB106")
    assert rule_ids[result["ruleIndex"]] == "VB106" and result["level"] == "error"
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 10
    assert result["locations"][0]["physicalLocation"]["region"]["startColumn"] == 5  # where the key is written
    github = run("check", str(bad), "--format", "github", "--verl-version", "0.7.0").stdout
    line = next(text_line for text_line in github.splitlines() if "VB106" in text_line)
    assert line.startswith(f"::error file={bad},line=10,col=5,title=VB106::local batch")
    assert "60 %25 24 = 12" in line  # '%' is escaped for the workflow command


def test_bad_options_exit_2(scripts):
    bad, _ = scripts
    assert run("check", str(bad), "--format", "xml").exit_code == 2
    assert run("rule", "VB999").exit_code == 2


def test_rules_lists_every_code():
    from generator.judging import load_rules

    data = json.loads(run("rules", "--format", "json").stdout)
    assert data["schema_version"] == 1
    assert {r["code"] for r in data["rules"]} == set(load_rules())
    text = run("rules").stdout
    assert any(text_line.startswith("VB106  error   runtime") for text_line in text.splitlines())


def test_rule_doc_shows_computed_finding():
    out = run("rule", "vb106").stdout
    assert out.startswith("VB106 local-batch-not-divisible-by-mini")
    assert "→ VB106 error: local batch = G/DP = 240/4 = 60" in out
    assert "fix (unsafe): set ppo_mini_batch_size 24 → 20" in out
    assert "→ no finding" in out and "## Fix safety" in out


def test_explain_prints_the_chain(scripts):
    bad, _ = scripts
    result = run("explain", str(bad), "--verl-version", "0.7.0")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "DP                    W / (TP·PP·CP) = 8 / (2·1·1) = 4" in out
    assert "train_batch_size·n = 60·4 = 240" in out
    assert "ppo_mini_batch_size·n / DP = 24·4 / 4 = 24" in out
    assert "B / m = 60 / 24: remainder 12 (Megatron asserts)" in out
    assert "rollout replicas" in out and "8 / (2·1·1) = 4" in out


def test_conditional_call_is_checked_and_says_so(tmp_path):
    script = tmp_path / "cond.sh"
    script.write_text(HEADER + 'if [ "$BACKEND" = megatron ]; then\n' + CALL.format(mini=24) + "fi\n")
    data = json.loads(run("check", str(script), "--format", "json", "--verl-version", "0.7.0").stdout)
    finding = next(f for f in data["files"][0]["findings"] if f["code"] == "VB106")
    assert "conditional branch" in finding["message"]


def test_cold_start_imports_no_command_machinery():
    """`gen --version`, `gen --help` and completion stay fast: the reports, rules and config
    builder are imported inside the commands that use them."""
    import subprocess
    import sys

    code = ("import sys, generator.cli\n"
            "print(sorted(m for m in sys.modules if m.startswith(('generator.report', 'generator.rules', "
            "'generator.config', 'generator.reading.shell', 'generator.plan', 'rich'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_explain_names_the_release_and_config_judged_against_and_why(scripts):
    bad, _ = scripts
    text = run("explain", str(bad), "--verl-version", "0.7.0").stdout
    assert "judged against verl 0.7.0 (config: " in text and "chosen: " in text
    document = json.loads(run("explain", str(bad), "--verl-version", "0.7.0", "--format", "json").stdout)
    resolution = document["files"][0]["calls"][0]["resolution"]
    assert resolution["release"] == "0.7.0" and resolution["reason"]


def test_version_and_shell_completion():
    from generator import __version__

    assert run("--version").stdout == f"verl-gen {__version__}\n"
    help_text = run("--help").stdout
    assert "--install-completion" in help_text and "--show-completion" in help_text

"""Forks that change the batch chain (VB118), batch messages worded for the release and the
backend, the deprecated global micro batch in explain/check/fix, and entries that are not
verl's PPO trainer (SFT) in explain. Every script and config here is written by the test."""

from __future__ import annotations


import pytest
from typer.testing import CliRunner

from generator import schema
from generator.cli import app
from generator.config.derived import actor_batch
from generator.config.reader import ConfigReader
from generator.reading.edit_kinds import KeyEdit
from generator.config.forks import FORK_BATCH_KEYS, fork_batch_settings
from generator.report.explain import explain_config
from generator.judging import check_config
from generator.judging.examples import config_for

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."
# 8 GPUs, FSDP (DP 8): P 512, n 1, M 256 -> m 32; micro 64 does not divide it (VB107 without a fork).
SEARCH_R1 = ["data.train_batch_size=512", f"{A}ppo_mini_batch_size=256", f"{A}ppo_micro_batch_size_per_gpu=64",
             f"{R}n=1", f"{R}log_prob_micro_batch_size_per_gpu=8"]


def codes(findings):
    return {f.code for f in findings}


def fsdp(overrides, version="0.7.0"):
    return config_for(overrides, config_name="ppo_trainer", version=version,
                      base=("trainer.n_gpus_per_node=8", "trainer.nnodes=1", f"{R}name=vllm"))


def test_a_fork_key_makes_the_chain_rules_stand_down_with_one_note():
    plain = check_config(fsdp(SEARCH_R1))
    assert "VB107" in codes(plain) and "VB118" not in codes(plain)
    forked = check_config(fsdp(SEARCH_R1 + [f"+{R}n_agent=5"]))
    assert "VB107" not in codes(forked)
    (note,) = [f for f in forked if f.code == "VB118"]
    assert note.severity == "info"
    assert f"{R}n_agent=5" in note.message and "Search-R1" in note.message
    assert "P·n_agent·n" in note.message


def test_a_neutral_fork_value_changes_nothing():
    findings = check_config(fsdp(SEARCH_R1 + [f"+{R}n_agent=1"]))
    assert "VB118" not in codes(findings) and "VB107" in codes(findings)


def test_an_unknown_fork_value_counts_as_a_change():
    config = fsdp(SEARCH_R1 + ["+agent_grpo.n=4"])
    config.unknown["agent_grpo.n"] = "from $GROUP_SIZE"
    config.values["agent_grpo.n"] = None
    (setting,) = fork_batch_settings(config)
    assert setting.value is None and setting.entry.key == "agent_grpo.n"


def test_a_suffix_entry_matches_under_any_section():
    findings = check_config(fsdp(SEARCH_R1 + [f"+{A}do_not_split_ppo_mini_batch=true"]))
    (note,) = [f for f in findings if f.code == "VB118"]
    assert "do_not_split_ppo_mini_batch=True" in note.message
    assert "VB118" not in codes(check_config(fsdp(SEARCH_R1 + [f"+{A}do_not_split_ppo_mini_batch=false"])))


def test_self_play_problem_types_make_the_chain_rules_stand_down():
    # Absolute-Zero-Reasoner: 64 tasks per problem type and role, mini 128 — not verl's chain.
    overrides = ["data.train_batch_size=64", f"{A}ppo_mini_batch_size=128", f"{R}n=1",
                 f"{A}ppo_micro_batch_size_per_gpu=4", f"{R}log_prob_micro_batch_size_per_gpu=4",
                 "+azr.problem_types=[code_i,code_o,code_f]"]
    found = codes(check_config(fsdp(overrides)))
    assert "VB118" in found and "VB102" not in found and "VB106" not in found
    assert "VB102" in codes(check_config(fsdp(overrides[:-1])))


@pytest.mark.parametrize("version", schema.available())
def test_no_fork_key_is_a_key_of_verl(version):
    """The list is of keys verl's own chain does not know: none is in any packaged release."""
    loaded = schema.load(version)
    for name in loaded.config_names():
        keys = set(loaded.configs[name])
        for entry in FORK_BATCH_KEYS:
            if entry.key.startswith("."):
                assert not any(k.endswith(entry.key) for k in keys), (version, entry.key)
            else:
                assert entry.key not in keys, (version, entry.key)


def test_explain_says_the_fork_changes_the_chain():
    rows = dict(explain_config(fsdp(SEARCH_R1 + [f"+{R}n_agent=5"])))
    assert "changed by this fork" in rows["batch chain"] and "VB118" in rows["batch chain"]
    assert "per-rank mini m" not in rows and "responses/step G" not in rows


# --- wording for the release and the backend -------------------------------------------------

def test_mini_larger_than_step_is_refused_from_0_3_only():
    overrides = ["data.train_batch_size=8", f"{A}ppo_mini_batch_size=16", f"{R}n=4",
                 f"{A}ppo_micro_batch_size_per_gpu=1", f"{R}log_prob_micro_batch_size_per_gpu=1"]
    (now,) = [f for f in check_config(fsdp(overrides)) if f.code == "VB102"]
    assert now.severity == "error" and now.message == "ppo_mini_batch_size 16 > train_batch_size 8 (both count prompts)"
    old = fsdp(overrides, version="0.4.1")
    old.version = "0.2.0"  # a fork on verl 0.2
    (then,) = [f for f in check_config(old) if f.code == "VB102"]
    assert then.severity == "warning"
    assert "verl 0.2.0 does not refuse it (the check came in 0.3)" in then.message
    assert "scaled down" in then.message


def test_dynamic_bsz_mini_larger_than_step_fsdp_one_update_megatron_asserts():
    overrides = ["data.train_batch_size=8", f"{A}ppo_mini_batch_size=16", f"{R}n=4", f"{A}use_dynamic_bsz=True",
                 f"{A}ppo_max_token_len_per_gpu=8192"]
    (f,) = [f for f in check_config(fsdp(overrides)) if f.code == "VB106"]
    assert f.severity == "warning"
    assert f.message == ("mini batch larger than the train batch (ppo_mini_batch_size 16 > train_batch_size 8): "
                         "one update per step")
    meg = config_for(overrides + ["trainer.n_gpus_per_node=8", f"{A}megatron.tensor_model_parallel_size=1"])
    (m,) = [f for f in check_config(meg) if f.code == "VB106"]
    assert m.severity == "error"
    assert "the per-rank mini batch 8 exceeds the local batch 4 and make_iterator asserts" in m.message


# --- the deprecated global micro batch --------------------------------------------------------

GLOBAL_MICRO = ["data.train_batch_size=64", f"{A}ppo_mini_batch_size=16", f"{R}n=4",
                f"{A}ppo_micro_batch_size=48", f"{A}ppo_micro_batch_size_per_gpu=null",
                f"{R}log_prob_micro_batch_size_per_gpu=4"]


def test_fsdp_reads_the_global_micro_key_divided_by_dp():
    batch = actor_batch(ConfigReader(fsdp(GLOBAL_MICRO)))
    assert (batch.micro, batch.micro_key, batch.micro_scale) == (6, A + "ppo_micro_batch_size", 8)
    assert batch.chain is not None and batch.chain.grad_accum_steps == 2  # ceil(8 / 6)
    rows = dict(explain_config(fsdp(GLOBAL_MICRO)))
    assert rows["micro batch μ"].startswith("ppo_micro_batch_size / DP = 48 / 8 = 6")
    assert rows["grad accumulation A"].startswith("ceil(m / μ) = ceil(8 / 6) = 2")


def test_explain_reads_the_global_log_prob_micro_key_on_fsdp():
    overrides = [o for o in GLOBAL_MICRO if "log_prob" not in o]
    config = fsdp(overrides + [f"{R}log_prob_micro_batch_size=64", f"{R}log_prob_micro_batch_size_per_gpu=null",
                               f"{R}log_prob_use_dynamic_bsz=False"])
    rows = dict(explain_config(config))
    assert rows["log-prob passes/rank"] == ("ceil(B / μ_lp) = ceil(32 / 8) = 4 "
                                            "(μ_lp = log_prob_micro_batch_size / DP = 64 / 8)")


def test_the_micro_fix_writes_the_key_the_script_uses():
    (finding,) = [f for f in check_config(fsdp(GLOBAL_MICRO)) if f.code == "VB107"]
    assert "ppo_micro_batch_size / DP = 48 / 8 = 6" in finding.message
    assert finding.fix.edits == (KeyEdit(A + "ppo_micro_batch_size", 48, 32),)  # μ 6 -> 4, written as 4·DP


def test_megatron_does_not_read_the_global_micro_key():
    meg = config_for(GLOBAL_MICRO + ["trainer.n_gpus_per_node=8", f"{A}megatron.tensor_model_parallel_size=1"])
    batch = actor_batch(ConfigReader(meg))
    assert batch.micro is None and batch.micro_key == A + "ppo_micro_batch_size_per_gpu"


def test_gen_fix_on_a_global_micro_script_adds_no_new_error(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo \\\n" + "".join(f"    {o} \\\n" for o in GLOBAL_MICRO)
                      + f"    {R}name=vllm \\\n    trainer.n_gpus_per_node=8 trainer.nnodes=1\n")
    runner = CliRunner()
    before = runner.invoke(app, ["check", str(script), "--verl-version", "0.7.0", "--format", "json"]).output
    assert "VB107" in before
    result = runner.invoke(app, ["fix", str(script), "--verl-version", "0.7.0", "--write"])
    assert result.exit_code == 1, result.output  # VB110 (16 % 32) and the critic micro keys remain
    text = script.read_text()
    assert f"{A}ppo_micro_batch_size=32" in text and f"{A}ppo_micro_batch_size_per_gpu=null" in text
    after = runner.invoke(app, ["check", str(script), "--verl-version", "0.7.0", "--format", "json"]).output
    assert "VB107" not in after and "VB108" not in after


# --- entries other than main_ppo ---------------------------------------------------------------

def _explain(tmp_path, body: str) -> str:
    script = tmp_path / "run.sh"
    script.write_text(body)
    result = CliRunner().invoke(app, ["explain", str(script), "--verl-version", "0.7.0"])
    assert result.exit_code == 0, result.output
    return result.output


def test_sft_script_gets_sft_arithmetic_not_ppo(tmp_path):
    out = _explain(tmp_path, "torchrun --nproc_per_node=8 -m verl.trainer.fsdp_sft_trainer \\\n"
                             "    data.train_batch_size=64 data.micro_batch_size_per_gpu=4 \\\n"
                             "    trainer.n_gpus_per_node=8 trainer.nnodes=1 ulysses_sequence_parallel_size=2\n")
    assert "supervised fine-tuning" in out
    assert "W / ulysses SP = 8 / 2 = 4" in out
    assert "train_batch_size / DP = 64 / 4 = 16" in out
    assert "16 / 4 = 4 (gradient accumulation)" in out
    for ppo_row in ("responses/step", "per-rank mini", "rollout replicas", "agent-loop"):
        assert ppo_row not in out


def test_sft_batch_not_divisible_by_dp_is_said(tmp_path):
    out = _explain(tmp_path, "torchrun -m verl.trainer.fsdp_sft_trainer data.train_batch_size=60 "
                             "trainer.n_gpus_per_node=8 trainer.nnodes=1\n")
    assert "60 / 8: not divisible (the trainer asserts)" in out


def test_generation_entry_gets_no_arithmetic(tmp_path):
    out = _explain(tmp_path, "python3 -m verl.trainer.main_generation trainer.n_gpus_per_node=8 "
                             "data.batch_size=64\n")
    assert "is not verl's PPO trainer" in out and "responses/step" not in out


# --- a fix that creates a new error is not offered ----------------------------------------------

def test_a_fix_that_creates_a_new_error_is_left_out():
    from generator.reading.edit_kinds import TextEdit
    from generator.fix.engine import default_reader, fix_source
    from generator.rules.core import Finding, Fix

    source = b"echo one two\n"
    start = source.index(b"one")

    def check(script):
        text = script.source
        findings = []
        if b"one" in text:  # fixable by a safe text edit: 'one' -> 'uno'
            findings.append(Finding("VX998", "error", "one", 1, None,
                                    Fix("spell it uno", (TextEdit(start, start + 3, "uno"),))))
        if b"two" in text:  # fixable too, but 'dos' is refused by another rule
            findings.append(Finding("VX997", "error", "two", 1, None,
                                    Fix("spell it dos", (TextEdit(start + 4, start + 7, "dos"),))))
        if b"dos" in text:
            findings.append(Finding("VX996", "error", "dos is not allowed", 1, "k"))
        return [(None, None, findings)]

    result = fix_source(source, "x.sh", read=default_reader(), check=check)
    assert result.fixed == b"echo uno two\n"
    assert [a.code for a in result.applied] == ["VX998"]
    (refused,) = result.not_applied
    assert refused.code == "VX997" and refused.reason == "the fix would create a new error (VX996 on k); not applied"


# --- DAPO's trainer trains train_batch_size prompts, whatever it generated ----------------------

DAPO = ["data.train_batch_size=32", "+data.gen_batch_size=100", f"{R}n=2", f"{A}ppo_mini_batch_size=16",
        f"{A}ppo_micro_batch_size_per_gpu=4", f"{R}log_prob_micro_batch_size_per_gpu=4"]


def _dapo(filter_groups: bool):
    config = fsdp(DAPO + [f"+algorithm.filter_groups.enable={filter_groups}"])
    config.entry = "recipe.dapo.main_dapo"
    return config


def test_dapo_with_filter_groups_trains_train_batch_size():
    batch = actor_batch(ConfigReader(_dapo(True)))
    assert batch.prompts_and_n == (32, 2) and batch.chain.local_batch == 8  # 32·2 / DP 8
    assert "VB106" not in codes(check_config(_dapo(True)))


def test_dapo_without_the_filter_trains_what_it_generated():
    batch = actor_batch(ConfigReader(_dapo(False)))
    assert batch.prompts_and_n == (100, 2) and batch.chain.local_batch == 25
    (finding,) = [f for f in check_config(_dapo(False)) if f.code == "VB106"]
    assert "local batch = G/DP = 200/8 = 25" in finding.message

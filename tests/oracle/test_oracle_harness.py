"""The oracle harness's own logic, without verl: cases, mutations, config folders, verdict
arithmetic, the environment marker and bad input. Fast; runs everywhere."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.oracle._load import REPO, load_oracle

oracle = load_oracle()


def _keys(overrides: list[str]) -> list[str]:
    return [oracle._override_key(o) for o in overrides]


def test_mutations_are_reproducible_from_the_seed():
    first = [(c.ident, c.overrides) for c in oracle.mutation_cases(40, seed=7)]
    again = [(c.ident, c.overrides) for c in oracle.mutation_cases(40, seed=7)]
    other = [(c.ident, c.overrides) for c in oracle.mutation_cases(40, seed=8)]
    assert first == again
    assert [o for _, o in first] != [o for _, o in other]


def test_mutations_cover_every_base_and_keep_one_override_per_key():
    cases = oracle.mutation_cases(60, seed=1)
    bases = {c.note.split(" + ")[0] for c in cases}
    assert bases == set(oracle.BASES)
    for case in cases:
        keys = _keys(case.overrides)
        assert len(keys) == len(set(keys)), case.overrides
        assert all("=" in o for o in case.overrides)
        base_name = case.note.split(" + ")[0]
        assert case.config_name == oracle.BASES[base_name][0]
        # the note lists exactly the changes, each present in the final overrides
        for change in case.note.split(" + ", 1)[1].split(", "):
            assert change in case.overrides


def test_mutations_touch_the_keys_the_task_names():
    changed = set()
    for case in oracle.mutation_cases(600, seed=3):
        changed |= {oracle._override_key(c) for c in case.note.split(" + ", 1)[1].split(", ")}
    a = "actor_rollout_ref.actor."
    for key in ("data.train_batch_size", a + "ppo_mini_batch_size", a + "ppo_micro_batch_size_per_gpu",
                a + "ppo_micro_batch_size", "actor_rollout_ref.rollout.n", a + "use_dynamic_bsz",
                a + "megatron.tensor_model_parallel_size", a + "megatron.pipeline_model_parallel_size",
                a + "megatron.context_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes",
                "critic.ppo_micro_batch_size", "actor_rollout_ref.rollout.log_prob_micro_batch_size"):
        assert key in changed, key


def test_apply_lets_the_later_override_win():
    assert oracle._apply(["a.b=1", "c=2"], ["a.b=3", "+d=4"]) == ["a.b=3", "c=2", "+d=4"]


def test_unknown_pieces_become_a_plain_word():
    assert oracle._neutral("data.train_files=<?unset:HOME>/data/<?cmd:x>.parquet") == \
        "data.train_files=unknown/data/unknown.parquet"
    assert oracle._neutral("trainer.nnodes=2") == "trainer.nnodes=2"


def test_config_dir_follows_hydras_rules(tmp_path):
    tree = tmp_path / "v0.7.0"
    (tree / "examples" / "sglang_multiturn" / "config").mkdir(parents=True)
    (tree / "recipe" / "dapo" / "config").mkdir(parents=True)
    resolve = oracle.resolve_config_dir
    want = ("dir", str((tree / "examples" / "sglang_multiturn" / "config").resolve()))
    assert resolve(None, "examples/x/run.sh", tree) is None
    # relative: Hydra resolves it against verl/trainer/ (the @hydra.main file), not the cwd
    assert resolve("config", "recipe/dapo/run.sh", tree) == ("relative", "config")
    assert resolve("./config", "examples/a/run.sh", tree) == ("relative", "./config")
    # absolute on the author's machine, or behind an unknown prefix: found in the release tree
    assert resolve("<?PWD>/examples/sglang_multiturn/config", "examples/sglang_multiturn/run.sh", tree) == want
    assert resolve("/home/me/verl/examples/sglang_multiturn/config", "examples/a/run.sh", tree) == want
    assert resolve("<?cmd:dirname>/config", "recipe/dapo/run.sh", tree) == \
        ("dir", str((tree / "recipe/dapo/config").resolve()))
    assert resolve("<?unset:CFG>", "examples/a/run.sh", tree) is False
    assert resolve("/elsewhere/nowhere/config", "examples/a/run.sh", tree) is False
    assert resolve("a/<?unset:X>/config", "examples/a/run.sh", tree) is False


def test_release_scripts_map_every_occurrence_to_its_stored_copy(tmp_path):
    (tmp_path / "OCCURRENCES.tsv").write_text(
        "tag\tpath\tsha1\tfirst_tag\tfirst_path\n"
        "v0.7.0\texamples/a.sh\tx\tv0.5.0\texamples/old_a.sh\n"
        "v0.7.0\texamples/b.sh\ty\tv0.7.0\texamples/b.sh\n"
        "v0.6.1\texamples/c.sh\tz\tv0.6.1\texamples/c.sh\n")
    got = oracle.release_scripts(tmp_path, "0.7.0")
    assert got == [("examples/a.sh", tmp_path / "scripts/v0.5.0/examples/old_a.sh"),
                   ("examples/b.sh", tmp_path / "scripts/v0.7.0/examples/b.sh")]
    with pytest.raises(oracle.OracleError):
        oracle.release_scripts(tmp_path / "missing", "0.7.0")


def test_model_folder_carries_the_registry_shape(tmp_path):
    small = oracle.model_dir_for(tmp_path, "Qwen/Qwen2.5-0.5B-Instruct")
    config = json.loads((small / "config.json").read_text())
    facts = oracle._model_facts("Qwen/Qwen2.5-0.5B-Instruct")
    assert config["hidden_size"] == facts["hidden_size"]
    assert config["num_key_value_heads"] == facts["num_kv_heads"]
    assert config["architectures"] == ["Qwen2ForCausalLM"]
    fallback = oracle.model_dir_for(tmp_path, "some-org/unheard-of-model")
    assert json.loads((fallback / "config.json").read_text())["hidden_size"] == 3584  # Qwen2-7B
    assert fallback != small


def test_environment_marker_must_match_the_pins(tmp_path):
    venv = tmp_path / "env"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    assert not oracle.venv_complete(venv, "0.7.0")
    (venv / oracle.MARKER).write_text(json.dumps(oracle._marker_expected("0.7.0")))
    assert oracle.venv_complete(venv, "0.7.0")
    stale = dict(oracle._marker_expected("0.7.0"), pins=["transformers==5.0.0"])
    (venv / oracle.MARKER).write_text(json.dumps(stale))
    assert not oracle.venv_complete(venv, "0.7.0")


def _fake_python(tmp_path, body: str):
    """A stand-in for the venv's python that ignores `-m pip install ...` and runs `body`."""
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_a_long_install_reports_that_it_is_still_going(tmp_path, monkeypatch):
    import io

    environment = sys.modules["tools.oracle.environment"]
    monkeypatch.setattr(environment, "HEARTBEAT_SECONDS", 0.05)
    log = io.StringIO()
    environment._pip(_fake_python(tmp_path, "sleep 0.4"), ["torch==0"], log, "[1/3] ")
    lines = log.getvalue().splitlines()
    assert lines[0] == "oracle: [1/3] pip install torch==0"
    assert len(lines) >= 3 and all(line.startswith("oracle: [1/3] still installing (") for line in lines[1:])


def test_a_failed_install_is_one_line_with_pips_last_words(tmp_path):
    import io

    environment = sys.modules["tools.oracle.environment"]
    with pytest.raises(oracle.OracleError, match=r"^pip install verl==9 failed: ERROR: no such version$"):
        environment._pip(_fake_python(tmp_path, "echo resolving; echo 'ERROR: no such version' >&2; exit 1"),
                         ["verl==9"], io.StringIO())


def _case(ident, verl, ours, stage="validate"):
    case = oracle.Case(ident=ident, config_name="ppo_trainer", overrides=["x=1"], note="n")
    case.verl = {"verdict": verl, "stage": stage if verl == "reject" else None, "message": "m"}
    case.our_reject = ours
    return case


def test_report_counts_agreement_and_excludes_what_verl_cannot_decide(capsys):
    cases = [
        _case("mutation:0:0", "reject", True),
        _case("mutation:0:1", "accept", False),
        _case("mutation:0:2", "reject", False),  # we miss a rejection
        _case("mutation:0:3", "accept", True),  # we reject what verl accepts
        _case("mutation:0:4", "needs-vllm", False),
        _case("mutation:0:5", "undecided", True),
        _case("mutation:0:6", "error", False),  # a broken oracle is never agreement
    ]
    assert oracle.report(cases) == (2, 5)
    out = capsys.readouterr().out
    assert "DISAGREE mutation:0:2: verl reject(validate), gen check accept" in out
    assert "DISAGREE mutation:0:3: verl accept, gen check reject" in out
    assert "DISAGREE mutation:0:6: verl error" in out
    assert "mutation:0:4" not in out and "mutation:0:5" not in out


@pytest.mark.parametrize("argv, needle", [
    (["--verl-version", "9.9.9"], "no oracle recipe for verl 9.9.9"),
    (["--verl-version", "0.7.0", "--mutations", "-1"], "--mutations must be >= 0"),
    (["--verl-version", "0.7.0", "--jobs", "0"], "--jobs must be >= 1"),
    (["--verl-version", "0.9.1", "--recipes", "-1"], "--recipes must be >= 0"),
    (["--verl-version", "0.7.0", "--recipes", "1"], "gen recipe writes for verl 0.9.1 by default, not 0.7.0"),
])
def test_bad_input_is_one_line_and_exit_2(argv, needle, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tools.oracle", *argv, "--venv", str(tmp_path / "never-built")],
                          capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == [f"oracle: error: {needle}" + lines[0].split(needle, 1)[1]]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "never-built").exists()


def test_values_read_from_the_launch_environment_are_not_judged():
    case = oracle.Case(ident="x", config_name="ppo_trainer",
                       overrides=["data.train_batch_size=8", "trainer.n_gpus_per_node=${oc.env:GPUS}"])
    assert "trainer.n_gpus_per_node" in oracle.environment_dependent(case)
    assert oracle.environment_dependent(oracle.Case(ident="y", config_name="ppo_trainer",
                                                    overrides=["trainer.n_gpus_per_node=8"])) is None

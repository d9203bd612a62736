"""Every generated script is valid: bash -n, shellcheck (warning level), our own `gen check`
(no error or warning), a run with stub `python3`/`ray`/`srun` that records argv (the trainer
receives exactly the recipe's overrides), and REAL Hydra compose against verl's config trees.

Two matrices:
  * hand-built layouts: every algorithm x launcher x {dense static, MoE with every feature}
    plus older releases — runs without the planner;
  * the planner's choice for every packaged model at the GPU counts where it fits (GRPO), and
    every algorithm at each model's smallest count (marker `slow`; the default tier takes every
    eighth model). These target the default (newest) release and compose against its config tree
    (v0.9.0 for 0.9.x, with `model_engine=megatron`); the hand-built matrix covers every algorithm
    at 0.7.0 (`--config-name=ppo_megatron_trainer`) and at HEAD-2608 too.

Cost control: scripts are rendered once per session; shellcheck runs once over all files;
Hydra initialises once per config tree and composes each distinct override set once.
"""

from __future__ import annotations

import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from generator.model.facts import ModelFacts
from generator.layout.parallelism import Offload
from generator.layout.candidate import Candidate
from generator.render import default_filename, generate
from generator.render.recipe_settings import recipe_overrides
from generator.plan.planned_scripts import planned_scripts
from generator.render.release_form import written_config_name
from generator.render.spec import DEFAULT_VERSION, LAUNCHERS, RecipeSpec
from generator.judging import check_script
from generator.reading.shell import read_script
from generator.verl.constants import ALGORITHMS

TRAINER = "verl.trainer.main_ppo"

# the config tree each release's scripts compose against (0.9.1's YAML is 0.9.0's tree: same keys)
CONFIG_TREE = {"0.5.0": "v0.5.0", "0.6.1": "v0.6.1", "0.7.0": "v0.7.0", "0.7.1": "v0.7.1", "0.8.0": "v0.8.0",
               "0.9.0": "v0.9.0", "0.9.1": "v0.9.0"}
NEWEST_TREES = (CONFIG_TREE[DEFAULT_VERSION], "HEAD-2608")

DENSE = ModelFacts(name="Toy-7B", hidden_size=3584, num_layers=28, num_attention_heads=28, num_kv_heads=4,
                   head_dim=128, ffn_hidden_size=18944, vocab_size=152064, max_position_embeddings=32768,
                   hf_ids=("Toy/Toy-7B-Instruct",))
MOE = ModelFacts(name="ToyMoE-30B-A3B", hidden_size=2048, num_layers=48, num_attention_heads=32, num_kv_heads=4,
                 head_dim=128, ffn_hidden_size=6144, vocab_size=151936, max_position_embeddings=40960,
                 num_experts=128, experts_per_token=8, expert_ffn_hidden_size=768, hf_ids=("Toy/ToyMoE-30B-A3B",))
STATIC = Candidate(tp=2, pp=2, rollout_tp=2, micro_batch_per_gpu=4, log_prob_micro_batch_per_gpu=4,
                   gpu_memory_utilization=0.6)
EVERYTHING = Candidate(tp=2, pp=2, cp=2, ep=8, etp=1, rollout_tp=4, micro_batch_per_gpu=1,
                       log_prob_micro_batch_per_gpu=2, use_dynamic_bsz=True, token_budget=5120,
                       log_prob_token_budget=10240, offload=Offload(True, True, True, True, 1.0), recompute=True,
                       gpu_memory_utilization=0.7, first_stage_layers=22, last_stage_layers=26)


@dataclass(frozen=True)
class Case:
    id: str
    spec: RecipeSpec
    config_dirs: tuple[str, ...]  # verl-config snapshots to compose against


def _hand_cases() -> list[Case]:
    cases = []
    for algo in ALGORITHMS:
        n = 1 if algo == "ppo" else 5
        for launcher in LAUNCHERS:
            cases.append(Case(f"dense-{algo}-{launcher}", RecipeSpec(
                model=DENSE, layout=STATIC, gpus=8, algo=algo, launcher=launcher, n=n, train_batch_size=1024,
                ppo_mini_batch_size=256, model_slug="toy-7b"), NEWEST_TREES))
        cases.append(Case(f"dense-{algo}-0.7.0", RecipeSpec(
            model=DENSE, layout=STATIC, gpus=8, algo=algo, n=n, train_batch_size=1024, version="0.7.0",
            ppo_mini_batch_size=256, model_slug="toy-7b"), ("v0.7.0", "HEAD")))
        for version, trees in ((DEFAULT_VERSION, NEWEST_TREES), ("0.7.0", ("v0.7.0", "HEAD"))):
            cases.append(Case(f"moe-{algo}-32gpus-{version}", RecipeSpec(
                model=MOE, layout=EVERYTHING, gpus=32, nodes=4, algo=algo, launcher="slurm", n=n,
                train_batch_size=512, ppo_mini_batch_size=128, prompt_len=1024, response_len=2048, version=version,
                rollout="sglang" if algo == "gspo" else "vllm", model_slug="toymoe"), trees))
    for version, snapshot in (("0.8.0", "v0.8.0"), ("0.7.1", "v0.7.1")):
        cases.append(Case(f"dense-dapo-{version}", RecipeSpec(
            model=DENSE, layout=STATIC, gpus=8, algo="dapo", version=version, train_batch_size=1024,
            ppo_mini_batch_size=256, model_slug="toy-7b"), (snapshot,)))
    for version, snapshot in (("0.6.1", "v0.6.1"), ("0.5.0", "v0.5.0")):
        for algo in ("grpo", "ppo"):
            cases.append(Case(f"dense-{algo}-{version}", RecipeSpec(
                model=DENSE, layout=STATIC, gpus=8, algo=algo, n=1 if algo == "ppo" else 5, version=version,
                train_batch_size=1024, ppo_mini_batch_size=256, model_slug="toy-7b"), (snapshot,)))
    return cases


def _planned_cases(every: int = 1) -> list[Case]:
    """The planner's scripts (no version flag: the newest release) for every `every`-th packaged model."""
    return [Case(p.ident, p.spec, (CONFIG_TREE[p.spec.version],)) for p in planned_scripts(every)]


HAND = _hand_cases()


# ---------------------------------------------------------------------------------------------
# stubs: record argv instead of running anything

STUB = """#!/bin/bash
printf '%s\\0' "$@" > "$STUB_LOG/{name}.$$"
{extra}
exit 0
"""
SRUN_EXTRA = """for arg in "$@"; do
    if [[ $arg == hostname ]]; then echo 10.0.0.1; fi
done"""
SCONTROL_EXTRA = """for ((i = 0; i < ${STUB_NODES:-1}; i++)); do echo "node$i"; done"""


def make_stubs(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, extra in (("python3", ""), ("ray", ""), ("srun", SRUN_EXTRA), ("sbatch", ""),
                        ("scontrol", SCONTROL_EXTRA), ("sleep", "")):
        path = directory / name
        path.write_text(STUB.format(name=name, extra=extra))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return directory


def run_with_stubs(script: Path, stubs: Path, log: Path, home: Path, *, nodes: int = 1,
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    log.mkdir(parents=True, exist_ok=True)
    base = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(home), "STUB_LOG": str(log),
            "STUB_NODES": str(nodes), "SLURM_JOB_NODELIST": f"node[0-{nodes - 1}]"}
    base.update(env or {})
    return subprocess.run(["bash", str(script)], env=base, capture_output=True, text=True, timeout=30,
                          cwd=script.parent)


def trainer_argv(log: Path) -> list[str]:
    """The arguments the trainer module received (after `-m verl.trainer.main_ppo`)."""
    calls = []
    for record in sorted(log.iterdir()):
        words = record.read_bytes().split(b"\0")[:-1]
        argv = [w.decode() for w in words]
        if TRAINER in argv:
            calls.append(argv[argv.index(TRAINER) + 1:])
    assert len(calls) == 1, f"expected one trainer call, got {len(calls)}"
    return calls[0]


# ---------------------------------------------------------------------------------------------
# one session-wide batch: render, bash -n, shellcheck once, run with stubs, compose


@dataclass
class Outcome:
    case: Case
    path: Path
    text: str
    bash_n: str = ""
    run_error: str = ""
    argv: list[str] | None = None
    expected: list[str] | None = None


def _run_cases(cases: list[Case], root: Path) -> dict[str, Outcome]:
    """Render each case, bash -n it, and run it with stub commands that record the trainer's argv."""
    home = root / "home"
    home.mkdir()
    stubs = make_stubs(root / "stubs")
    outcomes: dict[str, Outcome] = {}
    for case in cases:
        rendered = generate(case.spec, check=False)  # the rules judge the written script below
        folder = root / case.id
        folder.mkdir()
        path = folder / default_filename(case.spec)
        path.write_text(rendered.text)
        outcome = Outcome(case, path, rendered.text)
        check = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        outcome.bash_n = check.stderr if check.returncode else ""
        done = run_with_stubs(path, stubs, folder / "log", home, nodes=case.spec.nodes)
        if done.returncode:
            outcome.run_error = done.stderr[-2000:]
        else:
            outcome.argv = trainer_argv(folder / "log")
        outcome.expected = [w.replace("$HOME", str(home)) for w in recipe_overrides(rendered.recipe)]
        outcomes[case.id] = outcome
    return outcomes


@pytest.fixture(scope="session")
def batch(tmp_path_factory) -> dict[str, Outcome]:
    return _run_cases(HAND, tmp_path_factory.mktemp("scripts"))


def _shape(text: str) -> str:
    """What shellcheck's verdict depends on: the script without comments (ours never hold a
    directive), with numbers blanked and bare (shq-safe) knob defaults replaced by one word."""
    lines = []
    for line in text.splitlines():
        if line.startswith("#") and not line.startswith(("#!", "#SBATCH")):
            continue
        line = re.sub(r"\s+# .*$", "", line)
        line = re.sub(r"[0-9]+", "0", line)
        line = re.sub(r":-[\w@%+=:,./-]+}", ":-w}", line)
        lines.append(re.sub(r"--job-name=\S+", "--job-name=w", line))
    return "\n".join(lines)


def _shellcheck_all(outcomes: dict[str, Outcome], shellcheck: str) -> dict[str, str]:
    """One shellcheck call over one script of each shape (scripts that differ only in numbers)."""
    representative: dict[str, str] = {}
    for outcome in outcomes.values():
        representative.setdefault(_shape(outcome.text), str(outcome.path))
    done = subprocess.run([shellcheck, "-S", "warning", "-f", "gcc", *representative.values()],
                          capture_output=True, text=True)
    by_file: dict[str, str] = {}
    for line in done.stdout.splitlines():
        name = line.split(":", 1)[0]
        by_file[name] = by_file.get(name, "") + line + "\n"
    return {str(o.path): by_file.get(representative[_shape(o.text)], "") for o in outcomes.values()}


@pytest.fixture(scope="session")
def shellcheck_report(batch, shellcheck: str) -> dict[str, str]:
    return _shellcheck_all(batch, shellcheck)


def _overrides(outcome: Outcome) -> tuple[str, ...]:
    return tuple(a for a in (outcome.argv or ()) if not a.startswith("--config-name"))


def _config_name(outcome: Outcome) -> str:
    """The config the call names (`--config-name=X`), else main_ppo's default `ppo_trainer`."""
    named = [a.split("=", 1)[1] for a in (outcome.argv or ()) if a.startswith("--config-name=")]
    return named[0] if named else "ppo_trainer"


def _expected_argv(outcome: Outcome) -> list[str]:
    name = written_config_name(outcome.case.spec.version)
    return ([f"--config-name={name}"] if name else []) + list(outcome.expected or ())


def _compose_key(outcome: Outcome, snapshot: str) -> tuple[str, tuple[str, ...]]:
    """Hand-built cases compose their exact override set. Planner cases differ from each other
    only in generator-chosen numbers, so they compose one representative per distinct key set
    (Hydra's verdict on these configs depends on the keys; every distinct value word is also
    parsed by Hydra's own override parser in test_planned_matrix_is_valid)."""
    overrides = _overrides(outcome)
    if outcome.case in HAND:
        return snapshot, (_config_name(outcome), *overrides)
    return snapshot, (_config_name(outcome), *(w.split("=", 1)[0] for w in overrides))


def _compose_all(outcomes: dict[str, Outcome], verl_config_dir: Path) -> dict[tuple[str, tuple[str, ...]], object]:
    """compose key -> composed config or the exception; each distinct key composed once."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    wanted: dict[str, dict[tuple[str, tuple[str, ...]], tuple[str, ...]]] = {}
    for outcome in outcomes.values():
        if outcome.argv is None:
            continue
        for snapshot in outcome.case.config_dirs:
            key = _compose_key(outcome, snapshot)
            wanted.setdefault(snapshot, {}).setdefault(key, _overrides(outcome))
    results: dict[tuple[str, tuple[str, ...]], object] = {}
    for snapshot, sets in wanted.items():
        config_dir = verl_config_dir / snapshot / "verl" / "trainer" / "config"
        GlobalHydra.instance().clear()
        with initialize_config_dir(config_dir=str(config_dir), version_base=None):
            for key, overrides in sets.items():
                try:
                    results[key] = compose(key[1][0], overrides=list(overrides))
                except Exception as err:  # the verdict is the point: report it per case
                    results[key] = err
    GlobalHydra.instance().clear()
    return results


@pytest.fixture(scope="session")
def composed(batch, verl_config_dir) -> dict[tuple[str, tuple[str, ...]], object]:
    return _compose_all(batch, verl_config_dir)


def _ids() -> list[str]:
    return [case.id for case in HAND]


# ---------------------------------------------------------------------------------------------
# the checks, one parametrized test per property


@pytest.mark.parametrize("case_id", _ids())
def test_bash_parses(batch, case_id: str) -> None:
    assert batch[case_id].bash_n == ""


@pytest.mark.parametrize("case_id", _ids())
def test_shellcheck_clean_at_warning_level(batch, shellcheck_report, case_id: str) -> None:
    assert shellcheck_report.get(str(batch[case_id].path), "") == ""


@pytest.mark.parametrize("case_id", _ids())
def test_trainer_receives_exactly_the_recipe_overrides(batch, case_id: str) -> None:
    outcome = batch[case_id]
    assert outcome.run_error == ""
    assert outcome.argv == _expected_argv(outcome)


@pytest.mark.parametrize("case_id", _ids())
def test_real_hydra_compose(batch, composed, case_id: str) -> None:
    outcome = batch[case_id]
    spec = outcome.case.spec
    for snapshot in outcome.case.config_dirs:
        cfg = composed[_compose_key(outcome, snapshot)]
        assert not isinstance(cfg, Exception), f"{snapshot}: {cfg}"
        actor = cfg.actor_rollout_ref.actor
        assert actor.megatron.tensor_model_parallel_size == spec.layout.tp
        assert actor.megatron.pipeline_model_parallel_size == spec.layout.pp
        assert cfg.trainer.n_gpus_per_node * cfg.trainer.nnodes == spec.gpus
        assert cfg.actor_rollout_ref.rollout.name == spec.rollout
        if spec.algo == "ppo":
            assert cfg.critic.megatron.tensor_model_parallel_size == spec.layout.tp
        if spec.version == DEFAULT_VERSION:  # the Megatron engine, selected as 0.9.x's examples do
            assert cfg.model_engine == "megatron" and "--config-name" not in " ".join(outcome.argv or ())
        if spec.algo == "dapo" and "reward" in cfg and "reward_manager" in cfg.reward:
            assert cfg.reward.reward_manager.name == "dapo"
            assert cfg.reward.reward_kwargs.overlong_buffer_cfg.enable is True
            assert cfg.reward.reward_kwargs.max_resp_len == spec.response_len


def _check_script_findings(text: str, path: Path, version: str) -> list:
    script = read_script(text, str(path))
    findings = []
    for _invocation, _config, found in check_script(script, version=version):
        findings += [f for f in found if f.severity in ("error", "warning")]
    return findings


@pytest.mark.parametrize("case_id", _ids())
def test_gen_check_is_clean(batch, case_id: str) -> None:
    outcome = batch[case_id]
    findings = _check_script_findings(outcome.text, outcome.path, outcome.case.spec.version)
    assert findings == [], [f"{f.code} {f.message}" for f in findings]


# every eighth packaged model in the default tier; all of them under `slow`
@pytest.mark.parametrize("every", [pytest.param(8, id="sample"), pytest.param(1, id="all", marks=pytest.mark.slow)])
def test_planned_matrix_is_valid(every: int, tmp_path: Path, shellcheck: str, verl_config_dir: Path) -> None:
    """The planner's scripts for packaged models at every GPU count where they fit (one test: many cases)."""
    outcomes = _run_cases(_planned_cases(every), tmp_path)
    shellcheck_report = _shellcheck_all(outcomes, shellcheck)
    composed = _compose_all(outcomes, verl_config_dir)
    planned = list(outcomes.values())
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    parsed_words: dict[str, str] = {}
    problems = []
    for outcome in planned:
        if outcome.bash_n:
            problems.append(f"{outcome.case.id}: bash -n: {outcome.bash_n}")
        if shellcheck_report.get(str(outcome.path)):
            problems.append(f"{outcome.case.id}: shellcheck: {shellcheck_report[str(outcome.path)]}")
        if outcome.argv != _expected_argv(outcome):
            problems.append(f"{outcome.case.id}: argv differs from the recipe ({outcome.run_error})")
            continue
        for snapshot in outcome.case.config_dirs:
            cfg = composed[_compose_key(outcome, snapshot)]
            if isinstance(cfg, Exception):
                problems.append(f"{outcome.case.id}: compose {snapshot}: {cfg}")
        for word in _overrides(outcome):
            if word not in parsed_words:
                try:
                    parser.parse_overrides([word])
                    parsed_words[word] = ""
                except Exception as err:
                    parsed_words[word] = str(err).splitlines()[0]
            if parsed_words[word]:
                problems.append(f"{outcome.case.id}: Hydra rejects {word!r}: {parsed_words[word]}")
        findings = _check_script_findings(outcome.text, outcome.path, outcome.case.spec.version)
        problems += [f"{outcome.case.id}: {f.code} {f.message}" for f in findings]
    assert not problems, "\n".join(problems[:20])
    models = {o.case.spec.model.name for o in planned}
    assert len(models) >= 20 // every, f"only {len(models)} packaged models got a script"


# ---------------------------------------------------------------------------------------------
# hostile values: they arrive intact, nothing in them runs


HOSTILE = "a b/$(touch {m}1)/`touch {m}2`/'q'/\"dq\"/$HOME/${{X}}\nline2;touch {m}3"


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_hostile_values_arrive_intact_and_nothing_runs(tmp_path: Path, launcher: str) -> None:
    marker = tmp_path / "marker"
    hostile = HOSTILE.format(m=marker)
    spec = RecipeSpec(model=DENSE, layout=STATIC, gpus=8, launcher=launcher, model_path=hostile + "-model",
                      train_files=hostile + "-train", val_files=hostile + "-val", project_name=hostile + "-p",
                      experiment_name=hostile + "-e", train_batch_size=1024, ppo_mini_batch_size=256,
                      model_slug="toy-7b")
    rendered = generate(spec, check=False)
    path = tmp_path / "run.sh"
    path.write_text(rendered.text)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    done = run_with_stubs(path, make_stubs(tmp_path / "stubs"), tmp_path / "log", tmp_path)
    assert done.returncode == 0, done.stderr[-1000:]
    argv = trainer_argv(tmp_path / "log")
    assert not any(marker.parent.glob("marker*")), "a value was executed"
    assert _check_script_findings(rendered.text, path, spec.version) == []
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    got = {}
    for word in argv[1:]:
        parsed = parser.parse_overrides([word])[0]
        got[parsed.key_or_group] = str(parsed.value()).replace("\\${", "${")
    assert got["actor_rollout_ref.model.path"] == hostile + "-model"
    assert got["data.train_files"] == hostile + "-train"
    assert got["data.val_files"] == hostile + "-val"
    assert got["trainer.project_name"] == hostile + "-p"
    assert got["trainer.experiment_name"] == hostile + "-e"


def test_env_overrides_reach_the_trainer(tmp_path: Path) -> None:
    """The knobs are the interface: TP=4 PP=1 bash run.sh changes exactly those keys."""
    spec = RecipeSpec(model=DENSE, layout=STATIC, gpus=8, train_batch_size=1024, ppo_mini_batch_size=256,
                      model_slug="toy-7b")
    path = tmp_path / "run.sh"
    path.write_text(generate(spec, check=False).text)
    done = run_with_stubs(path, make_stubs(tmp_path / "stubs"), tmp_path / "log", tmp_path,
                          env={"TP": "4", "PP": "1", "MODEL_PATH": "/m/x y"})
    assert done.returncode == 0
    argv = trainer_argv(tmp_path / "log")
    assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4" in argv
    assert "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=1" in argv
    assert "actor_rollout_ref.model.path='/m/x y'" in argv
    assert argv[-1] == "trainer.total_epochs=15"  # "$@" is last and empty here


def test_extra_arguments_pass_through_last(tmp_path: Path) -> None:
    spec = RecipeSpec(model=DENSE, layout=STATIC, gpus=8, train_batch_size=1024, ppo_mini_batch_size=256,
                      model_slug="toy-7b")
    path = tmp_path / "run.sh"
    path.write_text(generate(spec, check=False).text)
    log = tmp_path / "log"
    log.mkdir()
    env = {"PATH": f"{make_stubs(tmp_path / 'stubs')}:/usr/bin:/bin", "HOME": str(tmp_path), "STUB_LOG": str(log)}
    subprocess.run(["bash", str(path), "trainer.total_epochs=1", "data.seed=7"], env=env, check=True,
                   capture_output=True)
    assert trainer_argv(log)[-2:] == ["trainer.total_epochs=1", "data.seed=7"]


def test_generated_text_shape(tmp_path: Path) -> None:
    spec = RecipeSpec(model=DENSE, layout=STATIC, gpus=8, train_batch_size=1024, ppo_mini_batch_size=256,
                      model_slug="toy-7b")
    text = generate(spec, check=False).text
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "set -xeuo pipefail" in text
    assert text.rstrip().endswith('"$@"')
    assert "\r" not in text

"""A value outside verl's closed list (loss_agg_mode, megatron dtype, router_replay mode) is an
error only on the evidence of the user's own verl (issue 34): a vendored fork whose check and
dispatch name the value accepts it, a fork that names it nowhere refuses it, and without a fork
verl's release list judges."""

from __future__ import annotations

from pathlib import Path

from generator.judging import check_script
from generator.reading.fork_code import fork_names_values
from generator.reading.shell.script_reader import read_script
from generator.schema.resolution import resolve_script

YAML = """actor_rollout_ref:
  actor:
    strategy: fsdp
    ppo_mini_batch_size: 16
    loss_agg_mode: token-mean
  rollout:
    name: vllm
    n: 1
data:
  train_batch_size: 64
critic:
  enable: null
algorithm:
  adv_estimator: gae
trainer:
  n_gpus_per_node: 8
  nnodes: 1
  critic_warmup: 0
"""

# A fork that added a mode: its dataclass check lists it and its aggregation dispatches on it.
ACCEPTING = '''class ActorConfig:
    def __post_init__(self):
        valid = ("token-mean", "seq-mean-token-sum", "token-mean-weighted")
        if self.loss_agg_mode not in valid:
            raise ValueError(f"Invalid loss_agg_mode: {self.loss_agg_mode}")
'''
CORE = '''def agg_loss(loss_mat, loss_mask, loss_agg_mode):
    if loss_agg_mode == "token-mean":
        return loss_mat.sum()
    elif loss_agg_mode == 'token-mean-weighted':
        return loss_mat.mean()
    raise ValueError(loss_agg_mode)
'''
PLAIN = ACCEPTING.replace(', "token-mean-weighted"', "")
RUN = "python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.loss_agg_mode=token-mean-weighted\n"


def _project(tmp_path: Path, code: dict[str, str], vendored: bool = True) -> Path:
    project = tmp_path / "proj"
    files = {".git/HEAD": "", "run.sh": RUN}
    if vendored:
        files |= {"verl/trainer/config/ppo_trainer.yaml": YAML, "verl/version/version": "0.6.1\n", **code}
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project


def _vx908(project: Path) -> list[str]:
    path = project / "run.sh"
    script = read_script(path.read_bytes(), str(path))
    results = check_script(script, resolution=resolve_script(script, str(path)))
    return [f.severity for _i, _c, findings in results for f in findings if f.code == "VX908"]


def test_the_fork_names_the_value_where_it_checks_and_dispatches(tmp_path: Path) -> None:
    package = _project(tmp_path, {"verl/workers/config/actor.py": ACCEPTING,
                                  "verl/trainer/ppo/core_algos.py": CORE}) / "verl"
    assert fork_names_values(package, frozenset({"token-mean-weighted", "other"})) == {"token-mean-weighted"}
    assert fork_names_values(tmp_path / "nowhere", frozenset({"x"})) is None  # nothing read: no conclusion


def test_a_mode_the_forks_own_check_accepts_is_no_error(tmp_path: Path) -> None:
    assert _vx908(_project(tmp_path, {"verl/workers/config/actor.py": ACCEPTING,
                                      "verl/trainer/ppo/core_algos.py": CORE})) == []


def test_a_mode_the_forks_code_names_nowhere_is_an_error(tmp_path: Path) -> None:
    assert _vx908(_project(tmp_path, {"verl/workers/config/actor.py": PLAIN})) == ["error"]


def test_without_a_fork_verls_release_list_judges(tmp_path: Path) -> None:
    assert _vx908(_project(tmp_path, {}, vendored=False)) == ["error"]


# --- trainer.critic_warmup under an algorithm without a critic (VX919) ------------------------------

VERL_GATE = '''class RayPPOTrainer:
    def fit(self):
        if self.use_critic:
            self.critic_wg.update_critic(batch)
        if self.config.trainer.critic_warmup <= self.global_steps:
            self.actor_rollout_wg.update_actor(batch)
'''
# A fork that warms up a head of its own while the actor waits: it gates more than the actor by it.
OWN_GATE = VERL_GATE.replace("        if self.use_critic:\n",
                             "        if self.use_critic and self.config.trainer.critic_warmup <= self.global_steps:\n")
WARMUP_RUN = "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo trainer.critic_warmup=20\n"


def _vx919(tmp_path: Path, trainer: str) -> list[tuple[str, str]]:
    project = _project(tmp_path, {"verl/trainer/ppo/ray_trainer.py": trainer})
    (project / "run.sh").write_text(WARMUP_RUN)
    path = project / "run.sh"
    script = read_script(path.read_bytes(), str(path))
    results = check_script(script, resolution=resolve_script(script, str(path)))
    return [(f.severity, f.message) for _i, _c, findings in results for f in findings if f.code == "VX919"]


def test_critic_warmup_on_a_fork_that_gates_the_actor_as_verl_does_is_a_warning(tmp_path: Path) -> None:
    ((severity, message),) = _vx919(tmp_path, VERL_GATE)
    assert severity == "warning" and "those steps train nothing" in message


def test_critic_warmup_on_a_fork_that_uses_it_its_own_way_is_info_naming_the_code(tmp_path: Path) -> None:
    ((severity, message),) = _vx919(tmp_path, OWN_GATE)
    assert severity == "info"
    assert "trainer/ppo/ray_trainer.py:3" in message and "self.use_critic and" in message


def test_critic_warmup_on_a_fork_whose_trainer_never_reads_it_is_info(tmp_path: Path) -> None:
    ((severity, message),) = _vx919(tmp_path, "class RayPPOTrainer:\n    def fit(self):\n        pass\n")
    assert severity == "info" and "never reads it" in message


# --- rollout.mode=sync on a development fork of 0.7 (VR508) ---------------------------------------

SYNC_YAML = YAML.replace("    name: vllm\n", "    name: vllm\n    mode: sync\n")
REFUSING = '''class RolloutConfig:
    def __post_init__(self):
        if self.mode == "sync":
            raise ValueError("Rollout mode 'sync' has been removed")
'''
RUNNING = '''class RolloutConfig:
    mode: str = "sync"
'''
# A recipe config over the fork's own (verl's dapo layout): its defaults are the fork's.
RECIPE_YAML = "hydra:\n  searchpath:\n    - file://verl/trainer/config\ndefaults:\n  - ppo_trainer\n  - _self_\n"


def _vr508(tmp_path: Path, rollout_code: str | None, run: str, default: str = "sync") -> list[str]:
    code = {"verl/workers/config/rollout.py": rollout_code} if rollout_code is not None else {}
    project = _project(tmp_path, {**code, "recipe/x/config/x_trainer.yaml": RECIPE_YAML})
    (project / "verl/trainer/config/ppo_trainer.yaml").write_text(SYNC_YAML.replace("mode: sync", f"mode: {default}"))
    (project / "verl/version/version").write_text("0.7.0.dev\n")
    (project / "run.sh").write_text(run)
    path = project / "run.sh"
    script = read_script(path.read_bytes(), str(path))
    results = check_script(script, resolution=resolve_script(script, str(path)))
    return [f.severity for _i, _c, findings in results for f in findings if f.code == "VR508"]


def test_sync_set_on_a_fork_whose_rollout_config_refuses_it_is_an_error(tmp_path: Path) -> None:
    run = "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.mode=sync\n"
    assert _vr508(tmp_path, REFUSING, run, default="async") == ["error"]


def test_sync_on_a_fork_whose_rollout_config_runs_it_is_no_error(tmp_path: Path) -> None:
    run = "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.mode=sync\n"
    assert _vr508(tmp_path, RUNNING, run, default="async") == []


def test_sync_never_set_and_defaulted_by_the_forks_own_config_is_no_error(tmp_path: Path) -> None:
    run = "python3 -m recipe.x.main_x --config-path=config --config-name=x_trainer data.train_batch_size=64\n"
    assert _vr508(tmp_path, None, run) == []

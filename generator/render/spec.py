"""What a generated script is made of: the spec it is rendered from (`RecipeSpec`), its knob
block and override groups (`ScriptSettings` of `Knob`s and `Setting`s), and the checks a spec
must pass before anything is built. Pure data and validation; `recipe.build_recipe` fills it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from generator.base.errors import InputError
from generator.schema.releases import newest_release
from generator.model.facts import ModelFacts
from generator.layout.candidate import Candidate
from generator.verl.constants import ALGORITHMS, PPO_MEGATRON_CONFIG, ROLLOUT_ENGINES
from generator.verl.versions import parse

LAUNCHERS: tuple[str, ...] = ("local", "ray", "slurm")
AUTO_LAUNCHER = "auto"

# The newest packaged release (the one `pip install verl` gets): scripts target it unless
# --verl-version names another.
DEFAULT_VERSION = newest_release()
AGENT_LOOP_WORKERS = 8  # rollout.agent.num_workers default (D1: G % workers == 0)

KnobKind = Literal["int", "float", "bool", "text", "shell", "hydra"]


@dataclass(frozen=True, slots=True)
class HydraText:
    """A value given as Hydra override text rather than a Python value: a list of files, or
    text that depends on the environment (re-rendering a legacy script).

    hydra          the Hydra text at the default, unknown parts as `<?label>` markers
    shell_default  shell text for the knob's default (may reference $VARS); None = the knob
                   is required (`${NAME:?...}`): the value was computed at run time
    """

    hydra: str
    shell_default: str | None
    comment: str = ""


@dataclass(frozen=True, slots=True)
class Knob:
    """An env-overridable variable in the script's knob block: `NAME=${NAME:-default}`.

    kind:
      int/float/bool  a number or flag the generator chose; written bare
      text            a user-supplied string; the default holds its Hydra body (see quoting.py)
                      and overrides wrap it as "'${NAME}'"
      shell           a generator-chosen default written as shell text (e.g. "$HOME/data/...")
      hydra           Hydra override text held verbatim (a list, an env-dependent value);
                      `value` is a HydraText
    """

    name: str
    value: Any
    kind: KnobKind
    comment: str = ""
    shell_default: str | None = None  # only for kind == "shell"


@dataclass(frozen=True, slots=True)
class Setting:
    """One override line: `key=value`, taking its value from `knob` when set."""

    key: str
    value: Any
    knob: str | None = None
    add: bool = False  # `+key=` (the key is not in the schema's listed keys)
    # `++key=` (add or replace): a key the config may already hold at that point, e.g. the ref's
    # copy of an actor mapping that an earlier `+actor...` line filled (verl's own examples use it)
    force: bool = False

    @property
    def prefix(self) -> str:
        return "++" if self.force else "+" if self.add else ""


@dataclass(frozen=True, slots=True)
class SettingGroup:
    name: str
    settings: tuple[Setting, ...]


@dataclass(frozen=True, slots=True)
class RecipeSpec:
    model: ModelFacts
    layout: Candidate
    gpus: int
    nodes: int = 1
    gpu_name: str = "h100"
    gpu_memory_gib: float = 80.0
    algo: str = "grpo"
    rollout: str = "vllm"
    launcher: str = AUTO_LAUNCHER  # "auto": local on one node, a Ray cluster (ray job submit) on more
    version: str = DEFAULT_VERSION
    model_path: str | HydraText | None = None  # None: the model's Hugging Face id
    train_files: str | HydraText | None = None  # None: $HOME/data/gsm8k/train.parquet
    val_files: str | HydraText | None = None
    prompt_len: int = 1024
    response_len: int = 1024
    mean_response_len: int | None = None  # the expected response length the plan's step time counted
    n: int = 5
    train_batch_size: int = 1024
    ppo_mini_batch_size: int = 256
    project_name: str | HydraText | None = None  # HydraText: kept from a legacy script's computed name
    experiment_name: str | HydraText | None = None
    model_slug: str = "model"
    total_epochs: int = 15
    ppo_epochs: int = 1
    # the run: loggers, checkpoints, resuming, learning rate
    loggers: tuple[str, ...] = ("console",)
    checkpoint_dir: str | None = None  # trainer.default_local_dir; None = verl's default
    save_freq: int = 20  # steps between checkpoints (-1: never)
    resume_mode: str | None = None  # trainer.resume_mode; None = verl's default ("auto")
    resume_from: str | None = None  # trainer.resume_from_path (resume_mode resume_path)
    lr: float = 1e-6  # actor learning rate
    # (key, value) pairs set after the recipe's own keys (a packaged recipe's verbatim
    # overrides). A key the recipe already sets takes the new value in place (its knob's
    # default when it has one); "+key" adds a key the schema does not list.
    extra_overrides: tuple[tuple[str, Any], ...] = ()
    notes: tuple[str, ...] = ()  # printed in the script's header (e.g. what a re-render changed)
    nodes_note: str = ""  # why the GPUs were split over `nodes` when --nodes was not given (header, summary)

    def __post_init__(self) -> None:
        if self.launcher == AUTO_LAUNCHER:
            object.__setattr__(self, "launcher", default_launcher(self.nodes))

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes


def default_launcher(nodes: int) -> str:
    """One node: the local launcher (the trainer starts its own Ray). More: `ray job submit` to
    a running cluster, since a local Ray sees one node's GPUs and verl stops with "Total
    available GPUs 8 is less than total desired GPUs 16"."""
    return "local" if nodes <= 1 else "ray"


@dataclass(frozen=True, slots=True)
class ScriptSettings:
    spec: RecipeSpec
    knobs: list[Knob] = field(default_factory=list)
    groups: list[SettingGroup] = field(default_factory=list)
    env: list[tuple[str, str, str]] = field(default_factory=list)  # (name, value, why)
    notes: list[str] = field(default_factory=list)  # things verl cannot express in this release

    def knob(self, name: str) -> Knob:
        for knob in self.knobs:
            if knob.name == name:
                return knob
        raise KeyError(name)

    @property
    def settings(self) -> list[Setting]:
        return [s for g in self.groups for s in g.settings]



# ---------------------------------------------------------------------------------------------
# validation of the spec (user errors become one-line InputErrors)


def check_spec(spec: RecipeSpec) -> None:
    if spec.algo not in ALGORITHMS:
        raise InputError(f"unknown algorithm '{spec.algo}'; choose one of {', '.join(ALGORITHMS)}")
    if spec.rollout not in ROLLOUT_ENGINES:
        raise InputError(f"unknown rollout engine '{spec.rollout}'; choose vllm or sglang")
    if spec.launcher not in LAUNCHERS:
        raise InputError(f"unknown launcher '{spec.launcher}'; choose local, ray or slurm")
    if spec.launcher == "local" and spec.nodes > 1:
        raise InputError(f"the local launcher starts a one-node Ray cluster, which cannot hold {spec.nodes} nodes; "
                         "use --launcher ray (ray job submit to a running cluster) or --launcher slurm")
    if spec.nodes < 1 or spec.gpus < 1 or spec.gpus % spec.nodes:
        raise InputError(f"{spec.gpus} GPUs cannot be split evenly over {spec.nodes} node(s)")
    if spec.prompt_len < 1 or spec.response_len < 1:
        raise InputError("--prompt-len and --response-len must be positive")
    if spec.algo == "rloo" and spec.n < 2:
        raise InputError(f"RLOO needs at least 2 responses per prompt (leave-one-out), got --n {spec.n}")
    if spec.n < 1:
        raise InputError(f"--n must be at least 1, got {spec.n}")
    _check_run_options(spec)
    for label, text in (("--model-path", spec.model_path), ("--train-files", spec.train_files),
                        ("--val-files", spec.val_files), ("--project-name", spec.project_name),
                        ("--experiment-name", spec.experiment_name), ("--checkpoint-dir", spec.checkpoint_dir),
                        ("--resume-from", spec.resume_from)):
        if isinstance(text, str) and (text == "" or "\x00" in text):
            raise InputError(f"{label} must be a non-empty string without NUL bytes")
    try:
        parse(spec.version)
    except ValueError:
        raise InputError(f"not a verl version: '{spec.version}'") from None


# trainer.resume_mode values verl's trainer reads (verl/trainer/ppo/ray_trainer.py)
RESUME_MODES: tuple[str, ...] = ("auto", "disable", "resume_path")


def _check_run_options(spec: RecipeSpec) -> None:
    if not spec.loggers or any(not name or not name.replace("_", "").isalnum() for name in spec.loggers):
        raise InputError(f"--logger takes logger names (console, wandb, tensorboard, ...), got {list(spec.loggers)}")
    if spec.save_freq == 0 or spec.save_freq < -1:
        raise InputError(f"--save-freq must be a positive number of steps or -1 (never), got {spec.save_freq}")
    if spec.total_epochs < 1:
        raise InputError(f"--epochs must be at least 1, got {spec.total_epochs}")
    if not 0 < spec.lr < 1:
        raise InputError(f"--lr must be between 0 and 1, got {spec.lr}")
    if spec.resume_mode is not None and spec.resume_mode not in RESUME_MODES:
        raise InputError(f"unknown --resume-mode '{spec.resume_mode}'; choose {', '.join(RESUME_MODES)}")
    if (spec.resume_mode == "resume_path") != (spec.resume_from is not None):
        raise InputError("--resume-from PATH goes with --resume-mode resume_path (and that mode needs it)")


def at_least(version: str, release: str) -> bool:
    return parse(version) >= parse(release)


def schema_has(version: str, key: str) -> bool:
    """Whether the target release's Megatron trainer config has `key` (False for an unknown release)."""
    from generator.schema import load

    try:
        return load(version).has(key, PPO_MEGATRON_CONFIG)
    except InputError:
        return False


def fill_knob_values(recipe: ScriptSettings, settings: list[Setting]) -> list[Setting]:
    """A setting bound to a knob takes the knob's value, so one number lives in one place."""
    names = {knob.name: knob for knob in recipe.knobs}
    out = []
    for s in settings:
        if s.knob is not None:
            if s.knob not in names:
                raise AssertionError(f"setting {s.key} names unknown knob {s.knob}")
            out.append(replace(s, value=names[s.knob].value))
        else:
            out.append(s)
    return out

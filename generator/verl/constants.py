"""Facts about verl itself that several parts of verl-gen need: its trainer entry, the names of
its PPO configs, the key prefixes of its roles, the mappings it passes through to other
libraries. One home for each; every module that needs one imports it from here.

Pure data, no project imports: anything may depend on this module.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

# The PPO trainer every verl example launches (`python3 -m verl.trainer.main_ppo`).
PPO_ENTRY = "verl.trainer.main_ppo"

# verl's two PPO configs (verl/trainer/config/*.yaml): FSDP and Megatron backends.
PPO_CONFIG = "ppo_trainer"
PPO_MEGATRON_CONFIG = "ppo_megatron_trainer"
PPO_CONFIGS = (PPO_CONFIG, PPO_MEGATRON_CONFIG)

# Where a verl checkout or install keeps those configs and its release number, relative to
# the `verl/` package folder.
CONFIG_SUBDIR = ("trainer", "config")
VERSION_FILE = ("version", "version")

# Key prefixes of the roles in a PPO config.
ACTOR = "actor_rollout_ref.actor."
ROLLOUT = "actor_rollout_ref.rollout."
REF = "actor_rollout_ref.ref."
CRITIC = "critic."
MEGATRON = ACTOR + "megatron."
TRANSFORMER = MEGATRON + "override_transformer_config."
OPTIMIZER_OVERRIDES = ACTOR + "optim.override_optimizer_config."  # passed to Megatron's OptimizerConfig as is

# verl's config default for actor_rollout_ref.model.path in every release: a placeholder, not the
# model a script that leaves the key unset (or sets it to an unreadable value) really trains.
MODEL_PATH_KEY = "actor_rollout_ref.model.path"
DEFAULT_MODEL_PATH = "~/models/deepseek-llm-7b-chat"
# The Megatron actor's LoRA rank (verl v0.7.0 workers/config/megatron_peft.py: enabled when > 0;
# the FSDP actor reads actor_rollout_ref.model.lora_rank instead).
MEGATRON_LORA_RANK = "actor_rollout_ref.model.lora.rank"

# Keys under these mapping names are free-form in verl (passed through to Megatron, vLLM...):
# a generated config adds unknown sub-keys with `+`, and a key verl's YAML dropped may still
# work there.
OPEN_MAPPINGS = (
    "override_transformer_config",
    "override_ddp_config",
    "override_optimizer_config",
    "override_mcore_model_config",
    "override_config",
    "engine_kwargs",
    "apply_chat_template_kwargs",
    "mm_processor_kwargs",
    "ray_kwargs",
    "kwargs",
)

# verl's supervised fine-tuning trainers (the last part of the module name): `gen explain` shows
# their own batch arithmetic, never PPO's.
SFT_ENTRIES = ("fsdp_sft_trainer", "sft_trainer")

# Entries that do not train (generation, evaluation, SFT): only their keys are checked.
NON_TRAINER_ENTRIES = ("main_generation", "main_eval", "sft_trainer", "fsdp_sft_trainer", "main_generation_server")
# Recipe entry points that run their own trainer (separate rollout GPUs, streaming batches,
# distillation, VLA...): verl's PPO batch chain does not describe them, so only keys are checked.
NON_PPO_RECIPES = ("gkd", "vla", "atropos", "one_step_off", "fully_async", "async_flow", "dance_grpo",
                   "reward_queue", "dynamo", "transfer_queue", "sft", "eval", "generation")


def ppo_config_for(name: str | None) -> str:
    """The PPO config a config named `name` builds on, judged by its name: the Megatron one
    when the name says megatron, else the FSDP one."""
    return PPO_MEGATRON_CONFIG if name and "megatron" in name else PPO_CONFIG


def config_stem(config_name: str | None) -> str:
    """A --config-name as the config's name: quotes, folders and `.yaml` dropped."""
    return (config_name or "").strip("'\"").rsplit("/", 1)[-1].removesuffix(".yaml")


def packaged_config_of(config_name: str | None) -> str:
    """The packaged PPO config a call's keys are looked up in: verl's own two by name, else
    the one a recipe config extends, judged by its name."""
    stem = config_stem(config_name)
    return stem if stem in PPO_CONFIGS else ppo_config_for(stem)


class Algorithm(NamedTuple):
    """What every layer knows of one algorithm `gen recipe` renders: its advantage estimator,
    its KL term (which is why verl builds a reference model), whether a critic trains, how
    many responses per prompt it needs and starts from, and its one-line summary."""

    name: str
    estimator: str  # algorithm.adv_estimator
    kl: Literal["loss", "reward"] | None  # the KL term: a loss (use_kl_loss), a reward penalty, or none
    critic: bool  # a critic trains (GAE)
    default_n: int  # responses per prompt when --n is not given
    min_n: int  # responses per prompt it needs (group baselines compare responses within a prompt)
    blurb: str

    @property
    def has_ref(self) -> bool:
        """verl builds the reference model only for a KL term."""
        return self.kl is not None


# The algorithms `gen recipe` renders (and a library recipe may name), in the order shown. GPG is
# not one: a recipe runs it as GRPO with verl's GPG keys among its overrides (the verl-*-gpg recipe).
ALGORITHM_TABLE: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("grpo", "grpo", "loss", False, 5, 2, "GRPO: group-relative advantages over n responses, KL as a loss term"),
    Algorithm("ppo", "gae", None, True, 1, 1, "PPO: GAE advantages from a Megatron critic with the actor's layout"),
    Algorithm("dapo", "grpo", None, False, 5, 2, "DAPO: decoupled clip (0.2/0.28), token-mean loss, no KL"),
    Algorithm("gspo", "grpo", None, False, 5, 2, "GSPO: sequence-level importance ratios, clip 3e-4/4e-4, no KL"),
    Algorithm("rloo", "rloo", "reward", False, 5, 2,
              "RLOO: leave-one-out baseline over n >= 2 responses, KL in the reward"),
    Algorithm("reinforce_plus_plus", "reinforce_plus_plus", "loss", False, 5, 1,
              "REINFORCE++: batch-normalised returns, KL as a loss term"),
)}
ALGORITHMS: tuple[str, ...] = tuple(ALGORITHM_TABLE)

# algorithm.adv_estimator -> the recipe algorithm it starts from (the first in the table that
# uses it). GRPO's estimator also runs DAPO and GSPO, which differ in the actor's loss keys (see
# generator.script.algorithm_reading).
ESTIMATOR_ALGORITHM: dict[str, str] = {}
for _algorithm in ALGORITHM_TABLE.values():
    ESTIMATOR_ALGORITHM.setdefault(_algorithm.estimator, _algorithm.name)


def critic_trains(algo: str) -> bool:
    facts = algorithm_facts(algo)
    return facts is not None and facts.critic


def algorithm_facts(name: str) -> Algorithm | None:
    """The table's entry for a recipe algorithm, or for an estimator name (`gae` is PPO's)."""
    key = name.lower()
    return ALGORITHM_TABLE.get(key) or ALGORITHM_TABLE.get(ESTIMATOR_ALGORITHM.get(key, ""))


ROLLOUT_ENGINES: tuple[str, ...] = ("vllm", "sglang")

# rollout.max_num_batched_tokens in verl's config (verl/trainer/config/rollout/rollout.yaml@v0.7.0):
# the most tokens vLLM schedules in one step. Below prompt+response it cannot prefill one sequence
# when chunked prefill is off, so the planner and the renderer raise it to the sequence length.
VLLM_MAX_NUM_BATCHED_TOKENS = 8192

# Config values verl accepts from a closed list (rules VX908, VX905, VX912; verl_ref A5, A22, A28): the key -> the
# values verl's own check allows. A fork may add values (its dataclass check and the function that
# dispatches on the value name them), so the rules ask the fork's code before calling one invalid
# (generator.reading.fork_code.fork_names_values).
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
MEGATRON_DTYPES = ("bfloat16", "float16")
ROUTER_REPLAY_MODES = ("disabled", "R2", "R3")
CHOICES: dict[str, tuple[str, ...]] = {
    ACTOR + "loss_agg_mode": LOSS_AGG_MODES,
    **{prefix + "dtype": MEGATRON_DTYPES for prefix in (MEGATRON, REF + "megatron.", CRITIC + "megatron.")},
    # 0.7.0-0.9.0 keep it on the actor; 0.9.1 under the engine blocks (megatron, veomni)
    **{key: ROUTER_REPLAY_MODES for key in (ACTOR + "router_replay.mode", MEGATRON + "router_replay.mode",
                                            ACTOR + "veomni.router_replay.mode")},
}

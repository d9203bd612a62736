"""Read a launch script's training setup: the trainer call, then the recipe-level fields of its
effective config (model, algorithm, layout and knobs, batch sizes, lengths, GPUs).

Extraction only reads: a value the script leaves unknown (an unset variable, a `$(...)`)
is None here, and each caller decides what to do with it (`gen import` refuses, `gen recipe
--from` keeps a default). The algorithm a config runs is decided by `algorithm_of`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from generator.config.knobs import Reads, read_knobs
from generator.config.reader import ConfigReader, as_int
from generator.config.types import Config
from generator.reading.launch_script import Invocation, LaunchScript
from generator.model.facts import ModelFacts
from generator.layout.candidate import Candidate
from generator.script.algorithm_reading import algorithm_of
from generator.verl.constants import ACTOR, MEGATRON, PPO_ENTRY, ROLLOUT, TRANSFORMER

MODEL_PATH = "actor_rollout_ref.model.path"

_UNKNOWN_MARKER = re.compile(r"<\?[^>]*>")


@dataclass(frozen=True, slots=True)
class PickedCall:
    invocation: Invocation
    live_calls: int  # how many live trainer calls the script has (a note when more than one)


def trainer_call(script: LaunchScript) -> PickedCall | None:
    """The call a script-level command reads: the first live call of a PPO-style trainer main
    (`verl.trainer.main_ppo`, or a recipe's `main_*` such as `recipe.dapo.main_dapo`), else the
    first live call; None when no call is live."""
    live = [inv for inv in script.invocations if inv.branch != "dead"]
    if not live:
        return None
    trainers = [inv for inv in live if inv.entry == PPO_ENTRY or ".main_" in inv.entry]
    return PickedCall((trainers or live)[0], len(live))


@dataclass(frozen=True, slots=True)
class Setup:
    """The recipe-level fields of one effective config; None = not known statically."""

    model_path: str | None  # as the config holds it (may contain `<?...>` unknown markers)
    model_path_known: bool
    algorithm: str | None  # None: the estimator has no recipe algorithm (see `estimator`)
    estimator: object
    layout: Candidate  # counts the script leaves unknown take their Megatron defaults (1, None)
    per_node: int | None
    nodes: int | None
    train_batch_size: int | None
    ppo_mini_batch_size: int | None
    micro_batch_per_gpu: int | None
    log_prob_micro_batch_per_gpu: int | None
    token_budget: int | None  # only with dynamic batch size
    log_prob_token_budget: int | None
    rollout_name: str
    rollout_tp: int | None
    gpu_memory_utilization: float | None
    cpu_optimizer_fraction: float | None  # as written; None when unset
    n: int | None
    prompt_len: int | None
    response_len: int | None
    ppo_epochs: int | None
    total_epochs: int | None

    @property
    def gpus(self) -> int | None:
        return None if self.per_node is None or self.nodes is None else self.per_node * self.nodes

    def model_name_hint(self) -> str | None:
        """What names the model: the path, or when it depends on the environment
        (`$HOME/models/Qwen2-7B-Instruct`) the folder name after the unknown part."""
        if self.model_path is None:
            return None
        if self.model_path_known:
            return self.model_path
        tail = _UNKNOWN_MARKER.sub("", self.model_path).rstrip("/").rsplit("/", 1)[-1]
        return tail or None


def _int(config: Config, key: str) -> int | None:
    return None if key in config.unknown else as_int(config.values.get(key))


def setup_from_config(config: Config, *, entry: str = PPO_ENTRY) -> Setup:
    """The setup one effective config describes (see `Setup`). A knob the script leaves unknown
    keeps the recipe's default here (`gen import` and `gen recipe --from` decide what to refuse)."""
    knobs = read_knobs(Reads(ConfigReader(config)))
    dynamic, micro, log_prob_micro = knobs.dynamic, knobs.micro, knobs.log_prob_micro
    token_budget = knobs.token_budget if dynamic else None
    log_prob_budget = knobs.log_prob_token_budget if dynamic else None
    off = knobs.offload
    fraction = off.cpu_optimizer_fraction if knobs.offload_fraction_set else None
    gmu = knobs.gpu_memory_utilization
    tp = _int(config, MEGATRON + "tensor_model_parallel_size") or 1
    rollout_tp = knobs.rollout_tp
    layout = Candidate(
        tp=tp, pp=_int(config, MEGATRON + "pipeline_model_parallel_size") or 1,
        cp=_int(config, MEGATRON + "context_parallel_size") or 1,
        ep=_int(config, MEGATRON + "expert_model_parallel_size") or 1,
        etp=_int(config, MEGATRON + "expert_tensor_parallel_size"),
        vpp=_int(config, MEGATRON + "virtual_pipeline_model_parallel_size"),
        first_stage_layers=_int(config, TRANSFORMER + "num_layers_in_first_pipeline_stage"),
        last_stage_layers=_int(config, TRANSFORMER + "num_layers_in_last_pipeline_stage"),
        rollout_tp=rollout_tp or tp, micro_batch_per_gpu=micro or 1,
        log_prob_micro_batch_per_gpu=log_prob_micro or micro or 1,
        use_dynamic_bsz=dynamic, token_budget=token_budget,
        log_prob_token_budget=log_prob_budget or token_budget,
        offload=off,  # an unset optimizer_offload_fraction is Megatron's 0.0, as verl runs it
        recompute=knobs.recompute,
        gpu_memory_utilization=gmu or 0.5,
        why=("layout and batch sizes kept from the legacy script",),
    )
    model_path = config.values.get(MODEL_PATH)
    return Setup(
        model_path=model_path if isinstance(model_path, str) else None,
        model_path_known=MODEL_PATH not in config.unknown,
        algorithm=algorithm_of(config, entry), estimator=config.values.get("algorithm.adv_estimator"),
        layout=layout, per_node=_int(config, "trainer.n_gpus_per_node"), nodes=_int(config, "trainer.nnodes"),
        train_batch_size=_int(config, "data.train_batch_size"),
        ppo_mini_batch_size=_int(config, ACTOR + "ppo_mini_batch_size"),
        micro_batch_per_gpu=micro, log_prob_micro_batch_per_gpu=log_prob_micro,
        token_budget=token_budget, log_prob_token_budget=log_prob_budget,
        rollout_name=str(config.values.get(ROLLOUT + "name") or "vllm"), rollout_tp=rollout_tp,
        gpu_memory_utilization=gmu, cpu_optimizer_fraction=fraction if off.cpu_optimizer else None,
        n=_int(config, ROLLOUT + "n"), prompt_len=_int(config, "data.max_prompt_length"),
        response_len=_int(config, "data.max_response_length"), ppo_epochs=_int(config, ACTOR + "ppo_epochs"),
        total_epochs=_int(config, "trainer.total_epochs"),
    )


def find_setup_model(setup: Setup) -> ModelFacts | None:
    """The registry model the setup's model path names (None when it names none)."""
    from generator.model import find_model

    hint = setup.model_name_hint()
    return find_model(hint) if hint else None

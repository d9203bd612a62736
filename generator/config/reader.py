"""Typed, unknown-aware reads of one trainer call's Config, plus the derived quantities every
rule family, report and importer needs (DP, the actor layout, which roles exist). A reader
decides only on known values: every accessor returns None when the value is unset, unknown, or
not of the expected type.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeAlias

from generator.layout import derive
from generator.config.types import Config
from generator.reading.launch_script import Invocation, LaunchScript
from generator.verl.constants import (
    ACTOR,
    CRITIC,
    MEGATRON,
    NON_PPO_RECIPES,
    NON_TRAINER_ENTRIES,
    PPO_ENTRY,
    ROLLOUT,
    TRANSFORMER,
    critic_trains,
)
from generator.base.errors import InputError
from generator.verl.release_semantics import semantics
from generator.schema import load


class TrainerCall(Protocol):
    """What a reader needs of a call: its config, and the script and invocation when it was
    read from one (None for generated configs). The rules' Context is one."""

    @property
    def config(self) -> Config: ...

    @property
    def invocation(self) -> Invocation | None: ...

    @property
    def script(self) -> LaunchScript | None: ...


def as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit():
            return int(text)
    return None


def as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def as_float(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


# The reader's methods are named after the types they return (`reader.int(key)`); inside the
# class those names shadow the builtins, so its annotations use these aliases.
Int: TypeAlias = int
Str: TypeAlias = str
Bool: TypeAlias = bool
Float: TypeAlias = float


class ConfigReader:
    """Read helpers over one call's Config. Cheap to build; rules build one each."""

    __slots__ = ("config", "invocation", "script", "values")

    def __init__(self, config: Config, invocation: Invocation | None = None,
                 script: LaunchScript | None = None) -> None:
        self.config = config
        self.invocation = invocation
        self.script = script
        self.values = config.values

    @classmethod
    def of(cls, call: TrainerCall) -> "ConfigReader":
        return cls(call.config, call.invocation, call.script)

    # --- raw reads ------------------------------------------------------------------------
    def known(self, key: Str) -> Bool:
        return key not in self.config.unknown

    def raw(self, key: Str) -> Any:
        if key in self.config.unknown:
            return None
        return self.values.get(key)

    def int(self, key: Str) -> Int | None:
        return as_int(self.raw(key))

    def bool(self, key: Str) -> Bool | None:
        return as_bool(self.raw(key))

    def float(self, key: Str) -> Float | None:
        return as_float(self.raw(key))

    def str(self, key: Str) -> Str | None:
        value = self.raw(key)
        return value if isinstance(value, str) else None

    def is_null(self, key: Str) -> Bool:
        """Known and null (absent keys count as null)."""
        return self.known(key) and self.values.get(key) is None

    def is_set(self, key: Str) -> Bool:
        """Known and not null."""
        return self.known(key) and self.values.get(key) is not None

    def explicit(self, key: Str) -> Bool:
        return key in self.config.set_by

    def release_default(self, key: Str) -> tuple[Bool, Any]:
        """(known, value): what the call's schema (a packaged release, or the project's own fork
        config) gives `key` before any override; (False, None) when that is not known."""
        try:
            defaults = load(self.config.version).configs.get(self.config.schema)
        except InputError:
            return False, None
        if defaults is None or key not in defaults:
            return False, None
        return True, defaults[key]

    def line(self, *keys: Str) -> Int | None:
        for key in keys:
            line = self.config.line_of(key)
            if line is not None:
                return line
        return self.invocation.line if self.invocation else None

    # --- launch facts ---------------------------------------------------------------------
    @property
    def backend(self) -> Str:
        return self.config.backend

    @property
    def version(self) -> Str:
        return self.config.version

    @property
    def gpus(self) -> Int | None:
        per_node, nodes = self.int("trainer.n_gpus_per_node"), self.int("trainer.nnodes")
        if per_node is None or nodes is None or per_node <= 0 or nodes <= 0:
            return None
        return per_node * nodes

    @property
    def gpus_per_node(self) -> Int | None:
        return self.int("trainer.n_gpus_per_node")

    @property
    def new_engine(self) -> Bool:
        """Whether engine_workers.py runs: always from 0.8.0 (the legacy workers are gone), before
        that when trainer.use_legacy_worker_impl=disable (§1.8; generator.verl.release_semantics)."""
        return semantics(self.config.version).engine_active(self.str("trainer.use_legacy_worker_impl"))

    @property
    def auto_padding(self) -> Bool:
        env = dict(self.script.assumed_env) if self.script else {}
        if self.invocation:
            env.update(self.invocation.env)
        return env.get("VERL_AUTO_PADDING", "").strip() in ("1", "true", "True")

    # --- roles ----------------------------------------------------------------------------
    @property
    def ref_used(self) -> Bool | None:
        kl_reward, kl_loss = self.bool("algorithm.use_kl_in_reward"), self.bool(ACTOR + "use_kl_loss")
        if kl_reward or kl_loss:
            return True
        if kl_reward is None or kl_loss is None:
            return None
        return False

    @property
    def critic_used(self) -> Bool | None:
        enable = self.raw(CRITIC + "enable")
        if isinstance(enable, bool):
            return enable
        if not self.known(CRITIC + "enable"):
            return None
        estimator = self.str("algorithm.adv_estimator")
        if estimator is None:
            return None
        return critic_trains(estimator)  # GAE: the estimator that trains a critic (verl.ALGORITHM_TABLE)

    @property
    def actor_dynamic(self) -> Bool | None:
        return self.bool(ACTOR + "use_dynamic_bsz")

    # --- layout ---------------------------------------------------------------------------
    def actor_layout(self) -> derive.Layout | None:
        """The actor's Megatron layout; None when a size is unknown or not an int."""
        gpus = self.gpus
        if gpus is None:
            return None
        sizes: dict[Str, Int] = {}
        for name, key in (("tp", "tensor_model_parallel_size"), ("pp", "pipeline_model_parallel_size"),
                          ("cp", "context_parallel_size"), ("ep", "expert_model_parallel_size")):
            size = self._size(MEGATRON + key, default=1)
            if size is None:
                return None
            sizes[name] = size
        optional: dict[Str, Int | None] = {}
        for name, key in (("etp", MEGATRON + "expert_tensor_parallel_size"),
                          ("vpp", MEGATRON + "virtual_pipeline_model_parallel_size"),
                          ("first_stage_layers", TRANSFORMER + "num_layers_in_first_pipeline_stage"),
                          ("last_stage_layers", TRANSFORMER + "num_layers_in_last_pipeline_stage")):
            if not self.known(key):
                return None
            value = self.values.get(key)
            optional[name] = None if value is None else as_int(value)
            if value is not None and optional[name] is None:
                return None
        split: dict[Str, Bool] = {}
        for name, key in (("embedding", TRANSFORMER + "account_for_embedding_in_pipeline_split"),
                          ("loss", TRANSFORMER + "account_for_loss_in_pipeline_split")):
            if not self.known(key):
                return None
            split[name] = self.values.get(key) is True
        return derive.Layout(gpus=gpus, gpus_per_node=self.gpus_per_node, tp=sizes["tp"], pp=sizes["pp"],
                             cp=sizes["cp"], ep=sizes["ep"], etp=optional["etp"], vpp=optional["vpp"],
                             first_stage_layers=optional["first_stage_layers"],
                             last_stage_layers=optional["last_stage_layers"],
                             embedding_in_pipeline_split=split["embedding"], loss_in_pipeline_split=split["loss"])

    def _size(self, key: Str, *, default: Int) -> Int | None:
        """A parallel size: `default` when null, None when unknown or not an int."""
        if not self.known(key):
            return None
        value = self.values.get(key)
        return default if value is None else as_int(value)

    def ulysses(self, prefix: Str = ACTOR) -> Int | None:
        value = self.raw(prefix + "ulysses_sequence_parallel_size")
        if value is None and self.known(prefix + "ulysses_sequence_parallel_size"):
            return 1
        return as_int(value)

    def dp(self, sp_prefix: Str = ACTOR) -> Int | None:
        """DP of the trained roles: W/(TP·PP·CP) on Megatron, W/SP on FSDP."""
        gpus = self.gpus
        if gpus is None:
            return None
        if self.backend == "megatron":
            layout = self.actor_layout()
            if layout is None:
                return None
            return derive.data_parallel_size(gpus, layout.tp, layout.pp, layout.cp)
        sp = self.ulysses(sp_prefix)
        return None if sp is None else derive.sp_data_parallel_size(gpus, sp)

    def dp_equation(self, sp_prefix: Str = ACTOR) -> Str:
        """'DP = W / (TP·PP·CP) = 8 / (2·1·1) = 4' — how DP came about, in the user's numbers
        (derive.dp_equation's wording)."""
        dp, gpus = self.dp(sp_prefix), self.gpus
        if gpus is not None and dp is not None:
            if self.backend == "megatron":
                layout = self.actor_layout()
                if layout is not None:
                    return derive.dp_equation(gpus, layout.tp, layout.pp, layout.cp)
            else:
                return derive.sp_dp_equation(gpus, self.ulysses(sp_prefix) or 1, dp)
        return f"DP {dp}"

    def cp_or_sp(self, sp_prefix: Str = ACTOR) -> Int | None:
        if self.backend == "megatron":
            layout = self.actor_layout()
            return layout.cp if layout else None
        return self.ulysses(sp_prefix)

    def path(self) -> derive.Path:
        if self.new_engine:
            return "engine"
        return "megatron" if self.backend == "megatron" else "fsdp"

    def prompts_and_n(self) -> tuple[Int, Int] | None:
        """(P, n) when both are known and positive. P is data.gen_batch_size when set (§1.1)."""
        prompts = self.int("data.gen_batch_size") if self.is_set("data.gen_batch_size") else None
        if prompts is None:
            prompts = self.int("data.train_batch_size")
        n = self.int(ROLLOUT + "n")
        if prompts is None or n is None or prompts <= 0 or n <= 0:
            return None
        return prompts, n

    def sequence_length(self) -> Int | None:
        prompt = self.int(ROLLOUT + "prompt_length")
        if prompt is None:
            prompt = self.int("data.max_prompt_length")
        response = self.int(ROLLOUT + "response_length")
        if response is None:
            response = self.int("data.max_response_length")
        if prompt is None or response is None:
            return None
        return prompt + response


def is_trainer(call: TrainerCall) -> bool:
    """PPO-trainer calls get the batch and layout rules; generation/eval/SFT calls get key checks."""
    entry = call.config.entry or ""
    if any(entry.endswith(name) or f".{name}" in entry for name in NON_TRAINER_ENTRIES):
        return False
    if entry != PPO_ENTRY and any(marker in entry for marker in NON_PPO_RECIPES):
        return False
    inv = call.invocation
    if inv is not None and inv.config_name and "<?" in inv.config_name:
        return False  # the config itself comes from an argument: nothing about it is known
    if inv is not None and entry != PPO_ENTRY and any(
            "=" not in arg and any(arg.endswith(name) for name in NON_TRAINER_ENTRIES) for arg in inv.other_args[:2]):
        return False  # a launcher module running another entry (`-m verl_mlite.launch verl.trainer.sft_trainer`)
    if "sft" in (call.config.schema or "") or "generation" in (call.config.schema or ""):
        return False
    values = call.config.values
    return "data.train_batch_size" in values and ROLLOUT + "n" in values


def fallback_note(config: Config) -> str | None:
    """Why the config only approximates the call's own config (a recipe or SFT config that
    could not be found, so the PPO defaults stand in); None when the config is exact."""
    if not config.approximate:
        return None
    # A config the boundary refused to read is named first (generator.base.boundary): the report
    # must say which file was not read, and why.
    refused = [note for note in config.notes if "outside the project" in note]
    for note in config.notes:
        if "checked against" in note:
            return "; ".join([*refused, note])
    return "; ".join([*refused, "the call's own config was not found; the PPO defaults stood in"])

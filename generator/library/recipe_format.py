"""A recipe: one tested (or planned) verl Megatron setup, as a small YAML file.

The file holds metadata (model, algorithm, GPUs, the verl releases it targets, where it comes
from) and a structured `config` mapping — layout, batch sizes, lengths, offload, rollout —
that the renderer turns into a launch script. Keys the structure does not name go verbatim
into `config.overrides` (dotted verl key -> value).

Validation is strict and one-line: every error names the file and the field, so a user who
edits a recipe by hand sees exactly what to change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, overload

from generator.base.errors import InputError
from generator.layout.parallelism import Offload, Parallelism
from generator.verl.constants import ALGORITHMS, ROLLOUT_ENGINES
from generator.verl.versions import parse as parse_version

if TYPE_CHECKING:
    import builtins  # _Fields' methods str/int/float/bool shadow the builtin names in its annotations

BACKENDS = ("megatron",)
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_.")
MAX_NAME_LENGTH = 250  # with ".yaml", the longest file name most file systems allow (255)


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a recipe (its file is `<name>.yaml` in a library folder), or None.
    A name starts with a letter or digit: `.hidden` would hide the file and `-rf` reads as an
    option to the shell tools a user runs on it; `..` never names a file on its own."""
    if not name:
        return "a recipe name cannot be empty"
    if set(name) - NAME_CHARS:
        return f"'{name}' may use only lower-case letters, digits, '-', '_' and '.'"
    if not name[0].isalnum():
        return f"'{name}' must start with a letter or a digit"
    if ".." in name:
        return f"'{name}' may not contain '..'"
    if len(name) > MAX_NAME_LENGTH:
        return f"a recipe name has at most {MAX_NAME_LENGTH} characters (this one has {len(name)})"
    return None


@dataclass(frozen=True, slots=True)
class RecipeConfig:
    layout: Parallelism
    rollout_name: str = "vllm"
    rollout_tp: int = 1
    gpu_memory_utilization: float = 0.5
    n: int = 5
    train_batch_size: int = 1024
    ppo_mini_batch_size: int = 256
    micro_batch_per_gpu: int = 1
    log_prob_micro_batch_per_gpu: int | None = None
    use_dynamic_bsz: bool = False
    token_budget: int | None = None
    log_prob_token_budget: int | None = None
    prompt_len: int = 1024
    response_len: int = 1024
    offload: Offload = Offload()
    recompute: bool = False
    # verl keys beyond the structured fields (fused kernels, LoRA, chunked prefill, ...)
    overrides: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Recipe:
    name: str
    model: str
    algorithm: str
    gpus: int
    nodes: int
    gpu: str
    config: RecipeConfig
    backend: str = "megatron"
    verl_versions: tuple[str, ...] = ("0.7.0",)
    tags: tuple[str, ...] = ()
    description: str = ""
    provenance: str = ""
    model_path: str | None = None  # actor_rollout_ref.model.path; None = the model's HF id
    path: Path | None = None  # the file it was read from
    origin: str = "packaged"  # "packaged" | "user"
    # True when no run recorded the GPU type (a launch script does not name it): `gpu` is then an
    # assumption, and a memory verdict resting on it is a note, never a refusal (verdict.py)
    gpu_assumed: bool = False

    @property
    def gpus_per_node(self) -> int:
        return self.gpus // self.nodes

    @property
    def runs(self) -> str:
        """The algorithm the script runs, as `gen list` names it: the recipe's algorithm, or the
        advantage estimator its overrides set instead (verl's GPG example renders as GRPO with
        `algorithm.adv_estimator=gpg`: it runs GPG)."""
        from generator.verl.constants import algorithm_facts

        estimator = self.config.overrides.get("algorithm.adv_estimator")
        facts = algorithm_facts(self.algorithm)
        if isinstance(estimator, str) and facts is not None and estimator != facts.estimator:
            return estimator
        return self.algorithm

    @property
    def target_version(self) -> str:
        """The newest release the recipe says it targets."""
        return max(self.verl_versions, key=parse_version)

    def summary(self) -> dict[str, Any]:
        """The fields `gen list --format json` prints."""
        lay = self.config.layout
        return {
            "name": self.name,
            "model": self.model,
            "algo": self.runs,
            "gpus": self.gpus,
            "nodes": self.nodes,
            "gpu": self.gpu,
            "verl_versions": list(self.verl_versions),
            "tags": list(self.tags),
            "layout": {"tp": lay.tp, "pp": lay.pp, "cp": lay.cp, "ep": lay.ep, "etp": lay.etp,
                       "vpp": lay.vpp},
            "origin": self.origin,
            "description": self.description,
        }


# --------------------------------------------------------------------------- validation

class _Fields:
    """Reads typed fields out of a mapping, raising one-line errors that name file and field."""

    def __init__(self, where: str, data: object, prefix: str = "") -> None:
        self.where = where
        self.prefix = prefix
        if not isinstance(data, Mapping):
            raise self.error("", f"expected a mapping, got {_kind(data)}")
        self.data = data
        self.seen: set[str] = set()

    def error(self, name: str, message: str) -> InputError:
        dotted = f"{self.prefix}{name}".rstrip(".")
        label = f"field '{dotted}'" if dotted else "top level"
        return InputError(f"{self.where}: {label}: {message}")

    def _get(self, name: str, required: bool) -> object:
        self.seen.add(name)
        if name not in self.data or self.data[name] is None:
            if required:
                raise self.error(name, "missing (required)")
            return None
        return self.data[name]

    def str(self, name: builtins.str, default: builtins.str | None = None, *,
            required: builtins.bool = False, choices: tuple[builtins.str, ...] | None = None) -> builtins.str | None:
        value = self._get(name, required)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(name, f"expected a non-empty string, got {_kind(value)}")
        if choices is not None and value not in choices:
            raise self.error(name, f"'{value}' is not one of: {', '.join(choices)}")
        return value

    @overload
    def int(self, name: builtins.str, default: builtins.int, *, required: builtins.bool = False,
            minimum: builtins.int = 1) -> builtins.int: ...
    @overload
    def int(self, name: builtins.str, default: None = None, *, required: builtins.bool = False,
            minimum: builtins.int = 1) -> builtins.int | None: ...
    def int(self, name: builtins.str, default: builtins.int | None = None, *,
            required: builtins.bool = False, minimum: builtins.int = 1) -> builtins.int | None:
        value = self._get(name, required)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(name, f"expected an integer, got {_kind(value)}")
        if value < minimum:
            raise self.error(name, f"must be >= {minimum}, got {value}")
        return value

    def float(self, name: builtins.str, default: builtins.float, *,
              low: builtins.float, high: builtins.float) -> builtins.float:
        value = self._get(name, False)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(name, f"expected a number, got {_kind(value)}")
        if not low <= float(value) <= high:
            raise self.error(name, f"must be between {low} and {high}, got {value}")
        return float(value)

    def bool(self, name: builtins.str, default: builtins.bool = False) -> builtins.bool:
        value = self._get(name, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {_kind(value)}")
        return value

    def strings(self, name: builtins.str, default: tuple[builtins.str, ...] = (), *,
                required: builtins.bool = False) -> tuple[builtins.str, ...]:
        value = self._get(name, required)
        if value is None:
            return default
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                                  for v in value):
            raise self.error(name, f"expected a list of strings, got {_kind(value)}")
        return tuple(str(v) for v in value)

    def sub(self, name: builtins.str) -> "_Fields":
        value = self._get(name, False)
        return _Fields(self.where, {} if value is None else value, f"{self.prefix}{name}.")

    def no_extra(self) -> None:
        extra = sorted(str(k) for k in self.data if str(k) not in self.seen)
        if extra:
            raise self.error(extra[0], f"unknown field (known: {', '.join(sorted(self.seen))})")


def _kind(value: object) -> str:
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"[:80]


def recipe_from_mapping(data: object, *, where: str, path: Path | None = None,
                        origin: str = "packaged") -> Recipe:
    """Validate a parsed YAML document and build a Recipe. Raises InputError (one line)."""
    top = _Fields(where, data)
    head = _header(top)
    cfg = top.sub("config")
    lay = cfg.sub("layout")
    layout = Parallelism(
        tp=lay.int("tp", 1), pp=lay.int("pp", 1), cp=lay.int("cp", 1), ep=lay.int("ep", 1),
        etp=lay.int("etp"), vpp=lay.int("vpp"),
        first_stage_layers=lay.int("first_stage_layers"), last_stage_layers=lay.int("last_stage_layers"),
    )
    lay.no_extra()
    roll = cfg.sub("rollout")
    rollout_name = roll.str("name", "vllm", choices=ROLLOUT_ENGINES)
    rollout_tp = roll.int("tp", layout.tp)
    gmu = roll.float("gpu_memory_utilization", 0.5, low=0.05, high=0.99)
    n = roll.int("n", 5)
    roll.no_extra()
    batch = cfg.sub("batch")
    train_batch_size = batch.int("train_batch_size", required=True)
    mini = batch.int("ppo_mini_batch_size", required=True)
    micro = batch.int("micro_batch_per_gpu", 1)
    log_prob_micro = batch.int("log_prob_micro_batch_per_gpu")
    dynamic = batch.bool("use_dynamic_bsz")
    token_budget = batch.int("token_budget")
    log_prob_token_budget = batch.int("log_prob_token_budget")
    batch.no_extra()
    lengths = cfg.sub("lengths")
    prompt_len = lengths.int("prompt", 1024)
    response_len = lengths.int("response", 1024)
    lengths.no_extra()
    off = cfg.sub("offload")
    offload = Offload(param=off.bool("param"), grad=off.bool("grad"), optimizer=off.bool("optimizer"),
                      cpu_optimizer=off.bool("cpu_optimizer"),
                      cpu_optimizer_fraction=off.float("cpu_optimizer_fraction", 0.0, low=0.0, high=1.0))
    off.no_extra()
    recompute = cfg.bool("recompute")
    overrides = _overrides(cfg)
    cfg.no_extra()
    top.no_extra()

    if mini is not None and train_batch_size is not None and mini > train_batch_size:
        raise cfg.error("batch.ppo_mini_batch_size",
                        f"{mini} is larger than train_batch_size {train_batch_size}")
    if dynamic and token_budget is None:
        raise cfg.error("batch.token_budget", "required when use_dynamic_bsz is true")
    if offload.cpu_optimizer and offload.cpu_optimizer_fraction == 0.0:
        offload = Offload(offload.param, offload.grad, offload.optimizer, True, 1.0)

    config = RecipeConfig(
        layout=layout, rollout_name=rollout_name or "vllm", rollout_tp=rollout_tp or 1,
        gpu_memory_utilization=gmu, n=n or 1, train_batch_size=train_batch_size or 1,
        ppo_mini_batch_size=mini or 1, micro_batch_per_gpu=micro or 1,
        log_prob_micro_batch_per_gpu=log_prob_micro, use_dynamic_bsz=dynamic, token_budget=token_budget,
        log_prob_token_budget=log_prob_token_budget, prompt_len=prompt_len or 1,
        response_len=response_len or 1, offload=offload, recompute=recompute, overrides=overrides,
    )
    return Recipe(
        name=head.name, model=head.model or "", algorithm=head.algorithm or "grpo", gpus=head.gpus,
        nodes=head.nodes, gpu=head.gpu or "h100", config=config, backend=head.backend or "megatron",
        verl_versions=head.versions, tags=head.tags, description=head.description or "",
        provenance=head.provenance or "", model_path=head.model_path, path=path, origin=origin,
        gpu_assumed=head.gpu_assumed,
    )


@dataclass(frozen=True, slots=True)
class _Header:
    """A recipe's fields outside `config`, validated."""

    name: str
    model: str | None
    algorithm: str | None
    gpus: int
    nodes: int
    gpu: str | None
    backend: str | None
    versions: tuple[str, ...]
    tags: tuple[str, ...]
    description: str | None
    provenance: str | None
    model_path: str | None
    gpu_assumed: bool


def _header(top: _Fields) -> _Header:
    name = top.str("name", required=True)
    assert name is not None
    problem = name_problem(name)
    if problem:
        raise top.error("name", problem)
    model = top.str("model", required=True)
    algorithm = top.str("algorithm", required=True, choices=ALGORITHMS)
    gpus = top.int("gpus", required=True)
    nodes = top.int("nodes", 1)
    assert gpus is not None and nodes is not None
    if gpus % nodes:
        raise top.error("gpus", f"{gpus} GPUs do not split evenly over {nodes} nodes")
    gpu = top.str("gpu", "h100")
    # a recipe that does not name its GPU runs on the default one by assumption
    gpu_assumed = top.bool("gpu_assumed", "gpu" not in top.data)
    backend = top.str("backend", "megatron", choices=BACKENDS)
    versions = top.strings("verl_versions", required=True)
    for version in versions:
        try:
            parse_version(version)
        except ValueError:
            raise top.error("verl_versions", f"'{version}' is not a release number") from None
    tags = top.strings("tags")
    description = top.str("description", "")
    provenance = top.str("provenance", "")
    model_path = top.str("model_path")
    return _Header(name, model, algorithm, gpus, nodes, gpu, backend, versions, tags, description, provenance,
                   model_path, gpu_assumed)


def _overrides(cfg: _Fields) -> dict[str, Any]:
    """config.overrides: verl keys (dotted) to scalars or lists, kept as written."""
    overrides_raw = cfg._get("overrides", False) or {}
    if not isinstance(overrides_raw, Mapping):
        raise cfg.error("overrides", f"expected a mapping of verl keys to values, got {_kind(overrides_raw)}")
    overrides: dict[str, Any] = {}
    for key, value in overrides_raw.items():
        if not isinstance(key, str) or not key or " " in key:
            raise cfg.error("overrides", f"bad verl key {key!r}")
        if isinstance(value, Mapping) and value:
            raise cfg.error(f"overrides.{key}", "expected a scalar or a list; write nested keys dotted")
        overrides[key] = _plain(value)
    return overrides


def _plain(value: Any) -> Any:
    """ruamel's commented sequences/scalars -> plain Python values."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {}
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def layout_mapping(lay: Parallelism) -> dict[str, Any]:
    """A recipe's `layout:` section: TP, PP, CP and EP always, the other sizes where set."""
    return {name: size for name, size in lay.sizes().items() if size is not None}


def offload_mapping(off: Offload) -> dict[str, Any]:
    """A recipe's `offload:` section: the four flags, and the CPU optimizer's share where it is on."""
    offload: dict[str, Any] = {"param": off.param, "grad": off.grad, "optimizer": off.optimizer,
                               "cpu_optimizer": off.cpu_optimizer}
    if off.cpu_optimizer:
        offload["cpu_optimizer_fraction"] = off.cpu_optimizer_fraction
    return offload


def recipe_to_mapping(recipe: Recipe) -> dict[str, Any]:
    """The inverse of recipe_from_mapping: plain data ready to dump as YAML (defaults omitted
    only where leaving them out cannot change the meaning)."""
    cfg = recipe.config
    lay = cfg.layout
    layout = layout_mapping(lay)
    batch: dict[str, Any] = {
        "train_batch_size": cfg.train_batch_size,
        "ppo_mini_batch_size": cfg.ppo_mini_batch_size,
        "micro_batch_per_gpu": cfg.micro_batch_per_gpu,
    }
    if cfg.log_prob_micro_batch_per_gpu is not None:
        batch["log_prob_micro_batch_per_gpu"] = cfg.log_prob_micro_batch_per_gpu
    batch["use_dynamic_bsz"] = cfg.use_dynamic_bsz
    if cfg.token_budget is not None:
        batch["token_budget"] = cfg.token_budget
    if cfg.log_prob_token_budget is not None:
        batch["log_prob_token_budget"] = cfg.log_prob_token_budget
    offload = offload_mapping(cfg.offload)
    config: dict[str, Any] = {
        "layout": layout,
        "rollout": {"name": cfg.rollout_name, "tp": cfg.rollout_tp,
                    "gpu_memory_utilization": cfg.gpu_memory_utilization, "n": cfg.n},
        "batch": batch,
        "lengths": {"prompt": cfg.prompt_len, "response": cfg.response_len},
        "offload": offload,
        "recompute": cfg.recompute,
    }
    if cfg.overrides:
        config["overrides"] = dict(cfg.overrides)
    out: dict[str, Any] = {
        "name": recipe.name, "model": recipe.model, "algorithm": recipe.algorithm,
        "gpus": recipe.gpus, "nodes": recipe.nodes, "gpu": recipe.gpu,
        **({"gpu_assumed": True} if recipe.gpu_assumed else {}), "backend": recipe.backend,
        "verl_versions": list(recipe.verl_versions), "tags": list(recipe.tags),
        "description": recipe.description, "provenance": recipe.provenance,
    }
    if recipe.model_path:
        out["model_path"] = recipe.model_path
    out["config"] = config
    return out

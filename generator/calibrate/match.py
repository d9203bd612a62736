"""The configuration a run used: the config verl printed at start-up when the log holds it,
else the script (`--script`, read as `gen explain` reads it: generator.check.runner.explain_file).
Where both are there, or where the log's numbers contradict the script, say so in the user's keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from generator.calibrate import metric_keys as k
from generator.calibrate.logs import RunLog
from generator.calibrate.summary import Measured
from generator.config.reader import ConfigReader
from generator.config.types import Config
from generator.base.errors import InputError
from generator.verl.constants import ACTOR, MEGATRON, PPO_CONFIG, PPO_MEGATRON_CONFIG, ROLLOUT

# The settings a step's time and memory depend on most: a run that differs in one of them is
# another configuration than the script's.
MATCH_KEYS = (
    "data.train_batch_size", ROLLOUT + "n", "data.max_prompt_length", "data.max_response_length",
    ACTOR + "ppo_mini_batch_size", "trainer.n_gpus_per_node", "trainer.nnodes",
    MEGATRON + "tensor_model_parallel_size", MEGATRON + "pipeline_model_parallel_size",
    MEGATRON + "context_parallel_size", MEGATRON + "expert_model_parallel_size",
    ROLLOUT + "tensor_model_parallel_size", ROLLOUT + "gpu_memory_utilization",
)
# The sequences a step holds (perf/total_num_tokens over the mean prompt + response) may differ
# from train_batch_size·n by this share before it counts as another batch: the means are rounded.
BATCH_TOLERANCE = 0.15


@dataclass(slots=True)
class RunConfig:
    """The configuration predicted for, where it came from, and where log and script disagree."""

    config: Config | None
    source: str  # "the log's start-up config" | "SCRIPT:LINE"
    differences: list[str] = field(default_factory=list)


def config_from_dump(dump: dict[str, Any], version: str) -> Config:
    """The dumped (resolved) config as the schema's Config: each key the schema knows, as set."""
    from generator.config.synthetic import config_from_overrides
    from generator.schema import load

    strategy = dump.get(ACTOR + "strategy")
    name = PPO_MEGATRON_CONFIG if strategy == "megatron" else PPO_CONFIG
    schema = load(version)
    kept = {key: value for key, value in dump.items()
            if schema.has(key, name) and not isinstance(value, (dict, list)) and isinstance(key, str)}
    return config_from_overrides(kept, version=version, config_name=name)


def config_from_script(path: str, verl_version: str | None) -> tuple[Config, str]:
    """The first live trainer call of the script, as `gen explain` composes it."""
    from generator.check.runner import explain_file

    done = explain_file(path, verl_version=verl_version, env={}, args=[], memory=None, gpu_named=False)
    if done.error and not done.calls:
        raise InputError(f"--script {path}: {done.error}")
    if not done.calls:
        raise InputError(f"--script {path}: no trainer call found")
    call = done.calls[0]
    return call.config, f"{path}:{call.invocation.line}"


def _value(config: Config, key: str) -> Any:
    if key in config.unknown or key not in config.values:
        return None
    return config.values[key]


def _same(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)


def differences(log_config: Config, script_config: Config) -> list[str]:
    """Each match key the two set differently, in the user's key names."""
    out = []
    for key in MATCH_KEYS:
        a, b = _value(log_config, key), _value(script_config, key)
        if a is not None and b is not None and not _same(a, b):
            out.append(f"{key} is {a} in the log, {b} in the script")
    return out


def contradictions(config: Config, measured: Measured) -> list[str]:
    """What the log's own numbers say against the config: longer responses or prompts than its
    maxima, or another number of sequences per step than train_batch_size·n."""
    reader = ConfigReader(config)
    out = []
    for metric, key, what in ((k.RESPONSE_MAX, "data.max_response_length", "responses"),
                              (k.PROMPT_MAX, "data.max_prompt_length", "prompts")):
        limit, seen = reader.int(key), measured.maxima.get(metric)
        if limit and seen is not None and seen > limit + 0.5:
            out.append(f"{what} reached {seen:g} tokens, above {key}={limit}")
    pn = reader.prompts_and_n()
    tokens = measured.medians.get(k.TOTAL_TOKENS)
    lengths = measured.medians.get(k.PROMPT_MEAN, 0.0) + measured.medians.get(k.RESPONSE_MEAN, 0.0)
    # DAPO's dynamic sampling trains on the groups it kept: its batch is not P·n.
    filtering = reader.bool("algorithm.filter_groups.enable") is True
    if pn is not None and tokens and lengths > 0 and not filtering:
        prompts, n = pn
        sequences = tokens / lengths
        if abs(sequences / (prompts * n) - 1) > BATCH_TOLERANCE:
            out.append(f"the steps hold about {sequences:.0f} sequences (perf/total_num_tokens / mean length), "
                       f"not train_batch_size·n = {prompts}·{n} = {prompts * n}")
    return out


def run_config(run: RunLog, script: str | None, *, verl_version: str | None) -> RunConfig:
    """The config to predict for. The log's own dump wins over the script (it is what ran); a
    script that differs from it is named. InputError when neither is there or the script cannot
    be read."""
    from generator.schema.releases import newest_release

    dumped = None
    if run.config:
        try:
            dumped = config_from_dump(run.config, verl_version or newest_release())
        except InputError as err:  # a value the schema refuses: the script stands in, and the log says why
            run.notes.append(f"the start-up config could not be read as verl's ({err}); the script is used")
    scripted = config_from_script(script, verl_version) if script else None
    if dumped is not None:
        found = RunConfig(dumped, "the log's start-up config")
        if scripted is not None:
            found.differences = differences(dumped, scripted[0])
        return found
    if scripted is not None:
        return RunConfig(scripted[0], scripted[1])
    return RunConfig(None, "")

"""VR5xx — the rollout engine (docs/batch-chain.md#parallel-layout; C6, A24-A27, A20, D11,
F2, F3, G4)."""

from __future__ import annotations

from typing import Iterator

from generator.layout import derive
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, Rule, Stage, ctx_finding, rule
from generator.config.reader import ConfigReader
from generator.verl.constants import ROLLOUT
from generator.verl.versions import VersionRange, parse

TP_R = ROLLOUT + "tensor_model_parallel_size"
DP_R = ROLLOUT + "data_parallel_size"
PP_R = ROLLOUT + "pipeline_model_parallel_size"
EP_R = ROLLOUT + "expert_parallel_size"


def _rollout_sizes(view: ConfigReader) -> tuple[int, int, int, int] | None:
    sizes = []
    for key in (TP_R, DP_R, PP_R, EP_R):
        if not view.known(key):
            return None
        value = view.raw(key)
        sizes.append(1 if value is None else view.int(key))
        if sizes[-1] is None:
            return None
    return tuple(sizes)  # type: ignore[return-value]


def _layout_rule_findings(the_rule: Rule, ctx: Context, keys: tuple[str, ...]) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    sizes, gpus = _rollout_sizes(view), view.gpus
    if sizes is None or gpus is None:
        return
    tp, dp, pp, ep = sizes
    for problem in derive.rollout_problems(gpus, tp, dp, pp, ep, gpus_per_node=view.gpus_per_node,
                                           engine=view.str(ROLLOUT + "name")):
        if problem.kind == the_rule.reports:
            yield ctx_finding(the_rule, view, keys, problem.message)


def _stage_before_070(ctx: Context) -> Stage | None:
    """verl 0.7.0 builds the rollout config dataclass inside the workers (its checks fail at worker
    init); 0.6.x built it in validate_config, at load (A25-A27 in docs/verl-checks.md; not
    re-read from the 0.6 sources). None = the rule's own stage, "init"."""
    try:
        return "load" if parse(ctx.version) < (0, 7, 0) else None
    except ValueError:
        return None


@rule("VR501", "rollout-replica-not-dividing-gpus", severity="error", stage="init", verl_ref="C6", reports="rollout-replica")
def replica_divides(ctx: Context) -> Iterator[Finding]:
    yield from _layout_rule_findings(replica_divides, ctx, (TP_R, DP_R, PP_R))


@rule("VR502", "rollout-ep-mismatch", severity="error", stage="init", versions=VersionRange("0.6.0", None),
      verl_ref="A25", reports="rollout-ep")
def rollout_ep(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.str(ROLLOUT + "name") == "trtllm" and parse(view.version) >= (0, 7, 1):
        return  # TensorRT-LLM sizes its experts itself (verl/workers/config/rollout.py:264 @ v0.7.1)
    sizes = _rollout_sizes(view)
    for finding in _layout_rule_findings(rollout_ep, ctx, (EP_R,)):
        assert sizes is not None  # a finding means the sizes were read
        tp, dp, _pp, ep = sizes
        yield Finding(finding.code, finding.severity, finding.message, finding.line, EP_R,
                      Fix(f"set rollout.expert_parallel_size={tp * dp}", (KeyEdit(EP_R, ep, tp * dp),)),
                      _stage_before_070(ctx))


@rule("VR503", "rollout-pipeline-parallel", severity="error", stage="init", versions=VersionRange("0.6.0", None),
      verl_ref="A26", reports="rollout-pp")
def rollout_pp(ctx: Context) -> Iterator[Finding]:
    for finding in _layout_rule_findings(rollout_pp, ctx, (PP_R,)):
        old = ctx.config.values.get(PP_R)
        yield Finding(finding.code, finding.severity, finding.message, finding.line, PP_R,
                      Fix("set rollout.pipeline_model_parallel_size=1", (KeyEdit(PP_R, old, 1),), "unsafe"),
                      _stage_before_070(ctx))


@rule("VR504", "rollout-replica-partial-node", severity="error", stage="runtime", versions=VersionRange("0.6.0",
      None), verl_ref="D11", reports="rollout-replica-nodes")
def replica_nodes(ctx: Context) -> Iterator[Finding]:
    yield from _layout_rule_findings(replica_nodes, ctx, (TP_R, DP_R, "trainer.n_gpus_per_node"))


@rule("VR512", "rollout-dp-tp-not-dividing-node", severity="error", stage="init",
      versions=VersionRange("0.6.0", None), verl_ref="D10", reports="rollout-dp-tp-node")
def rollout_dp_tp_node(ctx: Context) -> Iterator[Finding]:
    yield from _layout_rule_findings(rollout_dp_tp_node, ctx, (DP_R, TP_R, "trainer.n_gpus_per_node"))


@rule("VR505", "gpu-memory-utilization-range", severity="error", stage="init", verl_ref="F2")
def gpu_memory(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    value = view.float(ROLLOUT + "gpu_memory_utilization")
    if value is None or 0 < value <= 1:
        return
    yield ctx_finding(gpu_memory, view, (ROLLOUT + "gpu_memory_utilization",),
                      f"rollout.gpu_memory_utilization={value:g} must be in (0, 1]")


@rule("VR506", "batched-tokens-below-model-len", severity="warning", stage="init", versions=VersionRange("0.7.0",
      None), verl_ref="F3")
def batched_tokens(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.bool(ROLLOUT + "enable_chunked_prefill") is not False or view.str(ROLLOUT + "name") not in (None, "vllm"):
        return
    tokens = view.int(ROLLOUT + "max_num_batched_tokens")
    if tokens is None:
        return
    exact_070 = VersionRange("0.7.0", "0.7.0").contains(view.version) and "+" not in view.version
    model_len = None if exact_070 else view.int(ROLLOUT + "max_model_len")
    source = "rollout.max_model_len"
    if model_len is None and _sync_rollout(view):
        # The sync rollout (vllm_rollout_spmd.py, last released in 0.6.1 and kept by 0.7.0 dev
        # trees) hands vLLM rollout.max_model_len or else prompt_length + response_length, not the
        # model's context length (vllm_rollout_spmd.py@v0.6.1, `max_model_len = int(config.max_model_len
        # or config.prompt_length + config.response_length)`).
        model_len, source = _prompt_plus_response(view)
        if model_len is None:
            return  # the lengths are unknown: no guess in their place
    if model_len is None and ctx.model is not None:
        model_len, source = ctx.model.max_position_embeddings, f"{ctx.model.name} max_position_embeddings"
    if model_len is None or tokens >= model_len:
        return
    key = ROLLOUT + "enable_chunked_prefill"
    # The verl 0.9.1 wheel raises max_num_batched_tokens to max_model_len itself, with a warning
    # (verl/workers/rollout/vllm_rollout/vllm_async_server.py, _validate_configs); 0.7.0 to 0.9.0 and
    # main at 1dda039 hand both to vLLM as they are, and vLLM refuses the engine.
    raised = VersionRange("0.9.1", "0.9.1").contains(view.version)
    yield ctx_finding(batched_tokens, view, (key, ROLLOUT + "max_num_batched_tokens"),
                      f"enable_chunked_prefill=False and max_num_batched_tokens {tokens} < max_model_len {model_len} "
                      f"({source})" + (f"; verl {view.version} raises max_num_batched_tokens to {model_len} itself "
                                       "(and warns)" if raised else ""),
                      key=key, severity="info" if raised else None,
                      # chunked prefill changes how vLLM schedules every step (and is not there on every
                      # device): a change of behaviour, never applied without --unsafe
                      fix=Fix("set enable_chunked_prefill=True", (KeyEdit(key, False, True),), "unsafe"))


def _sync_rollout(view: ConfigReader) -> bool:
    from generator.rules.batch import _rollout_mode

    return _rollout_mode(view) == "sync"


def _prompt_plus_response(view: ConfigReader) -> tuple[int | None, str]:
    """prompt_length + response_length as the sync rollout reads them (the data lengths by default)."""
    prompt = view.int(ROLLOUT + "prompt_length") or view.int("data.max_prompt_length")
    response = view.int(ROLLOUT + "response_length") or view.int("data.max_response_length")
    if prompt is None or response is None:
        return None, ""
    return prompt + response, f"prompt_length + response_length = {prompt} + {response}, what the sync rollout passes"


def _fork_rollout_lacks_check(ctx: Context) -> bool:
    """The project's own verl package has rollout code and none of it makes verl's comparison (a fork
    of an early 0.2, issue 34): evidence that the release's check is not the run's (the gatherer
    reads the fork's rollouts into `fork_checks`)."""
    return ctx.fork_checks.rollout_compares_batched_tokens is False


@rule("VR507", "chunked-prefill-batched-tokens", severity="error", stage="init", versions=VersionRange("0.2.0",
      "0.6.1"), verl_ref="G4")
def chunked_prefill_old(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.bool(ROLLOUT + "enable_chunked_prefill") is not True or view.str(ROLLOUT + "name") not in (None, "vllm"):
        return
    from generator.rules.batch import _rollout_mode

    if _rollout_mode(view) != "sync":
        return  # the check lived in the sync (SPMD) vLLM rollout only
    tokens = view.int(ROLLOUT + "max_num_batched_tokens")
    limit = view.int(ROLLOUT + "max_model_len") or view.sequence_length()
    if tokens is None or limit is None or tokens >= limit:
        return
    if _fork_rollout_lacks_check(ctx):
        return  # the project's own verl passes both to vLLM, which runs them with chunked prefill
    key = ROLLOUT + "max_num_batched_tokens"
    yield ctx_finding(chunked_prefill_old, view, (key,),
                      f"enable_chunked_prefill=True and max_num_batched_tokens {tokens} < max_model_len {limit}",
                      fix=Fix(f"set max_num_batched_tokens={limit}", (KeyEdit(key, tokens, limit),)))


@rule("VR508", "rollout-mode-sync-removed", severity="error", stage="init", versions=VersionRange("0.7.0", None),
      verl_ref="A24")
def mode_sync(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = ROLLOUT + "mode"
    if view.release_default(key) == (True, "sync"):
        return  # a fork of 0.7 that kept the sync rollout (its own config defaults to it)
    if view.str(key) != "sync":
        return
    resolution = ctx.config.resolution
    if resolution is not None and resolution.package is not None:
        # The project's own verl judges: a development fork of 0.7 from before the refusal defaults
        # to sync and runs it. Its config classes say whether it refuses; a default the script never
        # set that its own config gives is its own evidence.
        refuses = ctx.fork_checks.rollout_refuses_sync
        if refuses is False or (refuses is None and not view.explicit(key)):
            return
    yield ctx_finding(mode_sync, view, (key,), f"rollout.mode=sync is not accepted by verl {view.version}",
                      fix=Fix("set rollout.mode=async", (KeyEdit(key, "sync", "async"),)))


@rule("VR509", "val-sampling-temperature", severity="error", stage="load", verl_ref="A20")
def val_temperature(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    if view.bool(ROLLOUT + "val_kwargs.do_sample") is not True:
        return
    temperature = view.float(ROLLOUT + "temperature")
    if temperature is None or temperature > 0:
        return
    yield ctx_finding(val_temperature, view, (ROLLOUT + "temperature", ROLLOUT + "val_kwargs.do_sample"),
                      f"val_kwargs.do_sample=True with rollout.temperature={temperature:g}")


@rule("VR510", "rollout-name-missing", severity="error", stage="init", versions=VersionRange("0.6.0", None),
      verl_ref="A27",
      reads_defaults=True)
def rollout_name(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = ROLLOUT + "name"
    if not view.known(key):
        return
    value = view.values.get(key)
    if value is None or value == "???":
        finding = ctx_finding(rollout_name, view, (key,), f"{key} is not set (mandatory from verl 0.6.0)", key=key,
                              fix=Fix("set rollout.name=vllm", (KeyEdit(key, value, "vllm"),), "unsafe"))
        yield finding._replace(stage=_stage_before_070(ctx))


@rule("VR511", "prometheus-needs-log-stats", severity="error", stage="runtime", versions=VersionRange("0.6.1", None),
      verl_ref="D14")
def prometheus(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = ROLLOUT + "disable_log_stats"
    if view.bool(ROLLOUT + "prometheus.enable") is True and view.bool(key) is True:
        yield ctx_finding(prometheus, view, (ROLLOUT + "prometheus.enable", key),
                          "rollout.prometheus.enable=True with rollout.disable_log_stats=True", key=key,
                          fix=Fix("set rollout.disable_log_stats=False", (KeyEdit(key, True, False),)))


@rule("VR513", "max-model-len-below-sequence", severity="warning", stage="silent",
      versions=VersionRange("0.3.0", None), verl_ref="H10")
def model_len_below_sequence(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    key = ROLLOUT + "max_model_len"
    if not view.known(key) or view.str(ROLLOUT + "name") not in (None, "vllm", "sglang"):
        return
    model_len, seq = view.int(key), view.sequence_length()
    if model_len is None or model_len <= 0 or seq is None or model_len >= seq:
        return
    prompt = seq - (view.int(ROLLOUT + "response_length") or view.int("data.max_response_length") or 0)
    response = seq - prompt
    # The rollout asks the engine for at most max_model_len - prompt new tokens (the async servers'
    # `max_possible_tokens`), or hands it max_model_len and the engine stops there (the sync rollout):
    # a response never gets longer than that, whatever max_response_length says.
    message = (f"rollout.max_model_len {model_len} < prompt + response = {prompt} + {response} = {seq}: every "
               f"sequence stops at {model_len} tokens, so a response gets at most {model_len} - its prompt's tokens")
    if model_len > response:
        message += (f" and a prompt longer than {model_len - response} tokens never gets max_response_length "
                    f"{response}")
    else:
        message += f" and max_response_length {response} is never reached"
    if model_len <= prompt:
        message += f"; a prompt of {model_len} tokens or more (max_prompt_length is {prompt}) leaves no room at all"
    yield ctx_finding(model_len_below_sequence, view, (key,), message, key=key,
                      # a longer context changes the engine's memory (KV cache per sequence): never silent
                      fix=Fix(f"set rollout.max_model_len={seq}"
                              + (f" (or lower max_response_length to {model_len - prompt})" if model_len > prompt
                                 else ""), (KeyEdit(key, model_len, seq),), "unsafe"))

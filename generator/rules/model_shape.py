"""VM8xx — model shape against the layout (E4-E10, F1, G3/D12), from the model's config.json or
the packaged registry (`gen check --model-config`, or a known name in actor_rollout_ref.model.path).
Every rule here is silent when the model is unknown."""

from __future__ import annotations

from typing import Iterator

from generator.layout import derive
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, Rule, Severity, ctx_finding, family_rule, rule
from generator.rules.parallel import layout_findings
from generator.config.reader import ConfigReader
from generator.verl.constants import ROLLOUT

_MEG = ("megatron",)


def _layout_with_model(the_rule: Rule, ctx: Context) -> Iterator[Finding]:
    yield from layout_findings(the_rule, ctx, with_model=True)


# Megatron refuses the layout for this model: (code, name, the generator.layout.derive problem kind, verl refs).
_MODEL_LAYOUT_RULES = (
    ("VM801", "heads-not-divisible-by-tp", "heads-by-tp", "E4"),
    ("VM802", "kv-heads-not-divisible-by-tp", "kv-heads-by-tp", "E5"),
    ("VM803", "ep-on-dense-model", "ep-on-dense", "E6"),
    ("VM804", "experts-not-divisible-by-ep", "experts-by-ep", "E7"),
    ("VM805", "layers-not-divisible-by-pp", "layers-by-pp", "E8"),
    ("VM806", "uneven-pipeline-split-invalid", "uneven-pipeline-split", "E9"),
    ("VM807", "stage-layers-not-divisible-by-vpp", "stage-layers-by-vpp", "E10, E9"),
)
for _code, _name, _kind, _refs in _MODEL_LAYOUT_RULES:
    family_rule(_layout_with_model, _code, _name, severity="error", stage="init", reports=_kind, verl_ref=_refs,
                backends=_MEG)


@rule("VM808", "heads-not-divisible-by-rollout-tp", severity="error", stage="init", verl_ref="F1", reports="heads-by-rollout-tp")
def rollout_heads(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    tp, gpus = view.int(ROLLOUT + "tensor_model_parallel_size"), view.gpus
    if ctx.model is None or not tp or tp <= 0 or gpus is None:
        return
    for problem in derive.rollout_problems(gpus, tp, model=ctx.model):
        if problem.kind == rollout_heads.reports:
            yield ctx_finding(rollout_heads, view, (ROLLOUT + "tensor_model_parallel_size",), problem.message)


@rule("VM809", "sequence-longer-than-context", severity="warning", stage="runtime", verl_ref="G3, D12, F4")
def sequence_context(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    seq = view.sequence_length()
    if ctx.model is None or seq is None:
        return
    limit = ctx.model.max_position_embeddings
    overridden = _overridden_context(view)
    if overridden is not None:
        limit = overridden
    if seq > limit:
        whose = ("override_config max_position_embeddings" if overridden is not None
                 else f"{ctx.model.name} max_position_embeddings")
        message = f"prompt + response = {seq} tokens > {whose} {limit}"
        severity: Severity | None = None
        if _asserts_context(view.version) and (overridden is not None or not ctx.model.from_registry):
            # verl 0.4.x-0.6.x's rollouts assert it when they start (vllm_rollout_spmd.py @ v0.4.1):
            # the run stops there. From 0.7.0 the async servers take max_position_embeddings as
            # max_model_len, and the overlong requests fail or are cut while the run goes on.
            severity = "error"
            message += (f"; verl {view.version} asserts it when the rollout starts ('model context length should "
                        f"be greater than total sequence length')")
        elif _asserts_context(view.version):
            # The published config.json: a user's copy may raise max_position_embeddings (as DAPO and
            # SimpleRL users do for Qwen2.5-Math-7B), so the assertion is likely, not certain.
            message += (f"; with the published config.json verl {view.version} asserts it when the rollout "
                        f"starts (a copy whose config.json says more passes)")
        yield ctx_finding(sequence_context, view, ("data.max_response_length", "data.max_prompt_length"), message,
                          severity=severity)


_OVERRIDE = "actor_rollout_ref.model.override_config."


def _overridden_context(view: ConfigReader) -> int | None:
    """The context length the script sets through the model's override_config, which verl applies
    to the HF config before its rollout reads max_position_embeddings: FSDP workers take the keys
    flat (fsdp_workers.py update_model_config, v0.2.0.post2-v0.6.1), Megatron workers under
    `model_config` (single_controller/base/megatron/worker.py@v0.4.1), and from 0.7.0 HFModelConfig
    takes either (workers/config/model.py@v0.7.0), whose hf_config the vLLM server reads."""
    flat = view.int(_OVERRIDE + "max_position_embeddings")
    nested = view.int(_OVERRIDE + "model_config.max_position_embeddings")
    if _at_least_070(view.version):
        return nested if nested is not None else flat
    return nested if view.backend == "megatron" else flat


def _at_least_070(version: str) -> bool:
    from generator.verl.versions import parse

    try:
        return parse(version)[:3] >= (0, 7, 0)
    except Exception:
        return False


def _asserts_context(version: str) -> bool:
    from generator.verl.versions import parse

    try:
        return parse(version)[:3] < (0, 7, 0)
    except Exception:
        return False


@rule("VM810", "heads-not-divisible-by-ulysses", severity="error", stage="init", verl_ref="C14", backends=("fsdp",))
def ulysses_heads(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    model = ctx.model
    sp = view.ulysses()
    if model is None or not sp or sp <= 1:
        return
    heads, kv = model.num_attention_heads, model.num_kv_heads
    key = "actor_rollout_ref.actor.ulysses_sequence_parallel_size"
    if heads % sp:
        yield ctx_finding(ulysses_heads, view, (key,), f"{model.name}: {heads} attention heads are not divisible "
                                                       f"by ulysses SP {sp}")
    elif kv and kv % sp and sp % kv:
        yield ctx_finding(ulysses_heads, view, (key,), f"{model.name}: {kv} KV heads and ulysses SP {sp} divide "
                                                       f"neither way")


_MEMORY_BACKENDS = ("megatron", "fsdp")


@rule("VM811", "predicted-out-of-memory", severity="error", stage="runtime", backends=_MEMORY_BACKENDS)
def predicted_oom(ctx: Context) -> Iterator[Finding]:
    verdict = ctx.memory
    if verdict is None or verdict.problems or verdict.fits:
        return
    view = ConfigReader.of(ctx)
    over = verdict.peak_gib - verdict.usable_gib
    where = (f"{verdict.peak_phase}" if verdict.backend == "fsdp"
             else f"{verdict.peak_phase} on pipeline stage {verdict.peak_stage}")
    message = (f"predicted out of memory on {verdict.gpu}: {where} needs {verdict.peak_gib:.1f} GiB of "
               f"{verdict.usable_gib:.1f} usable ({over:.1f} GiB over)")
    severity: Severity | None = None
    if verdict.fill_limit is not None:
        # Packed micro batches (use_remove_padding) hold the real tokens: the run fits while the
        # sequences stay short enough on average, so this is a warning, with the length it needs.
        severity = "warning"
        message += (f" at the maximum lengths; it fits while sequences average at most "
                    f"{verdict.fill_limit * verdict.seq_len:,.0f} of the {verdict.seq_len:,} prompt+response tokens "
                    f"({verdict.fill_limit:.0%})")
    fix = None
    if verdict.fix_edits:
        edits = tuple(KeyEdit(key, view.raw(key), value) for key, value in verdict.fix_edits)
        fix = Fix(verdict.fix, edits, applicability="unsafe")
    elif verdict.backend == "fsdp":
        message += "; no single memory knob fits: more GPUs, Ulysses sequence parallelism or LoRA"
    else:
        message += "; no single memory knob fits: more GPUs or a larger TP/PP/EP"
    default_key = ("actor_rollout_ref.actor.fsdp_config.param_offload" if verdict.backend == "fsdp"
                   else "actor_rollout_ref.actor.megatron.tensor_model_parallel_size")
    keys = tuple(key for key, _ in verdict.fix_edits) or (default_key,)
    yield ctx_finding(predicted_oom, view, keys, message, fix=fix, severity=severity)


@rule("VM812", "memory-not-predicted", severity="info", stage="static", backends=_MEMORY_BACKENDS)
def memory_not_predicted(ctx: Context) -> Iterator[Finding]:
    verdict = ctx.memory
    if verdict is None or not verdict.problems:
        return
    view = ConfigReader.of(ctx)
    yield ctx_finding(memory_not_predicted, view, ("actor_rollout_ref.model.path",),
                      f"memory on {verdict.gpu} not predicted: " + "; ".join(verdict.problems))

"""VM8xx — model shape against the layout (E4-E10, F1, G3/D12), from the model's config.json or
the packaged registry (`gen check --model-config`, or a known name in actor_rollout_ref.model.path).
Every rule here is silent when the model is unknown."""

from __future__ import annotations

from typing import Iterator

from generator import derive
from generator.edits import KeyEdit
from generator.rules.core import Context, Example, Finding, Fix, MemoryVerdict, ctx_finding, rule
from generator.rules.parallel import layout_findings
from generator.config.reader import ConfigReader
from generator.verl import ROLLOUT

_MEG = ("megatron",)


def _layout_rule(code, name, title, refs, why, failing, passing, model="Qwen2.5-7B"):
    def check(ctx: Context) -> Iterator[Finding]:
        yield from layout_findings(registered, ctx, with_model=True)

    registered = rule(code, name, title, severity="error", stage="init", verl_ref=refs, backends=_MEG, why=why,
                      fix_safety="No automatic fix: pick a size that divides the model's dimension.",
                      failing=Example(failing, note=f"model {model}"),
                      passing=Example(passing, note=f"model {model}"))(check)
    return registered


_layout_rule("VM801", "heads-not-divisible-by-tp", "attention heads not divisible by TP", "E4",
             "Megatron splits attention heads over TP ranks and refuses a remainder.",
             ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8",), ())
_layout_rule("VM802", "kv-heads-not-divisible-by-tp", "KV heads (query groups) not divisible by TP", "E5",
             "Megatron-core (core_v0.15) requires num_key_value_heads % TP == 0; it does not replicate KV heads.",
             ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8",), ())
_layout_rule("VM803", "ep-on-dense-model", "expert parallelism on a dense model", "E6",
             "EP > 1 requires a mixture-of-experts model.",
             ("actor_rollout_ref.actor.megatron.expert_model_parallel_size=2",), ())
_layout_rule("VM804", "experts-not-divisible-by-ep", "experts not divisible by EP", "E7",
             "Each EP rank holds num_experts / EP experts; Megatron asserts it divides.",
             ("trainer.n_gpus_per_node=6", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1",
              "actor_rollout_ref.actor.megatron.expert_model_parallel_size=3",
              "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1"),
             ("actor_rollout_ref.actor.megatron.expert_model_parallel_size=4",
              "actor_rollout_ref.actor.megatron.expert_tensor_parallel_size=1"), model="Qwen3-30B-A3B")
_layout_rule("VM805", "layers-not-divisible-by-pp", "layers not divisible by PP", "E8",
             "With an even split Megatron needs num_layers % PP == 0; use num_layers_in_first/last_pipeline_stage "
             "for an uneven split.",
             ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=3",
              "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=1", "trainer.n_gpus_per_node=6",
              "actor_rollout_ref.rollout.tensor_model_parallel_size=1"),
             ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",))
_layout_rule("VM806", "uneven-pipeline-split-invalid", "uneven first/last pipeline stage split is invalid", "E9",
             "The layers left after the first/last stages must split evenly over the middle stages (each > 0).",
             ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=4",
              "+actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_first_pipeline_stage=5"),
             ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=4",
              "+actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_first_pipeline_stage=6",
              "+actor_rollout_ref.actor.megatron.override_transformer_config.num_layers_in_last_pipeline_stage=6"))
_layout_rule("VM807", "stage-layers-not-divisible-by-vpp", "layers per pipeline stage not divisible by VPP", "E10, E9",
             "Each pipeline stage's layers are split into VPP virtual chunks; Megatron asserts it divides.",
             ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
              "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=4",
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"),
             ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2",
              "actor_rollout_ref.actor.megatron.virtual_pipeline_model_parallel_size=2",
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"))


@rule("VM808", "heads-not-divisible-by-rollout-tp", "attention heads not divisible by rollout TP",
      severity="error", stage="init", verl_ref="F1",
      why="vLLM and SGLang split attention heads over the rollout TP ranks and refuse a remainder.",
      fix_safety="No automatic fix: choose a rollout TP dividing the head count.",
      failing=Example(("actor_rollout_ref.rollout.tensor_model_parallel_size=8",), note="model Qwen2.5-7B"),
      passing=Example((), note="model Qwen2.5-7B"))
def rollout_heads(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    tp, gpus = view.int(ROLLOUT + "tensor_model_parallel_size"), view.gpus
    if ctx.model is None or not tp or tp <= 0 or gpus is None:
        return
    for problem in derive.rollout_problems(gpus, tp, model=ctx.model):
        if problem.code == "VM808":
            yield ctx_finding(rollout_heads, view, (ROLLOUT + "tensor_model_parallel_size",), problem.message)


@rule("VM809", "sequence-longer-than-context", "prompt + response longer than the model's context",
      severity="warning", stage="runtime", verl_ref="G3, D12, F4",
      why="vLLM/SGLang cap a sequence at max_position_embeddings: before 0.7 verl refused it, later versions "
          "reject longer prompts and silently clamp responses.",
      fix_safety="No automatic fix: shorten max_response_length or use a model with a longer context.",
      failing=Example(("data.max_prompt_length=16384", "data.max_response_length=20000"), note="model Qwen2.5-7B"),
      passing=Example((), note="model Qwen2.5-7B"))
def sequence_context(ctx: Context) -> Iterator[Finding]:
    view = ConfigReader.of(ctx)
    seq = view.sequence_length()
    if ctx.model is None or seq is None:
        return
    limit = ctx.model.max_position_embeddings
    if seq > limit:
        yield ctx_finding(sequence_context, view, ("data.max_response_length", "data.max_prompt_length"),
                          f"prompt + response = {seq} tokens > {ctx.model.name} max_position_embeddings {limit}")


@rule("VM810", "heads-not-divisible-by-ulysses", "attention heads do not split over ulysses SP",
      severity="error", stage="init", verl_ref="C14", backends=("fsdp",),
      why="Ulysses sequence parallelism scatters attention heads over SP ranks: heads % SP must be 0, and KV heads "
          "must divide by SP or SP by KV heads (they are repeated).",
      fix_safety="No automatic fix: pick an SP dividing the head count.",
      failing=Example(("actor_rollout_ref.actor.ulysses_sequence_parallel_size=8",),
                      note="model Qwen2.5-7B", config_name="ppo_trainer"),
      passing=Example(("actor_rollout_ref.actor.ulysses_sequence_parallel_size=4",),
                      note="model Qwen2.5-7B", config_name="ppo_trainer"))
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


# The verdict a failing example documents: verl #3124's Qwen2.5-32B on 8×H20 (TP8, all offload).
_OOM_EXAMPLE = MemoryVerdict(
    gpu="h20", fits=False, peak_gib=94.65, usable_gib=92.73, peak_phase="optimizer_step", peak_stage=0,
    fix="set optimizer_cpu_offload with optimizer_offload_fraction=0.25 (peak 88.6 GiB)",
    fix_edits=(("actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload", True),
               ("actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction", 0.25)))
_FITS_EXAMPLE = MemoryVerdict(gpu="h20", fits=True, peak_gib=88.6, usable_gib=92.73, peak_phase="update",
                              peak_stage=0)


@rule("VM811", "predicted-out-of-memory", "a phase is predicted to run out of GPU memory",
      severity="error", stage="runtime", backends=_MEG,
      why="The memory model (docs/memory-model.md) predicts, for the GPU named with --gpu, more memory than the "
          "GPU can give in one phase of the step on one pipeline stage; verl would stop there with a CUDA "
          "out-of-memory error after the models have loaded.",
      fix_safety="Unsafe: the fix turns on the cheapest memory relief that fits (param offload, optimizer offload, "
                 "the CPU optimizer with a fraction, full recompute, a smaller token budget or micro batch, a lower "
                 "gpu_memory_utilization, in that order); each costs time per step. Only with --gpu.",
      failing=Example(("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8",),
                      note="model Qwen2.5-32B", memory=_OOM_EXAMPLE),
      passing=Example(("actor_rollout_ref.actor.megatron.tensor_model_parallel_size=8",),
                      note="model Qwen2.5-32B", memory=_FITS_EXAMPLE))
def predicted_oom(ctx: Context) -> Iterator[Finding]:
    verdict = ctx.memory
    if verdict is None or verdict.problems or verdict.fits:
        return
    view = ConfigReader.of(ctx)
    over = verdict.peak_gib - verdict.usable_gib
    message = (f"predicted out of memory on {verdict.gpu}: {verdict.peak_phase} on pipeline stage {verdict.peak_stage} "
               f"needs {verdict.peak_gib:.1f} GiB of {verdict.usable_gib:.1f} usable ({over:.1f} GiB over)")
    fix = None
    if verdict.fix_edits:
        edits = tuple(KeyEdit(key, view.raw(key), value) for key, value in verdict.fix_edits)
        fix = Fix(verdict.fix, edits, applicability="unsafe")
    else:
        message += "; no single memory knob fits: more GPUs or a larger TP/PP/EP"
    keys = tuple(key for key, _ in verdict.fix_edits) or ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size",)
    yield ctx_finding(predicted_oom, view, keys, message, fix=fix)


@rule("VM812", "memory-not-predicted", "memory could not be predicted for the named GPU",
      severity="info", stage="static", backends=_MEG,
      why="gen check --gpu predicts each call's memory (VM811) from the model and the script's own knobs; when the "
          "model is not known or a value the prediction needs is unknown, the call is not judged, and this says why "
          "instead of passing it silently.",
      fix_safety="No automatic fix: name the model (--model-config, or a known name in actor_rollout_ref.model.path) "
                 "or give the unknown values (--env, --arg).",
      failing=Example((), memory=MemoryVerdict(gpu="h100", fits=True, peak_gib=0.0, usable_gib=0.0, peak_phase="",
                                               peak_stage=0, problems=("model 'my-org/secret-7b' is not in the "
                                                                       "registry",))),
      passing=Example((), memory=_FITS_EXAMPLE))
def memory_not_predicted(ctx: Context) -> Iterator[Finding]:
    verdict = ctx.memory
    if verdict is None or not verdict.problems:
        return
    view = ConfigReader.of(ctx)
    yield ctx_finding(memory_not_predicted, view, ("actor_rollout_ref.model.path",),
                      f"memory on {verdict.gpu} not predicted: " + "; ".join(verdict.problems))

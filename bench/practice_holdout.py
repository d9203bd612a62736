"""The hold-out matrix of `bench/practice.py --matrix holdout` (issue 32): models the library does not
package, GPU counts and GPU types its recipes do not use, and workloads its matrix does not run.

The models are Hugging Face config.json files in bench/holdout_models/ (numbers from each model's
public config; sources in docs/plan-practice.md), planned as `gen recipe --model PATH` plans them.
Each case is also planned as `gen plan` plans it (its CLI, in-process, --format json): the two
must choose the same layout (issue 32 "gen plan and gen recipe choose the same layout").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODELS = Path(__file__).resolve().parent / "holdout_models"

# name -> (prompt, response, n): a short one, the long-response ones and a wide group
WORKLOADS = {"short": (1024, 1024, 5), "ppo": (1024, 512, 1), "n16": (1024, 1024, 16),
             "long16k": (2048, 16384, 16), "long32k": (1024, 32768, 8)}


@dataclass(frozen=True)
class Case:
    model: str  # a folder of bench/holdout_models
    gpus: int
    gpu: str
    algo: str
    workload: str

    @property
    def path(self) -> str:
        return str(MODELS / self.model)

    def lengths(self, max_positions: int) -> tuple[int, int, int]:
        """(prompt, response, n), the response bounded by the model's context as the matrix does."""
        prompt, response, n = WORKLOADS[self.workload]
        return prompt, min(response, max_positions - prompt), n

    def text(self) -> str:
        return f"{self.model}/{self.gpus}x{self.gpu} {self.algo} {self.workload}"


def _cases() -> tuple[Case, ...]:
    out: list[Case] = []

    def add(model: str, gpus: tuple[int, ...], gpus_types: tuple[str, ...], runs: tuple[tuple[str, str], ...]) -> None:
        out.extend(Case(model, g, t, a, w) for g in gpus for t in gpus_types for a, w in runs)

    small = (("grpo", "short"), ("ppo", "ppo"), ("dapo", "long16k"), ("grpo", "n16"))
    add("Mistral-7B-v0.3", (8, 16), ("h100", "h20"), small)
    add("Meta-Llama-3-8B", (8, 24), ("h100", "a100-80g"), small[:3])
    add("gemma-2-9b", (8,), ("h100",), small[:2])
    add("Phi-3-medium-128k-instruct", (16, 24), ("h100",), (("grpo", "short"), ("grpo", "long32k"), ("ppo", "ppo")))
    add("Yi-1.5-34B-32K", (32, 48), ("h100", "h20"), (("grpo", "short"), ("dapo", "long16k")))
    add("Mixtral-8x7B-v0.1", (16, 32, 48), ("h100", "h20"), (("grpo", "short"), ("dapo", "long16k")))
    add("DeepSeek-V2-Lite", (8, 16), ("h100", "a100-80g"), (("grpo", "short"), ("ppo", "ppo"), ("grpo", "long32k")))
    add("OLMoE-1B-7B-0924", (8,), ("h100",), (("grpo", "n16"), ("ppo", "ppo")))
    add("Qwen2-57B-A14B", (32, 64), ("h100", "h20"), (("grpo", "short"), ("dapo", "long16k")))
    add("GLM-4.5-Air", (32, 64, 96, 128), ("h100", "h20"), (("grpo", "short"), ("dapo", "long16k")))
    return tuple(out)


CASES = _cases()


def recipe_layout(case: Case) -> tuple[str | None, str]:
    """(layout text, error) of `gen recipe --model PATH ...`'s plan: the function that command calls."""
    from generator.base.errors import InputError
    from generator.model import resolve_model
    from generator.plan.recipe_plan import planned_spec

    prompt, response, n = case.lengths(resolve_model(case.path).max_position_embeddings)
    try:
        spec = planned_spec(model=case.path, gpus=case.gpus, nodes=None, gpu=case.gpu, gpu_mem=None, algo=case.algo,
                            rollout="vllm", launcher="auto", verl_version=None, model_path=None, train_files=None,
                            val_files=None, prompt_len=prompt, response_len=response, n=n, train_batch_size=None,
                            project_name=None, experiment_name=None)
    except InputError as err:
        return None, str(err)
    return signature({k: getattr(spec.layout, k) for k in SIGNATURE}), ""


def plan_cli_layout(case: Case) -> tuple[str | None, str]:
    """(layout text, error) of `gen plan --model PATH ... --format json`, run through its CLI."""
    from typer.testing import CliRunner

    from generator.cli import build_app
    from generator.model import resolve_model

    prompt, response, n = case.lengths(resolve_model(case.path).max_position_embeddings)
    args = ["plan", "--model", case.path, "--gpus", str(case.gpus), "--gpu", case.gpu, "--algo", case.algo,
            "--prompt-len", str(prompt), "--response-len", str(response), "--n", str(n), "--format", "json",
            "--top", "1"]
    result = CliRunner().invoke(build_app(), args)
    try:
        doc: dict[str, Any] = json.loads(result.stdout)
    except (json.JSONDecodeError, ValueError):
        return None, f"exit {result.exit_code}: {result.stdout[-200:]!r}"
    chosen = doc.get("chosen")
    if not isinstance(chosen, int):
        return None, str(doc.get("error", "no layout chosen"))
    return signature(doc["candidates"][chosen]), ""


SIGNATURE = ("tp", "pp", "vpp", "cp", "ep", "etp", "first_stage_layers", "last_stage_layers", "rollout_tp")


def signature(fields: dict[str, Any]) -> str:
    """A layout as one comparable text: its parallel sizes, stage split and rollout TP."""
    return " ".join(f"{k}={fields.get(k)}" for k in SIGNATURE if fields.get(k) not in (None, 1))

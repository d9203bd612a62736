"""Ground truth from verl itself: run verl's own config-load validation on many configs and
compare its verdict with `gen check`'s.

    python -m tools.oracle --verl-version 0.7.0 [--mutations N] [--seed S] [--venv DIR]
                             [--corpus DIR] [--jobs J] [--install-only]

verl is heavy (torch, ray, transformers) and must never be a dependency of verl-gen, so it
lives in a cached virtual environment (default ~/.cache/verl-gen/oracle-<X>) with a CPU torch.
A long-lived worker (tools/oracle/in_verl_env/worker.py) runs inside it and imports verl once; this
process only speaks JSON lines to it.

A case is a Hydra call of `verl.trainer.main_ppo` (config name, optional --config-path,
override strings). Cases: every live/conditional/loop main_ppo call of the corpus for the
release (read with verl-gen's shell reader), every rule's documented failing/passing example,
and N seeded mutations of four valid bases (Megatron GRPO, Megatron PPO with critic, FSDP GRPO,
FSDP PPO with critic).

verl's verdict: accept, or reject at stage compose (Hydra refuses the overrides) or validate
(what main_ppo runs before it starts any worker: resolving the config, the worker choice by
strategy, `validate_config`). "needs-vllm" and "undecided" (a value the reader could not see, or
one read from the launch environment) are listed and not compared.
Ours: "verl rejects this at config load" = an error finding of a rule whose stage is "load",
or a key issue that makes Hydra's compose fail. Each disagreement is printed; the last line is
`agreement A/N`. Exit 0 when A == N, 1 otherwise, 2 on bad input or a broken oracle.

Modules: environment (the cached verl venv), cases (corpus calls, rule examples), mutations (seeded
variations), worker (asking verl), compare (asking gen check, and the agreement), cli.
"""

from __future__ import annotations

from .cases import (Case, _model_path, _neutral, _override_key, corpus_cases, environment_dependent,
                    release_scripts, resolve_config_dir, rule_example_cases)
from .cli import default_shared, main
from .compare import judge_ours, report, summary, verl_rejects
from .environment import (MARKER, PINS, _marker_expected, default_venv, ensure_venv, registry_reachable,
                          venv_complete, venv_python)
from .errors import OracleError
from .mutations import BASES, _apply, mutation_cases
from .worker import FALLBACK_MODEL, Worker, _model_facts, model_dir_for, run_verl, worker_request

__all__ = ["BASES", "FALLBACK_MODEL", "MARKER", "PINS", "Case", "OracleError", "Worker", "_apply", "_marker_expected",
           "_model_facts", "_model_path", "_neutral", "_override_key", "corpus_cases", "default_shared",
           "default_venv", "ensure_venv", "environment_dependent", "judge_ours", "main", "model_dir_for",
           "mutation_cases", "registry_reachable", "release_scripts", "report", "resolve_config_dir",
           "rule_example_cases", "run_verl", "summary", "venv_complete", "venv_python", "verl_rejects",
           "worker_request"]

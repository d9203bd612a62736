#!/usr/bin/env python3
"""Ground truth from verl itself: run verl's own config-load validation on many configs and
compare its verdict with `gen check`'s.

    python tools/oracle.py --verl-version 0.7.0 [--mutations N] [--seed S] [--venv DIR]
                           [--corpus DIR] [--jobs J] [--install-only]

verl is heavy (torch, ray, transformers) and must never be a dependency of verl-gen, so it
lives in a cached virtual environment (default ~/.cache/verl-gen/oracle-<X>) with a CPU torch.
A long-lived worker (tools/oracle_worker.py) runs inside it and imports verl once; this
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
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from a checkout: the project is importable
    sys.path.insert(0, str(REPO))

from generator.config import config_from_overrides  # noqa: E402
from generator.config.apply import is_hydra_rejection  # noqa: E402
from generator.model import find_model  # noqa: E402
from generator.rules import check_config, check_script, load_rules  # noqa: E402
from generator.rules.examples import BASE as EXAMPLE_BASE  # noqa: E402
from generator.rules.examples import example_config, example_version  # noqa: E402
from generator.schema import resolve_version  # noqa: E402
from generator.shell import read_file  # noqa: E402

WORKER = Path(__file__).resolve().parent / "oracle_worker.py"
CACHE_ROOT = Path(os.environ.get("VERL_GEN_CACHE", Path.home() / ".cache" / "verl-gen"))
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false", "RAY_USAGE_STATS_ENABLED": "0",
               "PYTHONWARNINGS": "ignore", "WANDB_MODE": "disabled"}

# What verl's import needs, pinned to versions that satisfy the release's declared ranges
# (a bare `torch` would pull multi-GB CUDA builds; the CPU wheel is installed first and the
# rest must not replace it). Bump the marker version when a pin list changes so cached
# environments are rebuilt.
TORCH = "2.13.0"
PINS: dict[str, list[str]] = {
    "0.7.0": [
        "numpy==1.26.4",  # verl 0.7.0 declares numpy<2
        "transformers==4.57.6",  # 0.7.0 imports AutoModelForVision2Seq, removed in transformers 5
        "tensordict==0.10.0",  # declared >=0.8.0,<=0.10.0,!=0.9.0
        "hydra-core==1.3.2",
        "omegaconf==2.3.0",
        "ray==2.52.1",
        "codetiming",
        "orjson",
        "packaging",
        "dill",
    ],
}
MARKER = ".verl-gen-oracle-complete"
MARKER_FORMAT = 1


class OracleError(Exception):
    """A problem that stops the run; printed as one line, exit code 2."""


# --------------------------------------------------------------------------------------- venv


def default_venv(version: str) -> Path:
    return CACHE_ROOT / f"oracle-{version}"


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _marker_expected(version: str) -> dict[str, Any]:
    return {"format": MARKER_FORMAT, "verl": version, "torch": TORCH, "pins": PINS[version]}


def venv_complete(venv: Path, version: str) -> bool:
    marker = venv / MARKER
    try:
        recorded = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return recorded == _marker_expected(version) and venv_python(venv).exists()


def _local_cpu_torch_wheel() -> str | None:
    """The CPU torch wheel from pip's find-links folders, when this machine has one.

    Installing it by path guarantees no CUDA build is downloaded; the fallback asks for the
    `+cpu` local version explicitly, which fails fast where it is not available."""
    dirs: list[str] = []
    for value in (os.environ.get("PIP_FIND_LINKS", ""),):
        dirs += value.split()
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"],
                             capture_output=True, text=True, timeout=30).stdout
        dirs += out.split()
    except (OSError, subprocess.SubprocessError):
        pass
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in dirs:
        folder = folder.removeprefix("file://")
        if not os.path.isdir(folder):
            continue
        for name in sorted(os.listdir(folder)):
            if name.startswith(f"torch-{TORCH}+cpu-") and tag in name and name.endswith(".whl"):
                return os.path.join(folder, name)
    return None


def _pip(python: Path, args: list[str], log: Any) -> None:
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *args]
    print(f"oracle: pip install {' '.join(args)}", file=log, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise OracleError(f"pip install {' '.join(args)} failed: {tail[0]}")


def ensure_venv(version: str, venv: Path, log: Any = sys.stderr) -> float | None:
    """Create (or reuse) the oracle environment; returns install seconds, None when reused."""
    if version not in PINS:
        raise OracleError(f"no oracle recipe for verl {version}; known: {', '.join(sorted(PINS))}")
    if venv_complete(venv, version):
        return None
    started = time.monotonic()
    if venv.exists():
        shutil.rmtree(venv)  # incomplete or stale: never patch a half-built environment
    venv.parent.mkdir(parents=True, exist_ok=True)
    print(f"oracle: building {venv} (verl {version}, CPU torch {TORCH}) ...", file=log, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv_python(venv)
    wheel = _local_cpu_torch_wheel()
    _pip(python, [wheel or f"torch=={TORCH}+cpu"], log)
    # The torch line keeps pip from swapping the CPU build for a CUDA one while resolving.
    _pip(python, [*PINS[version], f"torch=={TORCH}"], log)
    _pip(python, ["--no-deps", f"verl=={version}"], log)
    (venv / MARKER).write_text(json.dumps(_marker_expected(version)))
    return time.monotonic() - started


def registry_reachable(timeout: float = 60.0) -> bool:
    """Whether pip can fetch verl's wheel (the oracle cannot be built without it)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", tmp, "verl==0.7.0"],
                capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return proc.returncode == 0



# ------------------------------------------------------------------------------ model folders

# Qwen2-7B from data/models.yaml: the stand-in when verl-gen's model registry does not know the
# script's model. No config-load check reads these numbers; the folder only
# has to load as a Hugging Face model config.
FALLBACK_MODEL = {"name": "Qwen2-7B", "hidden_size": 3584, "num_layers": 28, "num_attention_heads": 28,
                  "num_kv_heads": 4, "ffn_hidden_size": 18944, "vocab_size": 152064,
                  "max_position_embeddings": 32768, "tie_word_embeddings": False}


def _model_facts(model_path: str | None) -> dict[str, Any]:
    facts = find_model(model_path) if model_path else None
    if facts is None:
        return dict(FALLBACK_MODEL)
    return {key: getattr(facts, key) for key in FALLBACK_MODEL}


def model_dir_for(root: Path, model_path: str | None) -> Path:
    """A local folder standing in for the script's model: a config.json with the model's shape
    (Qwen2 architecture, which every transformers release knows) written from our registry."""
    facts = _model_facts(model_path)
    folder = root / "models" / facts["name"].replace("/", "_")
    config_file = folder / "config.json"
    if not config_file.exists():
        folder.mkdir(parents=True, exist_ok=True)
        config = {
            "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
            "hidden_size": facts["hidden_size"], "num_hidden_layers": facts["num_layers"],
            "num_attention_heads": facts["num_attention_heads"],
            "num_key_value_heads": facts["num_kv_heads"], "intermediate_size": facts["ffn_hidden_size"],
            "vocab_size": facts["vocab_size"], "max_position_embeddings": facts["max_position_embeddings"],
            "tie_word_embeddings": bool(facts["tie_word_embeddings"]), "torch_dtype": "bfloat16",
        }
        tmp = config_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(config, indent=1))
        tmp.replace(config_file)
    return folder


# ------------------------------------------------------------------------------------- worker


class Worker:
    """One oracle_worker.py process inside the verl venv; verl is imported once."""

    def __init__(self, venv: Path, model_dirs: list[Path], log_path: Path, timeout: float = 180.0,
                 env: dict[str, str] | None = None):
        self.venv, self.model_dirs, self.log_path, self.timeout = venv, model_dirs, log_path, timeout
        self.extra_env = env or {}
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        env = {**os.environ, **OFFLINE_ENV, **self.extra_env}
        env.pop("PYTHONPATH", None)  # the venv must not see verl-gen's environment
        self._log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [str(venv_python(self.venv)), str(WORKER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._log, text=True, bufsize=1, env=env)
        ready = self._ask({"op": "init", "model_dirs": [str(d) for d in self.model_dirs]}, timeout=600)
        if not ready or not ready.get("ready"):
            raise OracleError(f"oracle worker failed to start (see {self.log_path})")

    def _ask(self, request: dict[str, Any], timeout: float) -> dict[str, Any] | None:
        import select

        assert self.proc and self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        readable, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not readable:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def judge(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        answer = self._ask(request, self.timeout)
        if answer is None:  # hung or died: never let one case stop the run
            self.stop()
            return {"verdict": "error", "stage": None,
                    "message": f"oracle worker died or timed out (see {self.log_path})"}
        return answer

    def stop(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=10)
            except OSError:
                pass
            self.proc = None


# -------------------------------------------------------------------------------------- cases


@dataclass
class Case:
    ident: str  # "corpus:examples/x.sh:12" or "mutation:17"
    config_name: str
    overrides: list[str]  # as the trainer receives them; unknown pieces as <?label>
    config_dir: str | None = None  # --config-path, resolved to a folder; None = packaged
    config_relative: str | None = None  # a relative --config-path: Hydra resolves it inside verl
    note: str = ""  # what the mutation changed, or where a corpus call lives
    unknown_keys: list[str] = field(default_factory=list)
    model_path: str | None = None
    example: tuple[Any, Any] | None = None  # rule examples: (Rule, Example)
    # corpus calls: (path in release, file, LaunchScript, Invocation, release tree or None)
    source: tuple[Any, ...] | None = None
    # Ours, filled before the worker is asked:
    our_reject: bool | None = None
    our_reasons: list[str] = field(default_factory=list)
    # verl's answer
    verl: dict[str, Any] = field(default_factory=dict)


UNKNOWN_RE = None


def _unknowns(text: str) -> bool:
    return "<?" in text


def _neutral(text: str) -> str:
    """Unknown pieces become a plain word so Hydra sees a well-formed value."""
    import re

    global UNKNOWN_RE
    if UNKNOWN_RE is None:
        UNKNOWN_RE = re.compile(r"<\?[^>]*>")
    return UNKNOWN_RE.sub("unknown", text)


def environment_dependent(case: Case) -> str | None:
    """`${oc.env:X}` is read when verl resolves the config, from the launch environment: the
    verdict would be about this machine's environment, not the script."""
    for text in case.overrides:
        if "${oc.env:" in text:
            return f"{_override_key(text)} is read from the environment at launch (oc.env)"
    return None


def worker_request(case: Case, model_root: Path) -> dict[str, Any]:
    return {"id": case.ident, "config_name": case.config_name, "config_dir": case.config_dir,
            "config_relative": case.config_relative,
            "overrides": [_neutral(o) for o in case.overrides], "typed_unknowns": case.unknown_keys,
            "model_dir": str(model_dir_for(model_root, case.model_path))}


def _override_key(text: str) -> str:
    body = text.lstrip("+~")
    return body.split("=", 1)[0]


def _model_path(overrides: list[str]) -> str | None:
    for text in overrides:
        if _override_key(text) == "actor_rollout_ref.model.path" and "=" in text:
            return text.split("=", 1)[1]
    return None


# ------------------------------------------------------------------------------------- corpus

TRAINER = "verl.trainer.main_ppo"


def release_scripts(corpus: Path, version: str) -> list[tuple[str, Path]]:
    """(path in the release, file) for every script that ships in release `version`.

    The corpus stores each distinct script once, under the tag where it first appeared;
    OCCURRENCES.tsv maps every (tag, path) to that copy."""
    tag = f"v{version}"
    found: list[tuple[str, Path]] = []
    table = corpus / "OCCURRENCES.tsv"
    if not table.exists():
        raise OracleError(f"{table} not found (is --corpus the corpus folder?)")
    for line in table.read_text().splitlines()[1:]:
        cols = line.split("\t")
        if len(cols) >= 5 and cols[0] == tag:
            found.append((cols[1], corpus / "scripts" / cols[3] / cols[4]))
    return found


def resolve_config_dir(config_path: str | None, script_rel: str, snapshot_root: Path) -> tuple[str, str] | None | bool:
    """Where Hydra looks for a script's --config-path.

    Returns None for "no --config-path" (the packaged config); ("relative", PATH) for a relative
    path, which Hydra resolves against the folder of verl/trainer/main_ppo.py (so `config` is
    the packaged config); ("dir", ABS) for a folder of the release's repository tree standing in
    for an absolute path on the author's machine (`$PWD/examples/x/config`, `$(dirname $0)/..`):
    unknown prefixes are dropped and the rest looked up in the tree; False when that fails."""
    if config_path is None:
        return None
    text = config_path.removeprefix("file://")
    if "<?" not in text and not text.startswith("/"):
        return ("relative", text)
    if "<?" in text:
        if not text.startswith("<?"):
            return False  # an unknown in the middle: no single folder
        text = text[text.rindex(">") + 1:]
    parts = [p for p in text.split("/") if p not in ("", ".")]
    bases = [snapshot_root, snapshot_root / os.path.dirname(script_rel)]
    for start in range(len(parts)):
        for base in bases:
            candidate = base.joinpath(*parts[start:])
            if candidate.is_dir() and candidate != snapshot_root:
                return ("dir", str(candidate.resolve()))
    return False


def corpus_cases(corpus: Path, version: str, config_tree: Path | None) -> tuple[list[Case], list[str]]:
    """Every live, conditional or loop main_ppo call of the release, read with verl-gen's reader."""
    cases: list[Case] = []
    notes: list[str] = []
    snapshot_root = config_tree or Path("/nonexistent")
    for rel, file in release_scripts(corpus, version):
        try:
            script = read_file(str(file))
        except Exception as exc:  # the reader's own error is a finding of ours, not verl's
            notes.append(f"corpus:{rel}: not read: {exc}")
            continue
        for inv in script.invocations:
            if inv.entry != TRAINER or inv.branch == "dead":
                continue
            case = Case(ident=f"corpus:{rel}:{inv.line}", config_name=inv.config_name or "ppo_trainer",
                        overrides=[o.text for o in inv.overrides], note=f"{rel}:{inv.line} ({inv.branch})")
            case.unknown_keys = [o.key for o in inv.overrides if o.unknowns]
            case.model_path = _model_path(case.overrides)
            config_dir = resolve_config_dir(inv.config_path, rel, snapshot_root)
            if config_dir is False:
                case.verl = {"verdict": "undecided", "stage": None,
                             "message": f"--config-path {inv.config_path} not in {snapshot_root}"}
            elif config_dir is not None:
                kind, where = config_dir
                if kind == "relative":
                    case.config_relative = where
                else:
                    case.config_dir = where
            if any(_unknowns(o.key) for o in inv.overrides) or (inv.config_name and _unknowns(inv.config_name)):
                case.verl = {"verdict": "undecided", "stage": None,
                             "message": "an override key or the config name depends on a value the reader could not see"}
            case.source = (rel, file, script, inv, str(snapshot_root) if config_tree else None)
            cases.append(case)
    return cases, notes


# ---------------------------------------------------------------------------------- mutations

A = "actor_rollout_ref.actor."
R = "actor_rollout_ref.rollout."
REF = "actor_rollout_ref.ref."
MODEL = "actor_rollout_ref.model.path=Qwen/Qwen2-7B-Instruct"

# Valid starting points, written like the corpus's scripts (each accepted by verl 0.7.0).
BASES: dict[str, tuple[str, list[str]]] = {
    "megatron-grpo": ("ppo_megatron_trainer", [
        "algorithm.adv_estimator=grpo", "data.train_batch_size=256", "data.max_prompt_length=1024",
        "data.max_response_length=2048", MODEL, f"{A}ppo_mini_batch_size=64",
        f"{A}ppo_micro_batch_size_per_gpu=4", f"{A}use_kl_loss=True", f"{A}use_dynamic_bsz=False",
        f"{A}megatron.tensor_model_parallel_size=2", f"{A}megatron.pipeline_model_parallel_size=2",
        f"{A}megatron.context_parallel_size=1", f"{R}name=vllm", f"{R}n=5",
        f"{R}tensor_model_parallel_size=2", f"{R}log_prob_micro_batch_size_per_gpu=8",
        f"{REF}log_prob_micro_batch_size_per_gpu=8", "trainer.n_gpus_per_node=8", "trainer.nnodes=1"]),
    "megatron-ppo-critic": ("ppo_megatron_trainer", [
        "algorithm.adv_estimator=gae", "data.train_batch_size=128", MODEL,
        f"{A}ppo_mini_batch_size=32", f"{A}ppo_micro_batch_size_per_gpu=2", f"{A}use_kl_loss=False",
        f"{A}megatron.tensor_model_parallel_size=4", f"{A}megatron.pipeline_model_parallel_size=1",
        f"{R}name=vllm", f"{R}n=1", f"{R}log_prob_micro_batch_size_per_gpu=4",
        "critic.ppo_mini_batch_size=32", "critic.ppo_micro_batch_size_per_gpu=2",
        "critic.megatron.tensor_model_parallel_size=4", "trainer.n_gpus_per_node=8", "trainer.nnodes=2"]),
    "fsdp-grpo": ("ppo_trainer", [
        "algorithm.adv_estimator=grpo", "data.train_batch_size=512", MODEL,
        f"{A}ppo_mini_batch_size=128", f"{A}ppo_micro_batch_size_per_gpu=8", f"{A}use_kl_loss=True",
        f"{A}use_dynamic_bsz=False", "actor_rollout_ref.model.use_remove_padding=True",
        f"{R}name=vllm", f"{R}n=8", f"{R}log_prob_micro_batch_size_per_gpu=16",
        f"{REF}log_prob_micro_batch_size_per_gpu=16", "trainer.n_gpus_per_node=8", "trainer.nnodes=1"]),
    "fsdp-ppo-critic": ("ppo_trainer", [
        "algorithm.adv_estimator=gae", "data.train_batch_size=256", "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B",
        f"{A}ppo_mini_batch_size=64", f"{A}ppo_micro_batch_size_per_gpu=4", f"{A}use_kl_loss=False",
        "actor_rollout_ref.model.use_remove_padding=True", f"{R}name=vllm", f"{R}n=1",
        f"{R}log_prob_micro_batch_size_per_gpu=8", "critic.ppo_mini_batch_size=64",
        "critic.ppo_micro_batch_size_per_gpu=4", "critic.model.use_remove_padding=True",
        "trainer.n_gpus_per_node=4", "trainer.nnodes=1"]),
}

_BATCHES = [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 30, 32, 48, 60, 64, 96, 100, 120, 128, 192, 256, 320,
            384, 500, 512, 1000, 1024, 2048]
_MICROS = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32, 64]


def _batch(rng: random.Random) -> int:
    return rng.choice(_BATCHES) if rng.random() < 0.8 else rng.randint(1, 1100)


def _micro(rng: random.Random) -> int:
    return rng.choice(_MICROS)


def _mutations_for(base: str) -> list[tuple[str, Any]]:
    """(name, weight, function rng -> list of override strings) for one base. Changes that
    verl always rejects (both micro keys set) weigh less, so accepted configs stay common."""
    megatron = base.startswith("megatron")
    critic = base.endswith("critic")
    out: list[tuple[str, Any]] = [
        ("train batch", 3, lambda r: [f"data.train_batch_size={_batch(r)}"]),
        ("mini batch", 3, lambda r: [f"{A}ppo_mini_batch_size={_batch(r)}"]),
        ("micro batch", 3, lambda r: [f"{A}ppo_micro_batch_size_per_gpu={_micro(r)}"]),
        ("rollout.n", 2, lambda r: [f"{R}n={r.choice([1, 2, 3, 4, 5, 6, 8, 16])}"]),
        ("gpus per node", 2, lambda r: [f"trainer.n_gpus_per_node={r.choice([1, 2, 3, 4, 6, 8, 16])}"]),
        ("nodes", 1, lambda r: [f"trainer.nnodes={r.choice([1, 2, 3, 4, 8])}"]),
        ("dynamic bsz", 1, lambda r: [f"{A}use_dynamic_bsz={r.choice(['True', 'False'])}"]),
        ("deprecated micro, both set", 0.5, lambda r: [f"{A}ppo_micro_batch_size={_micro(r) * r.choice([1, 8])}"]),
        ("deprecated micro only", 1, lambda r: [f"{A}ppo_micro_batch_size_per_gpu=null",
                                             f"{A}ppo_micro_batch_size={_micro(r) * r.choice([1, 4, 8, 16])}"]),
        ("neither micro set", 0.5, lambda r: [f"{A}ppo_micro_batch_size_per_gpu=null"]),
        ("rollout log-prob micro", 1, lambda r: r.choice([
            [f"{R}log_prob_micro_batch_size_per_gpu=null"],
            [f"{R}log_prob_micro_batch_size={_micro(r) * 8}"],
            [f"{R}log_prob_micro_batch_size_per_gpu=null", f"{R}log_prob_micro_batch_size={_micro(r) * 8}"],
            [f"{R}log_prob_micro_batch_size_per_gpu={_micro(r)}"]])),
        ("ref log-prob micro", 1, lambda r: r.choice([
            [f"{REF}log_prob_micro_batch_size_per_gpu=null"],
            [f"{REF}log_prob_micro_batch_size={_micro(r) * 8}"],
            [f"{REF}log_prob_micro_batch_size_per_gpu=null", f"{REF}log_prob_micro_batch_size={_micro(r) * 8}"]])),
        ("kl loss", 1, lambda r: [f"{A}use_kl_loss={r.choice(['True', 'False'])}"]),
        # config-load checks beyond batch sizes, less often
        ("loss agg mode", 0.3, lambda r: [f"{A}loss_agg_mode=" + r.choice(
            ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm", "seq-mean"])]),
        ("validation sampling", 0.3, lambda r: [f"{R}val_kwargs.do_sample={r.choice(['True', 'False'])}",
                                                f"{R}temperature={r.choice([0, 0.0, 0.6, 1.0])}"]),
        ("lora rank", 0.3, lambda r: [f"actor_rollout_ref.model.lora_rank={r.choice([0, 8, 512, 513, 1024])}"]),
        ("rollout mode", 0.2, lambda r: [f"{R}mode={r.choice(['async', 'sync'])}"]),
        ("rollout pp/ep", 0.2, lambda r: r.choice([[f"{R}pipeline_model_parallel_size={r.choice([1, 2])}"],
                                                   [f"{R}expert_parallel_size={r.choice([1, 2, 4])}"]])),
    ]
    if megatron:
        out += [
            ("megatron dtype", 0.3, lambda r: [f"{A}megatron.dtype={r.choice(['bfloat16', 'float16', 'float32'])}"]),
            ("tp", 2, lambda r: [f"{A}megatron.tensor_model_parallel_size={r.choice([1, 2, 3, 4, 8])}"]),
            ("pp", 2, lambda r: [f"{A}megatron.pipeline_model_parallel_size={r.choice([1, 2, 3, 4])}"]),
            ("cp", 1, lambda r: [f"{A}megatron.context_parallel_size={r.choice([1, 2, 4])}"]),
        ]
    else:
        out += [
            ("ulysses sp", 1, lambda r: [f"{A}ulysses_sequence_parallel_size={r.choice([1, 2, 4])}"]),
            ("remove padding", 1, lambda r: [f"actor_rollout_ref.model.use_remove_padding={r.choice(['True', 'False'])}"]),
        ]
    if critic:
        out += [
            ("critic mini", 2, lambda r: [f"critic.ppo_mini_batch_size={_batch(r)}"]),
            ("critic micro", 2, lambda r: [f"critic.ppo_micro_batch_size_per_gpu={_micro(r)}"]),
            ("critic deprecated micro", 1, lambda r: r.choice([
                [f"critic.ppo_micro_batch_size={_micro(r) * 8}"],
                [f"critic.ppo_micro_batch_size_per_gpu=null"],
                [f"critic.ppo_micro_batch_size_per_gpu=null", f"critic.ppo_micro_batch_size={_micro(r) * 8}"]])),
            ("critic dynamic bsz", 1, lambda r: [f"critic.use_dynamic_bsz={r.choice(['True', 'False'])}"]),
        ]
    if critic and not megatron:
        out += [
            ("critic ulysses sp", 1, lambda r: [f"critic.ulysses_sequence_parallel_size={r.choice([1, 2, 4])}"]),
            ("critic remove padding", 0.5,
             lambda r: [f"critic.model.use_remove_padding={r.choice(['True', 'False'])}"]),
        ]
    return out


def _apply(base: list[str], changes: list[str]) -> list[str]:
    """Later wins, as in Hydra; keep one override per key so the case reads like a script."""
    keyed = {_override_key(o): o for o in base}
    for change in changes:
        keyed[_override_key(change)] = change
    return list(keyed.values())


def mutation_cases(count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    names = sorted(BASES)
    menus = {name: _mutations_for(name) for name in names}
    cases = []
    for index in range(count):
        base = names[index % len(names)]
        config_name, overrides = BASES[base]
        changes: list[str] = []
        for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
            _label, _weight, make = rng.choices(menus[base], weights=[m[1] for m in menus[base]])[0]
            changes += make(rng)
        effective = _apply([], changes)  # a key changed twice: the later change is the one
        case = Case(ident=f"mutation:{seed}:{index}", config_name=config_name,
                    overrides=_apply(overrides, effective), note=f"{base} + {', '.join(effective)}")
        case.model_path = _model_path(case.overrides)
        cases.append(case)
    return cases


# ------------------------------------------------------------------------------ rule examples


def rule_example_cases(version: str) -> list[Case]:
    """Every rule's documented failing and passing example (the overrides `gen rule CODE`
    shows), for the rules that apply to this release. These probe each rule's stage label:
    a "load" rule's failing example must be one verl rejects at config load."""
    cases = []
    for code, rule in sorted(load_rules().items()):
        if getattr(rule, "scope", "trainer") == "script":
            continue
        for label, example in (("failing", rule.failing), ("passing", rule.passing)):
            if example is None or example.script is not None or example_version(rule, example) != version:
                continue
            # the same base and config choice as generator.rules.examples.example_config
            config_name = example.config_name or (
                "ppo_trainer" if rule.backends == ("fsdp",) else "ppo_megatron_trainer")
            if config_name not in ("ppo_trainer", "ppo_megatron_trainer"):
                continue  # a recipe's config: not a main_ppo call verl's package can compose
            base = [o for o in EXAMPLE_BASE if "megatron" in config_name or ".megatron." not in o]
            case = Case(ident=f"rule:{code}:{label}", config_name=config_name,
                        overrides=base + list(example.overrides),
                        note=f"{code} {label} example ({rule.stage}): {' '.join(example.overrides)}")
            case.model_path = _model_path(case.overrides)
            case.example = (rule, example)
            cases.append(case)
    return cases


# --------------------------------------------------------------------------------------- ours

def judge_ours(cases: list[Case], version: str) -> None:
    """`gen check`'s answer to "does verl reject this at config load?" for every case: an
    error finding of a rule whose stage is "load", or a key issue Hydra refuses.

    Corpus calls go through `check_script` itself, with the release's repository tree as
    `config_root`, because the corpus keeps scripts without the config folders that sit next
    to them in verl's repository."""
    registry = load_rules()
    schema_version, _how = resolve_version(version)
    checked: dict[tuple[int, str | None], dict[int, tuple[Any, list[Any]]]] = {}
    for case in cases:
        if case.source is not None:
            _rel, _file, script, inv, tree = case.source
            # exactly `gen check`, with the release's repository tree as the folder the script
            # runs from (the corpus keeps scripts without the config folders beside them)
            key = (id(script), tree)
            if key not in checked:
                checked[key] = {id(i): (c, f) for i, c, f in check_script(script, version=schema_version,
                                                                          config_root=tree) if i is not None}
            config, findings = checked[key][id(inv)]
        elif case.example is not None:  # exactly what `gen rule CODE` checks
            config = example_config(*case.example)
            findings = check_config(config)
        else:
            config = config_from_overrides(case.overrides, version=schema_version, config_name=case.config_name)
            findings = check_config(config)
        reasons = [f"key {issue.kind}: {issue.override.text}" + (f" ({issue.detail})" if issue.detail else "")
                   for issue in config.key_issues if is_hydra_rejection(issue)]
        others: list[str] = []
        for finding in findings:
            rule = registry.get(finding.code)
            stage = getattr(finding, "stage", None) or (rule.stage if rule else "?")
            text = f"{finding.code} [{finding.severity}/{stage}] {finding.message}"
            if finding.severity == "error" and stage == "load":
                reasons.append(text)
            elif finding.severity == "error":
                others.append(f"(not load) {text}")
        case.our_reject = bool(reasons)
        case.our_reasons = reasons + others


# ---------------------------------------------------------------------------------------- run


def run_verl(cases: list[Case], venv: Path, jobs: int, model_root: Path, log_path: Path,
             progress: bool = True) -> None:
    """Ask verl about every case that has no verdict yet, on `jobs` workers."""
    import queue

    for case in cases:
        reason = None if case.verl else environment_dependent(case)
        if reason:
            case.verl = {"verdict": "undecided", "stage": None, "message": reason}
    todo = [c for c in cases if not c.verl]
    requests = {c.ident: worker_request(c, model_root) for c in todo}
    model_dirs = sorted({Path(r["model_dir"]) for r in requests.values()})
    work: queue.Queue[Case] = queue.Queue()
    for case in todo:
        work.put(case)
    done = [0]
    lock = threading.Lock()
    failures: list[BaseException] = []

    def serve() -> None:
        worker = Worker(venv, model_dirs, log_path)
        try:
            worker.start()
            while True:
                try:
                    case = work.get_nowait()
                except queue.Empty:
                    return
                case.verl = worker.judge(requests[case.ident])
                with lock:
                    done[0] += 1
                    if progress and done[0] % 250 == 0:
                        print(f"oracle: {done[0]}/{len(todo)} judged by verl", file=sys.stderr, flush=True)
        except BaseException as exc:  # surfaced below: a dead oracle is exit 2, not a verdict
            failures.append(exc)
        finally:
            worker.stop()

    threads = [threading.Thread(target=serve, daemon=True) for _ in range(max(1, min(jobs, len(todo) or 1)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures and any(not c.verl for c in todo):
        raise OracleError(str(failures[0]))


EXCLUDED = ("needs-vllm", "undecided")


def verl_rejects(case: Case) -> bool:
    return case.verl.get("verdict") == "reject"


def report(cases: list[Case], out: Any = None) -> tuple[int, int]:
    """Print every disagreement; returns (agreements, compared)."""
    out = out or sys.stdout
    agree = compared = 0
    for case in cases:
        verdict = case.verl.get("verdict")
        if verdict in EXCLUDED:
            continue
        compared += 1
        if verdict != "error" and verl_rejects(case) == bool(case.our_reject):
            agree += 1
            continue
        verl_text = verdict if verdict != "reject" else f"reject({case.verl.get('stage')})"
        ours_text = "reject" if case.our_reject else "accept"
        print(f"DISAGREE {case.ident}: verl {verl_text}, gen check {ours_text}", file=out)
        print(f"  case: {case.note}", file=out)
        if not case.ident.startswith("corpus:"):
            print(f"  overrides: {' '.join(case.overrides)}", file=out)
        print(f"  verl: {case.verl.get('message') or '(accepted)'}", file=out)
        for reason in case.our_reasons or ["(no load-stage error)"]:
            print(f"  ours: {reason}", file=out)
    return agree, compared


def summary(cases: list[Case], out: Any = None) -> None:
    out = out or sys.stdout
    from collections import Counter

    tally = Counter()
    for case in cases:
        verdict = case.verl.get("verdict", "?")
        stage = case.verl.get("stage")
        tally[f"{verdict}({stage})" if verdict == "reject" else verdict] += 1
    kinds = Counter(c.ident.split(":", 1)[0] for c in cases)
    print("oracle: cases " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
          + "; verl: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())), file=out)
    for case in cases:
        if case.verl.get("verdict") in EXCLUDED:
            print(f"EXCLUDED {case.ident}: {case.verl['verdict']}: {case.verl.get('message', '')}", file=out)


def default_shared() -> Path:
    return Path(os.environ.get("VERL_GEN_SHARED", REPO.parent / "shared"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="oracle.py", description="Compare gen check with verl's own config-load validation.")
    parser.add_argument("--verl-version", required=True, help="verl release to install and ask, e.g. 0.7.0")
    parser.add_argument("--mutations", type=int, default=0, help="random variations of valid configs (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--venv", type=Path, help="oracle environment (default ~/.cache/verl-gen/oracle-X)")
    parser.add_argument("--corpus", type=Path, help="corpus folder (default ../shared/corpus)")
    parser.add_argument("--config-tree", type=Path,
                        help="the release's repository tree for --config-path (default ../shared/verl-config/vX)")
    parser.add_argument("--no-corpus", action="store_true", help="leave out the corpus calls")
    parser.add_argument("--no-rule-examples", action="store_true",
                        help="leave out the rules' documented failing/passing examples")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (each imports verl once)")
    parser.add_argument("--install-only", action="store_true", help="build the environment and stop")
    parser.add_argument("--verl-only", action="store_true", help="print verl's verdicts; do not compare")
    parser.add_argument("--json", type=Path, help="write every case with both verdicts to this file")
    args = parser.parse_args(argv)
    started = time.monotonic()
    version = args.verl_version.lstrip("vV")
    venv = args.venv or default_venv(version)
    try:
        if args.mutations < 0:
            raise OracleError("--mutations must be >= 0")
        if args.jobs < 1:
            raise OracleError("--jobs must be >= 1")
        if version not in PINS:
            raise OracleError(f"no oracle recipe for verl {version}; known: {', '.join(sorted(PINS))}")
        took = ensure_venv(version, venv)
        print(f"oracle: environment {venv} " + ("reused" if took is None else f"built in {took:.0f} s"),
              file=sys.stderr)
        if args.install_only:
            return 0
        cases: list[Case] = []
        if not args.no_corpus:
            corpus = args.corpus or default_shared() / "corpus"
            tree = args.config_tree or default_shared() / "verl-config" / f"v{version}"
            found, notes = corpus_cases(corpus, version, tree if tree.is_dir() else None)
            for note in notes:
                print(f"oracle: {note}", file=sys.stderr)
            cases += found
        if not args.no_rule_examples:
            cases += rule_example_cases(version)
        cases += mutation_cases(args.mutations, args.seed)
        if not cases:
            raise OracleError("no cases: the corpus has no calls for this release and --mutations is 0")
        if not args.verl_only:
            judge_ours(cases, version)
        log_path = venv / "worker.log"
        run_verl(cases, venv, args.jobs, venv, log_path)
    except OracleError as exc:
        print(f"oracle: error: {exc}", file=sys.stderr)
        return 2
    summary(cases)
    if args.json:
        args.json.write_text(json.dumps([
            {"case": c.ident, "note": c.note, "config_name": c.config_name, "config_dir": c.config_dir,
             "overrides": c.overrides, "verl": c.verl, "ours_reject": c.our_reject, "ours": c.our_reasons}
            for c in cases], indent=1))
    print(f"oracle: {len(cases)} cases in {time.monotonic() - started:.0f} s", file=sys.stderr)
    if args.verl_only:
        for case in cases:
            verdict = case.verl.get("verdict")
            print(f"{case.ident}: {verdict} {case.verl.get('stage') or ''} {case.verl.get('message', '')}".rstrip())
        return 0
    agree, compared = report(cases)
    print(f"agreement {agree}/{compared}")
    return 0 if agree == compared else 1


if __name__ == "__main__":
    sys.exit(main())

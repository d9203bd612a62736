"""The client side of the worker that runs inside the verl environment (in_verl_env/worker.py):
model folders it loads, one Worker per process, and asking it about every case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from generator.model import find_model

from .cases import Case, _neutral, environment_dependent
from .environment import venv_python
from .errors import OracleError

WORKER = Path(__file__).resolve().parent / "in_verl_env" / "worker.py"


OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false", "RAY_USAGE_STATS_ENABLED": "0",
               "PYTHONWARNINGS": "ignore", "WANDB_MODE": "disabled"}


# Qwen2-7B from data/models.yaml: the stand-in when verl-gen's model registry does not know the
# script's model. No config-load check reads these numbers; the folder only has to load as a
# Hugging Face model config.
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


class Worker:
    """One in_verl_env/worker.py process inside the verl venv; verl is imported once."""

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


def worker_request(case: Case, model_root: Path) -> dict[str, Any]:
    return {"id": case.ident, "config_name": case.config_name, "config_dir": case.config_dir,
            "config_relative": case.config_relative,
            "overrides": [_neutral(o) for o in case.overrides], "typed_unknowns": case.unknown_keys,
            "model_dir": str(model_dir_for(model_root, case.model_path))}


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

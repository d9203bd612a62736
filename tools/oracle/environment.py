"""The cached virtual environment with verl and a CPU torch, built once per release.

verl is heavy (torch, ray, transformers) and must never be a dependency of verl-gen, so it lives
in its own environment (default ~/.cache/verl-gen/oracle-<X>, or $VERL_GEN_CACHE/oracle-<X>).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .errors import OracleError

CACHE_ROOT = Path(os.environ.get("VERL_GEN_CACHE", Path.home() / ".cache" / "verl-gen"))


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
    "0.9.1": [
        "numpy==2.2.6",  # verl 0.9.1 declares numpy>=2.0.0
        "transformers==5.9.0",  # declared >=5.5.3,<5.11,!=5.6.0; 5.9.0 is what its cpu extra pins
        "tensordict==0.10.0",  # declared >=0.8.0,<=0.10.0,!=0.9.0
        "hydra-core==1.3.2",
        "omegaconf==2.3.0",
        "ray==2.52.1",  # declared >=2.41.0
        # verl.trainer.ppo.utils (need_reference_policy / need_critic) imports the dataset module
        "datasets==5.2.0",
        "pandas==3.1.1",
        "pyarrow==26.0.1",  # declared >=19.0.0
        "pillow==13.0.0",
        "codetiming",
        "orjson",
        "packaging",
        "dill",
    ],
}


MARKER = ".verl-gen-oracle-complete"


MARKER_FORMAT = 1


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


# Building the environment takes minutes (torch alone is ~200 MB); say that it is still going.
HEARTBEAT_SECONDS = 20.0


def _pip(python: Path, args: list[str], log: Any, step: str = "") -> None:
    cmd = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", *args]
    print(f"oracle: {step}pip install {' '.join(args)}", file=log, flush=True)
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as output:
        proc = subprocess.Popen(cmd, stdout=output, stderr=subprocess.STDOUT, text=True)
        while True:
            try:
                proc.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                print(f"oracle: {step}still installing ({time.monotonic() - started:.0f} s)", file=log, flush=True)
        output.seek(0)
        text = output.read()
    if proc.returncode != 0:
        tail = text.strip().splitlines()[-1:] or ["(no output)"]
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
    print(f"oracle: building {venv} (verl {version}, CPU torch {TORCH}; a few minutes, once) ...",
          file=log, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv_python(venv)
    wheel = _local_cpu_torch_wheel()
    _pip(python, [wheel or f"torch=={TORCH}+cpu"], log, "[1/3] ")
    # The torch line keeps pip from swapping the CPU build for a CUDA one while resolving.
    _pip(python, [*PINS[version], f"torch=={TORCH}"], log, "[2/3] ")
    _pip(python, ["--no-deps", f"verl=={version}"], log, "[3/3] ")
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

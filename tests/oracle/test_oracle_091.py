"""verl 0.9.1 itself as the judge (marker `oracle`): the scripts `gen recipe --model M --gpus N` writes
with no version flag (0.9.1, `model_engine=megatron`) must pass verl 0.9.1's own validation, and
gen check must agree with verl on a seeded sample of mutations of verl's own v0.9.0 / HEAD-2608
Megatron examples (issue 19). The full runs (`--recipes 1`, `--mutations 1000`) are in docs/performance.md;
this samples them so the tier stays within CI's time.

Builds (or reuses) the cached 0.9.1 environment (~/.cache/verl-gen/oracle-0.9.1; CPU torch).
Skipped only when the package registry cannot be reached to build it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.oracle._load import REPO, load_oracle

pytestmark = pytest.mark.oracle

VERSION = "0.9.1"
MUTATIONS = int(os.environ.get("VERL_GEN_ORACLE_091_MUTATIONS", "60"))
RECIPE_EVERY = int(os.environ.get("VERL_GEN_ORACLE_091_RECIPE_EVERY", "8"))  # every 8th packaged model
SHARED = Path(os.environ.get("VERL_GEN_SHARED", REPO.parent / "shared"))

oracle = load_oracle()


@pytest.fixture(scope="module")
def venv() -> Path:
    path = oracle.default_venv(VERSION)
    if not oracle.venv_complete(path, VERSION):
        if not oracle.registry_reachable():
            pytest.skip("package registry unreachable: cannot build the verl 0.9.1 oracle environment")
        oracle.ensure_venv(VERSION, path)
    return path


def test_default_recipes_pass_verl_091_and_gen_check_agrees(venv: Path, tmp_path: Path) -> None:
    corpus = SHARED / "corpus"
    if not corpus.is_dir():
        pytest.skip("the mutation bases are verl's own examples in ../shared/corpus")
    cmd = [sys.executable, "-m", "tools.oracle", "--verl-version", VERSION, "--no-corpus",
           "--recipes", str(RECIPE_EVERY), "--mutations", str(MUTATIONS), "--seed", "20261202",
           "--jobs", "2", "--venv", str(venv), "--corpus", str(corpus), "--json", str(tmp_path / "cases.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO)
    cases = json.loads((tmp_path / "cases.json").read_text())
    recipes = [c for c in cases if c["case"].startswith("recipe:")]
    assert len(recipes) >= 20, proc.stderr[-2000:]
    refused = [c for c in recipes if c["verl"].get("verdict") != "accept"]
    assert not refused, "verl 0.9.1 refuses gen recipe's scripts:\n" + proc.stdout[-6000:]
    assert all(c["config_name"] == "ppo_trainer" and "model_engine=megatron" in c["overrides"] for c in recipes)
    compared = [c for c in cases if c["verl"].get("verdict") not in ("needs-vllm", "undecided")]
    disagreeing = [c for c in compared if c["verl"]["verdict"] not in ("accept", "reject")
                   or (c["verl"]["verdict"] == "reject") != bool(c["ours_reject"])]
    assert not disagreeing, "disagreements with verl 0.9.1:\n" + proc.stdout[-8000:]
    mutations = [c for c in cases if c["case"].startswith("mutation:")]
    assert len(mutations) == MUTATIONS and {"accept", "reject"} <= {c["verl"]["verdict"] for c in mutations}
    assert proc.stdout.strip().splitlines()[-1] == f"agreement {len(compared)}/{len(compared)}"
    assert proc.returncode == 0

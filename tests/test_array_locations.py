"""A key set in a bash array is reported at the element's line (issue 36): `"${ARR[@]}"` hands
every element to the call on the call's line, but the element is what a person reads and edits,
and `gen show` already said "set at line N". An array in another (sourced) file keeps the
call's line: a line number of another file would point at the wrong text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
ELEMENTS = ("ARGS=(\n"
            "    data.train_batch_size=60\n"
            "    actor_rollout_ref.actor.ppo_mini_batch_size=24\n"
            "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2\n"
            ")\n")
CALL = ("python3 -m verl.trainer.main_ppo \\\n"
        "    trainer.n_gpus_per_node=8 \\\n"
        "    \"${ARGS[@]}\"\n")


def _findings(folder: Path, script: str) -> dict[str, dict]:
    done = subprocess.run([str(BIN / "gen"), "check", "--format", "json", script], capture_output=True, text=True,
                          cwd=folder, env={**os.environ, "NO_COLOR": "1"})
    return {f["code"]: f for f in json.loads(done.stdout)["files"][0]["findings"]}


def test_a_finding_on_an_array_element_is_at_the_element(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("#!/bin/bash\n" + ELEMENTS + CALL)
    found = _findings(tmp_path, "run.sh")
    vb107 = found["VB107"]  # the micro batch: element at line 5, the call's "${ARGS[@]}" at line 9
    assert vb107["line"] == 5 and vb107["column"] == 5, vb107
    shown = subprocess.run([str(BIN / "gen"), "show", "run.sh"], capture_output=True, text=True, cwd=tmp_path).stdout
    assert "ppo_micro_batch_size_per_gpu=2  [array, set at line 5]" in shown


def test_an_array_from_a_sourced_file_keeps_the_call_line(tmp_path: Path) -> None:
    (tmp_path / "vars.sh").write_text(ELEMENTS)
    (tmp_path / "run.sh").write_text("#!/bin/bash\nsource ./vars.sh\n" + CALL)
    found = _findings(tmp_path, "run.sh")
    # It was an internal error before (issue 36): the glob check read run.sh at vars.sh's offsets.
    assert found["VB107"]["line"] == 5  # `"${ARGS[@]}"` in run.sh, not line 4 of vars.sh


def test_an_element_whose_value_is_a_variable_is_at_the_element_not_the_variable(tmp_path: Path) -> None:
    """`ARGS=(… key=${MICRO} …)`: the element is the line of the call's argument list; the
    variable's own line is where a fix edits the value (gen show's "set at"), not where the key is."""
    (tmp_path / "run.sh").write_text("#!/bin/bash\nMICRO=2\n" + ELEMENTS.replace(
        "ppo_micro_batch_size_per_gpu=2", "ppo_micro_batch_size_per_gpu=${MICRO}") + CALL)
    assert _findings(tmp_path, "run.sh")["VB107"]["line"] == 6  # the element, not MICRO=2 at line 2

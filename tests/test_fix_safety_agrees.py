"""Fix safety agrees between check and fix (issue 34): where `gen fix` refuses a fix as unsafe (its
value sits in a variable other lines use too), `gen check` calls it unsafe as well; a fix that
changes runtime behaviour (chunked prefill on) is unsafe in the rule itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from generator.judging import check_script
from generator.reading.shell.script_reader import read_script

ROOT = Path(__file__).resolve().parent.parent

SHARED_VARIABLE = """MODE=sync
echo "rollout mode: $MODE"
python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.mode=$MODE
"""


def _gen(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "generator", *args], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "200"})
    return done.stdout


def test_check_says_unsafe_where_fix_refuses_it(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text(SHARED_VARIABLE)
    report = _gen("check", "--verl-version", "0.9.1", str(script))
    block = report[report.index("VR508"):]
    assert "[*] with --unsafe" in block.splitlines()[0]
    assert "= fix (unsafe): set rollout.mode=async" in block
    fixed = _gen("fix", "--verl-version", "0.9.1", "--diff", str(script))
    assert "rollout.mode=async" not in fixed and "MODE=async" not in fixed


def test_turning_chunked_prefill_on_is_unsafe() -> None:
    text = """python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.enable_chunked_prefill=False \\
    actor_rollout_ref.rollout.max_num_batched_tokens=4096 \\
    actor_rollout_ref.rollout.max_model_len=8192
"""
    results = check_script(read_script(text, "run.sh"), version="0.9.1")
    fix = next(f.fix for _i, _c, findings in results for f in findings if f.code == "VR506")
    assert fix is not None and fix.applicability == "unsafe"

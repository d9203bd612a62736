"""What a person sees in a terminal (issue 36): `gen check` run on a real pseudo-terminal (python's
pty module), so stdout.isatty() is true and rich draws the colours. Code frames once showed
`... \\\\` on every continued line there (rich markup doubled the backslash), while piped output
was right: only a terminal shows it."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SCRIPT = """#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    trainer.n_gpus_per_node=8 \\
    data.train_batch_size=60 \\
    actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=24 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2
"""


def _in_a_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run `gen ARGS` with stdout and stderr on a pseudo-terminal; (exit status, what it printed)."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(TERM="xterm-256color", COLUMNS="120")
    proc = subprocess.Popen([str(BIN / "gen"), *args], stdout=slave, stderr=slave, stdin=subprocess.DEVNULL,
                            cwd=cwd, env=env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            pytest.fail("gen printed nothing for 60 s")
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")


def test_code_frames_in_a_terminal_have_one_backslash_and_colour(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    status, raw = _in_a_terminal(["check", "run.sh"], tmp_path)
    assert status == 1, raw
    assert ANSI.search(raw), "no colour on a terminal"
    text = ANSI.sub("", raw)
    assert re.search(r"^run.sh:\d+:\d+: VB\d+ error: ", text, re.M), text
    frames = [line for line in text.splitlines() if re.match(r"\s+\d+ \| ", line)]
    continued = [line for line in frames if line.rstrip().endswith("\\")]
    assert continued, text  # the excerpt shows a continued line of the call
    for line in continued:
        assert line.rstrip().endswith(" \\") and not line.rstrip().endswith("\\\\"), line


def test_piped_output_has_no_colour_and_the_same_text(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    status, raw = _in_a_terminal(["check", "run.sh"], tmp_path)
    piped = subprocess.run([str(BIN / "gen"), "check", "run.sh"], capture_output=True, text=True, cwd=tmp_path,
                           env={**os.environ, "COLUMNS": "120"})
    assert piped.returncode == status and not ANSI.search(piped.stdout)
    assert [line.rstrip() for line in ANSI.sub("", raw).splitlines() if line.strip()] == \
        [line.rstrip() for line in piped.stdout.splitlines() if line.strip()]

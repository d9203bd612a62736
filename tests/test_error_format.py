"""One error format for every command (issue 36; docs/cli.md "Exit codes"): bad input is one line
`gen: error: ...` on stderr, exit 2, nothing else on stderr and no report on stdout; a broken
script still gets its findings, and the same one line. Five prefixes were in use (`gen recipe:`,
`error:`, `nope.sh: error:`, `gen: nope.sh:`, click's `Error:` under a usage block), and
`gen check nope.sh` printed the error twice and a summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent
BROKEN = "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=60 \\\n" \
         "    actor_rollout_ref.rollout.n=$(echo 4 \\\n    trainer.n_gpus_per_node=8\n"
CLEAN = "#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=64\n"


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "empty").mkdir()
    (tmp_path / "bin.sh").write_bytes(b"\x00\x01binary")
    (tmp_path / "broken.sh").write_text(BROKEN)
    (tmp_path / "a.sh").write_text(CLEAN)
    (tmp_path / "mamba.json").write_text('{"architectures": ["MambaForCausalLM"], "model_type": "mamba", '
                                         '"hidden_size": 2560, "num_hidden_layers": 64, "vocab_size": 50280}')
    return tmp_path


def _gen(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "VERL_GEN_LIBRARY": str(cwd / "library")}
    return subprocess.run([str(BIN / "gen"), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


BAD_INPUT = {
    "check missing file": ["check", "nope.sh"],
    "check directory without scripts": ["check", "empty"],
    "check binary": ["check", "bin.sh"],
    "check bad --format": ["check", "--format", "nope", "a.sh"],
    "check bad --severity": ["check", "--severity", "nope", "a.sh"],
    "check unknown --select": ["check", "--select", "ZZ9", "a.sh"],
    "check unknown release": ["check", "--verl-version", "9.9", "a.sh"],
    "fix missing file": ["fix", "nope.sh"],
    "fix binary": ["fix", "bin.sh"],
    "migrate missing file": ["migrate", "nope.sh", "--to", "0.9.1"],
    "migrate unknown release": ["migrate", "a.sh", "--to", "9.9"],
    "explain missing file": ["explain", "nope.sh"],
    "explain --memory directory": ["explain", "--memory", "empty"],
    "explain bad --gpu": ["explain", "--memory", "--gpu", "nope", "a.sh"],
    "show missing file": ["show", "nope.sh"],
    "show unknown recipe": ["show", "nosuchrecipe"],
    "show binary": ["show", "bin.sh"],
    "diff missing file": ["diff", "nope.sh", "a.sh"],
    "diff binary": ["diff", "bin.sh", "a.sh"],
    "diff broken bash": ["diff", "a.sh", "broken.sh"],
    "import missing file": ["import", "nope.sh", "--name", "x"],
    "import directory": ["import", "empty", "--name", "x"],
    "recipe unknown model": ["recipe", "--model", "nope", "--gpus", "8", "-o", "-"],
    "recipe unknown hub id": ["recipe", "--model", "org/name", "--gpus", "8", "-o", "-"],
    "recipe model folder without config.json": ["recipe", "--model", "empty", "--gpus", "8", "-o", "-"],
    "recipe model path that does not exist": ["recipe", "--model", "./models/nope/", "--gpus", "8", "-o", "-"],
    "recipe model the memory model cannot describe": ["recipe", "--model", "mamba.json", "--gpus", "8", "-o", "-"],
    "recipe zero gpus": ["recipe", "--model", "qwen2-7b", "--gpus", "0", "-o", "-"],
    "recipe gpus not a number": ["recipe", "--model", "qwen2-7b", "--gpus", "abc"],
    "recipe unknown algo": ["recipe", "--model", "qwen2-7b", "--gpus", "8", "--algo", "nope", "-o", "-"],
    "recipe --from missing file": ["recipe", "--from", "nope.sh", "-o", "-"],
    "plan unknown model": ["plan", "--model", "nope", "--gpus", "8"],
    "plan unknown gpu": ["plan", "--model", "qwen2-7b", "--gpus", "8", "--gpu", "nope"],
    "plan missing --gpus": ["plan", "--model", "qwen2-7b"],
    "rule unknown code": ["rule", "VX999"],
    "rules bad --format": ["rules", "--format", "nope"],
    "doc unknown page": ["doc", "nope"],
    "calibrate missing log": ["calibrate", "nope.log"],
    "models bad --format": ["models", "--format", "nope"],
    "list bad --format": ["list", "--format", "nope"],
    "list unknown option": ["list", "--nope"],
    "unknown command": ["nope"],
}


@pytest.mark.parametrize("args", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_bad_input_is_one_line_on_stderr_and_exit_2(folder: Path, args: list[str]) -> None:
    done = _gen(folder, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("gen: error: "), done.stderr
    assert "Traceback" not in done.stderr and "Usage:" not in done.stderr
    if "--format" not in args:  # a machine format writes a document saying it failed; text writes nothing
        assert done.stdout == "", done.stdout


def test_check_of_a_missing_file_says_it_once_and_prints_no_summary(folder: Path) -> None:
    done = _gen(folder, "check", "nope.sh")
    assert done.stdout == ""
    assert done.stderr == "gen: error: nope.sh: no such file\n"


def test_check_of_a_missing_and_a_read_file_keeps_the_summary_and_counts_the_unread(folder: Path) -> None:
    done = _gen(folder, "check", "nope.sh", "a.sh")
    assert done.returncode == 2
    assert done.stderr == "gen: error: nope.sh: no such file\n"
    assert "nope.sh" not in done.stdout.replace("1 file not read", "")
    assert done.stdout.splitlines()[-1].startswith("2 files checked") and "1 file not read" in done.stdout


@pytest.mark.parametrize("command", [["check"], ["explain"], ["show"], ["fix"]])
def test_broken_bash_is_exit_2_with_the_one_line_and_the_findings(folder: Path, command: list[str]) -> None:
    done = _gen(folder, *command, "broken.sh")
    assert done.returncode == 2
    said = [line for line in done.stderr.splitlines() if "error" in line and "finding" not in line]
    assert said == ["gen: error: broken.sh: bash syntax error at line 5 (the rest was read)"], done.stderr


def test_a_syntax_error_in_a_call_silences_the_findings_that_follow_from_it(folder: Path) -> None:
    """The unclosed `$(` swallows the lines after it: the call's overrides are a guess, and the
    batch errors they gave (VB101, VB102, VB103, ...) came before the syntax error."""
    done = _gen(folder, "check", "--format", "concise", "broken.sh")
    codes = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("broken.sh:")]
    assert codes == ["VS713", "VS707"], done.stdout
    assert "the $( opened in" in done.stdout  # not `$((`


def test_a_call_before_a_later_syntax_error_is_still_judged(folder: Path) -> None:
    (folder / "later.sh").write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=60 "
                                     "trainer.n_gpus_per_node=8\necho \"$(oops\n")
    done = _gen(folder, "check", "--format", "concise", "later.sh")
    codes = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("later.sh:")]
    assert "VB101" in codes and codes[-1] == "VS707"

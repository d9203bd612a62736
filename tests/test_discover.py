"""Directory arguments (issue 14): folders stand for the launch scripts inside them, honouring
.gitignore; `-` is stdin. Each test builds its own folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from generator.cli import app
from generator.inputs.discover import expand_paths
from generator.base.errors import InputError

LAUNCH = "python3 -m verl.trainer.main_ppo data.train_batch_size=8 actor_rollout_ref.actor.ppo_mini_batch_size=4\n"


def tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_folders_expand_to_launchers_in_path_order(tmp_path):
    tree(tmp_path, {
        "b.sh": LAUNCH, "a/run.sh": LAUNCH, "a/prep.sh": "echo preparing data\n",
        "a/launch.py": "import subprocess\nsubprocess.run(['python3', '-m', 'verl.trainer.main_ppo'])\n",
        "a/util.py": "print('no trainer here')\n", "notes.txt": LAUNCH,
        ".venv/lib/x.sh": LAUNCH, ".git/hooks/y.sh": LAUNCH, "node_modules/z.sh": LAUNCH,
    })
    found = [os.path.relpath(p, tmp_path) for p in expand_paths([str(tmp_path)])]
    assert found == ["b.sh", "a/launch.py", "a/run.sh"]


def test_gitignore_patterns(tmp_path):
    tree(tmp_path, {
        ".gitignore": "build/\n*.tmp.sh\n/top_only.sh\n!keep.tmp.sh\nlogs/**/old.sh\n",
        "build/run.sh": LAUNCH, "x.tmp.sh": LAUNCH, "keep.tmp.sh": LAUNCH, "top_only.sh": LAUNCH,
        "sub/top_only.sh": LAUNCH, "logs/a/b/old.sh": LAUNCH, "logs/new.sh": LAUNCH,
        "sub/.gitignore": "local.sh\n", "sub/local.sh": LAUNCH, "local.sh": LAUNCH,
    })
    found = sorted(os.path.relpath(p, tmp_path) for p in expand_paths([str(tmp_path)]))
    assert found == ["keep.tmp.sh", "local.sh", "logs/new.sh", "sub/top_only.sh"]


def test_symlinked_folders_and_special_files_are_not_followed(tmp_path):
    tree(tmp_path, {"real/run.sh": LAUNCH})
    (tmp_path / "loop").symlink_to(tmp_path)
    os.mkfifo(tmp_path / "pipe.sh")
    assert [os.path.relpath(p, tmp_path) for p in expand_paths([str(tmp_path)])] == ["real/run.sh"]


def test_files_and_stdin_pass_through_and_an_empty_folder_is_bad_input(tmp_path):
    assert expand_paths(["-", "x.sh", "missing.sh"]) == ["-", "x.sh", "missing.sh"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no launch scripts found"):
        expand_paths([str(tmp_path / "empty")])


@pytest.mark.parametrize("command", ["check", "explain", "show", "fix"])
def test_commands_accept_a_folder(tmp_path, command):
    tree(tmp_path, {"one.sh": LAUNCH, "deep/two.sh": LAUNCH})
    result = CliRunner().invoke(app, [command, str(tmp_path)])
    assert "is a directory" not in result.output
    assert "one.sh" in result.output and "two.sh" in result.output


def test_check_json_lists_each_file_of_a_folder(tmp_path):
    tree(tmp_path, {"one.sh": LAUNCH, "deep/two.sh": LAUNCH})
    result = CliRunner().invoke(app, ["check", str(tmp_path), "--format", "json"])
    paths = [f["path"] for f in json.loads(result.stdout)["files"]]
    assert [os.path.relpath(p, tmp_path) for p in paths] == ["one.sh", "deep/two.sh"]


@pytest.mark.parametrize("command", ["check", "explain", "show"])
def test_dash_reads_stdin(command):
    result = CliRunner().invoke(app, [command, "-"], input=LAUNCH)
    assert "no such file" not in result.output
    assert "per-rank mini" in result.output or "ppo_mini_batch_size" in result.output

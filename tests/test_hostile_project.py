"""Issue 21: a hostile repository. One test per attack of tests/hostile_cases.py, each building its
own project in a temp folder and running the real command line in a child process: the right
exit code, the one-line outcome, nothing printed from a file outside the project, and at most
10 s and 500 MB (measured in the child: getrusage of its children)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_cases import CASES, MAX_RSS_MB, MAX_SECONDS, run_case, problems

from generator.base import boundary
from generator.project import root as project_root
from generator.base.errors import InputError
from generator.base.files import read_input, write_atomic


@pytest.mark.parametrize("name", sorted(CASES))
def test_attack_is_handled(tmp_path, name):
    case = CASES[name](tmp_path)
    got = run_case(case, timeout=60)
    found = problems(case, got)
    assert not found, (found, got.rc, got.stderr[-800:], got.stdout[-800:])
    assert got.seconds <= MAX_SECONDS and got.rss_mb <= MAX_RSS_MB


def test_the_boundary_refuses_a_path_outside_and_names_only_the_path(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET\n")
    (repo / "link.sh").symlink_to(secret)
    project_root.enter(repo / "run.sh")
    with pytest.raises(boundary.OutsideProject) as err:
        read_input(repo / "link.sh")
    assert "TOPSECRET" not in str(err.value) and str(repo / "link.sh") in str(err.value)
    assert read_input(repo / "link.sh", trusted=True) == b"TOPSECRET\n"  # a path the user named
    (repo / "inside.sh").write_text("ok\n")
    assert read_input(repo / "inside.sh") == b"ok\n"


def test_the_project_root_is_the_repository_not_a_folder_above(tmp_path):
    repo = tmp_path / "a" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert project_root.project_root(repo / "sub" / "run.sh") == repo.resolve()


def test_fix_refuses_when_the_file_changes_during_the_write(tmp_path, monkeypatch):
    """The comparison runs again at the rename: an edit made during the fsync is kept."""
    path = tmp_path / "run.sh"
    path.write_bytes(b"old\n")
    real_fsync = os.fsync
    calls = []

    def fsync_then_someone_edits(fd: int) -> None:
        real_fsync(fd)
        if not calls:
            calls.append(fd)
            path.write_bytes(b"their edit\n")

    monkeypatch.setattr(os, "fsync", fsync_then_someone_edits)
    with pytest.raises(InputError, match="changed since it was read"):
        write_atomic(path, b"new\n", expected=b"old\n")
    assert path.read_bytes() == b"their edit\n"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".gen-tmp")]


def test_fix_keeps_extended_attributes(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"old\n")
    try:
        os.setxattr(path, "user.verl_gen_test", b"kept")
    except (OSError, AttributeError):
        pytest.skip("this filesystem has no user extended attributes")
    write_atomic(path, b"new\n", expected=b"old\n")
    assert path.read_bytes() == b"new\n"
    assert os.getxattr(path, "user.verl_gen_test") == b"kept"


def test_a_new_file_never_replaces_one_created_meanwhile(tmp_path, monkeypatch):
    path = tmp_path / "report.html"
    real_fsync = os.fsync

    def fsync_then_someone_creates(fd: int) -> None:
        real_fsync(fd)
        if not path.exists():
            path.write_text("theirs\n")

    monkeypatch.setattr(os, "fsync", fsync_then_someone_creates)
    with pytest.raises(InputError, match="pass --force"):
        write_atomic(path, "mine\n", replace=False)
    assert path.read_text() == "theirs\n"


def test_a_chart_is_written_once_then_replaced_only_with_force(tmp_path):
    from typer.testing import CliRunner

    from generator.cli import app

    chart = tmp_path / "report.html"
    args = ["plan", "--model", "qwen2-7b", "--gpus", "8", "--chart", str(chart)]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0 and chart.read_text().startswith("<")
    chart.write_text("mine\n")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 2 and "pass --force" in again.output and chart.read_text() == "mine\n"
    forced = CliRunner().invoke(app, [*args, "--force"])
    assert forced.exit_code == 0 and chart.read_text().startswith("<")

"""generator.base.folder_memo: folder answers are remembered inside one run only, per key, and a
`gen check` of many scripts in one folder asks the folder once (the corpus check's saving)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.base import boundary, folder_memo, session
from generator.project import root as project_root
from generator.project.settings import find_project_file


def test_nothing_is_remembered_outside_a_run() -> None:
    calls: list[int] = []
    assert folder_memo.remembered("k", lambda: calls.append(1) or 1) == 1
    assert folder_memo.remembered("k", lambda: calls.append(2) or 2) == 2
    assert calls == [1, 2] and not folder_memo.active()


def test_inside_a_run_each_key_is_computed_once_and_forgotten_after() -> None:
    calls: list[str] = []

    def compute(tag: str) -> str:
        calls.append(tag)
        return tag

    with folder_memo.one_run():
        assert folder_memo.remembered("a", lambda: compute("a")) == "a"
        assert folder_memo.remembered("a", lambda: compute("again")) == "a"
        assert folder_memo.remembered("b", lambda: compute("b")) == "b"
        with folder_memo.one_run():  # a nested run shares the outer memo
            assert folder_memo.remembered("a", lambda: compute("nested")) == "a"
    assert calls == ["a", "b"]
    assert folder_memo.remembered("a", lambda: compute("after")) == "after"


def test_an_exception_is_not_remembered() -> None:
    def fail() -> int:
        raise ValueError("no")

    with folder_memo.one_run():
        with pytest.raises(ValueError):
            folder_memo.remembered("x", fail)
        assert folder_memo.remembered("x", lambda: 5) == 5


def test_an_edit_between_runs_is_seen(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = scripts / "run.sh"
    script.write_text("echo\n")
    with folder_memo.one_run():
        assert find_project_file(script) is None
    (tmp_path / ".verl-gen.toml").write_text("")
    with folder_memo.one_run():
        assert find_project_file(script) == tmp_path / ".verl-gen.toml"


def test_scripts_of_one_folder_share_the_walk_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    scripts = [tmp_path / f"run_{i}.sh" for i in range(3)]
    walked: list[Path] = []
    real = project_root._project_root
    monkeypatch.setattr(project_root, "_project_root", lambda here: walked.append(here) or real(here))
    with folder_memo.one_run():
        roots = {project_root.project_root(s) for s in scripts}
    assert roots == {tmp_path.resolve()} and len(walked) == 1
    session.begin()
    boundary.given_folder(tmp_path)  # another input of the answer: asked again, not reused
    with folder_memo.one_run():
        project_root.project_root(scripts[0])
        project_root.project_root(scripts[1])
    session.begin()
    assert len(walked) == 2


def test_real_path_and_parent_resolve_as_realpath_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The folder part is resolved once per run; the answer must stay os.path.realpath's through
    # linked folders, linked files, `..` after a link, link loops and missing files.
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    (tmp_path / "real" / "sub" / "f.sh").write_text("")
    (tmp_path / "other" / "t.sh").write_text("")
    (tmp_path / "link").symlink_to("real")
    (tmp_path / "real" / "sub" / "l.sh").symlink_to("../../other/t.sh")
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    monkeypatch.chdir(tmp_path)
    paths = ["link/sub/f.sh", "link/sub/l.sh", "link/../other/t.sh", "link/sub/../sub/f.sh", "loop1", "loop1/x",
             str(tmp_path / "link" / "sub" / "f.sh"), "real/sub/missing.sh", "link/sub", "f.sh", "..", "/"]
    with folder_memo.one_run():
        for _ in range(2):  # computed, then remembered
            for path in paths:
                assert folder_memo.real_path(path) == os.path.realpath(path), path
                assert folder_memo.real_parent(path) == Path(os.path.realpath(path)).parent, path
    with pytest.raises(ValueError):
        folder_memo.real_path("a\0b")  # refused as os.path.realpath refuses it (the boundary says no)

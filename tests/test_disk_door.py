"""Issue 35 (part 1) and issue 34 (item 4): no read or write leaves the project, and a cached
schema is keyed by every file it was composed from.

Each attack builds its project in a temp folder. The command-line cases run the real `gen` in a
child process (tests/hostile_cases.py measures it: exit code, one-line outcome, the secret
marker never printed, at most 10 s and 500 MB); the writer and cache cases call the functions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostile_cases import CALL, SECRET, Case, problems, run_case

from generator.base import cache, files
from generator.base.errors import InputError
from generator.base.files import write_atomic

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _tree(tmp: Path, *, git: bool = True) -> tuple[Path, Path]:
    """(a project, an outside folder holding a secret and a script that sources it)."""
    repo, other = tmp / "repo", tmp / "other"
    repo.mkdir()
    if git:
        (repo / ".git").mkdir()
    other.mkdir()
    (other / "secret.env").write_text(f"export TOKEN={SECRET}\n")
    (other / "train.sh").write_text(f"source ./secret.env\n{CALL} \\\n    trainer.project_name=$TOKEN\n")
    return repo, other


# --- reads and writes through a committed link ------------------------------------------------


def linked_folder_show(tmp: Path) -> Case:
    """`examples -> ../other` committed in the repository; `gen show examples/train.sh`."""
    repo, _other = _tree(tmp)
    (repo / "examples").symlink_to("../other")
    return Case("gen show examples/train.sh", repo, rc=2, says="outside its project")


def linked_folder_fix_write(tmp: Path) -> Case:
    """`gen fix --write --unsafe examples/` must not rewrite the script outside the project."""
    repo, other = _tree(tmp)
    (repo / "examples").symlink_to("../other")
    before = (other / "train.sh").read_bytes()
    case = Case("gen fix --write --unsafe examples/", repo, rc=2, says="outside its project")
    case.check = lambda: None if (other / "train.sh").read_bytes() == before else "rewrote a file outside the project"
    return case


def linked_script_show(tmp: Path) -> Case:
    """A named script that is itself a link to a file outside."""
    repo, other = _tree(tmp)
    (repo / "run.sh").symlink_to(other / "train.sh")
    return Case("gen show run.sh; gen check run.sh", repo, rc=2, says="outside its project", one_line=False)


def no_git_home_folder(tmp: Path) -> Case:
    """No `.git` anywhere: `cd ~ && gen show Downloads/x/run.sh` sourcing `~/secret.env`."""
    home = tmp / "home"
    (home / "Downloads" / "x").mkdir(parents=True)
    (home / "secret.env").write_text(f"export TOKEN={SECRET}\n")
    (home / "Downloads" / "x" / "run.sh").write_text(f"source ../../secret.env\n{CALL} \\\n"
                                                      "    trainer.project_name=$TOKEN\n")
    return Case("gen show Downloads/x/run.sh", home, rc=0, says="outside the project", one_line=False)


def linked_folder_to_a_repository(tmp: Path) -> Case:
    """`examples -> ../other` where `other` is a repository itself: its `.git`, seen through the
    link, must not make it the root of `examples/train.sh`."""
    repo, other = _tree(tmp)
    (other / ".git").mkdir()
    (repo / "examples").symlink_to("../other")
    return Case("gen show examples/train.sh", repo, rc=2, says="outside its project")


DOOR_CASES = {f.__name__: f for f in (linked_folder_show, linked_folder_fix_write, linked_script_show,
                                       no_git_home_folder, linked_folder_to_a_repository)}


@pytest.mark.parametrize("name", sorted(DOOR_CASES))
def test_attack_is_handled(tmp_path: Path, name: str) -> None:
    case = DOOR_CASES[name](tmp_path)
    got = run_case(case, timeout=60)
    found = problems(case, got)
    assert not found, (found, got.rc, got.stderr[-800:], got.stdout[-800:])


def test_a_link_that_stays_inside_the_project_is_followed(tmp_path: Path) -> None:
    """The boundary is the project, not "no links": `examples -> scripts` inside it is read."""
    repo, _other = _tree(tmp_path)
    (repo / "scripts").mkdir()
    (repo / "scripts" / "common.env").write_text("export TOKEN=inside-value\n")
    (repo / "scripts" / "run.sh").write_text(f"source ./common.env\n{CALL} \\\n    trainer.project_name=$TOKEN\n")
    (repo / "examples").symlink_to("scripts")
    got = run_case(Case("cd examples && gen show run.sh", repo, rc=0), timeout=60)
    assert got.rc == 0 and "trainer.project_name=inside-value" in got.stdout, got.stderr


# --- the project root without .git (issue 34, item 4) -----------------------------------------


def test_without_git_the_root_is_the_nearest_project_marker(tmp_path: Path) -> None:
    from generator.base.folder_memo import project_chain

    project = tmp_path / "proj"
    (project / "scripts").mkdir(parents=True)
    assert project_chain(project / "scripts") == [project / "scripts"]  # no marker: its own folder
    (project / "requirements.txt").write_text("torch\n")
    assert project_chain(project / "scripts") == [project / "scripts", project]
    (tmp_path / ".git").mkdir()  # a repository above wins over the marker
    assert project_chain(project / "scripts")[-1] == tmp_path


def test_a_link_above_the_project_is_the_users_own_layout(tmp_path: Path) -> None:
    """`~/code -> /mnt/data/code` holding a repository: the repository is still the root (a
    link above the project's top is not one of the project's links)."""
    from generator.base.folder_memo import project_chain

    real = tmp_path / "mnt" / "code"
    (real / "proj" / ".git").mkdir(parents=True)
    (real / "proj" / "scripts").mkdir()
    (real / "proj" / "common.env").write_text("export TOKEN=from-the-repository\n")
    (real / "proj" / "scripts" / "run.sh").write_text(f"source ../common.env\n{CALL} \\\n    trainer.project_name=$TOKEN\n")
    (tmp_path / "code").symlink_to(real)
    assert project_chain(tmp_path / "code" / "proj" / "scripts")[-1] == tmp_path / "code" / "proj"
    got = run_case(Case("gen show code/proj/scripts/run.sh", tmp_path, rc=0), timeout=60)
    assert got.rc == 0 and "trainer.project_name=from-the-repository" in got.stdout, got.stdout + got.stderr


def test_a_marked_project_reads_its_own_files_and_not_a_sibling_verl(tmp_path: Path) -> None:
    """`~/verl` (another clone) is not the project's verl of `~/Downloads/x/run.sh`; a project
    marked by its pyproject.toml reads the files it sources from its own top."""
    home = tmp_path / "home"
    config = home / "verl" / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    (config / "ppo_trainer.yaml").write_text("data:\n  train_batch_size: 8\n")
    project = home / "Downloads" / "x"
    (project / "scripts").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "common.env").write_text("export NAME=from-the-project\n")
    (project / "scripts" / "run.sh").write_text(f"source ../common.env\n{CALL} \\\n    trainer.project_name=$NAME\n")
    env = dict(os.environ, NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "generator", "check", "Downloads/x/scripts/run.sh", "--format",
                           "json"], cwd=home, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode in (0, 1), done.stderr
    assert str(home / "verl") not in done.stdout
    done = subprocess.run([sys.executable, "-m", "generator", "show", "Downloads/x/scripts/run.sh"], cwd=home,
                          capture_output=True, text=True, env=env, timeout=60, check=False)
    assert "trainer.project_name=from-the-project" in done.stdout, done.stdout + done.stderr


# --- the writer -------------------------------------------------------------------------------


def test_a_link_at_any_level_of_the_written_path_is_refused(tmp_path: Path) -> None:
    repo, other = _tree(tmp_path)
    (repo / "examples").symlink_to("../other")
    before = (other / "train.sh").read_bytes()
    with pytest.raises(InputError, match="examples is a symbolic link; nothing written"):
        write_atomic(repo / "examples" / "train.sh", b"rewritten\n", expected=before)
    with pytest.raises(InputError, match="is a symbolic link; nothing written"):
        write_atomic(repo / "examples" / "new.sh", b"created\n")
    assert (other / "train.sh").read_bytes() == before and not (other / "new.sh").exists()


def test_recipe_output_through_a_linked_folder_is_refused(tmp_path: Path) -> None:
    repo, other = _tree(tmp_path)
    (repo / "out").symlink_to("../other")
    case = Case("gen recipe --model qwen2-7b --gpus 8 -o out/run.sh", repo, rc=2, says="is a symbolic link")
    case.check = lambda: "wrote outside the project" if (other / "run.sh").exists() else None
    got = run_case(case, timeout=60)
    assert not problems(case, got), (got.rc, got.stderr)


def test_an_append_in_the_gap_before_the_rename_is_not_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compare-and-swap at the rename: another program appends after the last comparison and
    before the rename; its line survives and the write is refused."""
    path = tmp_path / "run.sh"
    path.write_bytes(b"original\n")
    real_replace = os.replace
    appended = []

    def append_then_replace(src, dst, **kwargs):  # type: ignore[no-untyped-def]
        if not appended and str(dst).endswith("run.sh"):
            appended.append(True)
            with open(path, "ab") as handle:
                handle.write(b"appended by another program\n")
        return real_replace(src, dst, **kwargs)

    monkeypatch.setattr(files.os, "replace", append_then_replace)
    with pytest.raises(InputError, match="changed while it was being written"):
        write_atomic(path, b"our fix\n", expected=b"original\n")
    assert path.read_bytes() == b"original\nappended by another program\n"
    assert [p.name for p in tmp_path.iterdir()] == ["run.sh"]  # no temporary or second name left


def test_a_plain_replace_still_works_and_keeps_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_bytes(b"old\n")
    path.chmod(0o750)
    write_atomic(path, b"new\n", expected=b"old\n")
    assert path.read_bytes() == b"new\n" and (path.stat().st_mode & 0o777) == 0o750
    assert path.stat().st_nlink == 1 and [p.name for p in tmp_path.iterdir()] == ["run.sh"]


# --- the schema cache: keyed by every file a result depends on --------------------------------


def _project(tmp: Path, name: str, flag: str, *, through: str) -> Path:
    """A project whose config reaches `extra/custom.yaml` through a linked subfolder
    (through='link') or a `../` defaults entry (through='parent'); the file declares `flag`."""
    project = tmp / name
    conf = project / "conf"
    conf.mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "shared").mkdir()
    (project / "shared" / "custom.yaml").write_text(f"{flag}: 1\n")
    entry = "extra: custom" if through == "link" else "extra: ../../shared/custom"
    (conf / "ppo_trainer.yaml").write_text(f"defaults:\n  - {entry}\n  - _self_\ndata:\n  train_batch_size: 64\n")
    (conf / "extra").symlink_to("../shared") if through == "link" else (conf / "extra").mkdir()
    return conf


@pytest.mark.parametrize("through", ["link", "parent"])
def test_one_projects_entry_does_not_decide_anothers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      through: str) -> None:
    from generator.schema.release_schema import _from_dir

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(cache.SWITCH_ENV, raising=False)
    first = _project(tmp_path, "a", "fork_flag", through=through)
    second = _project(tmp_path, "b", "other_flag", through=through)
    assert cache.content_key(first) == cache.content_key(second)  # the folder walk alone cannot tell them apart
    assert "extra.fork_flag" in _from_dir("x", first).configs["ppo_trainer"]
    keys = _from_dir("x", second).configs["ppo_trainer"]
    assert "extra.other_flag" in keys and "extra.fork_flag" not in keys
    # An edit behind the link (or the `../`) is seen in the same project.
    (tmp_path / "a" / "shared" / "custom.yaml").write_text("edited_flag: 1\n")
    assert "extra.edited_flag" in _from_dir("x", first).configs["ppo_trainer"]


def test_a_hit_still_reads_no_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from generator.schema.release_schema import _from_dir

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    conf = _project(tmp_path, "a", "fork_flag", through="link")
    first = _from_dir("x", conf)
    monkeypatch.setattr("generator.schema.compose.compose", lambda *_a, **_k: pytest.fail("composed on a hit"))
    assert _from_dir("x", conf).configs == first.configs


def test_an_entry_over_the_size_bound_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "MAX_ENTRY_BYTES", 1000)
    cache.store_entry("a" * 64, {"ppo_trainer": {"k": "v" * 2000}}, {"ppo_trainer": []}, [], {})
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_the_folder_key_reads_no_linked_file_and_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Naming an entry reads the folder's own regular YAML only (a `x.yaml` linked to a huge file
    elsewhere is not read), and at most MAX_KEY_BYTES of it."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "ppo_trainer.yaml").write_text("data:\n  train_batch_size: 64\n")
    before = cache.content_key(conf)
    (tmp_path / "elsewhere.yaml").write_text("x: 1\n")
    (conf / "linked.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    opened: list[str] = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda name, *a, **k: opened.append(str(name)) or real_open(name, *a, **k))
    assert cache.content_key(conf) == before and not any("elsewhere" in name or "linked" in name for name in opened)
    monkeypatch.setattr(cache, "MAX_KEY_BYTES", 10)
    assert cache.content_key(conf) is None


# --- tests are sealed from the user's cache ---------------------------------------------------


def test_tests_do_not_write_the_users_cache() -> None:
    folder = cache.cache_dir()
    assert folder is not None
    home_cache = Path.home() / ".cache" / "verl-gen"
    assert home_cache not in folder.parents and os.environ.get(cache.CACHE_ENV)
    assert Path(os.environ[cache.CACHE_ENV]).name == "verl-gen-cache" and "pytest" in os.environ[cache.CACHE_ENV]


# --- a folder walk reads nothing outside the project either -----------------------------------


def test_a_walk_does_not_read_a_callee_or_gitignore_outside_the_project(tmp_path: Path) -> None:
    """Whether a wrapper is kept depends on its callee's text: a callee outside the project is
    not read (so `bash ../other/train.sh` is passed over), nor is a `.gitignore` linked outside."""
    from generator.inputs.discover import expand_paths

    repo, other = _tree(tmp_path)
    (repo / "wrapper.sh").write_text("export BS=64\nbash ../other/train.sh\n")
    (repo / "inside.sh").write_text("bash ./callee.sh\n")
    (repo / "callee.sh").write_text(f"{CALL}\n")
    (other / "ignore").write_text("callee.sh\n")
    (repo / ".gitignore").symlink_to(other / "ignore")
    found = [Path(p).name for p in expand_paths([str(repo)])]
    assert found == ["callee.sh", "inside.sh"]

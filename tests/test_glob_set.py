"""Issue 35: .gitignore rules and the project's exclude / per-file-ignores globs are compiled once
per run (generator/base/glob_set.py) and bounded (MAX_PATTERNS). The set answers as each pattern
matched alone would: checked here against fnmatch and against one regex per pattern."""

from __future__ import annotations

import fnmatch
import random
import re
import time
from pathlib import Path

import pytest

from generator.inputs.discover import expand_paths
from generator.base.errors import InputError
from generator.base.glob_set import MAX_PATTERNS, Glob, GlobSet, glob_regex
from generator.project.settings import settings_from_table

_ALPHABET = ["a", "b", "/", "*", "?", "[ab]", "**/", "**", ".", "x"]


def _one_by_one(glob: Glob, path: str) -> bool:
    """A pattern alone, the way discover and project matched before the set."""
    name = path.rsplit("/", 1)[-1]
    if glob.crosses:
        return fnmatch.fnmatchcase(path if glob.target == "path" else name, glob.pattern)
    regex = glob_regex(glob.pattern, False)
    if glob.target == "path":
        return re.fullmatch(regex, path) is not None
    if glob.target == "name":
        return re.fullmatch(regex, name) is not None
    return re.fullmatch(regex, name) is not None or re.fullmatch("(?:.*/)?" + regex, path) is not None


def test_the_set_answers_as_each_pattern_alone() -> None:
    rng = random.Random(35)
    for _ in range(150):
        globs = []
        for _ in range(rng.randint(1, 40)):
            pattern = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 6)))
            target = rng.choice(["path", "name", "tail"])
            crosses = target != "tail" and rng.random() < 0.5
            globs.append(Glob(pattern, target, crosses))
        compiled = GlobSet(globs)
        for _ in range(20):
            path = "/".join("".join(rng.choice("abx.") for _ in range(rng.randint(1, 4)))
                            for _ in range(rng.randint(1, 3)))
            expected = [i for i, glob in enumerate(globs) if _one_by_one(glob, path)]
            assert compiled.matching(path) == expected, (globs, path)


def test_fnmatch_reading_of_double_star() -> None:
    assert glob_regex("**/a", True) == ".*.*/a"  # fnmatch: `**/a` needs a `/`
    assert re.fullmatch(glob_regex("**/a", False), "a")  # git: it does not


def _repo(tmp_path: Path, files: int) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for d in range(files // 20):
        (repo / f"exp{d}").mkdir()
        for f in range(20):
            (repo / f"exp{d}" / f"run_{f}.sh").write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    return repo


def _rules(count: int) -> list[str]:
    return [[f"*build{i}*", f"out{i}/*.log", f"**/cache{i}/", f"tmp{i}?.sh", f"x{i}*y*z"][i % 5] for i in range(count)]


def test_a_gitignore_of_ten_thousand_rules_walks_quickly(tmp_path: Path) -> None:
    """0.65-1.2 s per file walked before (200 files: 129 s); one compiled set per .gitignore now."""
    repo = _repo(tmp_path, 200)
    (repo / ".gitignore").write_text("\n".join(_rules(MAX_PATTERNS - 3) + ["exp3/", "!exp3/run_1.sh", "exp4/run_*"]) + "\n")
    start = time.perf_counter()
    found = expand_paths([str(repo)])
    assert time.perf_counter() - start < 10
    assert len(found) == 200 - 20 - 20  # exp3 is a folder ignored whole (git does not re-include inside it)


def test_past_the_pattern_limit_the_walk_is_refused(tmp_path: Path) -> None:
    repo = _repo(tmp_path, 20)
    (repo / ".gitignore").write_text("\n".join(_rules(MAX_PATTERNS // 2)) + "\n")
    (repo / "exp0" / ".gitignore").write_text("\n".join(_rules(MAX_PATTERNS // 2 + 1)) + "\n")
    with pytest.raises(InputError, match="more than 10,000 ignore patterns .*the pattern limit"):
        expand_paths([str(repo)])


def test_ten_thousand_exclude_patterns_cost_little_per_script(tmp_path: Path) -> None:
    """60,000 patterns took 8 s a script, each matched (and the script's path resolved) in turn."""
    repo = _repo(tmp_path, 200)
    patterns = [[f"legacy{i}/*", f"*_old{i}.sh", f"exp*/run_{i}?.sh"][i % 3] for i in range(MAX_PATTERNS - 3)]
    settings = settings_from_table(repo / ".verl-gen.toml", {"exclude": [*patterns, "exp1/*", "*_7.sh"],
                                                              "per-file-ignores": {"exp2/*.sh": ["VS716"]}})
    scripts = sorted(repo.glob("exp*/*.sh"))
    start = time.perf_counter()
    excluded = [s for s in scripts if settings.excludes(s)]
    assert time.perf_counter() - start < 5
    assert len(excluded) == 20 + 9  # exp1/ whole, and run_7.sh in the nine other folders
    assert settings.ignores_for(repo / "exp2" / "run_3.sh") == ("VS716",)
    assert settings.ignores_for(repo / "exp3" / "run_3.sh") == ()
    with pytest.raises(InputError, match="more than 10,000 exclude and per-file-ignores patterns"):
        settings_from_table(repo / ".verl-gen.toml", {"exclude": [f"a{i}" for i in range(MAX_PATTERNS + 1)]})

"""A folder argument is walked within bounds (issue 36): it counts launch scripts, not files, and
stops early, saying where it was, instead of reading every file under /tmp for minutes before
refusing (`gen check /tmp` took 1 min 50 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.inputs import discover
from generator.base.errors import InputError

LAUNCH = "python3 -m verl.trainer.main_ppo data.train_batch_size=8\n"
HELPER = "python prepare_data.py --out data/\n"


def _folder(root: Path, launches: int, helpers: int) -> Path:
    root.mkdir()
    for i in range(launches):
        (root / f"run_{i:03}.sh").write_text(LAUNCH)
    for i in range(helpers):
        (root / f"prep_{i:03}.sh").write_text(HELPER)
    return root


def test_the_limit_counts_launch_scripts_not_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discover, "MAX_FILES", 3)
    folder = _folder(tmp_path / "repo", launches=3, helpers=30)
    assert len(discover.expand_paths([str(folder)])) == 3  # 33 files, 3 launch scripts: within the limit


def test_over_the_launch_script_limit_stops_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discover, "MAX_FILES", 3)
    folder = _folder(tmp_path / "repo", launches=10, helpers=0)
    read: list[Path] = []
    launches = discover._launches
    monkeypatch.setattr(discover, "_launches", lambda path: read.append(path) or launches(path))
    with pytest.raises(InputError, match=r"stopped after finding more than 3 launch scripts \(3 launch scripts so far\)"):
        discover.expand_paths([str(folder)])
    assert len(read) == 4  # the fourth was one too many: nothing after it was read


def test_a_tree_of_files_that_launch_nothing_stops_after_the_reading_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discover, "MAX_EXAMINED", 5)
    folder = _folder(tmp_path / "repo", launches=1, helpers=20)
    with pytest.raises(InputError, match=r"stopped after reading 5 shell and Python files \(\d launch scripts? so far\); "
                                         "name a smaller folder"):
        discover.expand_paths([str(folder)])


def test_a_huge_tree_stops_after_the_entry_budget_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discover, "MAX_ENTRIES", 10)
    folder = _folder(tmp_path / "repo", launches=0, helpers=0)
    for i in range(30):
        (folder / f"notes_{i}.txt").write_text("x")
    monkeypatch.setattr(discover, "_launches", lambda path: pytest.fail(f"read {path}"))
    with pytest.raises(InputError, match="stopped after looking at 10 files and folders"):
        discover.expand_paths([str(folder)])

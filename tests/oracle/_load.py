"""The oracle package (tools/oracle/) for the tests."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load_oracle() -> ModuleType:
    if str(REPO) not in sys.path:  # tools/ is a folder of the checkout, not an installed package
        sys.path.insert(0, str(REPO))
    return importlib.import_module("tools.oracle")

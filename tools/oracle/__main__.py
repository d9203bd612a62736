"""python -m tools.oracle (run from the repository root)."""

import sys

from .cli import main

sys.exit(main())

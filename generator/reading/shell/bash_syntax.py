"""A second opinion from bash itself on whether a script parses: `bash -n` (read, never run).

The reader parses with tree-sitter-bash, whose grammar disagrees with bash on some valid
scripts. A syntax error is only reported when bash agrees; where bash parses a file the
reader could not, the reader's trouble is said as what it is (a part it may have read
incompletely), never as a syntax error of the user's script.

Nothing of the script can run: `-n` makes bash read commands without executing any; the text
goes in on stdin (no file of the user's is opened by bash); the environment is empty (so
BASH_ENV and the like name no start-up file) and `--norc --noprofile` skip the rc files; the
working directory is `/`; the text is bounded by the reader's size cap before it gets here;
the call is killed after a few seconds. When bash is absent or does not answer, the verdict is
unknown and the reader's own finding stands.
"""

from __future__ import annotations

import os
from functools import lru_cache

from generator.base.files import SCRIPT_LIMIT

TIMEOUT_S = 5.0
# extglob's patterns (`@(a|b)`) are a syntax error to `bash -n` unless the option is on (a
# script's own `shopt -s extglob` is not run); turned on so such a script is not called broken.
_ARGS = ("--norc", "--noprofile", "-O", "extglob", "-n")


@lru_cache(maxsize=1)
def _bash() -> str | None:
    import shutil  # here: only a script the reader found broken gets a second opinion

    found = shutil.which("bash")
    return os.path.realpath(found) if found else None


def bash_parses(data: bytes) -> bool | None:
    """True when `bash -n` reads the text without a syntax error, False when it reports one,
    None when that cannot be known (no bash, too large, no answer in time)."""
    import subprocess

    bash = _bash()
    if bash is None or len(data) > SCRIPT_LIMIT:
        return None
    try:
        done = subprocess.run([bash, *_ARGS], input=data, capture_output=True, env={}, cwd="/",
                              timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    # bash -n exits 0 after some errors inside `[[ … ]]` ("unexpected token `;' in conditional
    # command"): its diagnostics count too (a here-document warning does not: bash runs that).
    said = done.stderr.decode("utf-8", "replace")
    return done.returncode == 0 and "syntax error" not in said and "unexpected" not in said

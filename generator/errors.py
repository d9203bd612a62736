"""Errors that reach the user as one line, and the exit codes the CLI documents.

Exit codes (every command):
  0  success; for `check`, no error-severity finding
  1  `check`/`fix`: at least one error-severity finding remains
  2  bad input: a file could not be read or parsed, an unknown model/recipe/version,
     an invalid option value; nothing was written
"""

from generator.safe_text import printable

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2


class InputError(Exception):
    """A problem with what the user gave us. `str(err)` is the one-line message."""

    def __init__(self, message: str) -> None:
        # Keep it to one line, safe for a terminal: the CLI prints it after the file name.
        super().__init__(printable(" ".join(message.split())))

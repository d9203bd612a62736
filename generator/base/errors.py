"""Errors that reach the user as one line, and the exit codes the CLI documents.

Exit codes (every command):
  0  success; for `check`, no error-severity finding
  1  `check`/`fix`: at least one error-severity finding remains
  2  bad input: a file could not be read or parsed, an unknown model/recipe/version,
     an invalid option value; nothing was written
"""

from generator.base.safe_text import printable

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2

# Every command says a failure the same way, on stderr (docs/cli.md "Exit codes"): one line
# `gen: error: MESSAGE`, where MESSAGE starts with the file or option it is about. One home for
# the prefix; cli/common.say_error writes it.
ERROR_PREFIX = "gen: error: "


def error_line(message: str) -> str:
    """The one line every command prints for a failure: `gen: error: MESSAGE`."""
    return ERROR_PREFIX + message.removeprefix(ERROR_PREFIX)


class InputError(Exception):
    """A problem with what the user gave us. `str(err)` is the one-line message."""

    def __init__(self, message: str) -> None:
        # Keep it to one line, safe for a terminal: the CLI prints it after the file name.
        super().__init__(printable(" ".join(message.split())))

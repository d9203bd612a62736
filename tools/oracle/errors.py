"""The oracle's one error type."""

from __future__ import annotations


class OracleError(Exception):
    """A problem that stops the run; printed as one line, exit code 2."""

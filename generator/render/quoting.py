"""Quoting user values twice over: once for bash, once for Hydra's override grammar.

A user value (a model path, a data file, a run name) reaches verl through two parsers:
bash turns the script's text into argv words, then Hydra parses each `key=value` word.
The generated script keeps the value in a knob variable and writes the override as
`key="'${KNOB}'"`, so bash hands the variable's text over unchanged (no splitting, no
globbing, no command substitution of the *value*), and Hydra sees a single-quoted string.

The knob's default therefore holds the *Hydra body* of the value: the text that goes
between Hydra's single quotes. For ordinary paths and names it is the value itself; only a
quote, a backslash before a quote, or an OmegaConf `${` needs an escape.
"""

from __future__ import annotations

import re
import shlex

from generator.base.errors import InputError

_BACKSLASHES_BEFORE_QUOTE_OR_END = re.compile(r"(\\+)(?='|\Z)")
_BACKSLASHES_BEFORE_INTERPOLATION = re.compile(r"(\\*)\$\{")
# OmegaConf reads the string "???" as its "mandatory value missing" marker however it is quoted,
# so verl would stop with MissingMandatoryValue when it reads the key: no body writes it.
MISSING_MARKER = "???"


def shq(value: object) -> str:
    """Quote `value` as one bash word (shlex.quote semantics; safe words stay bare)."""
    return shlex.quote(str(value))


def shell_word(value: str) -> str:
    """Like shq, but a value holding single quotes (Hydra lists of quoted paths) is written in
    double quotes when nothing in it is special there, which reads far better."""
    if "'" in value and not any(ch in value for ch in '"$`\\!'):
        return '"' + value + '"'
    return shq(value)


def hydra_body(raw: str) -> str:
    """The text to put between Hydra single quotes so that Hydra (and OmegaConf) read `raw`.

    Hydra's quoted strings treat a backslash as an escape only in front of a quote (or a run
    of backslashes in front of one, or at the very end). OmegaConf then resolves `${...}`
    inside any string: `\\${` is a literal `${`, but `\\\\${` is a literal backslash followed
    by a live interpolation, so a user's `run\\${oc.env:SECRET}` would leak the secret. Each
    backslash right before `${` is therefore doubled, then the `${` escaped.

    `???` has no body: OmegaConf reads it as a missing value in any quoting (InputError).
    """
    if raw == MISSING_MARKER:
        raise InputError(f"the value {MISSING_MARKER!r} cannot be given to verl: OmegaConf reads it as "
                         "'value missing' in any quoting, and verl stops with MissingMandatoryValue")
    body = _BACKSLASHES_BEFORE_QUOTE_OR_END.sub(lambda m: m.group(1) * 2, raw)
    body = body.replace("'", "\\'")
    return _BACKSLASHES_BEFORE_INTERPOLATION.sub(lambda m: m.group(1) * 2 + "\\${", body)

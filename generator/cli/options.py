"""A command's options as data, the one home of their names, defaults and help, so the same
command can be run two ways: through typer (help, completion, every error message) and, for
the hot path `gen check FILE...` of editors and pre-commit hooks, through `fast_parse`, a
small parser that needs no typer import (typer and click cost ~60-90 ms of every start).

`fast_parse` accepts only what it fully understands — known options with well-formed values —
and otherwise answers None, so the caller hands the very same argv to typer, which then gives
its own answer (help, an error, or the same run). tests/test_cli_fast.py keeps the two parsers
equal on valid input. Imports nothing heavy.
"""

from __future__ import annotations

from typing import Any, Callable, Literal, NamedTuple

Kind = Literal["flag", "value", "list"]


class Opt(NamedTuple):
    name: str  # the Python parameter name
    flags: tuple[str, ...]
    kind: Kind
    default: Any
    help: str
    convert: Callable[[str], Any] = str  # for a value: str, float or int
    optional: bool = True  # a value option whose default is None
    minimum: float | None = None
    complete: Callable[[str], list[str]] | None = None  # the values shell completion offers (cli/completion.py)


class Arg(NamedTuple):
    name: str
    help: str


def _float(text: str) -> float:
    value = float(text)
    if value != value:  # NaN: let typer say what it says
        raise ValueError(text)
    return value


def fast_parse(argv: list[str], argument: Arg, options: tuple[Opt, ...]) -> dict[str, Any] | None:
    """The keyword arguments of a run (`argument` as a list of the positional words), or None
    when anything is not plainly valid (typer then parses the same argv and answers)."""
    by_flag = {flag: opt for opt in options for flag in opt.flags}
    values: dict[str, Any] = {opt.name: list(opt.default) if opt.kind == "list" else opt.default for opt in options}
    positional: list[str] = []
    words = iter(argv)
    only_positional = False
    for word in words:
        if only_positional or word == "-" or not word.startswith("-"):
            positional.append(word)
            continue
        if word == "--":
            only_positional = True
            continue
        flag, eq, attached = word.partition("=") if word.startswith("--") else (word, "", "")
        opt = by_flag.get(flag)
        if opt is None:
            return None  # --help, a typo, a short-option cluster: typer's to answer
        if opt.kind == "flag":
            if eq:
                return None
            values[opt.name] = True
            continue
        if eq:
            text = attached
        else:
            following = next(words, None)
            if following is None or (following.startswith("-") and following != "-"):
                return None
            text = following
        try:
            value = opt.convert(text)
        except ValueError:
            return None
        if opt.minimum is not None and value < opt.minimum:
            return None
        if opt.kind == "list":
            values[opt.name].append(value)
        else:
            values[opt.name] = value
    if not positional:
        return None
    values[argument.name] = positional
    return values


def typer_signature(argument: Arg, options: tuple[Opt, ...]) -> tuple[Any, dict[str, Any]]:
    """(inspect.Signature, annotations) that make typer build the command from the same table."""
    import inspect
    from typing import List, Optional

    import typer

    def annotation(opt: Opt) -> Any:
        if opt.kind == "flag":
            return bool
        if opt.kind == "list":
            return List[str]
        return Optional[opt.convert] if opt.optional else opt.convert

    extra: dict[str, Any] = {}
    params = [inspect.Parameter(argument.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                default=typer.Argument(..., help=argument.help), annotation=List[str])]
    annotations: dict[str, Any] = {argument.name: List[str]}
    for opt in options:
        extra = {"min": opt.minimum} if opt.minimum is not None else {}
        if opt.complete is not None:
            extra["autocompletion"] = opt.complete
        default = list(opt.default) if opt.kind == "list" else opt.default
        params.append(inspect.Parameter(opt.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        default=typer.Option(default, *opt.flags, help=opt.help, **extra),
                                        annotation=annotation(opt)))
        annotations[opt.name] = annotation(opt)
    annotations["return"] = None
    return inspect.Signature(params, return_annotation=None), annotations


__all__ = ["Arg", "Opt", "fast_parse", "typer_signature"]

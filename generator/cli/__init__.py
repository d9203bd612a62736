"""The `gen` command line: thin typer commands that call one function and print one report.

Each command group lives in its own module with a `register(app)` function, so commands stay
small and heavy imports (Hydra, Jinja, libcst) happen inside the command that needs them.

The typer app is built on first use (`generator.cli.app`): `gen check FILE...` with plainly
valid options runs without importing typer at all (generator/cli/check_run.py), since typer and
click are ~60-90 ms of a start that is otherwise ~100 ms. Anything else — help, completion,
another command, an option the fast parser does not know — goes through typer as before.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from generator.errors import EXIT_BAD_INPUT

if TYPE_CHECKING:
    import typer

# Order is the order `gen --help` lists them in.
_COMMAND_MODULES = ("recipe", "plan", "check", "fix", "show", "library", "models", "diff")

_app: typer.Typer | None = None


def _version(value: bool) -> None:
    if value:
        import typer

        from generator import __version__

        typer.echo(f"verl-gen {__version__}")
        raise typer.Exit(0)


def build_app() -> typer.Typer:
    """The typer app with every command registered (built once)."""
    global _app
    if _app is not None:
        return _app
    import typer

    app = typer.Typer(
        name="gen",
        help="Write, check and repair verl launch scripts (Megatron first).",
        no_args_is_help=True,
        add_completion=True,  # --install-completion / --show-completion (typer's, for bash/zsh/fish)
        pretty_exceptions_enable=False,
        # Plain click help: it wraps at the terminal width and never cuts an option name (rich's
        # panels cut `--ppo-mini-batch-size` at 80 columns).
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @app.callback()
    def _root(version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                           help="Print the version and exit.")) -> None:
        """Write, check and repair verl launch scripts (Megatron first)."""

    from importlib import import_module

    for name in _COMMAND_MODULES:
        import_module(f"generator.cli.{name}").register(app)
    _app = app
    return app


def __getattr__(name: str) -> Any:  # `from generator.cli import app` builds it (PEP 562)
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _fast(argv: list[str]) -> int | None:
    """The exit status of a run that needs no typer, or None."""
    if argv[:1] == ["check"]:
        from generator.cli.check_run import fast_check

        return fast_check(argv[1:])
    return None


def main() -> None:
    try:
        status = _fast(sys.argv[1:])
        if status is not None:
            sys.stdout.flush()
            sys.exit(status)
        build_app()()
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
    except BrokenPipeError:  # `gen list | head`
        sys.exit(0)


__all__ = ["app", "build_app", "main", "EXIT_BAD_INPUT"]

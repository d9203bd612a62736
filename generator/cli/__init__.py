"""The `gen` command line: thin typer commands that call one function and print one report.

Each command group lives in its own module with a `register(app)` function, so commands stay
small and heavy imports (Hydra, Jinja, libcst) happen inside the command that needs them.
"""

from __future__ import annotations

import sys

import typer

from generator.errors import EXIT_BAD_INPUT

app = typer.Typer(
    name="gen",
    help="Write, check and repair verl launch scripts (Megatron first).",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (typer's, for bash/zsh/fish)
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Order is the order `gen --help` lists them in.
_COMMAND_MODULES = ("recipe", "plan", "check", "fix", "show", "library", "diff")


def _version(value: bool) -> None:
    if value:
        from generator import __version__

        typer.echo(f"verl-gen {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Write, check and repair verl launch scripts (Megatron first)."""


def _register_all() -> None:
    from importlib import import_module

    for name in _COMMAND_MODULES:
        import_module(f"generator.cli.{name}").register(app)


_register_all()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
    except BrokenPipeError:  # `gen list | head`
        sys.exit(0)


__all__ = ["app", "main", "EXIT_BAD_INPUT"]

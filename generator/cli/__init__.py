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
    from generator import boundary

    boundary.reset()  # each command starts with no script judged and nothing trusted yet


def _register_all() -> None:
    from importlib import import_module

    for name in _COMMAND_MODULES:
        import_module(f"generator.cli.{name}").register(app)


_register_all()


def _output_failed(err: BaseException) -> None:
    """The report could not be written (stdout is /dev/full, closed, or a full disk): one line
    on stderr and exit 2, never a traceback, and never exit 1 (which reads as "findings")."""
    import os

    try:  # nothing more may reach the broken stream, not even at interpreter exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass
    why = getattr(err, "strerror", None) or "standard output is closed"
    try:
        print(f"gen: error: cannot write the output ({why})", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(EXIT_BAD_INPUT)


def main() -> None:
    code: str | int | None = 0
    try:
        if sys.stdout is None:  # started with stdout closed (`gen check x >&-`)
            raise OSError(0, "standard output is closed")
        app()
    except SystemExit as done:
        code = done.code
    except KeyboardInterrupt:  # pragma: no cover - interactive only
        sys.exit(130)
    except BrokenPipeError:  # `gen list | head`
        sys.exit(0)
    except OSError as err:
        _output_failed(err)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        sys.exit(0)
    except (OSError, ValueError) as err:
        _output_failed(err)
    sys.exit(code)


__all__ = ["app", "main", "EXIT_BAD_INPUT"]

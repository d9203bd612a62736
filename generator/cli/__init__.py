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

from generator.base.errors import EXIT_BAD_INPUT

if TYPE_CHECKING:
    import typer

# Order is the order `gen --help` lists them in.
_COMMAND_MODULES = ("recipe", "plan", "check", "fix", "show", "library", "models", "diff", "calibrate")

_app: typer.Typer | None = None


def _version(value: bool) -> None:
    if value:
        import typer

        from generator import __version__
        from generator.base.safe_text import write

        write(f"verl-gen {__version__}\n", flush=True)
        raise typer.Exit(0)


def _start_command() -> None:
    import sys

    from generator.base import session

    session.begin()  # each command starts with no script judged, nothing trusted, nothing remembered
    compose = sys.modules.get("generator.schema.compose")  # not imported yet: its budget is whole
    if compose is not None:
        compose.start_run()  # and with the whole calls x configs budget

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
        _start_command()

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

        _start_command()
        return fast_check(argv[1:])
    return None


def _run_typer() -> int:
    """The typer app's exit status. Click's own usage errors (an unknown option, `--gpus abc`) are
    said as every other failure is (`gen: error: ...`, one line, exit 2) instead of click's
    three-line usage block with its `Error:` prefix."""
    import typer

    try:  # typer 0.28 carries its own click; earlier ones use click itself
        from typer._click import exceptions as click_errors
    except ImportError:  # pragma: no cover - typer < 0.28
        from click import exceptions as click_errors  # type: ignore[no-redef,import-not-found,unused-ignore]

    from generator.cli.common import say_error

    try:
        status = build_app()(standalone_mode=False)
    except click_errors.UsageError as err:
        if type(err).__name__ == "NoArgsIsHelpError":  # plain `gen` (or a group with no command): the help
            err.show()
            return EXIT_BAD_INPUT
        command = err.ctx.command_path if err.ctx is not None else "gen"
        say_error(f"{err.format_message().rstrip('.')}; see `{command} --help`")
        return EXIT_BAD_INPUT
    except click_errors.ClickException as err:
        say_error(err.format_message())
        return EXIT_BAD_INPUT
    except typer.Abort:  # pragma: no cover - interactive only (Ctrl-C at a prompt)
        return 130
    return status if isinstance(status, int) else 0


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
        from generator.base.safe_text import say

        say(f"gen: error: cannot write the output ({why})")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(EXIT_BAD_INPUT)


def main() -> None:
    # A short-lived CLI: the default threshold (700) runs a collection every few hundred
    # allocations while ~220 modules and their classes are built, and finds next to no garbage
    # (mypy's main raises it for the same reason). 10,000: the one-script check and `gen plan`
    # use ~3% and ~6% less CPU, the 585-script corpus in one process the same; 50,000 was ~7%
    # slower there (a young generation that no longer fits the caches). Bounded: on the largest
    # accepted input (20,000 overrides) the peak RSS is 81 MB against 84 MB, the CPU 0.93 s against 1.02 s.
    import gc

    gc.set_threshold(10_000, 30, 30)
    code: str | int | None = 0
    try:
        if sys.stdout is None:  # started with stdout closed (`gen check x >&-`)
            raise OSError(0, "standard output is closed")
        status = _fast(sys.argv[1:])
        if status is None:
            status = _run_typer()
        raise SystemExit(status)
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
    # The output is written and flushed. Interpreter shutdown would now run full collections
    # over every object still alive (the modules, schemas and caches) to find no garbage: ~5%
    # of a one-script check. Frozen objects are left out of them; shutdown runs as before.
    gc.freeze()
    sys.exit(code)


__all__ = ["app", "build_app", "main", "EXIT_BAD_INPUT"]

"""`gen diff A B`: compare two launch scripts or recipes as verl sees them."""

from __future__ import annotations

from typing import List, Optional

import typer

from generator.cli.completion import complete_release
from generator.cli.common import config_dir_option, parse_pairs, say_error
from generator.base.errors import EXIT_BAD_INPUT, InputError
from generator.base.safe_text import write




def register(app: typer.Typer) -> None:
    @app.command("diff")
    def diff_command(
        a: str = typer.Argument(..., metavar="A", help="a launch script or a recipe name"),
        b: str = typer.Argument(..., metavar="B", help="a launch script or a recipe name"),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", autocompletion=complete_release,
                                                   help="compare both under this release's defaults"),
        config_dir: Optional[str] = config_dir_option(),
        output_format: str = typer.Option("text", "--format", help="text or json"),
        library: Optional[str] = typer.Option(None, "--library", help="user recipe folder"),
        env: List[str] = typer.Option([], "--env", help="assume NAME=VALUE in the environment"),
        arg: List[str] = typer.Option([], "--arg", help="assume this script argument"),
    ) -> None:
        """Show what differs between two launches: keys (grouped) and the derived numbers."""
        from generator.diff.launches import diff
        from generator.report.diff_text import render_text

        try:
            if output_format not in ("text", "json"):
                raise InputError(f"--format must be text or json, not '{output_format}'")
            result = diff(a, b, version=verl_version, config_dir=config_dir, library=library,
                          env=parse_pairs(env, "--env") or None, args=list(arg) or None)
        except Exception as err:  # never a traceback: one line, exit 2 (and a document for --format json)
            message = str(err) if isinstance(err, InputError) else \
                f"internal error ({type(err).__name__}: {' '.join(str(err).split())})"
            say_error(message)
            if output_format == "json":
                from generator.report.documents import dumps

                write(dumps({"error": message}), flush=True)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        if output_format == "json":
            from generator.report.documents import dumps

            write(dumps(result.to_json()), flush=True)
        else:
            render_text(result, lambda text: write(text, flush=True))

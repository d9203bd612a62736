"""`gen list` (browse the recipe library) and `gen import` (turn a script into a recipe)."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from generator.cli.completion import complete_algo, complete_gpu, complete_model, complete_release
from generator.schema.releases import newest_release
from generator.cli.common import say_error
from generator.base.errors import EXIT_BAD_INPUT, InputError
from generator.base.safe_text import one_line, say, write

LIBRARY_HELP = ("user recipe folder (default: $VERL_GEN_LIBRARY, else ~/.config/verl-gen/recipes); "
                "packaged recipes are always listed")


def _fail(message: str) -> None:
    say_error(message)
    raise typer.Exit(EXIT_BAD_INPUT)


def register(app: typer.Typer) -> None:
    short = ".".join(newest_release().split(".")[:2])  # 0.9.1 -> 0.9

    @app.command("list")
    def list_command(
        model: Optional[str] = typer.Option(None, "--model", autocompletion=complete_model, help="model name or part of it (qwen2.5-7b)"),
        gpus: Optional[int] = typer.Option(None, "--gpus", help="exact GPU count", min=1),
        algo: Optional[str] = typer.Option(None, "--algo", autocompletion=complete_algo, help="grpo, ppo, dapo, ..."),
        tag: Optional[str] = typer.Option(None, "--tag", help="e.g. verl-tested, moe, lora"),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", autocompletion=complete_release, help="recipes stamped for this release "
                                                   f"({newest_release()}; {short} = any {short}.x)"),
        output_format: str = typer.Option("text", "--format", help="text or json"),
        library: Optional[str] = typer.Option(None, "--library", help=LIBRARY_HELP),
        wide: bool = typer.Option(False, "--wide", help="Every column, whole, however wide (piped output keeps "
                                                        "to 100 columns otherwise)."),
        html: Optional[str] = typer.Option(None, "--html", help="Also write DIR/index.html: a page of the listed "
                                           "recipes with filters, layout pictures, memory and scripts (offline)."),
        force: bool = typer.Option(False, "--force", help="Replace an existing DIR/index.html."),
    ) -> None:
        """List the recipes in the library (packaged and your own)."""
        from generator.library.store import load_library

        if output_format not in ("text", "json"):
            _fail(f"--format must be text or json, not '{output_format}'")
        try:
            lib = load_library(library)
            found = lib.search(model=model, gpus=gpus, algo=algo, tag=tag, verl_version=verl_version)
        except InputError as err:
            _fail(str(err))
            return
        for error in lib.errors:
            say(f"gen: warning: skipped {error}", flush=True)
        if html is not None:
            from generator.report.catalog import write_catalog

            try:
                page = write_catalog(html, found, force=force)
            except InputError as err:
                _fail(str(err))
                return
            say(one_line(f"wrote {page} ({len(found)} recipes)"), flush=True)
        if output_format == "json":
            from generator.report.documents import dumps

            write(dumps({"recipes": [r.summary() for r in found]}), flush=True)
            return
        if not found:
            say("no recipes match", flush=True)
            return
        from generator.report.recipes import list_rows
        from generator.report.tables import print_table

        headers, rows = list_rows(found)
        print_table(headers, rows, stream=sys.stdout, optional=("TAGS", "VERL", "MODEL"), wide=wide)

    @app.command("import")
    def import_command(
        script: str = typer.Argument(..., help="a launch script to turn into a recipe"),
        name: str = typer.Option(..., "--name", help="recipe name (lower case, digits, - _ .)"),
        library: Optional[str] = typer.Option(None, "--library", help=LIBRARY_HELP),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", autocompletion=complete_release, help="release the script targets"),
        force: bool = typer.Option(False, "--force", help="replace a user recipe of the same name"),
        gpu: Optional[str] = typer.Option(None, "--gpu", autocompletion=complete_gpu, help="GPU type the script runs on (h100, h20, ...)"),
    ) -> None:
        """Turn a legacy launch script into a recipe in your library."""
        from generator.library.importer import import_script

        try:
            path, notes = import_script(script, name=name, library=library, version=verl_version, force=force,
                                        gpu=gpu)
        except InputError as err:
            _fail(str(err))
            return
        except Exception as err:  # never a traceback: one line, exit 2, nothing written
            _fail(f"internal error ({type(err).__name__}: {' '.join(str(err).split())}); nothing written")
            return
        for note in notes:
            say(f"note: {note}", flush=True)
        write(one_line(f"wrote {path}") + "\n", flush=True)

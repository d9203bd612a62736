"""`gen show FILE…`: what bash would hand each trainer call of a launch script, with where
every value was written; `gen show NAME` shows a packaged recipe when NAME is not a file.

Exit codes: 0 every file was read; 2 a file could not be read or has a bash syntax error
(the others, and the readable rest of a broken file, are still shown) or the recipe name
is unknown.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any, NoReturn, TextIO

import typer

from generator.cli.completion import complete_recipe, complete_release
from generator.cli.common import config_dir_option, say_error
from generator.cli.common import parse_pairs as parse_env
from generator.base.errors import EXIT_BAD_INPUT, EXIT_OK, InputError, error_line
from generator.base.safe_text import json_text, one_line, printable, write

FORMATS = ("text", "json", "yaml")
# Characters the resolved configs of one file may print (`gen show --resolved`): keys and values
# of all its calls, counted as each call is composed, before any is formatted. A verl call's
# config prints ~90 KB; 16 calls whose overrides double a value to 256 KiB and reference it 20
# times printed 93 MB in 154 s before issue 35 (the YAML text is written at ~0.6 MB/s: 4 MiB,
# about 45 calls of verl's config, prints in ~7 s).
MAX_RESOLVED_CHARS = 4 * 1024 * 1024




def _read(path: str, env: dict[str, str], args: list[str]) -> Any:
    from generator.inputs.policy import read_bytes, refuse_non_script, without_path
    from generator.reading.shell import read_launch

    try:
        refuse_non_script(path)
        return read_launch(path, source=read_bytes(path), env=env, args=args)
    except InputError as err:  # collect() prints the path once, beside the reason
        raise InputError(f"{path}: {without_path(str(err), path)}") from None


def collect(paths: list[str], env: dict[str, str], args: list[str]) -> list[dict[str, Any]]:
    """One dict per path; a file that cannot be read gets a one-line `error` instead."""
    from generator.inputs.policy import without_path
    from generator.report.show_report import error_dict, script_dict

    out = []
    for path in paths:
        try:
            out.append(script_dict(path, _read(path, env, args)))
        except InputError as err:
            out.append(error_dict(path, without_path(str(err), path)))
        except Exception as err:  # noqa: BLE001 - one bad file must not hide the others
            text = " ".join(str(err).split())[:200]
            out.append(error_dict(path, f"internal error while reading ({type(err).__name__}: {text})"))
    return out


def show_scripts(paths: list[str], *, output_format: str = "text", env: dict[str, str] | None = None,
                 args: list[str] | None = None, stream: TextIO | None = None,
                 err_stream: TextIO | None = None) -> int:
    """Print what each script's trainer calls receive; returns the exit code (0, or 2 when a
    file could not be read)."""
    stream = stream or sys.stdout
    err_stream = err_stream or sys.stderr
    files = collect(paths, dict(env or {}), list(args or []))
    failed = [f for f in files if f["error"]]
    # Broken bash is read around the broken region, but the reading is incomplete: say so
    # in one line and exit 2 like any other bad input.
    broken = [(f, h) for f in files if not f["error"] for h in f["hazards"][:] if h["kind"] == "parse-error"]
    first_broken: dict[str, Any] = {}
    for f, h in broken:
        first_broken.setdefault(f["path"], h)
    from generator.report.documents import JSON_SCHEMA_VERSION

    if output_format == "json":
        stream.write(json_text({"schema_version": JSON_SCHEMA_VERSION, "files": files}, ascii_only=False))
    elif output_format == "yaml":
        from ruamel.yaml import YAML

        yaml = YAML(typ="safe", pure=True)
        yaml.default_flow_style = False
        buffer = io.StringIO()
        yaml.dump({"schema_version": JSON_SCHEMA_VERSION, "files": files}, buffer)
        stream.write(printable(buffer.getvalue()))  # YAML is for people: shown escaped, as text is
    else:
        from generator.report.show_report import render_scripts_text

        render_scripts_text(files, stream)
    if output_format == "text":
        for f in failed:
            err_stream.write(one_line(error_line(f"{f['path']}: {f['error']}")) + "\n")
        for path, h in first_broken.items():
            err_stream.write(one_line(error_line(f"{path}: bash syntax error at line {h['line']} (the rest was read)"))
                             + "\n")
    return EXIT_BAD_INPUT if (failed or first_broken) else EXIT_OK


def resolved_calls(path: str, env: dict[str, str], args: list[str], verl_version: str | None,
                   config_dir: str | None = None) -> dict[str, Any]:
    """One file's live trainer calls, each with its composed config (release defaults, the
    project's config if any, the script's overrides), as `gen check` would judge it."""
    from generator.config import build_config
    from generator.project.settings import load_project
    from generator.schema.resolution import resolve_script

    script = _read(path, env, args)
    resolution = resolve_script(script, path, version=verl_version, config_dir=config_dir,
                                project=load_project(path))
    script_dir = os.path.dirname(os.path.abspath(path))
    calls = []
    printed = 0  # characters of keys and values the calls' configs will print (MAX_RESOLVED_CHARS)
    for invocation in script.invocations:
        if invocation.branch == "dead":
            continue
        config = build_config(invocation, version=resolution.release, script_dir=script_dir,
                              config_root=os.getcwd(), stand_in=resolution.stand_in,
                              search_dirs=resolution.search_dirs, ppo_entry=resolution.ppo_entry)
        judged = resolution.for_call(config.schema, config.config_dir)
        printed += sum(len(key) + len(str(value)) + 4 for key, value in config.values.items())
        printed += sum(len(key) + len(str(value)) + 4 for key, value in config.unknown.items())
        if printed > MAX_RESOLVED_CHARS:
            raise InputError(f"{path}: its calls' resolved configs would print more than "
                             f"{MAX_RESOLVED_CHARS // (1024 * 1024)} MiB (refused; the resolved output limit)")
        calls.append({"line": invocation.line, "entry": invocation.entry, "config_name": config.schema,
                      "verl_version": judged.base_release, "config_source": judged.config_source,
                      "unknown": dict(config.unknown), "config": dict(config.values)})
    return {"path": path, "error": None, "calls": calls}


def show_resolved(paths: list[str], *, output_format: str, env: dict[str, str], args: list[str],
                  verl_version: str | None, config_dir: str | None = None) -> int:
    """`gen show --resolved`: print each call's composed config; 2 when a file could not be read."""
    from generator.report.show_report import resolved_document, resolved_text

    files, status = [], EXIT_OK
    for path in paths:
        try:
            files.append(resolved_calls(path, env, args, verl_version, config_dir))
        except InputError as err:
            files.append({"path": path, "error": str(err).removeprefix(f"{path}: "), "calls": []})
        except Exception as err:  # noqa: BLE001 - one bad file must not hide the others
            files.append({"path": path, "calls": [],
                          "error": f"internal error ({type(err).__name__}: {' '.join(str(err).split())[:200]})"})
    for f in files:
        if f["error"]:
            say_error(f"{f['path']}: {f['error']}")
            status = EXIT_BAD_INPUT
    write(resolved_text(files) if output_format == "text" else resolved_document(files, output_format))
    return status


def _fail(message: str, output_format: str) -> NoReturn:
    """A failure of the whole command: one line on stderr; json/yaml also get a document saying so."""
    say_error(message)
    if output_format in ("json", "yaml"):
        from generator.report.documents import dumps

        write(dumps({"error": message, "files": []}))
    raise typer.Exit(EXIT_BAD_INPUT)


def _is_recipe_name(target: str) -> bool:
    return (target != "-" and not os.path.exists(target) and "/" not in target
            and not target.endswith((".sh", ".py", ".bash")))


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""

    @app.command("show")
    def show_command(
        targets: list[str] = typer.Argument(..., metavar="FILE|NAME...", autocompletion=complete_recipe,
                                            help="launch scripts to read, or one recipe name"),
        output_format: str = typer.Option("text", "--format", help="text, json or yaml"),
        env: list[str] = typer.Option([], "--env", help="assume NAME=VALUE in the environment"),
        arg: list[str] = typer.Option([], "--arg", help="assume this script argument ($1, $2, ...)"),
        library: str | None = typer.Option(None, "--library", help="user recipe folder (for NAME)"),
        resolved: bool = typer.Option(False, "--resolved", help="print each call's composed config (the "
                                      "release's defaults with the script's overrides), like Hydra's --cfg job"),
        verl_version: str | None = typer.Option(None, "--verl-version", autocompletion=complete_release, help="compose with this release (--resolved)"),
        config_dir: str | None = config_dir_option(),
    ) -> None:
        """Show the overrides each trainer call receives, where each value was written, and shell
        hazards; or show a packaged recipe by NAME."""
        try:
            if output_format not in FORMATS:
                raise InputError(f"--format {output_format!r}: choose text, json or yaml")
            assumed_env = parse_env(env)
            if config_dir and not resolved:
                raise InputError("--config-dir is for --resolved (the overrides shown do not depend on verl's config)")
            if resolved:
                from generator.schema.resolution import check_explicit

                check_explicit(verl_version, config_dir)
            if len(targets) == 1 and _is_recipe_name(targets[0]):
                if output_format == "yaml":
                    raise InputError("--format yaml is for scripts; use text or json for a recipe")
                from generator.report.recipes import show_recipe

                show_recipe(targets[0], library=library, output_format=output_format)
                raise typer.Exit(EXIT_OK)
        except InputError as err:
            _fail(str(err), output_format)
        try:
            from generator.inputs.discover import expand_paths

            paths = expand_paths(list(targets))
        except InputError as err:
            _fail(str(err), output_format)
        if resolved:
            raise typer.Exit(show_resolved(paths, output_format=output_format, env=assumed_env, args=list(arg),
                                           verl_version=verl_version, config_dir=config_dir))
        code = show_scripts(paths, output_format=output_format, env=assumed_env, args=list(arg))
        raise typer.Exit(code)

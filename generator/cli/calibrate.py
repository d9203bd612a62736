"""`gen calibrate LOG... [--script run.sh]`: a run's logged step times and memory against what the
models predict for its configuration (docs/calibrate.md).

Exit codes: 0 every log was compared in full (and, with --save, stored); 1 a comparison is
partial (no prediction could be made, or the log's run is another configuration than --script);
2 bad input (a log missing, unreadable, binary or without step lines, a script that cannot be
read, an invalid option), or --save/--chart could not write (a configuration file that is not
valid TOML, a link, a file changed meanwhile): one line, nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

import typer

from generator.cli.completion import complete_gpu, complete_model, complete_release
from generator.cli.common import say_error
from generator.base.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, InputError
from generator.base.safe_text import write

if TYPE_CHECKING:  # the calibration modules load only when `gen calibrate` runs, not at every start
    from generator.calibrate.render import Calibrated


def _error(message: str) -> None:
    say_error(message)


def register(app: typer.Typer) -> None:
    @app.command("calibrate")
    def calibrate(
        logs: List[str] = typer.Argument(..., help="Logs of verl runs: console output (step:N - key:value ...), "
                                         "the file logger's .jsonl, or a CSV export of wandb/tensorboard scalars."),
        scripts: List[str] = typer.Option([], "--script", help="The launch script that started the run (used when "
                                          "the log holds no start-up config); once for every LOG, or once per LOG "
                                          "in their order."),
        fmt: str = typer.Option("text", "--format", "-f", help="text | json"),
        gpu: Optional[str] = typer.Option(None, "--gpu", autocompletion=complete_gpu, help="GPU type the run used: h100 (default), h20, h200, ..."),
        gpu_mem: Optional[float] = typer.Option(None, "--gpu-mem", help="GPU memory in GiB (overrides --gpu's)."),
        model: Optional[str] = typer.Option(None, "--model", autocompletion=complete_model, help="Model name, hub id, model dir or config.json "
                                            "(default: the config's actor_rollout_ref.model.path)."),
        warmup: Optional[int] = typer.Option(None, "--warmup", min=0, help="Steps left out of the medians "
                                             "(default: 1 when the log has 3 steps or more)."),
        verl_version: Optional[str] = typer.Option(None, "--verl-version", autocompletion=complete_release, help="Read the configuration "
                                                   "against this verl release."),
        save: bool = typer.Option(False, "--save", help="Store the fitted corrections in the project configuration "
                                  "([tool.verl-gen.calibration] in pyproject.toml, else .verl-gen.toml), keyed by "
                                  "GPU type and versions; runs accumulate."),
        user: bool = typer.Option(False, "--user", help="With --save: store them in the user configuration "
                                  "($XDG_CONFIG_HOME/verl-gen/config.toml) instead."),
        chart: Optional[str] = typer.Option(None, "--chart", help="Write a picture of measured against predicted "
                                            "per phase and the step's breakdown (.svg, or .html around it)."),
        force: bool = typer.Option(False, "--force", help="Overwrite an existing --chart file."),
    ) -> None:
        """Compare a run's logged step times and memory with the predicted ones, phase by phase."""
        from generator.calibrate.compare import compare
        from generator.calibrate.logs import read_log
        from generator.calibrate.match import contradictions, run_config
        from generator.calibrate.fit import fit
        from generator.calibrate.render import Calibrated, corrections_text, documents, text
        from generator.calibrate.summary import summarise
        from generator.plan.script_setup import memory_options

        try:
            if fmt not in ("text", "json"):
                raise InputError(f"--format must be text or json, got '{fmt}'")
            options = memory_options(gpu, gpu_mem, model, 0.0)
            if len(scripts) > 1 and len(scripts) != len(logs):
                raise InputError(f"--script is given {len(scripts)} times for {len(logs)} logs: give it once, "
                                 "or once per log")
            if user and not save:
                raise InputError("--user says where --save stores the calibration: give --save too")
        except InputError as err:
            _error(str(err))
            if fmt == "json":
                write(documents([], [{"path": "", "error": str(err)}], []))
            raise typer.Exit(EXIT_BAD_INPUT) from None
        status = EXIT_OK
        done: list[Calibrated] = []
        errors: list[dict[str, str]] = []
        for index, path in enumerate(logs):
            script = scripts[index] if len(scripts) > 1 else scripts[0] if scripts else None
            try:
                run = read_log(path)
                measured = summarise(run, warmup)
                found = run_config(run, script, verl_version=verl_version)
                comparison = compare(measured, found.config, options)
                result = Calibrated(run, measured, comparison, found.source, found.differences,
                                    contradictions(found.config, measured) if found.config is not None else [])
            except Exception as err:  # one line, never a traceback; the other logs are still compared
                if not isinstance(err, InputError):
                    err = InputError(f"internal error ({type(err).__name__}: {err})")
                _error(f"{path}: {err}")
                errors.append({"path": path, "error": str(err)})
                status = EXIT_BAD_INPUT
                continue
            if run.cut_off:
                _error(f"{path}: the log ends in a half line (cut off); compared from the {measured.steps} "
                       "whole steps before it")
            if result.differences or result.contradictions:
                why = (result.differences or result.contradictions)[0]
                _error(f"{path}: the run is another configuration than {script or 'its config'} ({why}); "
                       "compared in part")
            if result.partial and status == EXIT_OK:
                status = EXIT_FINDINGS
            done.append(result)
            if fmt == "text":
                write(text(result))
        # The corrections the runs support; a run of another configuration than its script is
        # compared against its own config, so it still counts.
        corrections = fit([d.comparison for d in done]) if done else []
        saved = ""
        try:
            if chart and done:
                from generator.calibrate.picture import picture
                from generator.base.files import write_atomic

                write_atomic(chart, picture(done, html=chart.lower().endswith((".html", ".htm"))), replace=force)
            if save and done:
                saved = _save(done, scripts, options.gpu.name, verl_version, user)
        except InputError as err:
            _error(str(err))
            errors.append({"path": chart or "", "error": str(err)})
            status = EXIT_BAD_INPUT
        if fmt == "json":
            write(documents(done, errors, corrections, saved))
        else:
            write(corrections_text(corrections, len(done), saved))
        raise typer.Exit(status)


def _save(done: list[Calibrated], scripts: list[str], gpu: str, verl_version: str | None, user: bool) -> str:
    """Store what the runs measured; the line that says where. InputError when nothing can be."""
    from pathlib import Path

    from generator.calibrate.fit import run_values
    from generator.calibrate.saved import Key, StoredRun, log_digest, save, save_place
    from generator.base.files import read_input
    from generator.project.settings import load_project

    start = Path(scripts[0]).parent if scripts else Path.cwd()
    runs = []
    versions: dict[str, str] = {}
    for d in done:
        values = run_values(d.comparison)
        if not values:
            _error(f"{d.run.path}: nothing predicted to calibrate against; not stored")
            continue
        data = read_input(d.run.path, limit=256 * 1024 * 1024, what="log", trusted=True) if d.run.path != "-" else b""
        runs.append(StoredRun(log_digest(data or repr(sorted(d.run.steps.items())).encode()), d.comparison.model,
                              values))
        versions.update(d.run.versions)
    if not runs:
        raise InputError("--save: no run had a prediction to calibrate against; nothing written")
    verl = verl_version or load_project(start).verl_version
    key = Key(gpu, verl, versions.get("vllm"), versions.get("megatron"))
    place = save_place(start, user)
    entry = save(place, key, runs)
    from generator.calibrate.saved import applied

    return f"stored in {place.path} [{'.'.join(place.table)}.{key.slug}]: {applied(entry, place.scope).line}"

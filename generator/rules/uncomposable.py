"""VK613 — the call's config names a defaults file the checkout lacks, so Hydra cannot compose it
(generator.schema.defaults_files); and the key findings that would rest on that file's keys,
which are not known here, stand down (`rests_on_missing`)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from generator.base.errors import InputError
from generator.config.reader import ConfigReader
from generator.config.types import Config
from generator.rules.core import Context, Finding, rule
from generator.schema.defaults_files import MissingDefault, missing_default

_ANY = ("megatron", "fsdp", "unknown")
# Key findings that judge a key against the composed config (not VK613 itself, not VK609's note).
_KEY_VERDICTS = ("VK601", "VK602", "VK603", "VK604", "VK605", "VK606", "VK607", "VK610", "VK612")


def missing_part(config: Config) -> MissingDefault | None:
    """The defaults entry of the call's own config folder whose file is not here, if any."""
    folder = _config_folder(config)
    return missing_default(folder, config.schema) if folder is not None and config.schema else None


def _config_folder(config: Config) -> Path | None:
    if config.config_dir:
        return Path(config.config_dir)
    resolution = config.resolution
    if resolution is None:
        return None
    if resolution.config_dir is not None:
        return resolution.config_dir  # the project's own folder, read or (standing in) not readable
    if resolution.stand_in:
        return None  # a packaged release stands in for something with no folder (a submodule, dataclasses)
    from generator import schema

    try:
        return schema.load(config.version).config_dir
    except InputError:
        return None


def _searches_elsewhere(ctx: Context) -> bool:
    """The call adds config folders Hydra also looks in (`--config-dir`, `hydra.searchpath=`, the
    project's config-dirs): a group file may be found there."""
    inv = ctx.invocation
    if inv is not None and any(a.split("=", 1)[0].split(" ", 1)[0] in ("--config-dir", "-cd") for a in inv.other_args):
        return True
    if any(key.startswith("hydra.searchpath") for key in ctx.config.set_by):
        return True
    return bool(ctx.config.resolution is not None and ctx.config.resolution.search_dirs)


def rests_on_missing(findings: list[Finding], config: Config) -> list[Finding]:
    """`findings` without the key verdicts on keys the missing defaults file would have supplied
    (under its package; every key for a file merged at the root): their schema there is a guess."""
    if not any(f.code == "VK613" for f in findings):
        return findings
    part = missing_part(config)
    if part is None:
        return findings
    prefix = part.package + "." if part.package else ""
    return [f for f in findings if not (f.code in _KEY_VERDICTS and f.key is not None
                                        and (f.key == part.package or f.key.startswith(prefix)))]


@rule("VK613", "defaults-file-missing", severity="error", stage="load", verl_ref="", backends=_ANY, scope="any")
def defaults_file_missing(ctx: Context) -> Iterator[Finding]:
    if _searches_elsewhere(ctx):
        return
    part = missing_part(ctx.config)
    if part is None:
        return
    view = ConfigReader.of(ctx)
    why = (f" (the project's .gitignore line `{part.ignored_by}` keeps it out of the repository)" if part.ignored_by
           else "")
    under = f"the `{part.package}` keys" if part.package else "its keys"
    yield defaults_file_missing.finding(
        f"{part.config}'s defaults entry `{part.entry}` needs {part.file}, which is not in this checkout{why}: "
        f"Hydra cannot compose {part.config} and the run stops before training; {under} were not checked",
        line=view.line(), severity=None if part.ignored_by else "warning")

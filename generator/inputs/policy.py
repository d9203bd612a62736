"""What the commands accept as a launch script, and the settings each script is read with:
one policy for check, explain, fix and show (the CLI parses options; this decides inputs).

Light at import time: the commands import it at start-up.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from generator.base.boundary import OutsideProject
from generator.base.errors import InputError
from generator.base.files import STDIN, read_input
from generator.project.root import enter
from generator.judging import load_rules

if TYPE_CHECKING:
    from generator.project.settings import ProjectSettings


def read_bytes(path: str) -> bytes:
    """The file's bytes (a launch script or Python launcher, `-` for stdin), its project entered
    first; InputError without the path (callers print it beside the message)."""
    enter(os.getcwd() if path == STDIN else path)
    return read_entered(path)


def read_entered(path: str) -> bytes:
    """The file's bytes, read by a caller that has entered its project already
    (project.load_project enters it: generator.inputs.file_context reads the file after it).

    The user named the file, but not where its links lead: a script that resolves outside the
    project its path is in (a link to a file elsewhere, or inside a linked folder such as
    `examples -> ../other`) is refused unread (OutsideProject, exit 2), as any read is."""
    try:
        return read_input(path)
    except OutsideProject as err:
        raise OutsideProject(path, err.root, named=True) from None


# Files people pass by mistake: a config or data file is not a launch script (checking it would
# find no trainer call and pass silently).
_NOT_SCRIPTS = {".yaml": "a YAML file", ".yml": "a YAML file", ".json": "a JSON file", ".toml": "a TOML file",
                ".parquet": "a Parquet file", ".txt": "a text file", ".md": "a Markdown file",
                ".ipynb": "a notebook", ".cfg": "a config file", ".ini": "a config file"}


def refuse_non_script(path: str) -> None:
    """InputError for a path that names a config or data file rather than a launch script."""
    suffix = os.path.splitext(path)[1].lower()
    if suffix in _NOT_SCRIPTS:
        raise InputError(f"{_NOT_SCRIPTS[suffix]}, not a launch script (.sh) or Python launcher (.py)")


def without_path(message: str, path: str) -> str:
    """A reader's message without the `path: ` it starts with (the caller prints the path once)."""
    return message[len(path) + 2:] if message.startswith(f"{path}: ") else message


def check_codes(codes: tuple[str, ...], known: Iterable[str], option: str) -> tuple[str, ...]:
    """`codes` when each is a rule code or a prefix of one; InputError naming the first that is
    not (a typo like VB1O6 would otherwise select nothing and pass every script)."""
    known = tuple(known)
    for code in codes:
        if not any(k.startswith(code) for k in known):
            close = sorted(k for k in known if k[:2] == code[:2])[:6]
            hint = f" (known codes starting {code[:2]}: {', '.join(close)}, ...)" if close else ""
            raise InputError(f"{option}: unknown rule code '{code}'{hint}; `gen rules` lists them")
    return codes


def with_project(project: ProjectSettings, *, select: tuple[str, ...], ignore: tuple[str, ...], env: dict[str, str],
                 args: list[str], path: str | None = None
                 ) -> tuple[tuple[str, ...], tuple[str, ...], dict[str, str], list[str]]:
    """The options for one script: the command line wins, the project's configuration
    ([tool.verl-gen] / .verl-gen.toml) fills what it leaves out (env merged, command line per name);
    the per-file-ignores that match `path` add to the ignored codes."""
    if project.path is None:
        return select, ignore, env, args
    per_file = project.ignores_for(path) if path is not None else ()
    if project.select or project.ignore or per_file:
        known = load_rules().keys()
        where = project.describe()
        check_codes(tuple(c.upper() for c in project.select), known, f"{where}: select")
        check_codes(tuple(c.upper() for c in project.ignore), known, f"{where}: ignore")
        check_codes(per_file, known, f"{where}: per-file-ignores")
    chosen_ignore = ignore or tuple(c.upper() for c in project.ignore)
    return (select or tuple(c.upper() for c in project.select), chosen_ignore + per_file,
            {**project.env, **env}, args or list(project.args))

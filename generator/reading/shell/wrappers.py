"""Reaching the program a command line really runs: the wrappers in front of it (env, nohup,
timeout, srun, `ray job submit … --`, …) as a table of how each one's own words are skipped,
and the Python launchers (python, torchrun, accelerate, deepspeed) that name the entry."""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from generator.reading.shell.model import Field, as_text

PYTHON = re.compile(r"python(?:[0-9][0-9.]*)?\Z")
_PY_FLAGS_WITH_VALUE = ("-X", "-W", "-Q")
_TORCHRUN_FLAGS = frozenset({"--standalone", "--no_python", "--no-python", "--run_path", "--run-path", "--module",
                             "-m", "--no-rdzv-conf", "--redirects-all"})
_ACCELERATE_FLAGS = frozenset({"--multi_gpu", "--use_deepspeed", "--no_python", "--no_local_rank"})
_TORCH_RUN_MODULES = ("torch.distributed.run", "torch.distributed.launch")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class Wrapper(NamedTuple):
    """How to step over one wrapper command to the command it runs.

    options:       "any" skips every word starting with `-`; "listed" only `flags` and
                   `value_options`; "scan" skips every word up to the first Python program
    value_options: its options that take the next word as their value
    flags:         (options="listed") its options without a value
    subcommand:    words that must follow its name (`ray job submit`), else it is no wrapper
    then:          positional words after its options (timeout's duration)
    until:         skip through this word (`ray job submit … -- python …`)
    assignments:   NAME=value words set the environment of the call (`env`; after `until` for ray)
    launcher:      recorded as part of the call's launcher
    runs_python:   it runs Python itself: `uv run -m pkg.main`, `uv run train.py`
    """

    options: str = "any"
    value_options: frozenset[str] = frozenset()
    flags: frozenset[str] = frozenset()
    subcommand: tuple[str, ...] = ()
    then: int = 0
    until: str | None = None
    assignments: bool = False
    launcher: str | None = None
    runs_python: bool = False


_CONDA_VALUE_OPTIONS = frozenset({"-n", "--name", "-p", "--prefix", "--cwd"})
_ENV_RUN = {tool: Wrapper(subcommand=("run",), launcher=f"{tool} run", value_options=_CONDA_VALUE_OPTIONS)
            for tool in ("conda", "mamba", "micromamba")}
# An environment manager whose own path is not known statically: conda's value options, since a
# later word must still be a Python program for the command to count.
_UNKNOWN_RUN = Wrapper(subcommand=("run",), value_options=_CONDA_VALUE_OPTIONS)
_PLAIN = Wrapper()
_SCAN = Wrapper(options="scan")
WRAPPERS: dict[str, Wrapper] = {
    "env": Wrapper(options="listed", value_options=frozenset({"-u", "--unset", "-C", "--chdir"}),
                   flags=frozenset({"-i", "-", "--ignore-environment", "-0", "--null"}), assignments=True),
    "nohup": _PLAIN, "exec": _PLAIN, "time": _PLAIN, "command": _PLAIN, "builtin": _PLAIN, "caffeinate": _PLAIN,
    "nice": Wrapper(value_options=frozenset({"-n"})),
    "timeout": Wrapper(value_options=frozenset({"-s", "-k", "--signal", "--kill-after"}), then=1),
    "numactl": _SCAN, "taskset": _SCAN, "stdbuf": _SCAN, "setsid": _SCAN, "sudo": _SCAN, "xargs": _SCAN,
    "srun": Wrapper(options="scan", launcher="srun"),
    "mpirun": Wrapper(options="scan", launcher="mpirun"),
    "mpiexec": Wrapper(options="scan", launcher="mpiexec"),
    # The entrypoint after `--` runs through a shell: it may start with NAME=value words.
    "ray": Wrapper(options="none", subcommand=("job", "submit"), until="--", launcher="ray job submit",
                   assignments=True),
    # Environment managers: `<tool> run [its options] command …`.
    "uv": Wrapper(subcommand=("run",), launcher="uv run", runs_python=True, value_options=frozenset({
        "--with", "--with-editable", "--with-requirements", "--python", "-p", "--project", "--directory",
        "--env-file", "--extra", "--group", "--only-group", "--no-group", "--package", "--index", "--index-url",
        "--default-index", "--extra-index-url", "--find-links", "-f", "--config-file", "--cache-dir",
        "--python-preference", "--prerelease", "--resolution", "--link-mode", "--color"})),
    "conda": _ENV_RUN["conda"], "mamba": _ENV_RUN["mamba"], "micromamba": _ENV_RUN["micromamba"],
    "pixi": Wrapper(subcommand=("run",), launcher="pixi run",
                    value_options=frozenset({"-e", "--environment", "--manifest-path", "--color"})),
    "poetry": Wrapper(subcommand=("run",), launcher="poetry run",
                      value_options=frozenset({"-C", "--directory", "-P", "--project"})),
}


class Argv:
    """A command's fields as text; unknown parts stay `<?…>` markers, so an option like
    `--nproc_per_node=<?$1>` is still recognisably an option."""

    def __init__(self, fields: list[Field]) -> None:
        self.fields = fields
        # Each word's text, made when first asked for: finding the entry of a command reads
        # only the words up to it, and a hundred-override trainer call has many more.
        self._texts: list[str | None] = [None] * len(fields)

    def __len__(self) -> int:
        return len(self.fields)

    def word(self, i: int) -> str:
        """The text of word `i` (0 <= i < len)."""
        text = self._texts[i]
        if text is None:
            text = self._texts[i] = as_text(self.fields[i].text)
        return text

    def text(self, i: int) -> str | None:
        return self.word(i) if 0 <= i < len(self.fields) else None

    def words_from(self, i: int) -> list[str]:
        return [self.word(k) for k in range(i, len(self.fields))]

    def index(self, word: str, start: int) -> int | None:
        """The first index from `start` on whose text is `word`, else None."""
        return next((k for k in range(start, len(self.fields)) if self.word(k) == word), None)

    def known(self, i: int) -> bool:
        return 0 <= i < len(self.fields) and not self.fields[i].unknowns


def is_program(word: str) -> bool:
    base = os.path.basename(word)
    return bool(PYTHON.match(base)) or base in ("torchrun", "accelerate", "deepspeed", "ray")


def skip_wrapper(argv: Argv, i: int, wrapper: Wrapper, env: dict[str, str]) -> int | None:
    """The index of the command that the wrapper at `i` runs (None when there is none);
    NAME=value words of `env` go into `env`."""
    n = len(argv)
    for k, word in enumerate(wrapper.subcommand, start=1):
        if argv.text(i + k) != word:
            return None
    i += 1 + len(wrapper.subcommand)
    if wrapper.until is not None:
        until = argv.index(wrapper.until, i)
        if until is None:
            return None
        i = until + 1
        while wrapper.assignments and i < n and _ENV_NAME.match(argv.word(i)):
            key, _, value = argv.word(i).partition("=")
            env[key] = value
            i += 1
        return i
    if wrapper.options == "scan":
        while i < n and not is_program(argv.word(i)):
            i += 1
        return i if i < n else None
    while i < n:
        w = argv.word(i)
        option = w.split("=", 1)[0]
        if wrapper.runs_python and w in ("-m", "--module"):
            break
        if w in wrapper.value_options:
            i += 2
        elif wrapper.options == "any" and w.startswith("-"):
            i += 1
        elif w in wrapper.flags or (option in wrapper.value_options and option.startswith("--")):
            i += 1
        elif wrapper.assignments and _ENV_NAME.match(w):
            key, _, value = w.partition("=")
            env[key] = value
            i += 1
        else:
            break
    return i + wrapper.then


def skip_launcher_options(argv: Argv, i: int, bare_flags: frozenset[str]) -> tuple[int, str, str] | None:
    """Skip a launcher's own options (torchrun, accelerate launch, deepspeed) from `i`: the index
    of the program it runs, its text, and "module" when `-m/--module` was given, else "file".
    Options not in `bare_flags` and written without `=` take the next word as their value."""
    module_flag = False
    while True:
        w = argv.text(i)
        if w is None:
            return None
        if not w.startswith("-"):
            return i, w, "module" if module_flag else "file"
        if w in ("-m", "--module"):
            module_flag = True
            i += 1
        elif w in bare_flags or "=" in w:
            i += 1
        else:
            i += 2


class Entry(NamedTuple):
    """The program a call runs: `entry` (a module or a file), how it was launched, and the
    index of its first argument."""

    entry: str
    kind: str  # "module" | "file"
    launcher: str
    next: int


def _torchrun(argv: Argv, i: int, base: str) -> Entry | None:
    launcher = "torchrun" if base == "torchrun" else f"{base} -m {argv.text(i + 2)}"
    skipped = skip_launcher_options(argv, i + (1 if base == "torchrun" else 3), _TORCHRUN_FLAGS)
    if skipped is None:
        return None
    j, entry, kind = skipped
    if kind == "file" and not entry.endswith(".py") and re.fullmatch(r"[\w.]+", entry) and "." in entry:
        kind = "module"
    return Entry(entry, kind, launcher, j + 1)


def _accelerate(argv: Argv, i: int, base: str) -> Entry | None:
    if base == "accelerate":
        if argv.text(i + 1) != "launch":
            return None
        i += 1
    skipped = skip_launcher_options(argv, i + 1, _ACCELERATE_FLAGS)
    if skipped is None:
        return None
    j, entry, kind = skipped
    return Entry(entry, kind, "accelerate launch" if base == "accelerate" else "deepspeed", j + 1)


def _python(argv: Argv, i: int, base: str) -> Entry | None:
    i += 1
    while i < len(argv):
        w = argv.word(i)
        if w == "-m":
            module = argv.text(i + 1)
            return None if module is None else Entry(module, "module", f"{base} -m", i + 2)
        if w.startswith("-m") and len(w) > 2:
            return Entry(w[2:], "module", f"{base} -m", i + 1)
        if w in ("-c", "-") or w.startswith("-c"):
            return None
        if w in _PY_FLAGS_WITH_VALUE:
            i += 2
        elif w.startswith("-"):
            i += 1
        else:
            return Entry(w, "file", base, i + 1)
    return None


# Python's own switches that take no value (`python -u`, `-OO`, `-bB`): docs.python.org/3/using/cmdline.html
_PY_SWITCHES = re.compile(r"-[bBdEiIOPqsSuvR]+")


def _past_python_flags(argv: Argv, i: int) -> int:
    """The index of the first word from `i` that is not one of Python's own options (known words only)."""
    while i < len(argv) and argv.known(i):
        w = argv.word(i)
        if w in _PY_FLAGS_WITH_VALUE and argv.known(i + 1):
            i += 2
        elif _PY_SWITCHES.fullmatch(w):
            i += 1
        else:
            break
    return i


def _python_of(argv: Argv, i: int) -> Entry | None:
    """`uv run -m pkg.main …` / `uv run train.py …`: the wrapper runs Python on it itself."""
    w = argv.text(i)
    if w in ("-m", "--module"):
        module = argv.text(i + 1)
        return None if module is None or not argv.known(i + 1) else Entry(module, "module", "-m", i + 2)
    if w is not None and w.endswith(".py") and argv.known(i):
        return Entry(w, "file", "", i + 1)
    return None


def find_entry(argv: Argv, launcher: list[str], env: dict[str, str]) -> Entry | None:
    """Step over the wrappers of a command line to the Python entry it runs; the launchers on
    the way are appended to `launcher`, `env VAR=x` assignments go into `env`."""
    i = 0
    while i < len(argv):
        word = argv.word(i)
        if not argv.known(i):
            # `$PYTHON -m pkg.mod …` (or `"$PYTHON_BIN" -u -m pkg.mod …`) with $PYTHON unknown is
            # still a Python module call.
            m = _past_python_flags(argv, i + 1)
            if argv.text(m) == "-m" and argv.known(m) and argv.known(m + 1):
                return Entry(argv.word(m + 1), "module", f"{word} -m", m + 2)
            # `"$CONDA_BIN" run -n env python -m pkg.mod …`: an environment manager found at run
            # time (`$(command -v conda)`); its `run` subcommand still leads to the program.
            if argv.text(i + 1) == "run" and argv.known(i + 1):
                nxt = skip_wrapper(argv, i, _UNKNOWN_RUN, env)
                if nxt is None or not is_program(argv.text(nxt) or ""):
                    return None
                launcher.append(f"{word} run")
                i = nxt
                continue
            return None
        base = os.path.basename(word)
        wrapper = WRAPPERS.get(base)
        if wrapper is not None:
            nxt = skip_wrapper(argv, i, wrapper, env)
            if nxt is None:
                return None
            if wrapper.launcher:
                launcher.append(wrapper.launcher)
            i = nxt
            if wrapper.runs_python:
                direct = _python_of(argv, i)
                if direct is not None:
                    return direct
            continue
        if base == "torchrun" or (PYTHON.match(base) and argv.text(i + 1) == "-m"
                                  and argv.text(i + 2) in _TORCH_RUN_MODULES):
            return _torchrun(argv, i, base)
        if base in ("accelerate", "deepspeed"):
            return _accelerate(argv, i, base)
        if PYTHON.match(base):
            return _python(argv, i, base)
        return None
    return None

"""What a fork's own trainer code does with config keys, read statically (`ast`: never imported,
never run).

Two facts are read from the Python files of the project's verl `trainer/` folder and its
`utils/config.py` (where verl 0.6+ prints its deprecation warnings), and of a project entry
module's folder:

- the config keys it **repeats the batch by** other than verl's `rollout.n`:
  `batch.repeat(repeat_times=self.config.data.n_samples, ...)`, or a name assigned from a config
  key and then used as `repeat_times=` or as the count of a comprehension that copies batch rows
  (`[[b[i:i + 1] for _ in range(n_samples)] ...]`). Such a fork's step is not P·n responses, so
  verl's batch arithmetic does not describe it (VB118). Repeats in validation (a function named
  `*val*`/`*test*`, a key like `rollout.n_val`) leave the training chain alone and do not count;
- the config keys it **reads as values** (`self.config.data.val_batch_size` as an argument, an
  assignment, a branch of a conditional expression). A key read only in an `if` test (the
  deprecation warning verl itself prints) does not count. A key verl deprecated that the fork
  still reads is live for that fork (VK608 stays silent), unless the code calls it deprecated
  itself or runs verl's own `validate_config`, which prints verl's warning.

- the config fields it **removes** before verl builds a dataclass from the section: `del
  cfg.rollout.srt_x`, `del rollout_config["srt_x"]`, `cfg.pop("srt_x")`, `delattr(cfg, "srt_x")`,
  the same in a loop over a list of names, or under `if name.startswith("srt_")` (a prefix). A
  fork that takes its own fields out of the section first is not failed by them (VK610); the
  receiver must be named like a config (`config`, `rollout_cfg`...), and only the field's last
  name is kept, not the path to it.

The keys are dotted from the config root: the attribute chain after a name or attribute called
`config` (`self.config.data.n_samples` -> `data.n_samples`), `.get('key')` included. Bounded: at
most MAX_FILES files of at most SCRIPT_LIMIT bytes each; a file that does not parse is skipped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from generator.base.errors import InputError
from generator.base.files import SCRIPT_LIMIT, read_input
from generator.reading.python.chunks import checked_tree
from generator.base.session import approx_size, kept

MAX_FILES = 120
# The keys verl's own trainer repeats by: not a change of the chain.
_VERL_REPEAT_KEYS = frozenset({"actor_rollout_ref.rollout.n", "actor_rollout_ref.rollout.val_kwargs.n",
                               "rollout.n", "rollout.val_kwargs.n"})
_CONFIG_NAMES = frozenset({"config", "cfg", "conf"})
# verl's own validation (module, function) and the keys it warns are deprecated: "WARNING:
# val_batch_size is deprecated." (verl/utils/config.py:177-179 @ v0.8.0 and @ v0.9.0).
_VERL_VALIDATION = ("verl.utils.config", "validate_config")
_VERL_VALIDATION_WARNS = frozenset({"val_batch_size"})


@dataclass(frozen=True, slots=True)
class RepeatKey:
    key: str
    where: str  # file:line, relative to the folder read


@dataclass(frozen=True, slots=True)
class RemovedField:
    name: str  # the field's name, or the prefix its name starts with
    where: str  # file:line, relative to the folder read
    prefix: bool = False

    def matches(self, field: str) -> bool:
        return field.startswith(self.name) if self.prefix else field == self.name


@dataclass(frozen=True, slots=True)
class ForkCode:
    """A fact gathered before the rules run (generator.judging.gather): immutable."""

    repeat_keys: tuple[RepeatKey, ...] = ()
    read_keys: frozenset[str] = frozenset()
    # Last parts of keys a string of the code calls deprecated ("WARNING: val_batch_size is
    # deprecated"): verl 0.4-0.8 still use the value but warn; such a fork warns too.
    warned: frozenset[str] = frozenset()
    removed: tuple[RemovedField, ...] = ()

    def removal_of(self, field: str) -> RemovedField | None:
        """Where the code deletes the config field `field` (by name or by a prefix), if it does."""
        return next((r for r in self.removed if r.matches(field)), None)

    def reads(self, key: str) -> bool:
        """The code uses the key's value and does not itself call the key deprecated."""
        return key in self.read_keys and key.rsplit(".", 1)[-1] not in self.warned


def config_key(node: ast.AST) -> str | None:
    """`self.config.data.n_samples` -> 'data.n_samples'; `config.data.get("x")` -> 'data.x'."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            parts.append(node.args[0].value)
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            if node.attr in _CONFIG_NAMES:
                return ".".join(reversed(parts)) or None
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            return ".".join(reversed(parts)) or None if node.id in _CONFIG_NAMES else None
        else:
            return None


_CONFIGISH = re.compile(r"conf|cfg", re.IGNORECASE)


def _configish(node: ast.AST) -> bool:
    """An expression named like a config (`self.config.rollout`, `rollout_cfg`, `conf`)."""
    return any(isinstance(n, ast.Name) and _CONFIGISH.search(n.id)
               or isinstance(n, ast.Attribute) and _CONFIGISH.search(n.attr) for n in ast.walk(node))


def _strings(node: ast.AST) -> tuple[str, ...] | None:
    """The names of a literal list/tuple/set of strings; None for anything else."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and node.elts \
            and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return tuple(str(e.value) for e in node.elts if isinstance(e, ast.Constant))
    return None


def _keys_in(node: ast.AST) -> list[str]:
    """The config keys of the longest chains in an expression (not their prefixes)."""
    found = []
    stack = [node]
    while stack:
        sub = stack.pop()
        key = config_key(sub)
        if key:
            found.append(key)
            continue
        stack.extend(ast.iter_child_nodes(sub))
    return found


class _Reader(ast.NodeVisitor):
    def __init__(self, where: str) -> None:
        self.where = where
        self.assigned: dict[str, str] = {}  # local name -> config key it holds
        self.repeats: list[RepeatKey] = []
        self.reads: set[str] = set()
        self.warned: set[str] = set()
        self.function = ""
        self.removed: list[RemovedField] = []
        self.string_lists: dict[str, tuple[str, ...]] = {}  # local name -> the literal names it holds
        self.loop_names: dict[str, tuple[str, ...]] = {}  # loop variable -> the names it runs over
        self.prefixes: dict[str, str] = {}  # variable -> the prefix an enclosing `if` tested it for

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and "deprecat" in node.value.lower():
            self.warned.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", node.value))

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        if "deprecat" in text.lower():
            self.warned.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        outer, self.function = self.function, node.name
        self.generic_visit(node)
        self.function = outer

    def _note_repeat(self, expr: ast.AST, line: int) -> None:
        if "val" in self.function.lower() or "test" in self.function.lower():
            return  # validation repeats its own batch (rollout.n_val...): the training chain is untouched
        keys = _keys_in(expr) or [self.assigned[n.id] for n in ast.walk(expr)
                                  if isinstance(n, ast.Name) and n.id in self.assigned]
        for key in keys:
            if key not in _VERL_REPEAT_KEYS and "val" not in key.rsplit(".", 1)[-1]:
                self.repeats.append(RepeatKey(key, f"{self.where}:{line}"))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        # A project entry that runs verl's own validation (`from verl.utils.config import
        # validate_config`) prints the deprecation warnings verl's code prints.
        if node.module == _VERL_VALIDATION[0] and any(a.name == _VERL_VALIDATION[1] for a in node.names):
            self.warned.update(_VERL_VALIDATION_WARNS)

    def visit_If(self, node: ast.If) -> None:  # a key read only in a test is not a live read
        tested = node.test
        prefix = None
        if isinstance(tested, ast.Call) and isinstance(tested.func, ast.Attribute) \
                and tested.func.attr == "startswith" and isinstance(tested.func.value, ast.Name) \
                and len(tested.args) == 1 and isinstance(tested.args[0], ast.Constant) \
                and isinstance(tested.args[0].value, str) and tested.args[0].value:
            prefix = (tested.func.value.id, tested.args[0].value)
        if prefix:
            outer = self.prefixes.get(prefix[0])
            self.prefixes[prefix[0]] = prefix[1]
        for child in node.body:
            self.visit(child)
        if prefix:
            if outer is None:
                self.prefixes.pop(prefix[0], None)
            else:
                self.prefixes[prefix[0]] = outer
        for child in node.orelse:
            self.visit(child)

    def visit_For(self, node: ast.For) -> None:
        names = _strings(node.iter)
        if names is None and isinstance(node.iter, ast.Name):
            names = self.string_lists.get(node.iter.id)
        bound = node.target.id if isinstance(node.target, ast.Name) and names else None
        if bound:
            outer = self.loop_names.get(bound)
            self.loop_names[bound] = names or ()
        self.generic_visit(node)
        if bound:
            if outer is None:
                self.loop_names.pop(bound, None)
            else:
                self.loop_names[bound] = outer

    def _note_removed(self, field: ast.expr, line: int) -> None:
        where = f"{self.where}:{line}"
        if isinstance(field, ast.Constant) and isinstance(field.value, str) and field.value:
            self.removed.append(RemovedField(field.value, where))
        elif isinstance(field, ast.Name):
            if field.id in self.prefixes:
                self.removed.append(RemovedField(self.prefixes[field.id], where, prefix=True))
            for name in self.loop_names.get(field.id, ()):
                self.removed.append(RemovedField(name, where))

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Subscript) and _configish(target.value):
                self._note_removed(target.slice, node.lineno)
            elif isinstance(target, ast.Attribute) and _configish(target.value):
                self.removed.append(RemovedField(target.attr, f"{self.where}:{node.lineno}"))
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        for child in node.body + node.orelse:
            self.visit(child)

    def visit_Assign(self, node: ast.Assign) -> None:
        key = config_key(node.value)
        names = _strings(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name):
                if key:
                    self.assigned[target.id] = key
                if names:
                    self.string_lists[target.id] = names
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "repeat":
            for keyword in node.keywords:
                if keyword.arg == "repeat_times":
                    self._note_repeat(keyword.value, node.lineno)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "pop" and node.args \
                and _configish(node.func.value):
            self._note_removed(node.args[0], node.lineno)
        if isinstance(node.func, ast.Name) and node.func.id == "delattr" and len(node.args) == 2 \
                and _configish(node.args[0]):
            self._note_removed(node.args[1], node.lineno)
        self.generic_visit(node)

    def _comprehension(self, node: ast.ListComp | ast.GeneratorExp) -> None:
        # `[b[i:i + 1] for _ in range(n)]`: rows of a batch copied n times
        copies_rows = isinstance(node.elt, ast.Subscript) and isinstance(node.elt.slice, ast.Slice)
        for generator in node.generators:
            it = generator.iter
            if copies_rows and isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
                for arg in it.args:
                    self._note_repeat(arg, node.lineno)
        self.generic_visit(node)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        key = config_key(node)
        if key:
            self.reads.add(key)
            return
        self.generic_visit(node)


def _files(folders: list[Path]) -> tuple[list[Path], list[Path]]:
    """(the Python files to read below `folders`, the folders listed to find them)."""
    out: list[Path] = []
    listed: list[Path] = []
    for folder in folders:
        if folder.suffix == ".py" and folder.is_file():
            out.append(folder)
            continue
        if not folder.is_dir():
            listed.append(folder)  # absent now: its creation changes the answer
            continue
        listed.append(folder)
        for path in sorted(folder.rglob("*")):
            if path.is_dir():
                listed.append(path)
            elif len(out) < MAX_FILES and path.suffix == ".py" and "tests" not in path.relative_to(folder).parts \
                    and path.is_file():
                out.append(path)
    return out, listed


def read_fork_code(folders: list[Path]) -> ForkCode:
    """What the Python files below `folders` do with config keys; kept in the command's session,
    keyed by every file read and folder listed (generator.base.session.kept)."""
    return kept(("forkcode", tuple(p.resolve() for p in folders)), lambda: _read_fork_code(folders))


def _read_fork_code(folders: list[Path]) -> tuple[ForkCode, list[Path], int]:
    repeats: list[RepeatKey] = []
    reads: set[str] = set()
    warned: set[str] = set()
    removed: list[RemovedField] = []
    files, listed = _files(folders)
    for path in files:
        try:
            tree = checked_tree(read_input(path, limit=SCRIPT_LIMIT, what="Python module"), str(path))
        except (InputError, OSError):
            continue
        base = next((f for f in folders if f in path.parents), path.parent.parent)
        reader = _Reader(str(path.relative_to(base.parent)))
        reader.visit(tree)
        repeats.extend(reader.repeats)
        reads |= reader.reads
        warned |= reader.warned
        removed.extend(reader.removed)
    found = ForkCode(tuple(repeats), frozenset(reads), frozenset(warned), tuple(removed))
    return found, [*folders, *listed, *files], approx_size(found)


# The folder of a verl package whose actors run the PPO update (dp_actor.py, megatron_actor.py).
_ACTOR_FOLDER = ("workers", "actor")


def actor_reads_epochs(package: Path) -> bool | None:
    """Whether the actors of a project's verl package read `ppo_epochs` (verl's loop `for _ in
    range(self.config.ppo_epochs)` in update_policy); None when the package has no actor files to
    read. A fork whose actors never name it runs one pass over the batch per step, whatever the key
    says (issue 34: such a fork was told "4 updates per step")."""
    return _any_file_says(package.joinpath(*_ACTOR_FOLDER), "*.py", re.compile(r"\bppo_epochs\b"))


def _any_file_says(folder: Path, pattern: str, text_pattern: re.Pattern[str]) -> bool | None:
    """Whether a Python file below `folder` (`pattern`: its glob, `**/*.py` for the whole tree)
    matches `text_pattern`; None when there is no such file to read."""
    try:
        files = sorted(folder.glob(pattern))[:MAX_FILES] if folder.is_dir() else []
    except OSError:
        return None
    read_any = False
    for path in files:
        try:
            text = read_input(path, limit=SCRIPT_LIMIT, what="project verl file").decode("utf-8", "replace")
        except (InputError, OSError):
            continue
        read_any = True
        if text_pattern.search(text):
            return True
    return False if read_any else None


# The folder of a verl package that holds its rollouts, and the comparison verl's sync vLLM rollout
# (0.2.0-0.6.1) refuses a run with: max_num_batched_tokens below max_model_len with chunked prefill
# (vllm_rollout_spmd.py: `if max_num_batched_tokens < max_model_len and ...enable_chunked_prefill`).
_ROLLOUT_FOLDER = ("workers", "rollout")
_BATCHED_TOKENS_CHECK = re.compile(r"max_num_batched_tokens\s*<\s*max_model_len|max_model_len\s*>\s*max_num_batched_tokens")


def rollout_checks_batched_tokens(package: Path) -> bool | None:
    """Whether the rollouts of a project's verl package compare max_num_batched_tokens with
    max_model_len (verl's chunked-prefill check, VR507); None when there is no rollout file to read.
    A fork whose rollout never makes the comparison passes the values to vLLM, which allows fewer
    batched tokens than the context with chunked prefill (issue 34: VR507 on a 0.2 fork)."""
    return _any_file_says(package.joinpath(*_ROLLOUT_FOLDER), "**/*.py", _BATCHED_TOKENS_CHECK)


# verl's fit() returns after its first validation when trainer.val_only is set (ray_trainer.py from
# v0.2.0.post2; v0.1 has no such key and trains).
_VAL_ONLY = re.compile(r"""["']val_only["']|\.val_only\b""")


def trainer_reads_val_only(package: Path) -> bool | None:
    """Whether a project's verl trainer reads trainer.val_only; None when it has no trainer code."""
    return _any_file_says(package / "trainer", "**/*.py", _VAL_ONLY)


def trainer_asserts_mini_within_train(package: Path) -> bool | None:
    """Whether a project's verl package compares the actor's mini batch with the train batch where
    verl makes its A6 check: the trainer (an `assert` in ray_trainer.py from 0.3.0), utils/config.py
    (0.6) and workers/config/ (0.7+, `if train_batch_size < self.ppo_mini_batch_size: raise`). Read
    with ast, so a commented-out check does not count, nor one that only warns; a critic's own check
    does not either. None
    when the package has no trainer code to read (issue 34: a fork that commented it out was told verl refuses)."""
    trainer = package / "trainer"
    files, _ = _files([trainer, package / "utils" / "config.py", package / "workers" / "config"])
    read_trainer = False  # the evidence needs the fork's trainer itself, not only its config classes
    for path in files:
        try:
            tree = checked_tree(read_input(path, limit=SCRIPT_LIMIT, what="project verl file"), str(path))
        except (InputError, OSError):
            continue
        read_trainer = read_trainer or trainer in path.parents
        if _compares_train_with_actor_mini(tree):
            return True
    return False if read_trainer else None


def _compares_train_with_actor_mini(tree: ast.AST) -> bool:
    """An `assert` on the comparison, or an `if` on it whose branch raises: a comparison that only
    warns or logs (a fork that allows the larger mini batch on purpose, issue 34) is no check."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ClassDef) and "critic" in node.name.lower():
            continue  # CriticConfig.validate makes the critic's own check
        if isinstance(node, ast.Assert) and _has_mini_comparison(node.test):
            return True
        if isinstance(node, ast.If) and _has_mini_comparison(node.test) and any(
                isinstance(n, (ast.Raise, ast.Assert)) for branch in (node.body, node.orelse)
                for statement in branch for n in ast.walk(statement)):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _has_mini_comparison(test: ast.expr) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            sides = [_dotted_name(node.left), _dotted_name(node.comparators[0])]
            if any(a.endswith("train_batch_size") and b.endswith("ppo_mini_batch_size") and "critic" not in b
                   for a, b in (sides, sides[::-1])):
                return True
    return False


def _dotted_name(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


# Where verl checks and dispatches on a closed list of values (generator.verl.constants.CHOICES):
# its config dataclasses (workers/config/, 0.5+), the trainer's own check (ray_trainer.py before
# that) and the functions that dispatch on the value (trainer/ppo/core_algos.py agg_loss, the
# actors, the engines); utils/config.py's validate_config.
_CHOICE_FOLDERS = (("trainer",), ("workers",), ("utils", "config.py"))
_CHOICE_FILES_MAX = 600


def fork_names_values(package: Path, values: frozenset[str]) -> frozenset[str] | None:
    """Which of `values` the Python code of a project's verl package names as a string literal
    where verl checks and dispatches on its closed lists: a fork that added a loss_agg_mode names it
    in its check and in the `elif mode == "..."` that implements it. None when the code cannot be
    read conclusively (no such files, or more than the budget): the fork may accept any of them
    (issue 34: `token-mean-weighted` called invalid where the fork's ActorConfig accepts it)."""
    if not values:
        return frozenset()
    paths: list[Path] = []
    for parts in _CHOICE_FOLDERS:
        where = package.joinpath(*parts)
        try:
            if where.is_file():
                paths.append(where)
            elif where.is_dir():
                paths.extend(p for p in sorted(where.rglob("*.py")) if "tests" not in p.relative_to(where).parts)
        except OSError:
            return None
        if len(paths) > _CHOICE_FILES_MAX:
            return None
    literals = {v: re.compile("[\"']" + re.escape(v) + "[\"']") for v in values}
    named: set[str] = set()
    read_any = False
    for path in paths:
        try:
            text = read_input(path, limit=SCRIPT_LIMIT, what="project verl file").decode("utf-8", "replace")
        except InputError:
            return None  # a file over the limit may hold the check: no conclusion
        except OSError:
            continue
        read_any = True
        named |= {v for v, pattern in literals.items() if v not in named and pattern.search(text)}
        if len(named) == len(values):
            break
    return frozenset(named) if read_any else None


def critic_warmup_departure(package: Path) -> str | None:
    """Where a project's verl trainer reads trainer.critic_warmup other than as verl's gate of the
    actor update (`if self.config.trainer.critic_warmup <= self.global_steps:` alone, whose body
    updates the actor): 'FILE:LINE (`code`)', or 'nowhere' when its trainer code never reads the
    key; None when every read is verl's gate or there is no trainer code to read. A fork that
    gates something else by it (issue 34: a contrastive head trained during the actor's warmup)
    does not follow verl's meaning, so "those steps train nothing" rests on an assumption."""
    trainer = package / "trainer"
    files, _ = _files([trainer])
    read_any, departure, gates = False, None, 0
    for path in files:
        try:
            data = read_input(path, limit=SCRIPT_LIMIT, what="project verl file")
        except (InputError, OSError):
            continue
        read_any = True
        if b"critic_warmup" not in data:
            continue
        try:
            tree = checked_tree(data, str(path))
        except InputError:
            continue
        where = str(path.relative_to(package))
        found, n = _warmup_reads(tree, data.decode("utf-8", "replace"), where)
        gates += n
        departure = departure or found
    if departure is not None:
        return departure
    return "nowhere" if read_any and gates == 0 else None


def _warmup_reads(tree: ast.AST, text: str, where: str) -> tuple[str | None, int]:
    """(the first read of critic_warmup that is not verl's actor gate, the number of gates)."""
    gate_tests: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_warmup_gate(node.test) and "actor" in ast.unparse(node).lower():
            gate_tests.add(id(node.test.left))  # type: ignore[attr-defined]
    for node in ast.walk(tree):
        named = (isinstance(node, ast.Attribute) and node.attr == "critic_warmup") or \
            (isinstance(node, ast.Constant) and node.value == "critic_warmup")
        if named and id(node) not in gate_tests:
            line = getattr(node, "lineno", 0)
            code = text.splitlines()[line - 1].strip()[:80] if 0 < line <= len(text.splitlines()) else ""
            return f"{where}:{line} (`{code}`)", len(gate_tests)
    return None, len(gate_tests)


def _is_warmup_gate(test: ast.expr) -> bool:
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.LtE)
            and _dotted_name(test.left).endswith("trainer.critic_warmup")
            and _dotted_name(test.comparators[0]).endswith("global_steps"))


# verl 0.7.0 refuses the sync rollout in its RolloutConfig (workers/config/rollout.py @v0.7.0:
# `if self.mode == "sync": raise ValueError(...)`); a development fork of 0.7 from before that
# still defaults to it and runs it.
_CONFIG_FOLDER = ("workers", "config")


def rollout_refuses_sync(package: Path) -> bool | None:
    """Whether a project's verl config classes raise on rollout mode "sync" (an `if` comparing a
    `mode` with "sync" whose body raises); None when there are no such classes to read."""
    files, _ = _files([package.joinpath(*_CONFIG_FOLDER)])
    read_any = False
    for path in files:
        try:
            data = read_input(path, limit=SCRIPT_LIMIT, what="project verl file")
            tree = checked_tree(data, str(path))
        except (InputError, OSError):
            continue
        read_any = True
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _compares_mode_with_sync(node.test) \
                    and any(isinstance(n, ast.Raise) for stmt in node.body for n in ast.walk(stmt)):
                return True
    return False if read_any else None


def _compares_mode_with_sync(test: ast.expr) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and len(node.comparators) == 1:
            sides = (node.left, node.comparators[0])
            if any(isinstance(s, ast.Constant) and s.value == "sync" for s in sides) and \
                    any(_dotted_name(s).endswith("mode") for s in sides):
                return True
    return False

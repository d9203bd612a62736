"""Every cache has one owner and a stated lifetime (issue 35, item 2).

A result computed from a user's files, or from what the command found (a registered config
folder, the installed verl, a project's patterns), is kept in the command's Session
(generator.base.session.kept: keyed by every file it depends on, bounded in bytes, gone with the
command). What stays at module level is listed below, each with why: pure functions of their
arguments and package data, the same for every run and every user. The scan fails on a module
cache that is not listed (a new one must either go through the Session or say here why it is
pure) and on a listed one that is gone (the list stays true).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from conftest import REPO

from generator.base import session

PACKAGE = REPO / "generator"

# Pure: a function of its (immutable) arguments, of package data, or of the rule registry.
PURE = {
    "config/defaults_interp.py:_KEPT": "resolved interpolations of a defaults dict, matched by value; bounded count",
    "config/interp.py:_SCALARS": "scalars parsed from config text, by the text; bounded count",
    "config/interp.py:_find_close": "string scanning, by the text",
    "config/interp.py:_split_top": "string scanning, by the text",
    "config/interp.py:_stops": "a table built from a constant",
    "layout/derive.py:layout_problems_of": "arithmetic on an immutable layout and model",
    "judging/__init__.py:_CHOSEN": "rules chosen by code prefixes: the registry, keyed by its size",
    "judging/__init__.py:_SCRIPT_RULES": "the same, for the script rules",
    "judging/__init__.py:_TO_RUN": "the same, per kind of call",
    "judging/__init__.py:global _loaded": "the rule families were imported (once per process)",
    "library/store.py:_FAST_LOADER": "the YAML loader class, built once",
    "model/params.py:megatron_lora_share": "arithmetic on immutable model facts and a rank",
    "plan/step_time.py:_fitted": "the packaged step-time constants (generator/data/step_time_calibration.yaml)",
    "plan/step_time.py:_with_calibration": "those constants with a calibration, keyed by the calibration's value",
    "schema/requirements_release.py:_table": "the packaged fingerprints of verl's requirements files (generator/data/verl_requirements.json)",
    "model/registry.py:_by_key": "the packaged model registry, by name",
    "model/registry.py:_registry": "the packaged model registry (generator/data/models.yaml)",
    "reading/overrides.py:_PARSED": "override text parsed, by the text; bounded count",
    "reading/overrides.py:_hydra_answers": "Hydra's grammar answers for the installed Hydra (not a user file)",
    "reading/overrides.py:_hydra_parser": "Hydra's parser, built once",
    "reading/overrides.py:_parse_override_slow": "override text parsed, by the text",
    "reading/overrides.py:looks_like_override": "by the text",
    "reading/overrides.py:parse_override_hydra": "by the text",
    "plan/known_outcomes.py:calibration_points": "packaged data",
    "plan/memory.py:_activation_bytes": "arithmetic on immutable arguments",
    "plan/memory.py:_first_of_each_kind": "arithmetic on immutable arguments",
    "plan/published.py:_published_for": "packaged data (verl's rows, their models from the registry)",
    "plan/published.py:_published_names": "packaged data",
    "plan/ranking.py:_floor_rollouts": "arithmetic on immutable arguments",
    "plan/ranking.py:_floor_workload": "arithmetic on immutable arguments",
    "plan/ranking.py:_rollout_tp_options": "arithmetic on immutable arguments",
    "plan/reference.py:verl_layouts": "packaged data",
    "plan/rollout_engine.py:_total_params": "arithmetic on immutable arguments",
    "plan/stages.py:_every_stage_params": "arithmetic on immutable arguments",
    "plan/stages.py:_layer_kinds": "arithmetic on immutable arguments",
    "plan/stages.py:_stage_params": "arithmetic on immutable arguments",
    "plan/step_time.py:_moe_split": "arithmetic on immutable arguments",
    "plan/step_time.py:_params": "arithmetic on immutable arguments",
    "plan/step_time.py:_rollout_s": "arithmetic on immutable arguments",
    "plan/step_time.py:_stage_imbalance": "arithmetic on immutable arguments",
    "plan/verl_rows.py:verl_rows": "packaged data",
    "verl/release_semantics.py:semantics": "facts of a release id, from constants",
    "render/templating.py:environment": "the packaged Jinja templates",
    "base/resources.py:packaged_json": "a JSON file shipped in the package (the rule catalog)",
    "rules/core.py:REGISTRY": "the rule registry, filled by @rule at import",
    "base/safe_regex.py:_compiled": "a pattern compiled, by its text",
    "base/safe_regex.py:_engine": "which regex engine is installed",
    "base/safe_regex.py:compiled": "a pattern compiled, by its text",
    "schema/dataclass_fields.py:dataclass_fields": "packaged data",
    "schema/dataclass_fields.py:fields_release": "packaged data, by release",
    "schema/migrations.py:_move_for": "the hand-written moves table, by key",
    "reading/shell/bash_syntax.py:_bash": "where bash is",
    "reading/shell/parse.py:_language": "the tree-sitter grammar",
    "reading/shell/parse.py:_node_query": "a compiled tree-sitter query",
    "reading/shell/parse.py:_parser": "the tree-sitter parser",
    "reading/shell/patterns.py:_glob": "a glob compiled, by its text",
    "reading/shell/placeholders.py:is_placeholder": "by the text",
    "verl/constants.py:ESTIMATOR_ALGORITHM": "filled at import from a constant table",
    "verl/versions.py:parse": "by the text",
    "schema/yamlload.py:_loader": "the bounded YAML loader class, built once",
    "schema/release_schema.py:_LISTED": "the packaged schema folder's listing, by its stamp",
    "schema/release_schema.py:_CACHE": "packaged schemas (folders registered at run time: the Session's)",
    # release_cache: package data at module level; an answer reading a folder registered at run
    # time goes to the Session (generator.schema.release_schema.release_cache).
    "plan/release_defaults.py:rollout_defaults": "release_cache",
    "schema/guess.py:_keys_of": "release_cache",
    "schema/guess.py:group_keys": "release_cache",
    "schema/migrations.py:_renames_cached": "release_cache",
    "schema/migrations.py:added_later": "release_cache",
    "schema/migrations.py:history": "release_cache",
    # Process state that is not a cache.
    "cli/__init__.py:global _app": "the typer app, built on first use",
    "base/pool.py:global _job": "a worker process's job",
    "base/session.py:global _current": "the session itself",
    "reading/shell/source_text.py:global _nodes_walked": "a work counter that decides when compiling a query pays",
}

_CONTAINERS = ("dict", "set", "list", "defaultdict", "OrderedDict", "Counter", "deque", "WeakValueDictionary")


def module_caches(root: Path = PACKAGE) -> set[str]:
    """'path:name' of every module-level cache under `root`: a function decorated with a cache,
    a module-level name bound to an empty container (filled as the process runs), a `global`."""
    found: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    "cache" in ast.unparse(d) for d in node.decorator_list):
                found.add(f"{where}:{node.name}")
            elif isinstance(node, ast.Global):
                found.update(f"{where}:global {name}" for name in node.names)
        for stmt in tree.body:
            value = stmt.value if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
            empty = (isinstance(value, ast.Dict) and not value.keys) or (
                isinstance(value, (ast.List, ast.Set)) and not value.elts) or (
                isinstance(value, ast.Call) and not value.args and ast.unparse(value.func).split(".")[-1] in _CONTAINERS)
            if empty:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # type: ignore[union-attr]
                found.update(f"{where}:{ast.unparse(target)}" for target in targets)
    return found


def test_every_module_cache_is_listed_with_why() -> None:
    found = module_caches()
    listed = set(PURE)
    assert sorted(found - listed) == [], "a new module-level cache: keep it in the Session, or list it here with why"
    assert sorted(listed - found) == [], "a listed cache is gone: remove it from the list"


def test_the_scan_finds_each_kind(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("from functools import lru_cache\n_MEMO: dict[str, int] = {}\n_SEEN = set()\n"
                                   "FULL = {'a': 1}\n@lru_cache(maxsize=4)\ndef f(x):\n    global _n\n    return x\n")
    assert module_caches(tmp_path) == {"m.py:_MEMO", "m.py:_SEEN", "m.py:f", "m.py:global _n"}


# --- the Session's cache ------------------------------------------------------------------------

def test_a_kept_result_is_recomputed_when_a_file_it_read_changes(tmp_path: Path) -> None:
    data = tmp_path / "a.txt"
    data.write_text("one")
    calls: list[str] = []

    def compute() -> tuple[str, list[Path], int]:
        calls.append("x")
        return data.read_text(), [data], 10

    assert session.kept(("test", "a"), compute) == "one"
    assert session.kept(("test", "a"), compute) == "one" and len(calls) == 1  # kept
    data.write_text("two!")  # another size: a new stamp even within one mtime tick
    assert session.kept(("test", "a"), compute) == "two!" and len(calls) == 2
    data.unlink()
    data.write_text("three")
    os.utime(data, ns=(1, 1))
    assert session.kept(("test", "a"), compute) == "three" and len(calls) == 3
    session.begin()  # a new command keeps nothing of the last one
    assert session.kept(("test", "a"), compute) == "three" and len(calls) == 4


def test_a_result_over_the_bound_is_not_kept() -> None:
    calls: list[int] = []

    def big() -> tuple[int, tuple[()], int]:
        calls.append(1)
        return 7, (), session.ENTRY_LIMIT + 1

    assert session.kept(("test", "big"), big) == 7 and session.kept(("test", "big"), big) == 7
    assert len(calls) == 2
    assert session.current().kept_bytes == 0


def test_the_session_stops_keeping_past_its_bound(monkeypatch: object) -> None:
    state = session.current()
    state.kept_bytes = session.SESSION_LIMIT - 5
    assert session.kept(("test", "small"), lambda: (1, (), 10)) == 1
    assert ("test", "small") not in state.kept


def test_approx_size_grows_with_the_value_and_stops_at_the_limit() -> None:
    small = session.approx_size({"a": 1})
    large = session.approx_size({str(i): str(i) * 100 for i in range(1000)})
    assert small < 1000 < 100_000 < large
    assert session.approx_size(["y" * 1000] * 10_000) < 90_000  # the list, and its one string once (not 10 MB)
    assert session.approx_size({str(i): str(i) * 100 for i in range(1000)}, limit=5000) < large / 10  # it stops


def test_fork_code_edited_within_a_command_is_read_again(tmp_path: Path) -> None:
    # Before, fork code was kept per folder list for the whole process: an edit (gen fix in a
    # long-lived process, a test) was never seen.
    from generator.reading.fork_code import read_fork_code

    trainer = tmp_path / "verl" / "trainer"
    trainer.mkdir(parents=True)
    module = trainer / "ray_trainer.py"
    module.write_text("def fit(self, batch):\n    batch.repeat(repeat_times=self.config.data.n_samples)\n")
    assert [k.key for k in read_fork_code([trainer]).repeat_keys] == ["data.n_samples"]
    module.write_text("def fit(self, batch):\n    batch.repeat(repeat_times=self.config.data.n_agent_samples)\n")
    assert [k.key for k in read_fork_code([trainer]).repeat_keys] == ["data.n_agent_samples"]
    (trainer / "sub").mkdir()
    (trainer / "sub" / "more.py").write_text("x = self.config.data.other_key\n")
    assert "data.other_key" in read_fork_code([trainer]).read_keys  # a file added below is seen


def test_a_config_folder_registered_in_one_command_is_gone_in_the_next(tmp_path: Path) -> None:
    # Before, the folders registered as schemas (and the ids given to projects' config trees)
    # were module state: one project's folder could answer for an id in a later check.
    from generator.schema.release_schema import available, is_packaged, register_dir, registered

    register_dir("9.9.9", tmp_path, source="a test folder")
    assert "9.9.9" in available() and not is_packaged("9.9.9")
    assert registered().sources["9.9.9"] == "a test folder"
    session.begin()
    assert "9.9.9" not in available() and registered().dirs == {}

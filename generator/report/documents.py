"""The JSON documents the commands write, each with `schema_version` (docs/json.md describes
every shape; tests/test_json_docs.py validates what the commands write against it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from generator.config.types import Config
    from generator.reading.launch_script import Invocation

# Raised when a field changes meaning or goes away; adding a field keeps the version.
JSON_SCHEMA_VERSION = 1


def dumps(document: dict[str, Any]) -> str:
    """A document as the commands print it: schema_version first, two-space indent."""
    from generator.base.safe_text import json_text

    return json_text({"schema_version": JSON_SCHEMA_VERSION, **document}, default=str)


def explain_call_json(invocation: Invocation, config: Config, release: str,
                      rows: Sequence[tuple[str, object]]) -> dict[str, object]:
    """One trainer call of `gen explain --format json`."""
    return {"line": invocation.line, "entry": invocation.entry, "branch": invocation.branch,
            "config": config.schema, "verl_version": release, "backend": config.backend,
            "numbers": [{"name": label, "value": str(value)} for label, value in rows]}


def explain_json(files: list[dict[str, Any]]) -> str:
    """`gen explain --format json`: {schema_version, files: [{path, error, incomplete, calls}]}."""
    return dumps({"files": files})


__all__ = ["JSON_SCHEMA_VERSION", "dumps", "explain_call_json", "explain_json"]

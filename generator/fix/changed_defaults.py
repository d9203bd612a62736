"""Defaults that changed between two releases under keys a call leaves unset: what `gen migrate`
reports besides its edits, since the same script then runs otherwise on the target (issue 34:
rollout.max_num_seqs 1024 -> 256, megatron.vanilla_mbridge True -> False between 0.7.0 and 0.9.1)."""

from __future__ import annotations

from typing import Any, Callable

from generator.reading.launch_script import Invocation, LaunchScript, written_elsewhere


def changed_defaults(script: LaunchScript, before: Callable[[str], dict[str, Any]],
                     after: Callable[[str], dict[str, Any]],
                     schema_name: Callable[[Invocation], str]) -> list[tuple[int, str]]:
    """(call line, `key: old → new`) for each value default that differs between the releases'
    configs of a call (named by `schema_name`), under a key the call does not set. Interpolations
    (a default that follows another key), and null or empty defaults on either side (a key the
    target retired, as the legacy reward_model.* section; a choice left to the code) are left out:
    none is a value the run would silently take."""
    out: list[tuple[int, str]] = []
    for invocation in script.invocations:
        if invocation.branch == "dead" or written_elsewhere(script.path, invocation):
            continue
        name = schema_name(invocation)
        try:
            old, new = before(name), after(name)
        except Exception:  # a config a release does not have: nothing to compare
            continue
        set_here = {o.key for o in invocation.overrides if o.key}
        for key, value in old.items():
            if key not in new or key in set_here or key.endswith("._target_"):
                continue
            target = new[key]
            if target == value or _unset(value) or _unset(target) or _interpolation(value) or _interpolation(target):
                continue
            out.append((invocation.line, f"{key}: {value!r} → {target!r}"))
    return out


def _unset(value: Any) -> bool:
    """null or an empty list or mapping: a default that leaves the choice to the code, not a value."""
    return value is None or value == [] or value == {}


def _interpolation(value: Any) -> bool:
    return isinstance(value, str) and "${" in value

"""The duplicate-key hazard (VS704): a key given twice in one call with another value, unless the
repeat is deliberate (shared arguments the call specialises, or a comment recording the change)."""

from __future__ import annotations

import re

from generator.reading.launch_script import Hazard, Invocation, Override


def duplicate_hazard(inv: Invocation, ov: Override, prev: Override | None, source: str | None,
                      source_path: str | None) -> Hazard | None:
    """duplicate-key, when an earlier override `prev` of the same key gave another value."""
    if prev is None or prev.value == ov.value or _overrides_shared_args(prev, ov):
        return None
    if source is not None and ov.provenance.path in (None, source_path) and _commented_on_purpose(source, ov):
        return None
    return Hazard(
        "duplicate-key", ov.word.line,
        f"{ov.key} is given twice in the call at line {inv.line}: {prev.value!r} (line "
        f"{prev.word.line}) and {ov.value!r} (line {ov.word.line}); the last one wins",
        ov.word)


def _commented_on_purpose(source: str, ov: Override) -> bool:
    """A key repeated on purpose: the comment on the line right above the later override (a `#`
    line, or a backquoted `# ...` inside the continued call) names the key and its new value, the
    way a person records that they changed it (issue 34: "Reduced max_prompt_length to 8192")."""
    if ov.provenance.source != "literal" or not ov.value:
        return False
    start = source.rfind("\n", 0, ov.word.start)
    if start <= 0:
        return False
    above = source[source.rfind("\n", 0, start) + 1:start]
    _, hash_, comment = above.partition("#")
    if not hash_:
        return False
    words = set(re.findall(r"[A-Za-z0-9_.\-]+", comment.lower()))
    leaf = ov.key.rsplit(".", 1)[-1].lower()
    return (leaf in words or ov.key.lower() in words) and ov.value.lower() in words


def _overrides_shared_args(prev: Override, ov: Override) -> bool:
    """A key repeated on purpose: the earlier value comes from a list of shared arguments (an array
    or a string variable expanded into the call, or a sourced file) and the later one is written in
    the call itself, the way a script specialises common settings (issue 34)."""
    shared = prev.provenance.source in ("array", "string") or prev.provenance.path != ov.provenance.path
    own = ov.provenance.source in ("literal", "variable")
    return shared and own

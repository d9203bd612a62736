"""The stray words bash splits out of one unquoted word among a Hydra call's overrides
(`trainer.default_local_dir=ckpt/$NAME` with `NAME="Your Exp name"` gives `…=ckpt/Your`, `Exp`,
`name`): one mistake, so one finding naming them all, not one per word."""

from __future__ import annotations

from generator.reading.launch_script import Hazard, Span
from generator.reading.overrides import looks_like_override
from generator.reading.shell.model import Field


def _same_source_word(a: Field, b: Field) -> bool:
    """Whether two arguments are words bash split out of one word written in the script."""
    # Each word of a split keeps where its command-line word starts (`cmd_a`); an array's elements
    # share that too, but each was written as a word of its own.
    return a.cmd_a >= 0 and (a.path, a.cmd_a) == (b.path, b.cmd_a) and "array" not in (a.origin, b.origin)


def split_siblings(rest: list[Field], texts: list[str], j: int) -> int:
    """How many stray words from `rest[j]` on (two at least, else 0 or 1) come out of one word
    the script writes: each is not `key=value` and none is an unknown."""
    if looks_like_override(texts[j]) or texts[j].startswith("-") or rest[j].unknowns:
        return 0
    end = j + 1
    while end < len(rest) and _same_source_word(rest[j], rest[end]) and texts[end].strip() \
            and not looks_like_override(texts[end]) and not rest[end].unknowns:
        end += 1
    return end - j


def split_words_hazard(words: list[str], call_line: int, line: int, span: Span | None) -> Hazard:
    shown = ", ".join(f"`{t[:40]}`" for t in words)
    return Hazard("stray-argument", line,
                  f"{shown} among the overrides of the call at line {call_line} are {len(words)} words that are "
                  "not `key=value`, split by bash out of one unquoted word: verl stops before training with a "
                  "Hydra command-line error at the first; quote the word", span)

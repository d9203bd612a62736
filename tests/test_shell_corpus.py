"""The shell reader on the 892 real verl launch scripts (skips when ../shared is absent):
every script reads, values agree with the independent reading in INVOCATIONS.jsonl (which covers
the 585 scripts of the first eight snapshots), the override words of the 307 scripts of the newer
snapshots (corpus/NEW-SNAPSHOTS.md) split into key and value as Hydra's own parser splits them,
spans reproduce their values, and the known shell bugs are reported at the right lines."""

from __future__ import annotations

import collections
import csv
import json
from pathlib import Path

import pytest

from generator.reading.launch_script import LaunchScript
from generator.reading.overrides import parse_override
from generator.reading.shell import read_script
from generator.reading.shell.model import as_text, pieces_text
from generator.reading.shell.walker import Evaluator
from generator.reading.shell.words import Expander

_FAILURES: list[str] = []

# The snapshots INVOCATIONS.jsonl and FINDINGS.tsv read (585 scripts); the newer ones (v0.7.1,
# v0.8.0, v0.9.0, HEAD-2608, verl-recipe@e7f8895: 307 scripts) have no independent reading.
REFERENCE_SNAPSHOTS = frozenset({"v0.4.1", "v0.5.0", "v0.6.0", "v0.6.1", "v0.7.0", "HEAD",
                                 "verl-recipe@21892b9", "verl-recipe@48ea0a7"})


@pytest.fixture(scope="module")
def corpus(corpus_dir: Path) -> dict[tuple[str, str], LaunchScript]:
    """Every corpus script read once; scripts that raised are listed in _FAILURES."""
    root = corpus_dir / "scripts"
    out: dict[tuple[str, str], LaunchScript] = {}
    failures = _FAILURES
    failures.clear()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        tag, rel = path.relative_to(root).as_posix().split("/", 1)
        try:
            out[(tag, rel)] = read_script(path.read_bytes(), str(path))
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            failures.append(f"{tag}/{rel}: {type(err).__name__}: {err}")
    return out


def test_every_script_reads(corpus) -> None:
    assert _FAILURES == []
    assert len(corpus) == 892
    assert sum(1 for tag, _ in corpus if tag in REFERENCE_SNAPSHOTS) == 585


def _reference(corpus_dir: Path) -> list[dict]:
    with open(corpus_dir / "INVOCATIONS.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_values_agree_with_reference(corpus, corpus_dir: Path) -> None:
    """≥ 99% of the reference's resolved values of live trainer calls are ours too.

    Known disagreements (see the final report): the reference assumes `$1` empty and so decides
    `if [ $1 == … ]` branches that we keep as either-values."""
    total = agree = 0
    kinds: collections.Counter[str] = collections.Counter()
    for row in _reference(corpus_dir):
        if row["mode"] != "live" or not row["is_trainer"]:
            continue
        script = corpus[(row["tag"], row["path"])]
        calls = [i for i in script.invocations if i.line == row["line"]]
        mine: dict[str, list[str | None]] = collections.defaultdict(list)
        if calls:
            for o in calls[0].overrides:
                mine[("" if o.op == "=" else o.op) + o.key].append(o.value)
        seen: collections.Counter[str] = collections.Counter()
        for o in row["overrides"]:
            if "<?" in o["value"]:
                continue
            total += 1
            key = o["prefix"] + o["key"]
            values = mine.get(key)
            nth = seen[key]
            seen[key] += 1
            if not calls:
                kinds["call not found"] += 1
            elif not values:
                kinds["key missing"] += 1
            elif values[min(nth, len(values) - 1)] == o["value"]:
                agree += 1
            else:
                kinds["value differs"] += 1
    assert total > 27000
    ratio = agree / total
    assert ratio >= 0.99, (ratio, kinds)
    assert kinds["call not found"] == 0 and kinds["key missing"] == 0, kinds


def test_spans_reproduce_values(corpus) -> None:
    """Reading the bytes at each resolved override's span in its quoting context gives the
    value bash passes: what a fix replaces there is exactly the value."""
    checked = 0
    bad = []
    for (tag, rel), script in corpus.items():
        src = script.source.decode("latin-1")
        evaluator = Evaluator(base_dir=None, env={}, args=[])  # the expander holds it weakly
        expander = Expander(src, script.path, evaluator)
        for inv in script.invocations:
            for o in inv.overrides:
                span = o.provenance.span
                if span is None or o.unknowns or o.provenance.path not in (None, script.path):
                    continue
                quoting = o.provenance.quoting
                if quoting == "'":
                    got = src[span.start : span.end]
                elif quoting == '"':
                    got = pieces_text(expander.expand(span.start, span.end, dq=True))
                else:
                    got = pieces_text([p for p in expander.expand(span.start, span.end) if not p.kind])
                checked += 1
                if as_text(got) != o.value:
                    bad.append((tag, rel, o.text, got))
    assert checked > 25000
    assert bad == []


def _hazards(corpus, tag: str, rel: str) -> set[tuple[str, int]]:
    return {(h.kind, h.line) for h in corpus[(tag, rel)].hazards}


def test_known_shell_bugs_at_the_right_lines(corpus) -> None:
    pfppo = "examples/ppo_trainer/run_deepseek7b_llm_pfppo.sh"
    for tag in ("v0.4.1", "v0.5.0"):
        found = _hazards(corpus, tag, pfppo)
        assert {("backslash-space", 6), ("orphan-overrides", 7)} <= found
        inv = corpus[(tag, pfppo)].invocations[0]
        assert [o.key for o in inv.overrides][-1] == "algorithm.pf_ppo.reweight_method"

    vl = "examples/grpo_trainer/run_qwen3_vl-30b-megatron.sh"
    assert {("comment-in-continuation", 73), ("orphan-overrides", 74)} <= _hazards(corpus, "v0.6.1", vl)
    keys = {o.key for o in corpus[("v0.6.1", vl)].invocations[0].overrides}
    assert "actor_rollout_ref.actor.megatron.override_transformer_config.moe_aux_loss_coeff" not in keys
    assert "trainer.n_gpus_per_node" not in keys

    npu = corpus[("v0.7.0", "examples/grpo_trainer/run_qwen3_4b_grpo_vllm_1k_npu.sh")]
    name = next(o for o in npu.invocations[0].overrides if o.key == "trainer.experiment_name")
    assert name.value == "qwen3_4b_grpo_8npu}"
    assert parse_override(name.text).error
    assert name.provenance.span is not None and name.provenance.span.line == 21

    multiturn = "examples/sglang_multiturn/run_qwen2.5-3b_gsm8k_multiturn_vllm_fsdp.sh"
    for tag in ("v0.6.0", "v0.7.0", "HEAD"):
        assert {("empty-expansion", 35), ("duplicate-key", 35)} <= _hazards(corpus, tag, multiturn)


def test_duplicate_keys_match_reference_findings(corpus, corpus_dir: Path) -> None:
    with open(corpus_dir / "FINDINGS.tsv", encoding="utf-8") as handle:
        reference = {(r["first_tag"], r["path"]) for r in csv.DictReader(handle, delimiter="\t")
                     if "twice" in r["category"]}
    mine = {key for key, script in corpus.items()
            if key[0] in REFERENCE_SNAPSHOTS and any(h.kind == "duplicate-key" for h in script.hazards)}
    assert mine == reference


def _hydra_reading(text: str) -> tuple[str, str, object] | None:
    """(op, key, value) of one override word by hydra-core's own OverridesParser (the parser
    verl's @hydra.main uses; not verl-gen's fast path); None when Hydra rejects the word."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_override(text)
        value = parsed.value()
    except Exception:  # noqa: BLE001 - Hydra's refusal is the answer
        return None
    op = {"ADD": "+", "FORCE_ADD": "++", "DEL": "~", "CHANGE": "="}[parsed.type.name]
    return op, parsed.key_or_group, value


def test_new_snapshots_override_values_agree_with_hydra(corpus) -> None:
    """≥ 99.5% of the resolved overrides of the newer snapshots' trainer calls (which no
    independent reading covers) have the key, operator and value Hydra's parser finds in the
    same word. A value the reader could not resolve (from `$(…)` or the environment) is parsed with
    a neutral word in place of each unknown part, as the config layer checks it."""
    from generator.config.apply import replace_markers

    total = agree = 0
    bad: list[tuple[str, str, str]] = []
    for (tag, rel), script in corpus.items():
        if tag in REFERENCE_SNAPSHOTS:
            continue
        for inv in script.invocations:
            for o in inv.overrides:
                total += 1
                text = replace_markers(o.text) if o.unknowns else o.text
                hydra = _hydra_reading(text)
                ours = parse_override(text)
                if hydra is not None and hydra == (o.op, o.key.partition("@")[0], ours.value) and \
                        (o.unknowns or o.value == ours.value_text):
                    agree += 1
                else:
                    bad.append((tag, rel, o.text))
    assert total > 5000
    assert agree / total >= 0.995, (agree, total, bad[:20])


def test_no_parse_errors_in_corpus(corpus) -> None:
    """The three tree-sitter workarounds leave no ERROR region in any corpus script."""
    errors = [(k, h.line) for k, s in corpus.items()
              for h in s.hazards if h.kind == "parse-error"]
    assert errors == []

"""One definition for each fact issue 24 names: a grep of generator/ that fails when the
arithmetic or the tables are written out again where they are used."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "generator"

# DP = W / (TP·PP·CP) (W / SP off Megatron, EDP = W / (ETP·EP·PP)): written out as
# `gpus // (tp * pp * cp)` (or `% (...)`, any product of parallel sizes in any order), or a GPU
# count over a model-parallel size however it is named (`gpus // model_parallel`, `n_gpus % mp`,
# `world // sp`); the per-rank mini batch m = M·n / DP as `mini * n // dp`.
_SIZE = r"[\w.]*\b(?:tp|pp|cp|ep|etp|sp)\b"
_WORLD = r"\b[\w.]*(?:gpus|world\w*|nproc\w*|ranks|devices)\b[\w.\[\]\"']*"
_PARALLEL = r"[\w.]*\b(?:mp|sp|ulysses\w*|model_parallel\w*|mp_size)\b"
_TP_AND_PP = r"\(+(?=[^)]*\btp\b)(?=[^)]*\bpp\b)\s*" + _SIZE + r"\s*\*"  # a product with TP and PP in it
DP_INLINE = re.compile(rf"[/%]\s*{_TP_AND_PP}"
                       rf"|{_WORLD}\s*(?://|%)\s*(?:{_PARALLEL}|\(+\s*{_SIZE}\s*\*)"
                       r"|//\s*[\w.]*model_parallel_size")
# The DP equation's wording (derive.dp_equation): an f-string that names TP·PP·CP with a size in it.
DP_WORDING = re.compile(r"TP·PP·CP[^\"]*\{[\w.]*\btp\}|(?:W|GPUs) / ulysses SP[^\"]*\{[\w.]*\bsp\}")
PER_RANK_MINI_INLINE = re.compile(r"\*\s*[\w.\[\]\"']*\bn\b[\]\"')]*\s*//\s*\w*dp\b")


# Algorithm facts: a list of algorithm names (who has a critic, a group baseline, no KL ...) or a
# comparison with PPO's name or estimator is the table's to answer (generator.verl.constants.ALGORITHM_TABLE).
_NAME = r'"(?:grpo|ppo|dapo|gspo|rloo|gae|reinforce_plus_plus)"'
ALGORITHM_FACT_INLINE = re.compile(rf"\(\s*{_NAME}\s*,\s*{_NAME}|[!=]=\s*\"(?:ppo|gae)\"")
# The relief ladder: a (param, optimizer, CPU fraction, recompute) rung or a list of CPU-optimizer
# fractions written out (generator.plan.relief).
LADDER_INLINE = re.compile(r"\((?:True|False),\s*(?:True|False),\s*[0-9.]+,\s*(?:True|False)\)"
                           r"|\(\s*0\.25,\s*0\.5|\(\s*0\.5,\s*1\.0\s*\)")


def _hits(pattern: re.Pattern[str], *, home: str) -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == home:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line.split("#", 1)[0]):
                out.append(f"{rel}:{number}: {line.strip()}")
    return out


def test_patterns_catch_the_inline_forms() -> None:
    # The guard itself: each form that was written out before lands in derive.
    for line in ("dp = max(1, work.gpus // (cand.tp * cand.pp * cand.cp))", "if s.gpus % (tp * pp * cp):",
                 'dp = r["gpus"] // cand.model_parallel_size'):
        assert DP_INLINE.search(line), line
    for line in ("per_rank_mini = mini * s.n // dp", "max(1, mini * n // dp)", 'mini * r["n"] // dp',
                 "per_rank = new_mini * n // dp", "(prompts * n // dp) // per_rank"):
        assert PER_RANK_MINI_INLINE.search(line), line
    for line in ("return gpus // model_parallel, f\"{gpus} GPUs\"", "if gpus % model_parallel:",
                 "dp = world // (tp * pp * cp)", "dp = n_gpus // mp", "return gpus // sp",
                 "dp = gpus // sp if gpus and gpus % sp == 0 else None", "if world_size % (pp * tp * cp):",
                 "edp = max(1, work.gpus // (cand.pp * cand.ep * (cand.tp if cand.etp is None else cand.etp)))",
                 'dp = r["gpus"] // (cand.tp * cand.pp)'):
        assert DP_INLINE.search(line), line
    for line in ("return self.tp * self.pp * self.cp", "ep <= s.gpus // pp", "if s.gpus % r == 0",
                 "gpus // nodes", "k.seq_len // k.ulysses", "local = batch // dp"):
        assert not DP_INLINE.search(line), line
    for line in ('f"DP {dp} (= {s.gpus} GPUs / TP·PP·CP {cand.tp}·{cand.pp}·{cand.cp}); "',
                 'return (f"DP {dp} (= {gpus} GPUs / (TP·PP·CP = {layout.tp}·{layout.pp}·{layout.cp}))")',
                 'add(("DP", f"W / ulysses SP = {gpus} / {sp} = {dp}"'):
        assert DP_WORDING.search(line), line
    for line in ('if algo in ("ppo", "gae"):', 'if algo in ("grpo", "rloo", "dapo", "gspo") and n < 2:',
                 'return 1 if algo == "ppo" else 5', 'return estimator == "gae"'):
        assert ALGORITHM_FACT_INLINE.search(line), line
    for line in ("    (True, True, 0.5, False),", "CPU_FRACTIONS = (0.25, 0.5, 0.75, 1.0)"):
        assert LADDER_INLINE.search(line), line


def test_data_parallel_size_is_computed_in_derive_only() -> None:
    assert _hits(DP_INLINE, home="layout/derive.py") == []


def test_the_dp_equation_is_worded_in_derive_only() -> None:
    assert _hits(DP_WORDING, home="layout/derive.py") == []


def test_per_rank_mini_batch_is_computed_in_derive_only() -> None:
    assert _hits(PER_RANK_MINI_INLINE, home="layout/derive.py") == []


def test_algorithm_facts_live_in_the_table_only() -> None:
    assert _hits(ALGORITHM_FACT_INLINE, home="verl/constants.py") == []


def test_the_relief_ladder_is_written_once() -> None:
    assert _hits(LADDER_INLINE, home="plan/relief.py") == []

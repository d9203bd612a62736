"""Long fuzzing run of `gen show`, `gen check` and `gen fix` (tests/fuzz/ holds the strategies).

    python bench/fuzz.py --examples 10000 [--seed 0] [--families classic,nesting,...] [--small]
                         [--max-seconds S] [--show-failures 5] [--save DIR]

Families: classic (generated bash, damaged the way files get damaged) and the hostile ones of
tests/fuzz/hostile.py (nesting, huge, yaml, model, control, crlf, growth); all by default, equally likely.
Families with few distinct inputs (nesting 50, yaml 15, huge 13) each run every input once:
hypothesis does not run an input it has already run.
--small keeps the hostile sizes the test tiers use; --max-seconds stops generating after S seconds.
Prints how many inputs of each family ran, how long it took, the most CPU one input took (the
bound is tests/fuzz/harness.py's CPU_LIMIT), and every distinct failure with its smallest input.
Exit 0 when none failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "fuzz"))


def main(argv: list[str] | None = None) -> int:
    from hostile import HOSTILE

    families = ("classic", *HOSTILE)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--families", default=",".join(families),
                        help=f"comma-separated, from {', '.join(families)} (default: all)")
    parser.add_argument("--small", action="store_true", help="only the small hostile sizes")
    parser.add_argument("--max-seconds", type=float, default=None, help="stop generating after this long")
    parser.add_argument("--show-failures", type=int, default=10)
    parser.add_argument("--save", default=None, help="write each failing input (shortest per kind) here")
    opts = parser.parse_args(argv)
    chosen = tuple(name.strip() for name in opts.families.split(",") if name.strip())
    unknown = [name for name in chosen if name not in families]
    if unknown or not chosen:
        print(f"fuzz: error: unknown families {unknown}; known: {', '.join(families)}", file=sys.stderr)
        return 2

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness import clean_marker, run_case
    from hostile import FuzzCase, fuzz_case

    class OutOfTime(Exception):
        """Raised inside the property to end the run at --max-seconds."""

    failures: dict[str, FuzzCase] = {}
    per_family: Counter[str] = Counter()
    slowest: tuple[float, str] = (0.0, "")
    count = 0
    clean_marker()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="verl-gen-fuzz-") as folder:
        workdir = Path(folder)

        # Collect failures without stopping: the property itself never fails, so hypothesis
        # runs all examples; each distinct problem keeps its shortest input.
        @settings(max_examples=opts.examples, deadline=None, database=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=fuzz_case(chosen, small=opts.small))
        def run(case: FuzzCase) -> None:
            nonlocal count, slowest
            if opts.max_seconds is not None and time.perf_counter() - started > opts.max_seconds:
                raise OutOfTime
            count += 1
            per_family[case.family] += 1
            problems, seconds = run_case(case, workdir)
            slowest = max(slowest, (seconds, case.family))
            for problem in problems:
                head, _, rest = problem.partition(":")
                kind = f"{case.family}: {head}:{rest[:80]}"
                if kind not in failures:
                    print(f"  new failure at input {count}: {problem[:300]}\n"
                          f"    input ({case.family}, {case.name}): {case.script[:300]!r}", file=sys.stderr, flush=True)
                if kind not in failures or len(case.script) < len(failures[kind].script):
                    failures[kind] = case
            if count % 500 == 0:
                print(f"  {count} inputs, {len(failures)} distinct failures, "
                      f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

        if opts.seed is not None:
            run = seed(opts.seed)(run)
        try:
            run()
        except OutOfTime:
            print(f"  stopped after --max-seconds {opts.max_seconds:.0f}", file=sys.stderr)
    elapsed = time.perf_counter() - started
    print(f"fuzzed inputs: {count} in {elapsed:.1f} s ({count / elapsed:.1f}/s); "
          + ", ".join(f"{name} {per_family[name]}" for name in chosen))
    print(f"most CPU on one input: {slowest[0]:.2f} s ({slowest[1]})")
    print(f"distinct failures: {len(failures)}")
    for index, (kind, case) in enumerate(sorted(failures.items())):
        if index >= opts.show_failures:
            print(f"... and {len(failures) - index} more")
            break
        print(f"\nFAILURE {kind}\n  input ({case.name}, {len(case.script)} bytes, files {sorted(case.files)}, "
              f"options {list(case.check_args)}): {case.script[:400]!r}")
    if opts.save and failures:
        target = Path(opts.save)
        target.mkdir(parents=True, exist_ok=True)
        for index, (kind, case) in enumerate(sorted(failures.items())):
            (target / f"failure-{index}-{case.name}").write_bytes(case.script)
            for relative, content in case.files.items():
                path = target / f"failure-{index}-files" / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
            (target / f"failure-{index}.txt").write_text(kind + "\n" + " ".join(case.check_args) + "\n")
        print(f"saved {len(failures)} failing inputs in {target}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

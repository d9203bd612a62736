"""Long fuzzing run of `gen show`, `gen check` and `gen fix` (tests/fuzz/ holds the strategies).

    python bench/fuzz.py --examples 10000 [--seed 0] [--show-failures 5] [--save DIR]

Prints how many inputs ran, how long it took, and every distinct failure (with the smallest
input hypothesis could shrink it to). Exit 0 when none failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "fuzz"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--show-failures", type=int, default=10)
    parser.add_argument("--save", default=None, help="write each failing input (shortest per kind) here")
    opts = parser.parse_args(argv)

    from hypothesis import HealthCheck, Phase, given, seed, settings

    from harness import clean_marker, run_one
    from strategies import script_bytes

    failures: dict[str, bytes] = {}
    count = 0
    clean_marker()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="verl-gen-fuzz-") as folder:
        workdir = Path(folder)

        # Collect failures without stopping: the property itself never fails, so hypothesis
        # runs all examples; each distinct problem keeps its shortest input.
        @settings(max_examples=opts.examples, deadline=None, database=None,
                  phases=[Phase.generate], suppress_health_check=list(HealthCheck))
        @given(data=script_bytes())
        def run(data: bytes) -> None:
            nonlocal count
            count += 1
            for problem in run_one(data, workdir):
                kind = problem.split(":", 2)[0] + ":" + problem.split(":", 2)[1][:80] if ":" in problem else problem
                if kind not in failures:
                    print(f"  new failure at input {count}: {problem[:300]}\n    input: {data[:300]!r}",
                          file=sys.stderr, flush=True)
                    if opts.save:
                        Path(opts.save).mkdir(parents=True, exist_ok=True)
                        (Path(opts.save) / f"first-{len(failures)}.sh").write_bytes(data)
                if kind not in failures or len(data) < len(failures[kind]):
                    failures[kind] = data
            if count % 1000 == 0:
                print(f"  {count} inputs, {len(failures)} distinct failures, "
                      f"{time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

        if opts.seed is not None:
            run = seed(opts.seed)(run)
        run()
    elapsed = time.perf_counter() - started
    print(f"fuzzed inputs: {count} in {elapsed:.1f} s ({count / elapsed:.1f}/s); "
          f"distinct failures: {len(failures)}")
    for index, (kind, data) in enumerate(sorted(failures.items())):
        if index >= opts.show_failures:
            print(f"... and {len(failures) - index} more")
            break
        print(f"\nFAILURE {kind}\n  input ({len(data)} bytes): {data[:400]!r}")
    if opts.save and failures:
        folder = Path(opts.save)
        folder.mkdir(parents=True, exist_ok=True)
        for index, (kind, data) in enumerate(sorted(failures.items())):
            (folder / f"failure-{index}.sh").write_bytes(data)
            (folder / f"failure-{index}.txt").write_text(kind + "\n")
        print(f"saved {len(failures)} failing inputs in {folder}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

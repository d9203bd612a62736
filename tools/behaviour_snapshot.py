"""Record what `gen` prints for the whole corpus and library, to prove a refactor changed nothing.

    python tools/behaviour_snapshot.py OUT.json            # record
    python tools/behaviour_snapshot.py OUT.json --compare BEFORE.json   # record, then diff

Each entry is one command line run in-process through typer's test runner: `show --format json`,
`check --format json` (each corpus script against its own release), `explain` and `fix` on every
corpus script; on every 7th also a check with no release named, memory check/explain/fix on H100, a
migration to 0.9.1 and a diff with the previous sample; `show NAME` and `recipe NAME -o -` for every
packaged recipe; `plan` and `recipe --model` (newest and 0.7.0) for a few models.
The file keeps exit code and output per entry; `--compare` names the entries that differ and exits 1.
Reads only; writes OUT.json. Needs ../shared (or $VERL_GEN_SHARED).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("VERL_GEN_SHARED", ROOT.parent / "shared"))
PLANS = (("qwen2-7b", "8"), ("qwen3-30b-a3b", "16"), ("deepseek-v3", "256"), ("qwen3-235b-a22b", "64"))
# Memory verdicts and migrations run on every 7th corpus script: enough to cover each snapshot's
# shapes without doubling the run.
SAMPLE_EVERY = 7


def _commands() -> list[list[str]]:
    out: list[list[str]] = []
    sys.path.insert(0, str(ROOT))
    from generator.schema.releases import snapshot_version

    base = SHARED / "corpus" / "scripts"
    count = 0
    previous = ""
    for tag_dir in sorted(p for p in base.iterdir() if p.is_dir()):
        version = snapshot_version(tag_dir.name)
        for script in sorted(tag_dir.rglob("*.sh")):
            path = str(script)
            out.append(["show", path, "--format", "json"])
            out.append(["check", path, "--format", "json", "--verl-version", version])
            out.append(["explain", path, "--verl-version", version])
            out.append(["fix", path, "--verl-version", version])
            if count % SAMPLE_EVERY == 0:
                out.append(["check", path, "--format", "json"])
                out.append(["check", path, "--gpu", "H100", "--verl-version", version])
                out.append(["explain", path, "--memory", "--gpu", "H100", "--verl-version", version])
                out.append(["migrate", path, "--to", "0.9.1"])
                out.append(["fix", path, "--unsafe", "--gpu", "H100", "--verl-version", version])
                if previous:
                    out.append(["diff", previous, path])
                previous = path
            count += 1
    recipes = sorted(p.stem for p in (ROOT / "recipes").rglob("*.yaml"))
    for name in recipes:
        out.append(["show", name])
        out.append(["recipe", name, "-o", "-"])
    for model, gpus in PLANS:
        out.append(["plan", "--model", model, "--gpus", gpus, "--format", "json"])
        out.append(["recipe", "--model", model, "--gpus", gpus, "-o", "-"])
        out.append(["recipe", "--model", model, "--gpus", gpus, "--verl-version", "0.7.0", "-o", "-"])
    return out


def _run(commands: list[list[str]]) -> dict[str, dict[str, object]]:
    os.environ["NO_COLOR"] = "1"
    os.environ["COLUMNS"] = "200"
    sys.path.insert(0, str(ROOT))
    from typer.testing import CliRunner

    from generator.cli import app

    runner = CliRunner()
    entries: dict[str, dict[str, object]] = {}
    for argv in commands:
        result = runner.invoke(app, argv)
        # The shared folder and this checkout's own root are named by placeholders, so two
        # checkouts of one commit (a worktree, a clean clone) record the same entries.
        output = result.output.replace(str(SHARED), "$SHARED").replace(str(ROOT), "$ROOT")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            output += f"\n<exception {type(result.exception).__name__}: {result.exception}>"
        entries[" ".join(argv).replace(str(SHARED), "$SHARED")] = {"exit": result.exit_code, "output": output}
    return entries


def record(jobs: int = 1) -> dict[str, dict[str, object]]:
    commands = _commands()
    if jobs <= 1:
        return _run(commands)
    from concurrent.futures import ProcessPoolExecutor

    chunks = [commands[i::jobs] for i in range(jobs)]
    entries: dict[str, dict[str, object]] = {}
    with ProcessPoolExecutor(jobs) as pool:
        for part in pool.map(_run, chunks):
            entries.update(part)
    return entries


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--compare")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (entries are independent)")
    ns = parser.parse_args()
    entries = record(ns.jobs)
    Path(ns.out).write_text(json.dumps(entries, indent=0, sort_keys=True))
    digest = hashlib.sha256(json.dumps(entries, sort_keys=True).encode()).hexdigest()[:16]
    print(f"{len(entries)} entries, sha256 {digest}")
    if not ns.compare:
        return 0
    before = json.loads(Path(ns.compare).read_text())
    differing = [k for k in sorted(set(before) | set(entries)) if before.get(k) != entries.get(k)]
    for key in differing[:40]:
        print(f"differs: {key}")
    print(f"{len(differing)} of {len(entries)} entries differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())

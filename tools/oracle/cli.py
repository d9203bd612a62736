"""`python -m tools.oracle`: the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from generator.render.spec import DEFAULT_VERSION as RECIPE_VERSION
from generator.verl.versions import parse

from .cases import Case, corpus_cases, rule_example_cases
from .compare import judge_ours, report, summary
from .environment import PINS, default_venv, ensure_venv
from .errors import OracleError
from .mutations import example_bases, mutation_cases
from .recipe_cases import recipe_cases
from .worker import run_verl

# The snapshots whose Megatron examples are the mutation bases of releases from 0.8.0 on.
EXAMPLE_TAGS = ("v0.9.0", "HEAD-2608")

REPO = Path(__file__).resolve().parents[2]


def default_shared() -> Path:
    return Path(os.environ.get("VERL_GEN_SHARED", REPO.parent / "shared"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.oracle", description="Compare gen check with verl's own config-load validation.")
    parser.add_argument("--verl-version", required=True, help="verl release to install and ask, e.g. 0.7.0")
    parser.add_argument("--mutations", type=int, default=0, help="random variations of valid configs (default 0)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--venv", type=Path, help="oracle environment (default ~/.cache/verl-gen/oracle-X)")
    parser.add_argument("--corpus", type=Path, help="corpus folder (default ../shared/corpus)")
    parser.add_argument("--config-tree", type=Path,
                        help="the release's repository tree for --config-path (default ../shared/verl-config/vX)")
    parser.add_argument("--no-corpus", action="store_true", help="leave out the corpus calls")
    parser.add_argument("--no-rule-examples", action="store_true",
                        help="leave out the rules' documented failing/passing examples")
    parser.add_argument("--recipes", type=int, default=0, metavar="EVERY",
                        help="also ask about the scripts `gen recipe --model M --gpus N` writes with no version "
                             "flag (every EVERY-th packaged model at each GPU count where it fits; 1 = all), "
                             "when this release is the one they are written for")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (each imports verl once)")
    parser.add_argument("--install-only", action="store_true", help="build the environment and stop")
    parser.add_argument("--verl-only", action="store_true", help="print verl's verdicts; do not compare")
    parser.add_argument("--json", type=Path, help="write every case with both verdicts to this file")
    args = parser.parse_args(argv)
    started = time.monotonic()
    version = args.verl_version.lstrip("vV")
    venv = args.venv or default_venv(version)
    try:
        if args.mutations < 0:
            raise OracleError("--mutations must be >= 0")
        if args.jobs < 1:
            raise OracleError("--jobs must be >= 1")
        if args.recipes < 0:
            raise OracleError("--recipes must be >= 0")
        if args.recipes and version != RECIPE_VERSION:
            raise OracleError(f"gen recipe writes for verl {RECIPE_VERSION} by default, not {version}: "
                              "--recipes checks the release they are written for")
        if version not in PINS:
            raise OracleError(f"no oracle recipe for verl {version}; known: {', '.join(sorted(PINS))}")
        took = ensure_venv(version, venv)
        print(f"oracle: environment {venv} " + ("reused" if took is None else f"built in {took:.0f} s"),
              file=sys.stderr)
        if args.install_only:
            return 0
        cases: list[Case] = []
        if not args.no_corpus:
            corpus = args.corpus or default_shared() / "corpus"
            tree = args.config_tree or default_shared() / "verl-config" / f"v{version}"
            found, notes = corpus_cases(corpus, version, tree if tree.is_dir() else None)
            for note in notes:
                print(f"oracle: {note}", file=sys.stderr)
            cases += found
        if not args.no_rule_examples:
            cases += rule_example_cases(version)
        if args.recipes:
            cases += recipe_cases(version, args.recipes)
        bases = None
        if args.mutations and parse(version) >= (0, 8, 0):
            # From 0.8.0 verl's Megatron examples run ppo_trainer model_engine=megatron: mutate
            # those (the 0.9.0 and HEAD-2608 snapshots'), not the 0.7.0-style bases.
            bases = example_bases(args.corpus or default_shared() / "corpus", EXAMPLE_TAGS, version)
            if not bases:
                raise OracleError("no Megatron example calls of v0.9.0 / HEAD-2608 in the corpus to mutate")
        cases += mutation_cases(args.mutations, args.seed, bases)
        if not cases:
            raise OracleError("no cases: the corpus has no calls for this release and --mutations is 0")
        if not args.verl_only:
            judge_ours(cases, version)
        log_path = venv / "worker.log"
        run_verl(cases, venv, args.jobs, venv, log_path)
    except OracleError as exc:
        print(f"oracle: error: {exc}", file=sys.stderr)
        return 2
    summary(cases)
    if args.json:
        args.json.write_text(json.dumps([
            {"case": c.ident, "note": c.note, "config_name": c.config_name, "config_dir": c.config_dir,
             "overrides": c.overrides, "verl": c.verl, "ours_reject": c.our_reject, "ours": c.our_reasons}
            for c in cases], indent=1))
    print(f"oracle: {len(cases)} cases in {time.monotonic() - started:.0f} s", file=sys.stderr)
    if args.verl_only:
        for case in cases:
            verdict = case.verl.get("verdict")
            print(f"{case.ident}: {verdict} {case.verl.get('stage') or ''} {case.verl.get('message', '')}".rstrip())
        return 0
    agree, compared = report(cases)
    recipes = [c for c in cases if c.ident.startswith("recipe:")]
    if recipes:
        accepted = sum(c.verl.get("verdict") == "accept" for c in recipes)
        print(f"recipes verl accepts {accepted}/{len(recipes)}")
        for case in recipes:
            if case.verl.get("verdict") != "accept":
                print(f"RECIPE {case.ident}: verl {case.verl.get('verdict')} {case.verl.get('stage') or ''} "
                      f"{case.verl.get('message', '')}".rstrip())
    print(f"agreement {agree}/{compared}")
    return 0 if agree == compared else 1

"""Our key verdicts agree with real Hydra compose on every `verl.trainer.main_ppo` call of the
corpus, against the config tree of the script's own snapshot.

Per call (each distinct (snapshot, config, overrides) once):
  * whole call: `hydra.compose(config_name, overrides)` fails  <=>  build_config reports an
    issue Hydra rejects (unknown-key, plus-on-existing, delete-missing, grammar, or a
    renamed/removed key written without `+`);
  * per override: the overrides Hydra rejects, found by applying them one by one with Hydra's
    own parser and `ConfigLoaderImpl._apply_overrides_to_config` to the composed base config
    (skipping each rejected one, as we do), are exactly the overrides we flag.

Unknown pieces of values (`<?unset:HOME>`) are replaced by the same neutral word on both sides.
Calls whose config does not compose even without overrides (a missing primary config) and
calls whose config name is unknown are counted and listed, not judged.
Budget: <= 150 s for all (one full compose per distinct call, ~0.25 s each); the default tier
takes every 24th distinct call.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from generator.config.apply import is_hydra_rejection, replace_markers
from generator.config.build import build_config
from generator.reading.launch_script import Invocation
from generator.schema import snapshot_version
from generator.reading.shell import read_file

ENTRY = "verl.trainer.main_ppo"


@dataclass
class Call:
    tag: str
    path: str
    invocation: Invocation


def _from_our_reader(corpus: Path) -> list[Call]:
    scripts = []
    for line in (corpus / "INVOCATIONS.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["entry"] == ENTRY and (record["tag"], record["path"]) not in scripts:
            scripts.append((record["tag"], record["path"]))
    calls = []
    for tag, path in scripts:
        script = read_file(str(corpus / "scripts" / tag / path))
        for invocation in script.invocations:
            if invocation.entry == ENTRY and invocation.branch != "dead":
                calls.append(Call(tag, path, invocation))
    return calls


def _config_dir(verl_config: Path, call: Call) -> Path:
    base = verl_config / call.tag
    config_path = call.invocation.config_path
    if config_path in (None, "config", "./config"):
        return base / "verl" / "trainer" / "config"
    return base / re.sub(r"^<\?[^>]*>/?", "", config_path)


class HydraOracle:
    """Real Hydra over one snapshot's config trees (imported lazily: it is heavy)."""

    def __init__(self, verl_config: Path) -> None:
        logging.disable(logging.WARNING)
        from hydra import compose, initialize_config_dir
        from hydra._internal.config_loader_impl import ConfigLoaderImpl
        from hydra.core.global_hydra import GlobalHydra
        from hydra.core.override_parser.overrides_parser import OverridesParser

        self.verl_config = verl_config
        self._compose, self._init, self._global = compose, initialize_config_dir, GlobalHydra
        self._apply = ConfigLoaderImpl._apply_overrides_to_config
        self._parser = OverridesParser.create()
        self._bases: dict[tuple[str, str, str], object] = {}
        self.composes = 0
        self._cwd = os.getcwd()
        self._context = None
        self._current: tuple[str, str] | None = None

    def _enter(self, tag: str, config_dir: Path) -> None:
        """Keep one Hydra context per (snapshot, config dir): initialising costs ~0.1 s."""
        if self._current == (tag, str(config_dir)):
            return
        self.close()
        os.chdir(self.verl_config / tag)  # recipe configs use file://verl/trainer/config
        self._global.instance().clear()
        self._context = self._init(config_dir=str(config_dir), version_base=None)
        self._context.__enter__()
        self._current = (tag, str(config_dir))

    def close(self) -> None:
        if self._context is not None:
            self._context.__exit__(None, None, None)
            self._context = None
        self._global.instance().clear()
        self._current = None
        os.chdir(self._cwd)

    def compose(self, tag: str, config_dir: Path, name: str, overrides: list[str]):
        """The composed config, or the exception Hydra raised."""
        self.composes += 1
        self._enter(tag, config_dir)
        try:
            return self._compose(name, overrides=overrides)
        except Exception as err:  # noqa: BLE001 - any failure is the verdict
            return err

    def rejected(self, tag: str, config_dir: Path, name: str, overrides: list[str]) -> list[int] | None:
        """Indices Hydra rejects, applying overrides in order and skipping rejected ones;
        None when the config does not compose without overrides."""
        from omegaconf import OmegaConf

        key = (tag, str(config_dir), name)
        if key not in self._bases:
            self._bases[key] = self.compose(tag, config_dir, name, [])
        base = self._bases[key]
        if isinstance(base, Exception):
            return None
        cfg = copy.deepcopy(base)
        OmegaConf.set_struct(cfg, True)
        bad: list[int] = []
        accepted: list = []
        for index, text in enumerate(overrides):
            try:
                parsed = self._parser.parse_overrides([text])
                if any(o.is_sweep_override() for o in parsed):
                    raise ValueError("sweep")
                self._apply(parsed, cfg)
                accepted += parsed
            except Exception:  # noqa: BLE001
                bad.append(index)
                # A refused override may leave half-made nodes; rebuild from what was accepted.
                cfg = copy.deepcopy(base)
                OmegaConf.set_struct(cfg, True)
                self._apply(accepted, cfg)
        return bad


def _verdicts_for(items: list[tuple[str, str, str, tuple[str, ...]]], verl_config: Path) -> tuple[dict, int]:
    """Hydra's verdicts for (snapshot, config dir, config name, overrides) items, in one process."""
    oracle = HydraOracle(verl_config)
    out: dict[tuple, tuple[bool | None, list[int] | None]] = {}
    try:
        for item in items:
            tag, config_dir, name, texts = item
            rejected = oracle.rejected(tag, Path(config_dir), name, list(texts))
            whole = None
            if rejected is not None:
                whole = not isinstance(oracle.compose(tag, Path(config_dir), name, list(texts)), Exception)
            out[item] = (whole, rejected)
    finally:
        oracle.close()
    return out, oracle.composes


def _all_verdicts(items: list[tuple[str, str, str, tuple[str, ...]]], verl_config: Path) -> tuple[dict, int]:
    """Spread the composes over worker processes (VERL_GEN_TEST_JOBS, default: up to 2 CPUs),
    keeping each (snapshot, config dir) group in one worker so its Hydra context is reused."""
    import multiprocessing

    jobs = int(os.environ.get("VERL_GEN_TEST_JOBS", min(2, os.cpu_count() or 1)))
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return _verdicts_for(items, verl_config)
    groups: dict[tuple[str, str], list] = {}
    for item in items:
        groups.setdefault((item[0], item[1]), []).append(item)
    buckets: list[list] = [[] for _ in range(jobs)]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(buckets, key=len).extend(group)
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        results = pool.starmap(_verdicts_for, [(bucket, verl_config) for bucket in buckets if bucket])
    merged: dict = {}
    for verdicts, _ in results:
        merged.update(verdicts)
    return merged, sum(count for _, count in results)


# every 24th distinct call in the default tier (~15 composes); all of them under `slow`
@pytest.mark.parametrize("every, at_least", [pytest.param(24, 12, id="sample"),
                                             pytest.param(1, 300, id="all", marks=pytest.mark.slow)])
def test_key_verdicts_agree_with_hydra_compose(corpus_dir: Path, verl_config_dir: Path, every: int,
                                               at_least: int) -> None:
    calls = _from_our_reader(corpus_dir)
    judged: list[tuple[Call, tuple[str, str, str, tuple[str, ...]]]] = []
    skipped: list[str] = []
    for call in calls:
        name = call.invocation.config_name or "ppo_trainer"
        if "<?" in name:
            skipped.append(f"{call.tag} {call.path}: config name {name} is unknown")
            continue
        name = name[:-5] if name.endswith(".yaml") else name
        texts = tuple(replace_markers(o.text) for o in call.invocation.overrides)
        judged.append((call, (call.tag, str(_config_dir(verl_config_dir, call)), name, texts)))
    items = sorted({item for _, item in judged})[::every]
    chosen = set(items)
    judged = [(call, item) for call, item in judged if item in chosen]
    verdicts, composes = _all_verdicts(items, verl_config_dir)

    # The snapshot's config tree is what a user names with --config-dir: trusted, like the CLI does,
    # though it lies outside the corpus script's folder (the project boundary of issue 21).
    from generator.base import boundary

    boundary.trust(verl_config_dir)
    agree, disagreements = 0, []
    for call, item in judged:
        invocation = call.invocation
        whole, rejected = verdicts[item]
        if rejected is None:
            skipped.append(f"{call.tag} {call.path}: {item[2]} does not compose without overrides")
            continue
        # The harness itself must be consistent: a full compose fails iff some override is rejected.
        assert whole == (not rejected), (call.tag, call.path, rejected)
        config = build_config(invocation, version=snapshot_version(call.tag),
                              config_root=str(verl_config_dir / call.tag))
        ours = sorted({invocation.overrides.index(i.override) for i in config.key_issues if is_hydra_rejection(i)})
        if ours == sorted(rejected):
            agree += 1
        else:
            disagreements.append(
                f"{call.tag} {call.path}: hydra rejects {[item[3][i] for i in rejected]}, "
                f"we flag {[(i.kind, i.override.text) for i in config.key_issues if is_hydra_rejection(i)]}"
            )
    total = agree + len(disagreements)
    print(f"\ncompose-corpus: {len(calls)} calls, {len(items)} distinct, judged {total}, "
          f"agree {agree}, skipped {len(skipped)}, hydra composes {composes}")
    for line in skipped:
        print("  skipped:", line)
    assert total >= at_least, f"too few calls judged ({total}); is the corpus complete?"
    assert not disagreements, "\n".join(disagreements)

"""verl's own Megatron examples of v0.8.0, v0.9.0 and HEAD-2608, each checked with no flags inside a
layout of its own snapshot (its verl/trainer/config and verl/version/version, as
tests/test_config_resolution_corpus.py builds them): a key finding (VK6xx) names only an override
that real Hydra refuses when it composes that call with the snapshot's config.

Each call's overrides (as verl-gen's reader sees them) are composed with hydra-core's own
`compose` (the call verl's @hydra.main makes), with the call's config-group selections
(`model_engine=megatron`) plus the one override a finding names. Since 0.8.0 these examples all
select the Megatron engine with `model_engine=megatron` (ppo_megatron_trainer.yaml is a shim), so
this is the test that group selections are composed as verl composes them.
"""

from __future__ import annotations

import csv
import re
import shutil
from pathlib import Path

import pytest

from generator.config.apply import replace_markers
from generator.reading.overrides import parse_override
from generator.judging import check_script
from generator.schema.groups import group_dirs
from generator.reading.shell import read_script
from generator.verl.constants import PPO_ENTRY

pytestmark = pytest.mark.corpus

TAGS = ("v0.8.0", "v0.9.0", "HEAD-2608")
VERSION_FILE = {"v0.8.0": "0.8.0.dev", "v0.9.0": "0.9.0", "HEAD-2608": "0.10.0.dev"}
# Hydra refusals: unknown key, '+' on an existing key, '~' on a missing one, grammar, removed/renamed.
KEY_CODES = ("VK601", "VK602", "VK603", "VK604", "VK605", "VK606", "VK610")


def _megatron_examples(corpus_dir: Path) -> dict[str, list[tuple[str, Path]]]:
    """tag -> (path in the snapshot, the stored script) for every Megatron script of the tag."""
    with open(corpus_dir / "INDEX.tsv", encoding="utf-8") as handle:
        backend = {row["sha1"]: row["backend"] for row in csv.DictReader(handle, delimiter="\t")}
    out: dict[str, list[tuple[str, Path]]] = {tag: [] for tag in TAGS}
    with open(corpus_dir / "OCCURRENCES.tsv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["tag"] in out and backend.get(row["sha1"]) == "megatron":
                out[row["tag"]].append((row["path"], corpus_dir / "scripts" / row["first_tag"] / row["first_path"]))
    return out


@pytest.fixture(scope="module")
def checked(corpus_dir: Path, verl_config_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """(tag, path, invocation, config, findings, config dir) for every live call of every example."""
    root = tmp_path_factory.mktemp("megatron-checkouts")
    out = []
    for tag, scripts in _megatron_examples(corpus_dir).items():
        checkout = root / tag
        package = checkout / "verl"
        (package / "version").mkdir(parents=True)
        (checkout / ".git").mkdir()  # a clone: without a project mark a folder is no project (issue 34)
        (package / "version" / "version").write_text(VERSION_FILE[tag] + "\n")
        # a copy, not a link: a link out of the checkout is outside the project (generator.base.boundary)
        shutil.copytree(verl_config_dir / tag / "verl" / "trainer", package / "trainer")
        for rel, stored in scripts:
            target = checkout / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(stored, target)
            script = read_script(target.read_bytes(), str(target))
            for invocation, config, findings in check_script(script):
                if invocation is None or config is None:
                    continue
                out.append((tag, rel, invocation, config, findings, package / "trainer" / "config"))
    return out


@pytest.fixture(scope="module", autouse=True)
def _parse_each_yaml_once():
    """Hydra parses every YAML file of the defaults tree again on each compose (most of its
    time); parse each file once and give Hydra a fresh node built from a copy each time, the
    same object OmegaConf.load builds (tools/oracle's worker does the same, and its tests show it
    changes no verdict)."""
    import copy
    import os

    import yaml
    from omegaconf import OmegaConf
    from omegaconf._utils import get_yaml_loader

    original = OmegaConf.load
    parsed: dict[tuple[str, int], object] = {}

    def load(file_):
        name = getattr(file_, "name", file_)
        if not isinstance(name, (str, Path)) or not os.path.isfile(name):
            return original(file_)
        key = (os.path.abspath(name), os.stat(name).st_mtime_ns)
        if key not in parsed:
            with open(key[0], encoding="utf-8") as handle:
                parsed[key] = yaml.load(handle, Loader=get_yaml_loader())
        obj = parsed[key]
        return OmegaConf.create() if obj is None else OmegaConf.create(copy.deepcopy(obj))

    OmegaConf.load = staticmethod(load)
    yield
    OmegaConf.load = original


class _Hydra:
    def __init__(self) -> None:
        self.dir: str | None = None
        self.cache: dict[tuple[str, str, tuple[str, ...]], str | None] = {}
        self.trees: dict[tuple[str, str, tuple[str, ...]], object] = {}

    def composed(self, config_dir: Path, name: str, overrides: list[str]) -> object:
        """Hydra's composed config (an OmegaConf DictConfig), or None when it refuses."""
        key = (str(config_dir), name, tuple(overrides))
        if key not in self.trees:
            self.refusal(config_dir, name, overrides)
        return self.trees.get(key)

    def refusal(self, config_dir: Path, name: str, overrides: list[str]) -> str | None:
        """Hydra's error composing `name` with `overrides`, or None when it composes."""
        from hydra import compose, initialize_config_dir
        from hydra.core.global_hydra import GlobalHydra

        key = (str(config_dir), name, tuple(overrides))
        if key in self.cache:
            return self.cache[key]
        if self.dir != str(config_dir):
            GlobalHydra.instance().clear()
            initialize_config_dir(config_dir=str(config_dir), version_base=None)
            self.dir = str(config_dir)
        try:
            self.trees[key] = compose(config_name=name, overrides=overrides)
            answer = None
        except Exception as exc:  # noqa: BLE001 - Hydra's refusal is the answer
            answer = f"{type(exc).__name__}: {exc}"
        self.cache[key] = answer
        return answer


def _words(invocation, config_dir: Path) -> tuple[list[str], dict[int, str]]:
    """The call's group selections, and every override's word (unknown parts replaced by a
    neutral word, as verl-gen checks them), by id."""
    dirs = group_dirs(config_dir)
    groups, words = [], {}
    for o in invocation.overrides:
        text = replace_markers(o.text)
        words[id(o)] = text
        parsed = parse_override(text)
        if not parsed.error and parsed.key in dirs and parsed.op != "~":
            groups.append(text)
    return groups, words


def _not_a_field(cfg: object, message: str) -> bool:
    from omegaconf import OmegaConf

    found = re.search(r"adds '([\w-]+)' to ([\w.]+)", message)
    if cfg is None or found is None:
        return False
    section = OmegaConf.select(cfg, found.group(2))
    return section is not None and "_target_" in section and found.group(1) not in section


def test_key_findings_only_where_hydra_refuses(checked) -> None:
    hydra = _Hydra()
    calls = compared = findings_seen = 0
    wrong: list[str] = []
    for tag, rel, invocation, config, findings, config_dir in checked:
        if invocation.entry != PPO_ENTRY or config.config_dir is not None:
            continue  # a recipe's own config: not verl's tree
        calls += 1
        name = config.schema
        groups, words = _words(invocation, config_dir)
        by_line: dict[tuple[int, str], list] = {}
        for o in invocation.overrides:
            by_line.setdefault((o.line, o.key), []).append(o)
        for finding in findings:
            if finding.code not in KEY_CODES or finding.severity == "info":
                continue
            findings_seen += 1
            candidates = [o for o in invocation.overrides if o.key == finding.key and o.line == finding.line] or \
                [o for o in invocation.overrides if o.key == finding.key]
            if not candidates:
                continue
            compared += 1
            word = words[id(candidates[0])]
            if finding.code == "VK610":
                # Hydra adds the key ('+'); verl then builds the section as a dataclass that has no
                # such field. Real when Hydra's own composition of the call's groups gives that
                # section a _target_ and no such field.
                if not _not_a_field(hydra.composed(config_dir, name, groups), finding.message):
                    wrong.append(f"{tag} {rel}:{finding.line} {finding.code} {finding.message[:160]}")
                continue
            extra = [] if word in groups else [word]
            if hydra.refusal(config_dir, name, [*groups, *extra]) is None:
                wrong.append(f"{tag} {rel}:{finding.line} {finding.code} {finding.message[:160]}")
    print(f"\n{calls} calls of the v0.8.0/v0.9.0/HEAD-2608 Megatron examples; {findings_seen} key findings, "
          f"{compared} composed with Hydra; {len(wrong)} on keys Hydra accepts")
    assert calls >= 60
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_every_call_hydra_composes_has_no_key_error(checked) -> None:
    """The converse, on whole calls: where Hydra composes every override of the call (a value the
    reader could not see stands as a neutral word; Hydra does not type these YAML nodes), verl-gen
    reports no key error on it either."""
    hydra = _Hydra()
    clean = 0
    wrong: list[str] = []
    for tag, rel, invocation, config, findings, config_dir in checked:
        if invocation.entry != PPO_ENTRY or config.config_dir is not None:
            continue
        groups, words = _words(invocation, config_dir)
        if hydra.refusal(config_dir, config.schema, list(words.values())) is not None:
            continue
        clean += 1
        errors = [f for f in findings if f.code in KEY_CODES and f.severity == "error"]
        if errors:
            wrong.append(f"{tag} {rel}: {[f.code + ' ' + f.message[:120] for f in errors]}")
    print(f"\n{clean} whole calls Hydra composes")
    assert clean >= 10
    assert not wrong, "\n".join(wrong)

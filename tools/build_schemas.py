#!/usr/bin/env python3
"""Build the packaged verl config schemas in generator/schema/data/ from verl's own YAML.

    python tools/build_schemas.py                      # every packaged release (generator.schema.packaged_releases)
    python tools/build_schemas.py --release 0.7.0      # one release (repeatable)
    python tools/build_schemas.py --from-dir /work/shared/verl-config/HEAD/verl/trainer/config \
        --id 0.7.0+b178a3c --source "verl b178a3c (corpus snapshot HEAD)"
    python tools/build_schemas.py --wheel-dir /tmp/wheels   # reuse downloaded wheels

For each release it downloads the published wheel (`pip download verl==X --no-deps`), reads
`verl/trainer/config/_generated_ppo{,_megatron}_trainer.yaml` when the wheel ships them, and
composes `ppo{,_megatron}_trainer.yaml` with real Hydra (hydra.compose, as verl's @hydra.main does;
the _generated files, or generator.schema.compose, only when Hydra cannot compose the tree), and
records what every config-group selection changes (tools/schema_groups.py). The output is one JSON
per schema id:

    {"format": 1, "version": "0.7.0", "source": "...",
     "configs": {"ppo_trainer": {dotted_key: default, ...}, "ppo_megatron_trainer": {...}},
     "mandatory": {"ppo_trainer": [...], ...},
     "groups": {"ppo_trainer": {"choices": ..., "appends": ..., "dirs": [...]}, ...}}

Interpolations (`${oc.select:...}`) are kept verbatim; `???` values are listed as mandatory
(and kept as "???" in the defaults). Nothing here is imported at run time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from generator.schema.compose import compose, flatten  # noqa: E402
from generator.schema.yamlload import load_yaml_text  # noqa: E402
from generator.schema.releases import packaged_releases  # noqa: E402

CONFIG_NAMES = ("ppo_trainer", "ppo_megatron_trainer")
OUT_DIR = REPO / "generator" / "schema" / "data"
PREFIX = "verl/trainer/config/"


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return {"__float__": repr(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def schema_document(version: str, source: str, trees: dict[str, dict[str, Any]],
                    groups: dict[str, Any] | None = None) -> dict[str, Any]:
    configs: dict[str, dict[str, Any]] = {}
    mandatory: dict[str, list[str]] = {}
    for name, tree in trees.items():
        flat = flatten(tree)
        configs[name] = {k: _jsonable(v) for k, v in sorted(flat.items())}
        mandatory[name] = sorted(k for k, v in flat.items() if v == "???")
    doc = {"format": 1, "version": version, "source": source, "configs": configs, "mandatory": mandatory}
    if groups:
        doc["groups"] = _jsonable(groups)
    return doc


def groups_from_dir(config_dir: Path, names: list[str]) -> dict[str, Any]:
    """Each config's group selections, composed with Hydra; {} for a tree Hydra cannot compose."""
    from tools.schema_groups import group_document

    out: dict[str, Any] = {}
    for name in names:
        try:
            out[name] = group_document(config_dir, name)
        except Exception as exc:  # noqa: BLE001 - an old tree Hydra refuses still gets its keys
            print(f"note: {name}: no group selections ({type(exc).__name__}: {exc})", file=sys.stderr)
    return out


def trees_from_dir(config_dir: Path) -> dict[str, dict[str, Any]]:
    from tools.schema_groups import hydra_tree

    trees = {}
    for name in CONFIG_NAMES:
        generated = config_dir / f"_generated_{name}.yaml"
        if not (config_dir / f"{name}.yaml").is_file():
            continue
        try:
            trees[name] = hydra_tree(config_dir, name)
            continue
        except Exception as exc:  # noqa: BLE001 - fall back to verl's own flattened print
            print(f"note: {name}: Hydra cannot compose it ({type(exc).__name__}); using the YAML merge",
                  file=sys.stderr)
        if generated.is_file():
            trees[name] = load_yaml_text(generated.read_text(encoding="utf-8")) or {}
        elif (config_dir / f"{name}.yaml").is_file():
            trees[name] = compose(config_dir, name)
    if not trees:
        raise SystemExit(f"error: no ppo_trainer/ppo_megatron_trainer config in {config_dir}")
    return trees


def download_wheel(version: str, wheel_dir: Path) -> Path:
    found = sorted(wheel_dir.glob(f"verl-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"verl=={version}", "--no-deps", "-q", "-d", str(wheel_dir)],
            check=True,
        )
        found = sorted(wheel_dir.glob(f"verl-{version}-*.whl"))
    if not found:
        raise SystemExit(f"error: pip did not produce a wheel for verl=={version}")
    return found[0]


def trees_from_wheel(wheel: Path, scratch: Path) -> dict[str, dict[str, Any]]:
    with zipfile.ZipFile(wheel) as archive:
        members = [n for n in archive.namelist() if n.startswith(PREFIX) and n.endswith((".yaml", ".yml"))]
        archive.extractall(scratch, members)
    return trees_from_dir(scratch / PREFIX)


def write(doc: dict[str, Any], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{doc['version']}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--release", action="append", help="release to build (default: all)")
    parser.add_argument("--from-dir", type=Path, help="build one schema from a config tree")
    parser.add_argument("--id", help="schema id for --from-dir (e.g. 0.7.0+b178a3c)")
    parser.add_argument("--source", help="provenance text for --from-dir")
    parser.add_argument("--wheel-dir", type=Path, help="where wheels are (or get) downloaded")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)

    if args.from_dir:
        if not args.id:
            parser.error("--from-dir needs --id")
        trees = trees_from_dir(args.from_dir)
        doc = schema_document(args.id, args.source or str(args.from_dir), trees,
                              groups_from_dir(args.from_dir, list(trees)))
        print(write(doc, args.out))
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        wheel_dir = args.wheel_dir or Path(tmp) / "wheels"
        wheel_dir.mkdir(parents=True, exist_ok=True)
        for version in args.release or packaged_releases():
            wheel = download_wheel(version, wheel_dir)
            scratch = Path(tmp) / f"x-{version}"
            trees = trees_from_wheel(wheel, scratch)
            doc = schema_document(version, f"verl {version} wheel ({wheel.name})", trees,
                                  groups_from_dir(scratch / PREFIX, list(trees)))
            path = write(doc, args.out)
            sizes = ", ".join(f"{k}: {len(v)} keys" for k, v in doc["configs"].items())
            print(f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}  ({sizes})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

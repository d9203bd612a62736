"""Write generator/data/dataclass_fields.json: the fields of every dataclass verl defines, per
release, read from verl's source at its release tag (ast only; nothing is imported or run).

VK610 (rules/keys.py) uses them to tell a '+key' that adds a field the section's dataclass has
(accepted) from one it does not have (the dataclass refuses it when verl builds the section from
its `_target_`). Usage: python tools/dataclass_fields.py VERL_GIT_DIR TAG [TAG ...]
"""

from __future__ import annotations

import ast
import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "generator" / "data" / "dataclass_fields.json"
# The config sections a PPO call builds as dataclasses: `omega_conf_to_dataclass(<...>config.X)`
# in the trainer and config validation (both worker paths), in the legacy workers, in the new engine's.
BUILD_CALL = re.compile(r"omega_conf_to_dataclass\(\s*(?:self\.)?config\.([\w.]+)")
COMMON_FILES = re.compile(r"^verl/(trainer/main_ppo\.py|trainer/ppo/[\w/]+\.py|utils/config\.py)$")
LEGACY_FILES = re.compile(r"^verl/workers/(fsdp|megatron)_workers\.py$")
ENGINE_FILES = re.compile(r"^verl/workers/engine_workers\.py$")


def _is_dataclass(node: ast.ClassDef) -> bool:
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def _classes(source: str) -> dict[str, tuple[list[str], list[str], bool]]:
    """class name -> (own annotated fields, base names, is a dataclass)."""
    found: dict[str, tuple[list[str], list[str], bool]] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields = [stmt.target.id for stmt in node.body
                  if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                  and not (isinstance(stmt.annotation, ast.Subscript)
                           and getattr(stmt.annotation.value, "id", "") == "ClassVar")]
        bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
        found[node.name] = (fields, [b for b in bases if b], _is_dataclass(node))
    return found


def release_fields(git_dir: str, tag: str) -> dict[str, list[str]]:
    """Every dataclass's fields (inherited ones included) and, under "_built_legacy" /
    "_built_engine", the config sections each worker path builds from its `_target_`."""
    archive = subprocess.run(["git", "--git-dir", git_dir, "archive", tag, "verl"], check=True,
                             capture_output=True).stdout
    classes: dict[str, tuple[list[str], list[str], bool]] = {}
    built: dict[str, set[str]] = {"common": set(), "legacy": set(), "engine": set()}
    seen: set[str] = set()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if not member.name.endswith(".py"):
                continue
            handle = tar.extractfile(member)
            if handle is None:
                continue
            source = handle.read().decode("utf-8", "replace")
            for group, pattern in (("common", COMMON_FILES), ("legacy", LEGACY_FILES), ("engine", ENGINE_FILES)):
                if pattern.match(member.name):
                    seen.add(group)
                    built[group] |= set(BUILD_CALL.findall(source))
            if "dataclass" not in source:
                continue
            for name, info in _classes(source).items():
                if name in classes:  # two classes of one name: keep the union (fewer false alarms)
                    old = classes[name]
                    info = (sorted(set(old[0]) | set(info[0])), sorted(set(old[1]) | set(info[1])), old[2] or info[2])
                classes[name] = info

    def all_fields(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if name not in classes or name in seen:
            return set()
        own, bases, _ = classes[name]
        out = set(own)
        for base in bases:
            out |= all_fields(base, seen | {name})
        return out

    out = {name: sorted(all_fields(name)) for name, (_f, _b, is_dc) in sorted(classes.items()) if is_dc}
    # A release without the legacy workers runs every call on the new engine's.
    out["_built_legacy"] = sorted(built["common"] | built["legacy" if "legacy" in seen else "engine"])
    out["_built_engine"] = sorted(built["common"] | built["engine"])
    return out


def main(argv: list[str]) -> int:
    git_dir, tags = argv[0], argv[1:]
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    for tag in tags:
        data[tag.removeprefix("v")] = release_fields(git_dir, tag)
    lines = ["{"]
    for r, release in enumerate(sorted(data)):
        lines.append(f" {json.dumps(release)}: {{")
        names = sorted(data[release])
        for c, name in enumerate(names):
            comma = "," if c < len(names) - 1 else ""
            lines.append(f"  {json.dumps(name)}: {json.dumps(data[release][name])}{comma}")
        lines.append(" }" + ("," if r < len(data) - 1 else ""))
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

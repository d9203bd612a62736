"""Import verl's own Megatron examples of the 0.8 / 0.9 releases as version-stamped recipes
(recipes/example-*.yaml), with `gen import`'s own code.

    python tools/import_verl_examples.py [--corpus ../shared/corpus/scripts] [--out recipes] [--check]

Sources: the corpus snapshots v0.8.0, v0.9.0 and HEAD-2608 (verl main 1dda039 of 2026-08-22,
0.10.0.dev, judged against the newest packaged release 0.9.1 as generator.schema.releases maps it),
every `examples/*/*megatron*.sh` (Megatron-Lite and MindSpeed variants are other engines). A file
with the same content in several snapshots becomes one recipe stamped with each of their releases;
a file whose content changed becomes one recipe per content. Scripts the importer refuses (a model
not in the registry, a model path only known at run time, an algorithm the recipes cannot express,
a setup our checks reject) are listed with the reason and left out. The recipes are tagged
`verl-example`, never `verl-tested`: verl ships the script, nobody here measured it; one our
memory model predicts not to fit its GPUs is also tagged `predicted-over` (generator.library.verdict),
and `gen recipe NAME` renders it only with --force.
`--check` exits 1 when a committed file differs from what the importer writes now.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# (corpus snapshot, the packaged release its scripts are stamped and checked with)
SNAPSHOTS: tuple[tuple[str, str], ...] = (("v0.8.0", "0.8.0"), ("v0.9.0", "0.9.0"), ("HEAD-2608", "0.9.1"))
# what a recipe name says of the snapshot it was first seen in
LABELS = {"v0.8.0": "0.8.0", "v0.9.0": "0.9.0", "HEAD-2608": "main2608"}
OTHER_ENGINES = ("megatron_lite", "mindspeed")
# not "verl-": those are the hand-written layouts verl tested (tests/test_library.py labels them)
PREFIX = "example-"


@dataclass
class Source:
    rel: str  # examples/<dir>/<file>.sh
    digest: str
    found_in: list[tuple[str, str]] = field(default_factory=list)  # (snapshot, release)


def sources(corpus: Path) -> list[Source]:
    by_content: dict[tuple[str, str], Source] = {}
    for snapshot, release in SNAPSHOTS:
        root = corpus / snapshot
        for path in sorted(root.glob("examples/*/*megatron*.sh")):
            if any(word in path.name for word in OTHER_ENGINES):
                continue
            rel = str(path.relative_to(root))
            digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
            item = by_content.setdefault((rel, digest), Source(rel, digest))
            item.found_in.append((snapshot, release))
    return list(by_content.values())


def recipe_name(source: Source) -> str:
    folder, file = source.rel.split("/")[1:3]
    stem = file.removesuffix(".sh").removeprefix("run_").removesuffix("_megatron")
    first = LABELS[source.found_in[0][0]]
    text = f"{PREFIX}{first}-{folder.removesuffix('_trainer')}-{stem}".lower().replace("_", "-")
    return "".join(ch for ch in text if ch.isalnum() or ch in "-.")


def import_one(corpus: Path, source: Source, workdir: Path) -> tuple[str, str]:
    """(recipe name, YAML text) or InputError with the importer's reason."""
    from ruamel.yaml import YAML

    from generator.library.importer import dump_recipe_yaml, import_script

    snapshot, release = source.found_in[0]
    name = recipe_name(source)
    path, _notes = import_script(str(corpus / snapshot / source.rel), name=name, library=str(workdir),
                                 version=release, force=True)
    mapping = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    releases = sorted({r for _, r in source.found_in}, key=lambda v: tuple(int(p) for p in v.split(".")))
    places = ", ".join(f"{s}" for s, _ in source.found_in)
    mapping["verl_versions"] = releases
    mapping["tags"] = ["verl-example"] + [t for t in mapping.get("tags", []) if t not in ("imported", "verl-example")]
    mapping["description"] = mapping["description"].replace("imported from a launch script",
                                                            f"verl's own {source.rel.split('/')[1]} example")
    mapping["provenance"] = (f"verl {source.rel} (corpus snapshots {places}; sha256 {source.digest}), "
                             "imported by tools/import_verl_examples.py")
    header = (f"verl's own example {source.rel} @ {places}, as `gen import` reads it.\n"
              "Regenerate with tools/import_verl_examples.py; do not edit by hand.")
    return name, dump_recipe_yaml(mapping, header=header)


def over_tag(name: str, text: str, where: Path) -> str:
    """The recipe text with `predicted-over` added when our memory model says it does not fit."""
    from generator.library.store import read_recipe
    from generator.library.verdict import OVER_TAG, recipe_verdict

    path = where / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    verdict = recipe_verdict(read_recipe(path, origin="packaged"))
    if verdict is None or verdict.fits:
        return text
    return text.replace("tags: [verl-example", f"tags: [verl-example, {OVER_TAG}", 1)


def check_stamps(name: str, text: str, where: Path) -> list[str]:
    """Problems of the recipe on each release it is stamped with (key issues, loud findings)."""
    from generator.library.convert import recipe_model, to_config
    from generator.library.store import read_recipe
    from generator.judging import check_config

    path = where / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    recipe = read_recipe(path, origin="packaged")
    problems = []
    for version in recipe.verl_versions:
        config = to_config(recipe, version)
        problems += [f"{version}: {i.kind} {i.override.key}" for i in config.key_issues]
        problems += [f"{version}: {f.code} {f.message}" for f in check_config(config, model=recipe_model(recipe))
                     if f.severity in ("error", "warning")]
    return problems


def main(argv: list[str] | None = None) -> int:
    from generator.base.errors import InputError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(REPO.parent / "shared" / "corpus" / "scripts"))
    parser.add_argument("--out", default=str(REPO / "recipes"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    corpus, out = Path(args.corpus), Path(args.out)
    written: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for source in sources(corpus):
            where = f"{source.rel} @ {', '.join(s for s, _ in source.found_in)}"
            try:
                name, text = import_one(corpus, source, workdir)
            except InputError as err:
                print(f"skipped {where}: {str(err).split('cannot import: ', 1)[-1]}")
                continue
            problems = check_stamps(name, text, workdir)
            if problems:
                print(f"skipped {where}: {'; '.join(problems[:2])}")
                continue
            written[name] = over_tag(name, text, workdir)
            print(f"{'checked' if args.check else 'wrote'} {name}  ({where})")
    stale = []
    for name, text in sorted(written.items()):
        target = out / f"{name}.yaml"
        if args.check:
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            target.write_text(text, encoding="utf-8")
    gone = sorted(p.stem for p in out.glob(f"{PREFIX}*.yaml") if p.stem not in written)
    if args.check and (stale or gone):
        print(f"out of date: {', '.join(stale + gone)}", file=sys.stderr)
        return 1
    for name in gone if not args.check else ():
        (out / f"{name}.yaml").unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Write generator/data/verl_requirements.json: which verl releases each version of verl's own
`requirements.txt` belongs to, read from a git clone of verl. A project that copied verl's
requirements file (forks and agent frameworks built on verl do, without a `verl==` pin) names its
release by that file's content (generator.schema.requirements_release).

    python tools/verl_requirements.py /path/to/verl.git   # a clone or bare mirror with the release tags

Each content that requirements.txt had on verl's history is entered under its fingerprint
(generator.schema.requirements_release.fingerprint) with the releases it may be: from the newest
release tag at or before the first commit that had it, to the tag of the first release after the
last commit that had it (open-ended when no later tag changed it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from generator.schema.requirements_release import fingerprint  # noqa: E402
from generator.verl.versions import parse  # noqa: E402

OUT = ROOT / "generator" / "data" / "verl_requirements.json"


def _git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def _release_tags(repo: str) -> list[tuple[str, str, int]]:
    """(release, tag, commit time) of each release tag (v0.4.1, v0.3.0.post0; not a release
    candidate), oldest first. A release's first tag stands for it."""
    out: dict[str, tuple[str, str, int]] = {}
    for tag in sorted(_git(repo, "tag").split(), key=lambda t: parse(t) if t[1:2].isdigit() else (0,)):
        name = tag.lstrip("v")
        if not name[:1].isdigit() or not all(part.isdigit() or part.startswith("post") for part in name.split(".")):
            continue
        release = ".".join(str(p) for p in parse(name))
        if release not in out:
            out[release] = (release, tag, int(_git(repo, "log", "-1", "--format=%ct", tag).strip()))
    return sorted(out.values(), key=lambda item: parse(item[0]))


def _merge(table: dict[str, list[str | None]], key: str, first: str | None, last: str | None) -> None:
    old = table.get(key)
    if old is not None:
        first = None if old[0] is None or first is None else min(old[0], first, key=parse)
        last = None if old[1] is None or last is None else max(old[1], last, key=parse)
    table[key] = [first, last]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tools/verl_requirements.py VERL_GIT_REPO", file=sys.stderr)
        return 2
    repo = argv[0]
    tags = _release_tags(repo)
    table: dict[str, list[str | None]] = {}
    # Each release's own file is that release (release branches are not on the main history).
    for release, tag, _time in tags:
        try:
            _merge(table, fingerprint(_git(repo, "show", f"{tag}:requirements.txt")), release, release)
        except subprocess.CalledProcessError:
            continue
    # Each state of the file on the main history: from the newest release tagged before the commit
    # that wrote it (its code is that release or a later development state) to the first release
    # tagged after the next change (a state just before that change may be that release's
    # development state); open-ended when no release came after the next change yet.
    changes = [line.split() for line in _git(repo, "log", "--reverse", "--format=%H %ct", "HEAD", "--",
                                             "requirements.txt").splitlines()]
    for index, (commit, when) in enumerate(changes):
        try:
            text = _git(repo, "show", f"{commit}:requirements.txt")
        except subprocess.CalledProcessError:
            continue  # the commit removed it
        before = [r for r, _tag, t in tags if t <= int(when)]
        last: str | None = None
        if index + 1 < len(changes):
            after = [r for r, _tag, t in tags if t >= int(changes[index + 1][1])]
            last = after[0] if after else None
        _merge(table, fingerprint(text), before[-1] if before else None, last)
    OUT.write_text(json.dumps({"_source": f"requirements.txt of verl's release tags {tags[0][0]}..{tags[-1][0]} and "
                                          f"of its {len(changes)} changes on the main history",
                               "fingerprints": dict(sorted(table.items()))}, indent=1) + "\n", encoding="utf-8")
    print(f"{len(table)} contents of requirements.txt written to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

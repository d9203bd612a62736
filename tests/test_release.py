"""The release as a new user meets it (issue 36): from a tagged clone, `python -m build` writes a
wheel and an sdist that carry the docs; the wheel installed in a fresh venv prints `gen rule
VB106` whole and every doc link resolves there (`gen doc ...`); and the pre-commit hooks run from
the tag on a small repository, as the snippet in docs/cli.md pins them.

Slow tier: each builds environments from the package registry. A step that cannot install its
tool (no registry) skips, saying which.

The clone is the working tree as it stands (tracked and new files, not ignored ones), committed
into a fresh repository and tagged v0.1.0, so the test judges the change under test, not main.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES, REPO

pytestmark = pytest.mark.slow

TAG = "v0.1.0"
FAILING = FIXTURES / "fix" / "micro_literal.sh"  # VB101 error


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false",
                           "-C", str(repo), *args], capture_output=True, text=True, check=True)
    return done.stdout


def _venv(where: Path, *packages: str) -> Path:
    """A fresh venv with PACKAGES pip-installed; skips the test when the install fails."""
    venv.create(where, with_pip=True)
    python = where / "bin" / "python"
    if packages:
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot install {' '.join(packages)}: {done.stderr.strip().splitlines()[-1:]}")
    return python


@pytest.fixture(scope="module")
def tagged_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    clone = tmp_path_factory.mktemp("clone") / "verl-gen"
    files = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, clone / name)
    _git(clone, "init", "-q")
    _git(clone, "add", "-A")
    _git(clone, "commit", "-q", "-m", "release under test")
    _git(clone, "tag", "-a", TAG, "-m", f"verl-gen {TAG}")
    return clone


@pytest.fixture(scope="module")
def dist(tagged_clone: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tools = _venv(tmp_path_factory.mktemp("build-venv") / "venv", "build")
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([str(tools), "-m", "build", "--outdir", str(out), str(tagged_clone)],
                          capture_output=True, text=True)
    if done.returncode != 0 and "Could not find a version" in done.stdout + done.stderr:
        pytest.skip("python -m build cannot fetch hatchling / hatch-vcs")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_build_names_the_tag_and_carries_the_docs(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    assert wheel.name.startswith("verl_gen-0.1.0-"), wheel.name  # the version is the tag
    assert sdist.name == "verl_gen-0.1.0.tar.gz", sdist.name
    names = set(zipfile.ZipFile(wheel).namelist())
    for page in ("rules/batch.md", "step-time-model.md", "cli.md", "release.md"):
        assert f"generator/docs/{page}" in names
    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {"docs/rules/batch.md", "CHANGELOG.md", ".pre-commit-hooks.yaml", "README.md"} <= members


def test_installed_wheel_prints_the_rule_page_and_every_link_resolves(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    python = _venv(tmp_path / "venv", str(wheel))
    gen = python.parent / "gen"
    env = {**os.environ, "NO_COLOR": "1"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(gen), *args], capture_output=True, text=True, cwd=tmp_path, env=env)

    assert run("--version").stdout == "verl-gen 0.1.0\n"
    page = run("rule", "VB106")
    assert page.returncode == 0, page.stderr
    assert "## Why is this bad?" in page.stdout and "## From the rule's page" in page.stdout
    assert "verl/workers/actor/megatron_actor.py" in page.stdout  # the page's verl sources, read offline
    plan = run("plan", "--model", "qwen2-7b", "--gpus", "8")
    assert plan.returncode == 0, plan.stderr
    links = re.findall(r"gen doc ([\w/#.-]*\w)", " ".join((page.stdout + plan.stdout).split()))
    assert "rules/batch#vb106" in links and "step-time-model" in links
    for link in set(links):
        shown = run("doc", link)
        assert shown.returncode == 0 and shown.stdout.strip(), (link, shown.stderr)
    installed = subprocess.run([str(python), "-c", "import generator.base.resources as r; print(r.docs_dir())"],
                               capture_output=True, text=True, cwd=tmp_path).stdout.strip()
    assert "site-packages" in installed and installed.endswith("generator/docs")


def test_precommit_hook_runs_from_the_tag(tagged_clone: Path, tmp_path: Path) -> None:
    python = _venv(tmp_path / "venv", "pre-commit")
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    snippet = yaml.safe_load(page.split("<!-- pre-commit:begin -->\n```yaml\n")[1].split("```")[0])
    snippet["repos"][0]["repo"] = str(tagged_clone)  # the user's URL; the rev stays the snippet's
    assert snippet["repos"][0]["rev"] == TAG
    user = tmp_path / "project"
    (user / "scripts").mkdir(parents=True)
    shutil.copy(FAILING, user / "scripts" / "run.sh")
    (user / "scripts" / "prepare.sh").write_text("#!/bin/bash\necho preparing data\n")
    (user / ".pre-commit-config.yaml").write_text(yaml.safe_dump(snippet))
    _git(user, "init", "-q")
    _git(user, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "NO_COLOR": "1",
           "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    run = [str(python), "-m", "pre_commit", "run", "verl-gen-check", "--all-files"]
    done = subprocess.run(run, capture_output=True, text=True, cwd=user, env=env)
    assert done.returncode == 1, done.stdout + done.stderr  # the VB101 error fails the hook
    assert "scripts/run.sh:13:" in done.stdout and "VB101 error" in done.stdout
    shutil.copy(REPO / "tests" / "golden" / "run_qwen2-7b_grpo_megatron.sh", user / "scripts" / "run.sh")
    _git(user, "add", "-A")
    clean = subprocess.run(run, capture_output=True, text=True, cwd=user, env=env)
    assert clean.returncode == 0, clean.stdout + clean.stderr

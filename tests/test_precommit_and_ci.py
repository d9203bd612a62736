"""The pre-commit hooks, the pre-commit snippet in docs/cli.md, the example GitHub Actions workflow and
the release tool do what they say: each hook's entry runs as pre-commit would run it (the
installed console script, file names appended), the workflow's step runs in a git repository,
and the snippet pins a tag the release tool would write (the release itself, built and run from a
tag: tests/test_release.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import FIXTURES, REPO
from text_report import finding_line

sys.path.insert(0, str(REPO / "tools"))
import release

BIN = Path(sys.executable).parent  # the console scripts pip installed with this python
FAILING = FIXTURES / "fix" / "micro_literal.sh"  # VB101 error, fixable


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}/usr/bin{os.pathsep}/bin", "NO_COLOR": "1"}


def _pyproject() -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _hooks() -> dict[str, dict]:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    return {hook["id"]: hook for hook in hooks}


def test_hooks_are_python_hooks_whose_entry_is_a_console_script_of_the_package() -> None:
    scripts = _pyproject()["project"]["scripts"]
    hooks = _hooks()
    assert sorted(hooks) == ["verl-gen-check", "verl-gen-fix"]
    for hook in hooks.values():
        assert hook["language"] == "python"  # pre-commit pip-installs this repository at `rev`
        assert hook["entry"].split()[0] in scripts
        assert hook["types"] == ["shell"]


def test_check_hook_fails_on_a_script_with_an_error(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    shutil.copy(FAILING, script)
    entry = _hooks()["verl-gen-check"]["entry"].split()
    done = subprocess.run([*entry, str(script)], capture_output=True, text=True, env=_env(), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert finding_line(done.stdout, "VB101").startswith(f"{script}:13:")
    assert " VB101 error:" in finding_line(done.stdout, "VB101")


def test_fix_hook_repairs_the_file_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    shutil.copy(FAILING, script)
    entry = _hooks()["verl-gen-fix"]["entry"].split()
    subprocess.run([*entry, "--select", "VB101,VB107", str(script)], capture_output=True, text=True,
                   env=_env(), cwd=tmp_path)
    fixed = script.read_bytes()
    assert fixed != FAILING.read_bytes()
    again = subprocess.run([*entry, "--select", "VB101,VB107", str(script)], capture_output=True,
                           text=True, env=_env(), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert script.read_bytes() == fixed


def _precommit_snippet() -> dict:
    """The snippet users copy: docs/cli.md, "CI and pre-commit" (the README links there)."""
    page = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- pre-commit:begin -->\n```yaml\n(.*?)```\n<!-- pre-commit:end -->", page, re.S)
    assert found is not None, "docs/cli.md lost its pre-commit snippet"
    return yaml.safe_load(found.group(1))


def test_snippet_pins_the_first_release_tag_and_names_the_hooks_the_repository_defines() -> None:
    """The snippet is the remote form, pinned to the release tag (issue 36: it was `repo: local`
    while no tag existed); tests/test_release.py runs it against a tagged clone."""
    snippet = _precommit_snippet()
    (repo,) = snippet["repos"]
    assert repo["rev"] == "v0.1.0" and repo["repo"].endswith("/verl-gen")
    assert {hook["id"] for hook in repo["hooks"]} == set(_hooks())
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert repo["rev"].removeprefix("v") in release.changelog_versions(changelog)


def test_workflow_installs_from_the_same_tag_as_the_snippet() -> None:
    (step,) = [s for s in _workflow()["jobs"]["verl-gen"]["steps"] if s.get("name") == "Install verl-gen"]
    assert step["run"].endswith(f"@{_precommit_snippet()['repos'][0]['rev']}\"")


def test_release_refuses_what_it_must_and_names_the_tag() -> None:
    assert release.release_problems("0.1.0", set(), dirty=False, logged={"0.1.0"}) == []
    assert release.release_problems("0.1.0", {"v0.1.0"}, dirty=False, logged={"0.1.0"}) == [
        "tag v0.1.0 already exists: release a higher version"]
    assert release.release_problems("0.2.0", set(), dirty=False, logged={"0.1.0"}) == [
        "CHANGELOG.md has no '## 0.2.0' section: say what changed first"]
    assert release.release_problems("0.1", set(), dirty=True, logged=set()) == [
        "version '0.1' is not X.Y.Z", "uncommitted changes to tracked files: commit them first"]
    assert release.changelog_versions("# Changelog\n\n## 0.2.0 - 2026-12-07\n\n## 0.1.0\n") == {"0.2.0", "0.1.0"}


def _workflow() -> dict:
    return yaml.safe_load((REPO / "examples" / "github-workflow.yml").read_text(encoding="utf-8"))


def test_workflow_parses_and_uploads_sarif_with_write_permission() -> None:
    workflow = _workflow()
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["verl-gen"]["steps"]
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif@") and
               step["with"]["sarif_file"] == "verl-gen.sarif" for step in steps)


def test_workflow_check_step_annotates_and_writes_sarif(tmp_path: Path, shellcheck: str) -> None:
    """The step's bash, run in a git repository holding one failing and one clean script."""
    (step,) = [s for s in _workflow()["jobs"]["verl-gen"]["steps"] if s.get("name") == "Check launch scripts"]
    body = step["run"]
    (tmp_path / "step.sh").write_text("#!/usr/bin/env bash\nset -eo pipefail\n" + body)
    lint = subprocess.run([shellcheck, "-S", "warning", str(tmp_path / "step.sh")], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout
    repo = tmp_path / "repo"
    (repo / "scripts dir").mkdir(parents=True)
    shutil.copy(FAILING, repo / "scripts dir" / "run a.sh")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", body], capture_output=True, text=True,
                          env=_env(), cwd=repo)
    assert done.returncode == 1, done.stderr  # an error finding fails the job
    assert "::error file=scripts dir/run a.sh,line=13" in done.stdout
    sarif = json.loads((repo / "verl-gen.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    results = sarif["runs"][0]["results"]
    assert any(r["ruleId"] == "VB101" for r in results)


def test_ci_script_is_shellcheck_clean(shellcheck: str) -> None:
    done = subprocess.run([shellcheck, "-S", "style", str(REPO / ".ci" / "run")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout

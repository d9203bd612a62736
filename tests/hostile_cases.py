"""The attacks of issue 21, each a self-contained case: a function that builds a hostile project in
a temporary folder and says how to run `gen` on it and what must come out. Used by
tests/test_hostile_project.py (one test per case) and bench/attacks.py (the before/after table).

Each case runs as one bash command in a child process (so redirections like `>/dev/full` are
real) and is measured there: wall time and the peak memory of the child (getrusage of the
children). A secret marker is written into every file outside the project; it must never be
printed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

SECRET = "TOPSECRET-7f3a9c"
CALL = ("python3 -m verl.trainer.main_ppo \\\n"
        "    trainer.n_gpus_per_node=8 \\\n"
        "    data.train_batch_size=60 \\\n"
        "    actor_rollout_ref.rollout.n=4 \\\n"
        "    actor_rollout_ref.actor.ppo_mini_batch_size=24 \\\n"
        "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\\n"
        "    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \\\n"
        "    critic.ppo_micro_batch_size_per_gpu=2 \\\n"
        "    actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2")
# Limits every case is held to (issue 21's must-show).
MAX_SECONDS = 10.0
MAX_RSS_MB = 500.0


@dataclass
class Case:
    command: str  # bash, run in `cwd`; `gen` is the command line under test
    cwd: Path
    rc: int | tuple[int, ...]  # the exit code(s) that are right
    says: str = ""  # text the one-line outcome must contain ("" = no single line required)
    one_line: bool = True  # stderr is exactly one line (plus check's summary line)
    check: Callable[[], str | None] | None = None  # extra condition after the run: None = fine, else why not
    notes: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str
    seconds: float
    rss_mb: float
    timed_out: bool = False


_WRAP = textwrap.dedent("""
    import json, os, resource, signal, subprocess, sys, time
    start = time.monotonic()
    child = subprocess.Popen(["bash", "-c", sys.argv[1]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=float(sys.argv[2]))
        rc, late = child.returncode, False
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # the whole group: bash and the gen it started
        out, err = child.communicate()
        rc, late = -9, True
    took = time.monotonic() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"rc": rc, "stdout": out.decode("utf-8", "replace")[-2_000_000:],
                      "stderr": err.decode("utf-8", "replace")[-2_000_000:], "seconds": took, "rss_mb": peak,
                      "timed_out": late}))
""")


def run_case(case: Case, *, timeout: float = 60.0, pythonpath: str | None = None) -> Outcome:
    """Run the case's command in a fresh measuring process; `gen` is this checkout's CLI."""
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    gen = f"{shlex.quote(sys.executable)} -m generator"
    command = f"gen() {{ {gen} \"$@\"; }}\n{case.command}"
    done = subprocess.run([sys.executable, "-c", _WRAP, command, str(timeout)], capture_output=True, text=True,
                          cwd=case.cwd, env=env, timeout=timeout + 30, check=False)
    data = json.loads(done.stdout)
    return Outcome(**data)


# The count line check and fix print after the per-file lines.
_SUMMARY = re.compile(r"^\d+ files? checked:|^fixed \d+ finding")


def problems(case: Case, got: Outcome) -> list[str]:
    """Everything the outcome does wrong (empty: the attack is handled)."""
    out: list[str] = []
    text = got.stdout + got.stderr
    if got.timed_out:
        return [f"did not finish within the timeout ({got.seconds:.0f} s)"]
    wanted = case.rc if isinstance(case.rc, tuple) else (case.rc,)
    if got.rc not in wanted:
        out.append(f"exit {got.rc}, expected {wanted}")
    if "Traceback" in text or "internal error" in text:
        out.append("a traceback or internal error")
    if SECRET in text:
        out.append("printed the content of a file outside the project")
    if case.says and case.says not in text:
        out.append(f"does not say {case.says!r}")
    if case.one_line:
        lines = [line for line in got.stderr.splitlines() if line.strip() and not _SUMMARY.search(line)]
        if len(lines) > 1:
            out.append(f"{len(lines)} lines on stderr, expected one")
    if got.seconds > MAX_SECONDS:
        out.append(f"took {got.seconds:.1f} s (> {MAX_SECONDS:g})")
    if got.rss_mb > MAX_RSS_MB:
        out.append(f"peaked at {got.rss_mb:.0f} MB (> {MAX_RSS_MB:g})")
    if case.check is not None:
        why = case.check()
        if why:
            out.append(why)
    return out


# --- building blocks --------------------------------------------------------------------------


def _repo(tmp: Path) -> tuple[Path, Path]:
    """(a repository root with .git, an outside folder holding secrets) under `tmp`."""
    repo, outside = tmp / "repo", tmp / "outside"
    (repo / ".git").mkdir(parents=True)
    outside.mkdir()
    return repo, outside


def _script(folder: Path, body: str, name: str = "run.sh") -> Path:
    path = folder / name
    path.write_text("#!/bin/bash\n" + body + "\n")
    return path


def _yaml_secret(outside: Path, name: str = "secret.yaml") -> Path:
    path = outside / name
    path.write_text(f"aws_access_key_id = {SECRET}\nsecret_token: {SECRET}\n  bad: [\n")
    return path


# --- disclosure -------------------------------------------------------------------------------


def symlinked_schema_config(tmp: Path) -> Case:
    """The project's vendored verl/trainer/config/ppo_trainer.yaml is a link to a secret file."""
    repo, outside = _repo(tmp)
    config = repo / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    (config / "ppo_trainer.yaml").symlink_to(_yaml_secret(outside))
    _script(repo, CALL)
    return Case("gen check run.sh", repo, rc=2, says="is outside the project")


def symlinked_recipe_config_show(tmp: Path) -> Case:
    """`gen show --resolved` on a call whose --config-name is a link to a secret YAML."""
    repo, outside = _repo(tmp)
    (repo / "configs").mkdir()
    secret = outside / "tokens.yaml"
    secret.write_text(f"defaults:\n  - ppo_trainer\n  - _self_\nsecret_token: {SECRET}\n")
    (repo / "configs" / "mine.yaml").symlink_to(secret)
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/configs --config-name=mine "
                  "trainer.nnodes=1")
    return Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1), says="outside the project",
                one_line=False)


def defaults_escape(tmp: Path) -> Case:
    """A defaults entry `- x@y: ../../../../outside/hosts` leaves the config folder."""
    repo, outside = _repo(tmp)
    (outside / "hosts.yaml").write_text(f"root_password: {SECRET}\n")
    (repo / "configs" / "x").mkdir(parents=True)
    rel = os.path.relpath(outside / "hosts", repo / "configs" / "x")
    (repo / "configs" / "mine.yaml").write_text(f"defaults:\n  - ppo_trainer\n  - x@y: {rel}\n  - _self_\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/configs --config-name=mine "
                  "trainer.nnodes=1")
    return Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1), says="outside the project",
                one_line=False)


def config_path_anywhere(tmp: Path) -> Case:
    """`--config-path=/anywhere --config-name=x` in the script."""
    repo, outside = _repo(tmp)
    (outside / "leak.yaml").write_text(f"defaults:\n  - ppo_trainer\n  - _self_\ndb_password: {SECRET}\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={outside} --config-name=leak trainer.nnodes=1")
    return Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1), says="outside the project",
                one_line=False)


def source_absolute(tmp: Path) -> Case:
    """`source /abs/outside/env.sh`: its values must not be read (nor printed by gen show)."""
    repo, outside = _repo(tmp)
    (outside / "env.sh").write_text(f"export API_KEY={SECRET}\nNAME={SECRET}\n")
    _script(repo, f"source {outside}/env.sh\n"
                  "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.experiment_name=$NAME")
    return Case("gen show run.sh", repo, rc=(0, 1), says="outside the project", one_line=False)


def source_etc_passwd(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, "source /etc/passwd\npython3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.experiment_name=$root")
    return Case("gen show run.sh", repo, rc=(0, 1), says="outside the project", one_line=False,
                check=lambda: None)


def _failing_repo(tmp: Path) -> tuple[Path, Path]:
    """A repository (one folder below `tmp/above`) whose script has an error finding."""
    above = tmp / "above"
    repo = above / "repo"
    (repo / ".git").mkdir(parents=True)
    _script(repo, "python3 -m verl.trainer.main_ppo \\\n    trainer.n_gpus_per_node=8 \\\n"
                  "    data.train_batch_size=60 \\\n    actor_rollout_ref.actor.ppo_mini_batch_size=7")
    return above, repo


def project_file_above_repo(tmp: Path) -> Case:
    """A .verl-gen.toml with ignore = ["V"] above the repository root must not apply."""
    above, repo = _failing_repo(tmp)
    (above / ".verl-gen.toml").write_text('ignore = ["V"]\n')
    return Case("gen check run.sh", repo, rc=1, one_line=False)


def broken_pyproject_above_repo(tmp: Path) -> Case:
    """A broken pyproject.toml above the repository root must not make every script exit 2."""
    above, repo = _failing_repo(tmp)
    (above / "pyproject.toml").write_text(f"[tool.verl-gen\n{SECRET} = = =\n")
    return Case("gen check run.sh", repo, rc=1, one_line=False)


# --- writes -----------------------------------------------------------------------------------


def _explain_chart(tmp: Path, prepare: Callable[[Path, Path], None], extra: str = "") -> Case:
    repo, outside = _repo(tmp)
    _script(repo, CALL)
    prepare(repo, outside)
    return Case(f"gen plan --model qwen2-7b --gpus 8 --chart report.html {extra}", repo, rc=2,
                says="--chart report.html", one_line=False)


def chart_through_symlink(tmp: Path) -> Case:
    """`--chart report.html` where report.html links to a dotfile elsewhere."""
    dotfile = tmp / "outside" / ".bashrc"

    def prepare(repo: Path, outside: Path) -> None:
        dotfile.write_text("alias ll='ls -l'\n")
        (repo / "report.html").symlink_to(dotfile)

    case = _explain_chart(tmp, prepare, "--force")
    case.says = "is a symbolic link"
    case.check = lambda: None if dotfile.read_text() == "alias ll='ls -l'\n" else "the link's target was replaced"
    return case


def chart_over_existing(tmp: Path) -> Case:
    """`--chart` onto an existing file without --force."""
    kept = tmp / "repo" / "report.html"

    def prepare(repo: Path, outside: Path) -> None:
        kept.write_text("my report\n")

    case = _explain_chart(tmp, prepare)
    case.says = "pass --force"
    case.check = lambda: None if kept.read_text() == "my report\n" else "an existing file was replaced without --force"
    return case


def recipe_output_over_existing(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    kept = repo / "run.sh"
    kept.write_text("mine\n")
    case = Case("gen recipe --model Qwen2.5-7B --gpus 8 -o run.sh", repo, rc=2, says="--force")
    case.check = lambda: None if kept.read_text() == "mine\n" else "an existing file was replaced without --force"
    return case


def fix_through_symlink(tmp: Path) -> Case:
    repo, outside = _repo(tmp)
    real = _script(outside, CALL.replace("=24", "=7"), "real.sh")
    (repo / "run.sh").symlink_to(real)
    before = real.read_text()
    case = Case("gen fix --write --unsafe run.sh", repo, rc=2, says="a symbolic link leads it outside its project")
    case.check = lambda: None if real.read_text() == before else "the link's target was rewritten"
    return case


# --- bounds -----------------------------------------------------------------------------------


def function_bomb(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, "f() { f; f; f; f; f; f; f; f; f; f; }; f\npython3 -m verl.trainer.main_ppo trainer.nnodes=1")
    return Case("gen check run.sh", repo, rc=2, says="shell function calls")


def function_bomb_mutual(tmp: Path) -> Case:
    """New: two functions that call each other ten times each."""
    repo, _ = _repo(tmp)
    _script(repo, "a() { b; b; b; b; b; b; b; b; b; b; }\nb() { a; a; a; a; a; a; a; a; a; a; }\na\n"
                  "python3 -m verl.trainer.main_ppo trainer.nnodes=1")
    return Case("gen show run.sh", repo, rc=2, says="shell function calls")


def _doubling(levels: int = 33) -> list[str]:
    out = ["+x.l0=ab"]
    out += [f"+x.l{i}='${{x.l{i - 1}}}${{x.l{i - 1}}}'" for i in range(1, levels + 1)]
    return out


def interpolation_doubling_overrides(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, "python3 -m verl.trainer.main_ppo \\\n    " + " \\\n    ".join(_doubling()) + " \\\n    trainer.nnodes=1")
    return Case("gen show --resolved run.sh", repo, rc=(0, 1, 2), one_line=False)


def interpolation_doubling_yaml(tmp: Path) -> Case:
    """The same doubling from a fork's YAML config."""
    repo, _ = _repo(tmp)
    (repo / "configs").mkdir()
    lines = ["defaults:", "  - ppo_trainer", "  - _self_", "x:", "  l0: ab"]
    lines += [f"  l{i}: ${{x.l{i - 1}}}${{x.l{i - 1}}}" for i in range(1, 34)]
    (repo / "configs" / "mine.yaml").write_text("\n".join(lines) + "\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/configs --config-name=mine trainer.nnodes=1")
    return Case("gen check run.sh", repo, rc=(0, 1, 2), one_line=False)


def interpolation_fan_in(tmp: Path, leaves: int = 1000, refs: int = 1000) -> Case:
    """1,000 overrides `${x.b}` over a 1,000-leaf subtree (41 s before issue 21)."""
    repo, _ = _repo(tmp)
    words = [f"+x.b.k{i}={i}" for i in range(leaves)] + [f"+y.r{i}='${{x.b}}'" for i in range(refs)]
    _script(repo, "python3 -m verl.trainer.main_ppo \\\n    " + " \\\n    ".join(words))
    return Case("gen check run.sh", repo, rc=(0, 1, 2), says="", one_line=False)


def regex_backtracking(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, f"Y={'a' * 40}\nif [[ $Y =~ ^(a+)+b$ ]]; then N=2; else N=1; fi\n"
                  "python3 -m verl.trainer.main_ppo trainer.nnodes=$N")
    return Case("gen show run.sh", repo, rc=(0, 1), one_line=False)


def gitignore_stars(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    (repo / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*b\n" + "**/" * 40 + "z\n")
    deep = repo / ("a" * 200)
    deep.mkdir()
    _script(deep, CALL, "a" * 200 + ".sh")
    return Case("gen check .", repo, rc=(0, 1), one_line=False)


def _vendored_verl(repo: Path) -> Path:
    config = repo / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    (config / "ppo_trainer.yaml").write_text("trainer:\n  nnodes: 1\n  n_gpus_per_node: 8\n")
    info = repo / "verl-0.4.1.dist-info"
    info.mkdir()
    return info


def metadata_fifo(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    os.mkfifo(_vendored_verl(repo) / "METADATA")
    _script(repo, "python3 -m verl.trainer.main_ppo trainer.nnodes=1")
    return Case("gen check run.sh", repo, rc=(0, 1, 2), one_line=False)


def metadata_dev_zero(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    (_vendored_verl(repo) / "METADATA").symlink_to("/dev/zero")
    _script(repo, "python3 -m verl.trainer.main_ppo trainer.nnodes=1")
    return Case("gen check run.sh", repo, rc=(0, 1, 2), one_line=False)


def library_alias_bomb(tmp: Path) -> Case:
    lib = tmp / "lib"
    lib.mkdir()
    body = "name: bomb\nmodel: Qwen2.5-7B\ngpus: 8\na0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    body += "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10))
    body += "tags: *a9\n"
    (lib / "bomb.yaml").write_text(body)
    return Case("gen list --library lib", tmp, rc=(0, 2), says="aliases expand it", one_line=False)


def flow_list_yaml(tmp: Path) -> Case:
    """A single 3.9 MB flow-list YAML (no alias) as the call's config."""
    repo, _ = _repo(tmp)
    (repo / "configs").mkdir()
    (repo / "configs" / "mine.yaml").write_text("big: [" + "1," * 1_950_000 + "1]\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/configs --config-name=mine trainer.nnodes=1")
    return Case("gen check run.sh", repo, rc=2, says="more than 200000 nodes")


def defaults_bytes(tmp: Path) -> Case:
    """400 defaults entries over one 800 KB file: the load cap counted files, not bytes."""
    repo, _ = _repo(tmp)
    group = repo / "configs" / "g"
    group.mkdir(parents=True)
    (group / "big.yaml").write_text("".join(f"k{i}: {'v' * 60}\n" for i in range(12_000)))
    entries = "".join(f"  - g@p{i}: big\n" for i in range(400))
    (repo / "configs" / "mine.yaml").write_text(f"defaults:\n  - ppo_trainer\n{entries}  - _self_\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/configs --config-name=mine trainer.nnodes=1")
    return Case("gen check run.sh", repo, rc=2, says="of YAML")


def python_launcher_overrides(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    words = ", ".join(f"'+k.x{i}={i}'" for i in range(50_000))
    (repo / "launch.py").write_text("import subprocess\n"
                                    f"subprocess.run(['python3', '-m', 'verl.trainer.main_ppo', {words}])\n")
    return Case("gen check launch.py", repo, rc=2, says="more than 6,000 parts")


# --- errors -----------------------------------------------------------------------------------


def _model(tmp: Path, **fields: object) -> Path:
    cfg = {"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 4,
           "num_key_value_heads": 4, "vocab_size": 1000, "intermediate_size": 4096,
           "max_position_embeddings": 4096, **fields}
    path = tmp / "model" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(cfg)
    if isinstance(fields.get("vocab_size"), str):
        text = text.replace(f'"{fields["vocab_size"]}"', str(fields["vocab_size"]))
    path.write_text(text)
    return path


def vocab_401_digits(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, CALL)
    _model(repo, vocab_size="9" * 401)
    return Case("gen explain run.sh --gpu h100 --model model/config.json", repo, rc=2, says="vocab_size")


def kv_heads_over_heads(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _model(repo, num_key_value_heads=64)
    return Case("gen plan --model model/config.json --gpus 8", repo, rc=2, says="num_key_value_heads")


def headroom_huge(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, CALL)
    return Case("gen explain run.sh --gpu h100 --model Qwen2.5-7B --headroom 1e308", repo, rc=2, says="--headroom")


def brace_huge(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, "python3 -m verl.trainer.main_ppo trainer.nnodes=1 +x.y={1..99999999999999999999}")
    return Case("gen check run.sh", repo, rc=(0, 1), one_line=False)


def stdout_dev_full(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, CALL)
    return Case("gen show run.sh >/dev/full", repo, rc=2, says="cannot write the output")


def stdout_closed(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    _script(repo, CALL)
    return Case("gen show run.sh >&-", repo, rc=2, says="cannot write the output")


def stdin_closed(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    return Case("gen check - <&-", repo, rc=2, says="standard input is closed")


def bom_before_command(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    (repo / "run.sh").write_bytes(b"\xef\xbb\xbf" + CALL.encode() + b"\n")
    return Case("gen check --select VS run.sh", repo, rc=1, says="VS720", one_line=False)


def zero_width_before_command(tmp: Path) -> Case:
    """New: a zero-width space before `python3` on a later line."""
    repo, _ = _repo(tmp)
    (repo / "run.sh").write_bytes(b"#!/bin/bash\nset -e\n\xe2\x80\x8b" + CALL.encode() + b"\n")
    return Case("gen check --select VS run.sh", repo, rc=1, says="zero-width", one_line=False)


# --- new attacks (issue 21's second round) -----------------------------------------------------


def project_file_symlink(tmp: Path) -> Case:
    """New: the repository's .verl-gen.toml is a link to a secret file elsewhere."""
    repo, outside = _repo(tmp)
    (outside / "creds.toml").write_text(f'token = "{SECRET}"\n')
    (repo / ".verl-gen.toml").symlink_to(outside / "creds.toml")
    _script(repo, CALL)
    return Case("gen check run.sh", repo, rc=2, says="is outside the project")


def config_dirs_outside(tmp: Path) -> Case:
    """New: the project file's config-dirs climbs out of the repository."""
    repo, outside = _repo(tmp)
    (outside / "leak.yaml").write_text(f"defaults:\n  - ppo_trainer\n  - _self_\nk: {SECRET}\n")
    (repo / ".verl-gen.toml").write_text(f'config-dirs = ["{os.path.relpath(outside, repo)}"]\n')
    _script(repo, "python3 -m verl.trainer.main_ppo --config-name=leak trainer.nnodes=1")
    return Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1), says="outside the project",
                one_line=False)


def source_relative_escape(tmp: Path) -> Case:
    """New: `source ../../outside/env.sh` from a script in a subfolder."""
    repo, outside = _repo(tmp)
    (outside / "env.sh").write_text(f"NAME={SECRET}\n")
    (repo / "scripts").mkdir()
    _script(repo / "scripts", 'cd "$(dirname "$0")"\nsource ../../outside/env.sh\n'
                              "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.experiment_name=$NAME")
    return Case("gen show scripts/run.sh", repo, rc=(0, 1), one_line=False)


def config_folder_symlink(tmp: Path) -> Case:
    """New: a folder of the repository is a link to a folder elsewhere."""
    repo, outside = _repo(tmp)
    (outside / "mine.yaml").write_text(f"defaults:\n  - ppo_trainer\n  - _self_\nk: {SECRET}\n")
    (repo / "configs").symlink_to(outside)
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/configs --config-name=mine trainer.nnodes=1")
    return Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1), says="outside the project",
                one_line=False)


def metadata_huge(tmp: Path) -> Case:
    """New: a vendored verl's METADATA of 3 MB (a regular file, over its cap)."""
    repo, _ = _repo(tmp)
    (_vendored_verl(repo) / "METADATA").write_text("Name: verl\n" + "x" * 3_000_000 + "\nVersion: 9.9.9\n")
    _script(repo, "python3 -m verl.trainer.main_ppo trainer.nnodes=1")
    return Case("gen check run.sh", repo, rc=(0, 1, 2), one_line=False)


CASES: dict[str, Callable[[Path], Case]] = {f.__name__: f for f in (
    symlinked_schema_config, symlinked_recipe_config_show, defaults_escape, config_path_anywhere, source_absolute,
    source_etc_passwd, project_file_above_repo, broken_pyproject_above_repo,
    chart_through_symlink, chart_over_existing, recipe_output_over_existing, fix_through_symlink,
    function_bomb, function_bomb_mutual, interpolation_doubling_overrides, interpolation_doubling_yaml,
    interpolation_fan_in, regex_backtracking, gitignore_stars, metadata_fifo, metadata_dev_zero,
    library_alias_bomb, flow_list_yaml, defaults_bytes, python_launcher_overrides,
    vocab_401_digits, kv_heads_over_heads, headroom_huge, brace_huge, stdout_dev_full, stdout_closed,
    stdin_closed, bom_before_command, zero_width_before_command,
    project_file_symlink, config_dirs_outside, source_relative_escape, config_folder_symlink, metadata_huge,
)}


# --- issue 35: one budget per run --------------------------------------------------------------


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


def yaml_alias_bytes(tmp: Path) -> Case:
    """A 1 MB value referenced by 1,000 aliases in the vendored verl's config (2,003 nodes, 1 GB
    expanded): 2 GB of memory and a 955 MB cache file, rewritten on every run, before issue 35."""
    repo, _ = _repo(tmp)
    _vendored_verl(repo)
    value = "x" * 1_000_000
    (repo / "verl" / "trainer" / "config" / "ppo_trainer.yaml").write_text(
        f"trainer:\n  nnodes: 1\nbig: &b {value}\nrefs:\n" + "".join(f"  r{i}: *b\n" for i in range(1000)))
    _script(repo, "python3 -m verl.trainer.main_ppo trainer.nnodes=1")
    cache = tmp / "cache"
    case = Case(f"XDG_CACHE_HOME={cache} gen check run.sh", repo, rc=2, says="YAML byte limit")
    case.check = lambda: None if _folder_bytes(cache) < 10_000_000 else "the cache grew past 10 MB"
    return case


def eval_sets_variable(tmp: Path) -> Case:
    """`eval "BS=7"` after `BS=4`: the old value was shown as known, so a wrong batch passed."""
    repo, _ = _repo(tmp)
    _script(repo, 'BS=4\neval "BS=7"\n((N = BS / 7))\n'
                  "python3 -m verl.trainer.main_ppo data.train_batch_size=$BS trainer.nnodes=$N")
    return Case("gen show run.sh", repo, rc=0, says="data.train_batch_size=7  [variable $BS]\n    5  trainer.nnodes=1  [variable $N]",
                one_line=False)


def _scripts(repo: Path, count: int = 200) -> None:
    for folder in range(count // 20):
        (repo / f"exp{folder}").mkdir()
        for n in range(20):
            _script(repo / f"exp{folder}", CALL, f"run_{n}.sh")


def gitignore_many_rules(tmp: Path) -> Case:
    """A .gitignore of 9,999 rules over 200 scripts: 0.65-1.2 s per file walked before (129 s)."""
    repo, _ = _repo(tmp)
    rules = [[f"*build{i}*", f"out{i}/*.log", f"**/cache{i}/", f"tmp{i}?.sh", f"x{i}*y*z"][i % 5] for i in range(9_999)]
    (repo / ".gitignore").write_text("\n".join(rules) + "\n")
    _scripts(repo)
    return Case("gen check --format concise .", repo, rc=1, says="200 files checked", one_line=False)


def gitignore_over_the_limit(tmp: Path) -> Case:
    repo, _ = _repo(tmp)
    (repo / ".gitignore").write_text("".join(f"x{i}*y\n" for i in range(60_000)))
    _scripts(repo, 20)
    return Case("gen check .", repo, rc=2, says="the pattern limit")


def exclude_over_the_limit(tmp: Path) -> Case:
    """60,000 `exclude` patterns: 8 s a script before, each pattern matched in turn."""
    repo, _ = _repo(tmp)
    (repo / ".verl-gen.toml").write_text("exclude = [" + ", ".join(f'"legacy{i}/*"' for i in range(60_000)) + "]\n")
    _script(repo, CALL)
    return Case("gen check run.sh", repo, rc=2, says="the pattern limit")


def calls_times_configs(tmp: Path) -> Case:
    """64 calls, each naming its own config over one 4 MB group file: every composition stayed
    under the 4 MiB per-config cap (4 min 11 s and 1.1 GB before issue 35's run budget)."""
    repo, _ = _repo(tmp)
    configs = repo / "configs"
    (configs / "g").mkdir(parents=True)
    (configs / "g" / "big.yaml").write_text("".join(f"k{i}: {'v' * 60}\n" for i in range(60_000)))
    calls = []
    for i in range(64):
        (configs / f"c{i}.yaml").write_text("defaults:\n  - ppo_trainer\n  - g: big\n  - _self_\n")
        calls.append(f"python3 -m verl.trainer.main_ppo --config-path={configs} --config-name=c{i} trainer.nnodes=1")
    _script(repo, "\n".join(calls))
    return Case("gen check run.sh", repo, rc=2, says="calls x configs")


def resolved_amplified(tmp: Path) -> Case:
    """16 calls whose overrides double a value to 256 KiB and use it 20 times each: `gen show
    --resolved` printed 93 MB in 154 s before the resolved output limit."""
    repo, _ = _repo(tmp)
    words = _doubling(17) + [f"+y.r{j}='${{x.l17}}'" for j in range(20)]
    call = "python3 -m verl.trainer.main_ppo \\\n    " + " \\\n    ".join(words) + " \\\n    trainer.nnodes=1"
    _script(repo, "\n".join([call] * 16))
    return Case("gen show --resolved run.sh", repo, rc=2, says="the resolved output limit")


CASES.update({f.__name__: f for f in (yaml_alias_bytes, eval_sets_variable, gitignore_many_rules, calls_times_configs,
                                      resolved_amplified,
                                      gitignore_over_the_limit, exclude_over_the_limit)})

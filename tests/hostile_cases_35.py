"""Issue 35's red-team round: a new attack set, each case building a hostile project in a temp
folder and running the real `gen` in a child process (tests/hostile_cases.py measures it). Beside
what hostile_cases.problems asks of every case (exit code, no secret printed, no traceback, one
line, <= 10 s a `gen` command and <= 500 MB), every case here is also held to `extra_problems`: nothing under the
temp folder outside the project created, changed or removed (the cache folder excepted), and no
output line that a CI runner reads as a command, nor a raw terminal escape, line separator or
bidirectional override. Used by tests/test_hostile_35.py and bench/attacks.py (`--set 35`)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path
from typing import Callable

from hostile_cases import CALL, MAX_SECONDS, SECRET, Case, Outcome, problems

# A forged GitHub annotation and Azure/legacy runner commands; FORGED never names a real file.
FORGE = "::warning file=FORGED.sh,line=1::pwned"
_FORGED = re.compile(r"^\s*::warning file=FORGED|##(vso)?\[", re.IGNORECASE | re.MULTILINE)
# What must never reach a log or a terminal raw: ESC and CSI, other C0/C1 controls but \n and \t,
# the line and paragraph separators, NEL, bidi overrides and isolates, zero-width characters.
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200d\u2060\ufeff]")
# A diff on stdout is a payload for `patch`: the script's own invisible characters stay in it.
_RAW_IN_PAYLOAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
EVIL_NAME = "</script><img src=x onerror=alert(1)>"


def _tree(tmp: Path, *, git: bool = True) -> tuple[Path, Path]:
    repo, outside = tmp / "repo", tmp / "outside"
    repo.mkdir()
    if git:
        (repo / ".git").mkdir()
    outside.mkdir()
    (outside / "secret.env").write_text(f"export TOKEN={SECRET}\nBS={SECRET}\n")
    (outside / "leak.yaml").write_text(f"defaults:\n  - ppo_trainer\n  - _self_\ndb_password: {SECRET}\n")
    (outside / "train.sh").write_text(f"#!/bin/bash\n{CALL.replace('=24', '=7')}\n")
    return repo, outside


def _script(folder: Path, body: str, name: str = "run.sh") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/bash\n" + body + "\n")
    return path


def _fingerprint(tmp: Path, skip: tuple[str, ...] = ("repo", "cache")) -> dict[str, str]:
    """Every entry under `tmp` outside the project and cache: its kind and content digest."""
    out: dict[str, str] = {}
    for top in sorted(tmp.iterdir()):
        if top.name in skip:
            continue
        for path in [top, *sorted(top.rglob("*"))] if top.is_dir() and not top.is_symlink() else [top]:
            if path.is_symlink():
                out[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                with open(path, "rb") as handle:
                    out[str(path)] = hashlib.sha256(handle.read(64 << 20)).hexdigest()
            else:
                out[str(path)] = "dir" if path.is_dir() else "other"
    return out


def guarded(case: Case, tmp: Path) -> Case:
    """`case`, whose check also asks that nothing outside the project was touched."""
    before = _fingerprint(tmp)
    inner = case.check

    def check() -> str | None:
        after = _fingerprint(tmp)
        if after != before:
            changed = sorted(set(before.items()) ^ set(after.items()))
            return f"touched outside the project: {changed[0][0]}"
        return inner() if inner is not None else None

    case.check = check
    return case


def extra_problems(got: Outcome, *, payload: bool = False) -> list[str]:
    """What issue 35 asks of every output beside hostile_cases.problems (`payload`: stdout holds
    diffs, where a zero-width character of the script is kept)."""
    out: list[str] = []
    for name, text in (("stdout", got.stdout), ("stderr", got.stderr)):
        if _FORGED.search(text):
            line = _FORGED.search(text)
            assert line is not None
            out.append(f"{name} holds a runner command: {line.group()!r}")
        raw = (_RAW_IN_PAYLOAD if payload and name == "stdout" else _RAW).search(text)
        if raw is not None:
            out.append(f"{name} holds raw U+{ord(raw.group()):04X}")
    return out


# `gen show`'s line for an override whose value is known: `N  +x.k3=7  [variable $V3]`: it must be what bash gives.
_KNOWN = re.compile(r"x\.k=((?!<\?)\S*)\s+\[variable")


def runs_of_gen(case: Case) -> int:
    """How many `gen` commands the case runs (a case that runs several, one per output format,
    is held to the time bound per command)."""
    return max(1, len(re.findall(r"(?:^|[;&(]\s*|\s)gen\s", case.command)))


def all_problems(case: Case, got: Outcome) -> list[str]:
    found = problems(case, got) + extra_problems(got, payload="payload" in case.notes)
    if got.seconds / runs_of_gen(case) <= MAX_SECONDS:
        found = [why for why in found if not why.startswith("took ")]
    if "check_setters" in case.notes:
        wrong = []
        for script, shown in _shown_values(got.stdout).items():
            truth = _bash_value(case.cwd / script)
            if shown != truth:
                wrong.append(f"{Path(script).name}: {shown} (bash: {truth!r})")
        if wrong:
            found.append(f"{len(wrong)} values shown as known but not what bash sets: {'; '.join(wrong[:8])}")
    return found


def _shown_values(stdout: str) -> dict[str, str]:
    """{script: the value `gen show` gives `+x.k` as known}."""
    out, script = {}, ""
    for line in stdout.splitlines():
        if line and not line[0].isspace():
            script = line.strip()
        found = _KNOWN.search(line)
        if found is not None:
            out[script] = found.group(1)
    return out


def _bash_value(script: Path) -> str:
    """What bash itself gives `$V` at the call (our own fixture, run to know the truth)."""
    head = script.read_text().rpartition("\npython3 ")[0]
    done = subprocess.run(["bash", "-c", head + '\nprintf "%s" "$V"'], capture_output=True, stdin=subprocess.DEVNULL,
                          cwd=script.parent, timeout=30, check=False)
    return done.stdout.decode(errors="replace")


# --- the boundary at other levels ---------------------------------------------------------------


def git_dir_symlink(tmp: Path) -> Case:
    """The repository's `.git` is a link to a folder outside; the script sources `../secret.env`
    through `$(dirname "$0")`."""
    repo, outside = _tree(tmp, git=False)
    (outside / "gitdir").mkdir()
    (repo / ".git").symlink_to(outside / "gitdir")
    _script(repo, f'source "$(dirname "$0")/../outside/secret.env"\n{CALL} trainer.project_name=$TOKEN')
    return guarded(Case("gen show run.sh", repo, rc=(0, 1), says="outside the project", one_line=False), tmp)


def pyproject_symlink_marker(tmp: Path) -> Case:
    """No `.git`; the project marker pyproject.toml is a link to a secret, malformed TOML."""
    repo, outside = _tree(tmp, git=False)
    (outside / "creds.toml").write_text(f"[tool.verl-gen\ntoken = {SECRET}\n")
    (repo / "pyproject.toml").symlink_to(outside / "creds.toml")
    _script(repo, CALL)
    return guarded(Case("gen check run.sh", repo, rc=(1, 2), one_line=False), tmp)


def vendored_verl_dir_symlink(tmp: Path) -> Case:
    """The project's vendored `verl/` is a link to a folder outside holding a secret config."""
    repo, outside = _tree(tmp)
    config = outside / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    (config / "ppo_trainer.yaml").write_text(f"trainer:\n  nnodes: 1\n  secret_token: {SECRET}\n")
    (repo / "verl").symlink_to(outside / "verl")
    _script(repo, CALL)
    return guarded(Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def config_path_relative_link(tmp: Path) -> Case:
    """`--config-path=conf` (relative) where `conf` links outside, from a script in a subfolder."""
    repo, outside = _tree(tmp)
    (repo / "exp" / "conf").parent.mkdir(parents=True)
    (repo / "exp" / "conf").symlink_to(outside)
    _script(repo / "exp", 'cd "$(dirname "$0")"\npython3 -m verl.trainer.main_ppo --config-path=conf '
                          "--config-name=leak trainer.nnodes=1")
    return guarded(Case("gen check exp/run.sh; gen show --resolved exp/run.sh", repo, rc=(0, 1, 2),
                        one_line=False), tmp)


def config_path_climbs(tmp: Path) -> Case:
    """`--config-path=$(dirname "$0")/../../outside` climbs out with `..`."""
    repo, _ = _tree(tmp)
    _script(repo / "exp", 'python3 -m verl.trainer.main_ppo --config-path="$(dirname "$0")/../../outside" '
                          "--config-name=leak trainer.nnodes=1")
    return guarded(Case("gen check exp/run.sh; gen show --resolved exp/run.sh", repo, rc=(0, 1, 2),
                        says="outside the project", one_line=False), tmp)


def config_name_climbs(tmp: Path) -> Case:
    """`--config-name=../../outside/leak` with the config path inside the project."""
    repo, _ = _tree(tmp)
    (repo / "conf").mkdir()
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/conf "
                  "--config-name=../../outside/leak trainer.nnodes=1")
    return guarded(Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def hydra_searchpath_outside(tmp: Path) -> Case:
    """`hydra.searchpath=[file://OUTSIDE]` on the command line and in the primary config."""
    repo, outside = _tree(tmp)
    (repo / "conf").mkdir()
    (repo / "conf" / "mine.yaml").write_text(
        f"defaults:\n  - ppo_trainer\n  - leak\n  - _self_\nhydra:\n  searchpath:\n    - file://{outside}\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/conf --config-name=mine "
                  f"'hydra.searchpath=[file://{outside}]' +leak@x=leak trainer.nnodes=1")
    return guarded(Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def defaults_plain_climb(tmp: Path) -> Case:
    """A defaults entry without a group, `- ../../outside/leak`, and an absolute one."""
    repo, outside = _tree(tmp)
    (repo / "conf").mkdir()
    (repo / "conf" / "mine.yaml").write_text(
        f"defaults:\n  - ppo_trainer\n  - ../outside/leak\n  - {outside}/leak\n  - _self_\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/conf --config-name=mine trainer.nnodes=1")
    return guarded(Case("gen check run.sh; gen show --resolved run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def source_bash_source_climb(tmp: Path) -> Case:
    """`. "${BASH_SOURCE[0]%/*}/../../outside/secret.env"` and `source $(cd ..; pwd)/...`."""
    repo, _ = _tree(tmp)
    _script(repo / "exp", '. "${BASH_SOURCE[0]%/*}/../../outside/secret.env"\n'
                          'ROOT=$(cd "$(dirname "$0")/../.." && pwd)\nsource "$ROOT/outside/secret.env"\n'
                          f"{CALL} trainer.project_name=$TOKEN data.train_batch_size=$BS")
    return guarded(Case("gen show exp/run.sh; gen check exp/run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def source_proc_and_dev(tmp: Path) -> Case:
    """`source /proc/self/environ`, `/dev/stdin`, a FIFO inside the project and the script itself."""
    repo, _ = _tree(tmp)
    os.mkfifo(repo / "env.fifo")
    _script(repo, "source /proc/self/environ\nsource /dev/stdin\nsource ./env.fifo\nsource \"$0\"\n"
                  f"source <(echo BS=7)\n{CALL} data.train_batch_size=$BS")
    return guarded(Case("gen show run.sh </dev/null; gen check run.sh </dev/null", repo, rc=(0, 1, 2),
                        one_line=False), tmp)


def walk_into_root_link(tmp: Path) -> Case:
    """`gen check .` in a repository holding `sys -> /`, `up -> ..` and a link loop."""
    repo, _ = _tree(tmp)
    (repo / "sys").symlink_to("/")
    (repo / "up").symlink_to("..")
    (repo / "a").symlink_to("b")
    (repo / "b").symlink_to("a")
    _script(repo, CALL)
    return guarded(Case("gen check --format concise .", repo, rc=(0, 1), says="1 file checked", one_line=False), tmp)


def walk_special_files(tmp: Path) -> Case:
    """`gen check .` over a FIFO, a folder and a link to /dev/zero, each named like a script, and
    a `.gitignore` and `.verl-gen.toml` that are FIFOs."""
    repo, _ = _tree(tmp)
    os.mkfifo(repo / "pipe.sh")
    (repo / "folder.sh").mkdir()
    (repo / "zero.sh").symlink_to("/dev/zero")
    os.mkfifo(repo / ".gitignore")
    _script(repo, CALL)
    return guarded(Case("gen check --format concise .", repo, rc=(0, 1, 2), one_line=False), tmp)


def project_file_fifo(tmp: Path) -> Case:
    repo, _ = _tree(tmp)
    os.mkfifo(repo / ".verl-gen.toml")
    _script(repo, CALL)
    return guarded(Case("gen check run.sh", repo, rc=(1, 2), one_line=False), tmp)


def hard_link_fix_write(tmp: Path) -> Case:
    """The script is a hard link to a file outside: `gen fix --write` must not rewrite it."""
    repo, outside = _tree(tmp)
    os.link(outside / "train.sh", repo / "run.sh")
    before = (outside / "train.sh").read_bytes()
    case = Case("gen fix --write --unsafe run.sh", repo, rc=(1, 2), one_line=False)
    case.check = lambda: None if (outside / "train.sh").read_bytes() == before else "rewrote the hard-linked file"
    return case


def import_name_climbs(tmp: Path) -> Case:
    """`gen import --name ../../outside/x`: the recipe must land in the library or nowhere."""
    repo, _ = _tree(tmp)
    _script(repo, CALL)
    (repo / "lib").mkdir()
    return guarded(Case("gen import run.sh --library lib --name ../../outside/evil --gpu h100", repo, rc=2,
                        one_line=False), tmp)


def library_recipe_link_out(tmp: Path) -> Case:
    """A library folder (as committed in a repository) whose recipes are links to files outside
    it: a valid recipe with a secret description, one whose bad field is quoted in the warning."""
    repo, outside = _tree(tmp)
    packaged = Path(__file__).resolve().parent.parent / "recipes" / "planned-qwen2.5-7b-grpo-8gpu.yaml"
    text = packaged.read_text().replace("name: planned-qwen2.5-7b-grpo-8gpu", "name: leak")
    (outside / "good.yaml").write_text(re.sub(r"(?m)^description: .*$", f"description: {SECRET}", text))
    (outside / "bad.yaml").write_text(f"name: {SECRET}\nmodel: {SECRET}\n")
    (repo / "lib").mkdir()
    (repo / "lib" / "good.yaml").symlink_to(outside / "good.yaml")
    (repo / "lib" / "bad.yaml").symlink_to(outside / "bad.yaml")
    return guarded(Case("gen list --library lib --format json", repo, rc=(0, 2), one_line=False), tmp)


# --- bounds -------------------------------------------------------------------------------------


def huge_single_line(tmp: Path) -> Case:
    """A 100 MB script on one line."""
    repo, _ = _tree(tmp)
    with open(repo / "run.sh", "wb") as handle:
        handle.write(b"X=" + b"a" * 100_000_000 + b"\n")
    return guarded(Case("gen check run.sh", repo, rc=2), tmp)


def nested_substitutions(tmp: Path) -> Case:
    """20,000 nested `$(`, `${x:-` and `$((` in one word each."""
    repo, _ = _tree(tmp)
    depth = 20_000
    _script(repo, "A=" + "$(echo " * depth + "x" + ")" * depth + "\n"
                  "B=" + "${x:-" * depth + "y" + "}" * depth + "\n"
                  "C=$((" + "(" * depth + "1" + ")" * depth + "))\n"
                  f"{CALL} trainer.project_name=$A$B$C")
    return guarded(Case("gen show run.sh", repo, rc=2), tmp)


def brace_and_loop_bombs(tmp: Path) -> Case:
    """`for i in {1..100000000}`, a brace product of 2^40 words, `seq` in a loop."""
    repo, _ = _tree(tmp)
    _script(repo, "for i in {1..100000000}; do N=$i; done\n"
                  "W=" + "{a,b}" * 40 + "\n"
                  "for j in $(seq 1 100000000); do M=$j; done\n"
                  f"{CALL} trainer.nnodes=$N trainer.project_name=$W")
    return guarded(Case("gen show run.sh", repo, rc=(0, 2), one_line=False), tmp)


def arithmetic_bombs(tmp: Path) -> Case:
    """`$((2**62*4))`, `$((1<<999999999))`, `$((10**10**10))`, `$((9**9**9))` in overrides."""
    repo, _ = _tree(tmp)
    _script(repo, "A=$((2**62*4))\nB=$((1<<999999999))\nC=$((10**10**10))\nD=$((9**9**9))\n"
                  "E=$(( -9223372036854775808 / -1 ))\nF=$(( 7 % 0 ))\n"
                  "python3 -m verl.trainer.main_ppo data.train_batch_size=$A trainer.nnodes=$B "
                  "trainer.n_gpus_per_node=$C actor_rollout_ref.rollout.n=$D +x.e=$E +x.f=$F")
    return guarded(Case("gen show run.sh; gen check run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def arithmetic_in_loop(tmp: Path) -> Case:
    """Squaring a number 64 times in a loop: a 2^64-digit integer unless bash's 64-bit wrap holds."""
    repo, _ = _tree(tmp)
    _script(repo, "N=3\nfor i in $(seq 1 64); do N=$((N*N)); done\nM=3\nwhile true; do M=$((M**M)); done\n"
                  "python3 -m verl.trainer.main_ppo data.train_batch_size=$N trainer.nnodes=$M")
    return guarded(Case("gen show run.sh", repo, rc=(0, 2), one_line=False), tmp)


def yaml_merge_key_bomb(tmp: Path) -> Case:
    """Billion laughs through merge keys (`<<: *a`) in a config the call names."""
    repo, _ = _tree(tmp)
    lines = ["defaults:", "  - ppo_trainer", "  - _self_", "l0: &l0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7}"]
    for i in range(1, 12):
        keys = ", ".join(f"k{j}: *l{i - 1}" for j in range(9))
        lines.append(f"l{i}: &l{i} {{<<: *l{i - 1}, {keys}}}")
    (repo / "conf").mkdir()
    (repo / "conf" / "mine.yaml").write_text("\n".join(lines) + "\n")
    _script(repo, f"python3 -m verl.trainer.main_ppo --config-path={repo}/conf --config-name=mine trainer.nnodes=1")
    return guarded(Case(f"XDG_CACHE_HOME={tmp}/cache gen check run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def yaml_deep_block_nesting(tmp: Path) -> Case:
    """A flow mapping nested 20,000 levels, and a block mapping 700 levels, in the vendored verl's config."""
    repo, _ = _tree(tmp)
    config = repo / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    text = "deep: " + "{a: " * 20_000 + "1" + "}" * 20_000 + "\n"
    text += "".join("  " * i + f"k{i}:\n" for i in range(700)) + "  " * 700 + "v\n"
    (config / "ppo_trainer.yaml").write_text("trainer:\n  nnodes: 1\n" + text)
    _script(repo, CALL)
    return guarded(Case(f"XDG_CACHE_HOME={tmp}/cache gen check run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def toml_deep_nesting(tmp: Path) -> Case:
    """A .verl-gen.toml with an array nested 100,000 deep (tomllib recurses)."""
    repo, _ = _tree(tmp)
    (repo / ".verl-gen.toml").write_text("ignore = " + "[" * 100_000 + "]" * 100_000 + "\n")
    _script(repo, CALL)
    return guarded(Case("gen check run.sh", repo, rc=2), tmp)


def pyproject_huge(tmp: Path) -> Case:
    """No `.git`: a 60 MB pyproject.toml marks the project."""
    repo, _ = _tree(tmp, git=False)
    with open(repo / "pyproject.toml", "w") as handle:
        handle.write("[project]\nname = 'x'\n[tool.other]\n")
        handle.write("".join(f"k{i} = '{'v' * 50}'\n" for i in range(1_000_000)))
    _script(repo, CALL)
    return guarded(Case("gen check run.sh", repo, rc=(1, 2), one_line=False), tmp)


def _calibration(repo: Path, value: str, runs: int) -> None:
    run = ('{log = "sha256:%016x", model = "\\u001b]0;x\\u0007%s", rollout = V, update = V, step = V, '
           'memory-offset-gib = V, response-share = V}').replace("V", value)
    listed = ", ".join(run % (i, FORGE) for i in range(runs))
    (repo / ".verl-gen.toml").write_text(
        f"[calibration.h100]\ngpu = \"h100\"\nruns = {runs}\nrollout = {value}\nupdate = {value}\nstep = {value}\n"
        f"memory-offset-gib = {value}\nresponse-share = {{\"Qwen2.5-7B\" = {value}}}\nrun = [{listed}]\n")


def calibration_hostile(tmp: Path) -> Case:
    """Stored calibrations with NaN, inf, 1e308, -1e308, 0 and 5e-324 everywhere and an escape
    sequence and a runner command in a model name (1e308: an OverflowError traceback before)."""
    repo, _ = _tree(tmp)
    _script(repo, CALL)
    commands = []
    for i, value in enumerate(("nan", "inf", "1e308", "-1e308", "0", "5e-324")):
        (repo / f"p{i}" / ".git").mkdir(parents=True)
        _calibration(repo / f"p{i}", value, 2)
        (repo / f"p{i}" / "run.sh").write_text((repo / "run.sh").read_text())
        commands.append(f"(cd p{i} && gen explain run.sh --memory --gpu h100 --model Qwen2.5-7B)")
    return guarded(Case("; ".join(commands), repo, rc=(0, 1, 2), one_line=False), tmp)


def calibration_many_runs(tmp: Path) -> Case:
    """3,000 stored runs (750 KB, under the project file's 1 MB): read on every plan and explain
    (tomlkit took 5 s a read before)."""
    repo, _ = _tree(tmp)
    _script(repo, CALL)
    _calibration(repo, "0.5", 3000)
    return guarded(Case("gen explain run.sh --memory --gpu h100 --model Qwen2.5-7B; "
                        "gen plan --model Qwen2.5-7B --gpus 8 --gpu h100 --top 1", repo, rc=(0, 1, 2),
                        one_line=False), tmp)


def hf_cache_hostile(tmp: Path) -> Case:
    """HF_HOME's hub cache: a refs/main climbing out, a config.json linked to a secret and a
    sparse 4 GB config.json."""
    repo, outside = _tree(tmp)
    hub = tmp / "cache" / "hf" / "hub"
    a = hub / "models--Evil--A"
    (a / "refs").mkdir(parents=True)
    (a / "refs" / "main").write_text("../../../../../../outside")
    (outside / "config.json").write_text('{"model_type": "%s", "hidden_size": 1}' % SECRET)
    b = hub / "models--Evil--B" / "snapshots" / "abc"
    b.mkdir(parents=True)
    (b / "config.json").symlink_to(outside / "config.json")
    c = hub / "models--Evil--C" / "snapshots" / "abc"
    c.mkdir(parents=True)
    with open(c / "config.json", "wb") as handle:
        handle.truncate(4 << 30)
    _script(repo, "\n".join(CALL.replace("trainer.n_gpus_per_node=8", f"actor_rollout_ref.model.path=Evil/{m}")
                            for m in "ABC"))
    return guarded(Case(f"HF_HOME={tmp}/cache/hf gen explain run.sh --gpu h100; "
                        f"HF_HOME={tmp}/cache/hf gen check --gpu h100 run.sh", repo, rc=(0, 1, 2), one_line=False), tmp)


def model_folder_outside(tmp: Path) -> Case:
    """`actor_rollout_ref.model.path` names folders outside the project (absolute, and through a
    link inside it): their config.json is read for its numbers only; the name it gives itself and
    a field that is text must not be printed."""
    repo, outside = _tree(tmp)
    fields = ('"model_type": "qwen2", "hidden_size": 1024, "num_attention_heads": 16, "num_hidden_layers": 4, '
              '"num_key_value_heads": 4, "vocab_size": 1000, "intermediate_size": 4096')
    (outside / "m").mkdir()
    (outside / "m" / "config.json").write_text('{%s, "_name_or_path": "%s"}' % (fields, SECRET))
    (outside / "n").mkdir()
    (outside / "n" / "config.json").write_text('{%s}' % fields.replace('"vocab_size": 1000', f'"vocab_size": "{SECRET}"'))
    (repo / "models").symlink_to(outside)
    calls = [CALL.replace("trainer.n_gpus_per_node=8", f"actor_rollout_ref.model.path={where}")
             for where in (outside / "m", "models/m", outside / "n")]
    _script(repo, "\n".join(calls))
    return guarded(Case("gen explain run.sh --gpu h100 --memory; gen check --gpu h100 run.sh", repo, rc=(0, 1, 2),
                        one_line=False), tmp)


def cache_home_hostile(tmp: Path) -> Case:
    """XDG_CACHE_HOME is a file, then a link to /dev/full's folder, then relative: the check still runs."""
    repo, _ = _tree(tmp)
    (tmp / "cache").mkdir()
    (tmp / "cache" / "file").write_text("x")
    (tmp / "cache" / "loop").symlink_to("loop")
    _script(repo, CALL)
    return guarded(Case(f"XDG_CACHE_HOME={tmp}/cache/file gen check run.sh; XDG_CACHE_HOME={tmp}/cache/loop "
                        "gen check run.sh; XDG_CACHE_HOME=rel gen check run.sh; HOME=/nonexistent gen check run.sh",
                        repo, rc=(0, 1), one_line=False), tmp)


def many_setters(tmp: Path) -> Case:
    """BS=4, then one of bash's other ways of setting it: each must be evaluated or unknown,
    never the old 4 shown as known."""
    repo, _ = _tree(tmp)
    setters = ["printf -v @V 7", "read @V <<< 7", "IFS= read -r @V < /dev/null", "mapfile -t @V < /dev/null",
               "readarray @V < /dev/null", "declare -n @R=@V; @R=7", "let @V=7", "let '@V = 7'", "((@V = 7))",
               "((@V++))", "@V+=1", ": ${@V:=7}", "unset @V; : ${@V:=7}", "typeset @V=7", "declare -g @V=7",
               "export @V=7", "local @V=7 2>/dev/null", "for @V in 7; do :; done", "select @V in 7; do break; done",
               "getopts ab @V", "eval @V=7", "eval \"$(echo @V=7)\"", "source <(echo @V=7)", ". /dev/stdin <<< @V=7",
               "coproc @V { :; }", "@n=@V; declare \"$@n=7\"", "@n=@V; printf -v \"$@n\" 7", "@n=@V; eval \"$@n=7\"",
               "@n=@V; read \"$@n\" <<< 7", "set -- 7; @V=$1", "declare -A @V; @V[x]=7", "@V=(7)", "@V[0]=7",
               "@f() { @V=7; }; @f", "@f() { local @V=5; }; @f; @V=$((@V+3))", "@V=7 true", "export -n @V=7",
               "trap '@V=7' EXIT", "alias @s='@V=7'; @s", "shopt -s expand_aliases; alias @s='@V=7'; @s",
               "while read @V; do :; done <<< 7", "cd /tmp; @V=7", "@V=$(@V=9; echo 7)", "(@V=9); @V=7",
               "{ @V=7; }", "@V=7 || @V=8", "[[ -n x ]] && @V=7", "case x in x) @V=7;; esac",
               "if false; then :; else @V=7; fi", "declare -i @V; @V=3+4", "declare -l @V=SEVEN",
               "IFS=, read -r a @V <<< 1,7", "read -a @V <<< 7", "@V=${@V/4/7}", "@V=${@V:-9}7",
               "printf -v @V[0] 7", "declare @V=7; readonly @V", "wait -n -p @V 2>/dev/null",
               # a name computed at run time, and arithmetic's side effects
               "n=@V; typeset \"$n\"=7", "n=@V; export \"$n=7\"", "n=@V; readonly \"$n=7\"", "n=@V; declare $n=7",
               "n=@V; let \"$n=7\"", "n=@V; (( $n = 7 ))", "n=@V; : $(( $n = 7 ))", "n=@V; declare -- \"$n\"=7",
               "n=@V; f() { declare -g \"$n=7\"; }; f", "n=@V; : ${!n:=7}", ": $((@V=7))", "X=$((@V=7))",
               "a=(1); : ${a[@V=7]}", "[[ $((@V=7)) ]]", "declare -i X; X='@V=7'", "((X = @V = 7))", "let X=@V=7",
               "((@V+=3))", "for ((@V=7; 0; )); do :; done", "for ((i=0; i<1; @V=7, i++)); do :; done",
               "echo \"${@V:=7}\" >/dev/null", "unset @V; echo \"${@V:=7}\" >/dev/null", "[[ ${@V::=7} ]] 2>/dev/null",
               "test $((@V=7)) -eq 7", "a=(1); a[@V=7]=1", "unset @V; @V=${@V-7}", "declare -n r=@V; r+=3",
               "declare -n r=@V; unset -n r; r=7", "f() { declare -n r=$1; r=7; }; f @V", "unset @V",
               "unset -v @V", "declare -u @V=x", "@V=7; unset @V", "f() { local @V; @V=9; }; f",
               # control flow: subshells, keywords, returns, fall-through
               "f() { @V=7; }; f &", "@V=7 &", "f() { @V=7; }; time f", "until @V=7; do :; done",
               "while @V=7; do break; done", "f() { @V=7; return; @V=9; }; f",
               "f() { for i in 1 2; do @V=$i; return; done; @V=9; }; f", "@V=7 export @V", "@V=7 readonly @V",
               "case 7 in [0-9]) @V=7;& x) @V=8;; esac", "case 7 in [0-9]) @V=7;;& 7) @V=8;; esac",
               "@V=([0]=7)", "@V=(a [b]=c)", "x=abc; @V=${x: -5}"]
    for i, setter in enumerate(setters):
        body = re.sub(r"@([VRnfs])", lambda m: f"{m.group(1)}", setter)
        _script(repo / "set", f"V=4\n{body}\npython3 -m verl.trainer.main_ppo trainer.nnodes=1 +x.k=$V", f"s{i:02}.sh")
    case = Case("gen show set", repo, rc=(0, 1), one_line=False)
    case.notes.append("check_setters")
    return guarded(case, tmp)


def heredoc_payloads(tmp: Path) -> Case:
    """Here-docs setting values (`V=$(cat <<EOF ...)`) and carrying runner commands and escapes."""
    repo, _ = _tree(tmp)
    _script(repo, f"BS=4\nBS=$(cat <<EOF\n7\nEOF\n)\ncat > /dev/null <<'X'\n{FORGE}\n##[error]x\n\x1b[2J\nX\n"
                  f"read -r -d '' NOTE <<EOF\n{FORGE}\nEOF\n"
                  "python3 -m verl.trainer.main_ppo data.train_batch_size=$BS trainer.project_name=\"$NOTE\"")
    case = Case("gen show run.sh; gen check run.sh; gen check --format github run.sh", repo, rc=(0, 1),
                one_line=False)
    return guarded(case, tmp)


# --- output through every door --------------------------------------------------------------------

_PAYLOADS = ("\u202e", "\u200b", "\x1b]0;t\x07", "\x1b[31m", "\u2028" + FORGE, "\x85" + FORGE, "\r" + FORGE,
             "\x0c" + FORGE, "\x9b2J", "##[error]x", "##vso[task.setvariable variable=x]1")


def _payload_tree(tmp: Path) -> Path:
    """A project with two scripts: every payload in a value and a comment of one, and in the
    other's file name (each also with a finding to report)."""
    repo, _ = _tree(tmp)
    values = "".join(f" \\\n    +x.p{i}='{p}' # {p}" for i, p in enumerate(_PAYLOADS))
    _script(repo, CALL.replace("=24", "=7") + values, "a.sh")
    name = "b" + "".join(_PAYLOADS).replace("/", "_") + ".sh"
    _script(repo, CALL.replace("=24", "=7") + " \\\n    trainer.project_name=x", name)
    return repo


def payloads_check_formats(tmp: Path) -> Case:
    """Each payload through `gen check` in every output format."""
    repo = _payload_tree(tmp)
    commands = [f"gen check --format {f} ." for f in ("text", "json", "sarif", "github", "concise")]
    return guarded(Case("; ".join(commands), repo, rc=(0, 1, 2), one_line=False), tmp)


def payloads_fix_formats(tmp: Path) -> Case:
    """Each payload through `gen fix`'s and `gen migrate`'s diffs, then written and checked again."""
    repo = _payload_tree(tmp)
    commands = ["gen fix .", "gen fix --unsafe a.sh", "gen fix --unsafe b*.sh", "gen migrate --to 0.9.1 --from 0.4.1 .",
                "gen fix --write --unsafe .", "gen check --format github ."]
    return guarded(Case("; ".join(commands), repo, rc=(0, 1, 2), one_line=False, notes=["payload"]), tmp)


def payloads_show_explain_diff(tmp: Path) -> Case:
    """Each payload through `gen show`, `gen show --resolved`, `gen explain`, `gen diff` and a plan."""
    repo = _payload_tree(tmp)
    return guarded(Case("gen show .; gen show --resolved a.sh; gen explain a.sh --gpu h100 --model Qwen2.5-7B; "
                        "gen diff a.sh b*.sh; gen diff --format json a.sh b*.sh; "
                        "gen explain a.sh --memory --gpu h100 --model Qwen2.5-7B", repo, rc=(0, 1, 2),
                        one_line=False), tmp)


def nul_and_non_utf8_contents(tmp: Path) -> Case:
    """NUL bytes and bytes that are not UTF-8 in a value, a comment and a config file name."""
    repo, _ = _tree(tmp)
    (repo / "run.sh").write_bytes(b"#!/bin/bash\n# \xff\xfe\x00 comment\n" + CALL.encode() +
                                  b" \\\n    trainer.project_name=a\xffb\x00c \\\n    trainer.experiment_name=\xc3\x28\n")
    name = os.fsencode(repo) + b"/r\xff\x1b[2J" + FORGE.replace("/", "_").encode() + b".sh"
    with open(name, "wb") as handle:
        handle.write(b"#!/bin/bash\n" + CALL.encode() + b"\n")
    cmds = "; ".join(f"gen check --format {f} ." for f in ("text", "json", "sarif", "github", "concise"))
    return guarded(Case(cmds + "; gen show .; gen fix .", repo, rc=(0, 1, 2), one_line=False), tmp)


def html_catalog_injection(tmp: Path) -> Case:
    """A library recipe whose name and description close the page's script and add a handler."""
    repo, _ = _tree(tmp)
    lib = repo / "lib"
    lib.mkdir()
    packaged = Path(__file__).resolve().parent.parent / "recipes" / "planned-qwen2.5-7b-grpo-8gpu.yaml"
    text = packaged.read_text().replace("name: planned-qwen2.5-7b-grpo-8gpu", "name: evil")
    text = re.sub(r"(?m)^description: .*$", f"description: '{EVIL_NAME} {FORGE} \u202e'", text)
    text = re.sub(r"(?m)^tags: .*$", f"tags: ['{EVIL_NAME}', '<!--', \"\\\\e[2J\"]", text)
    text = re.sub(r"(?m)^provenance: .*$", f"provenance: '{EVIL_NAME}'", text)
    (lib / "evil.yaml").write_text(text)
    out = repo / "site"

    def check() -> str | None:
        page = out / "index.html"
        if not page.exists():
            return None
        text = page.read_text(errors="replace")
        if "<img src=x onerror" in text:
            return "index.html holds the raw <img onerror> element"
        if text.count("</script>") != text.count("<script"):
            return "index.html's scripts are closed by recipe text"
        raw = _RAW.search(text)
        return f"index.html holds raw U+{ord(raw.group()):04X}" if raw is not None else None

    case = Case("gen list --library lib --html site --wide",
                repo, rc=(0, 2), one_line=False, check=check)
    return guarded(case, tmp)


def chart_model_name_injection(tmp: Path) -> Case:
    """A model folder named like markup, its config.json's model_type an escape: `gen plan --chart`."""
    repo, _ = _tree(tmp)
    model = repo / "m"
    model.mkdir()
    (model / "config.json").write_text(
        '{"model_type": "qwen2</script><img src=x onerror=alert(1)>\\u001b[2J", "hidden_size": 1024, '
        '"num_attention_heads": 16, "num_hidden_layers": 4, "num_key_value_heads": 4, "vocab_size": 1000, '
        '"intermediate_size": 4096, "max_position_embeddings": 4096, '
        '"_name_or_path": "</script><img src=x onerror=alert(1)>\u202e"}')

    def check() -> str | None:
        page = repo / "c.html"
        text = page.read_text(errors="replace") if page.exists() else ""
        if "<img src=x onerror" in text:
            return "the chart holds the raw <img onerror> element"
        raw = _RAW.search(text)
        return f"the chart holds raw U+{ord(raw.group()):04X}" if raw is not None else None

    return guarded(Case("gen plan --model m --gpus 8 --chart c.html; gen plan --model m --gpus 8", repo,
                        rc=(0, 2), one_line=False, check=check), tmp)


CASES_35: dict[str, Callable[[Path], Case]] = {f.__name__: f for f in (
    git_dir_symlink, pyproject_symlink_marker, vendored_verl_dir_symlink, config_path_relative_link,
    config_path_climbs, config_name_climbs, hydra_searchpath_outside, defaults_plain_climb, source_bash_source_climb,
    source_proc_and_dev, walk_into_root_link, walk_special_files, project_file_fifo, hard_link_fix_write,
    import_name_climbs, library_recipe_link_out,
    huge_single_line, nested_substitutions, brace_and_loop_bombs, arithmetic_bombs, arithmetic_in_loop,
    yaml_merge_key_bomb, yaml_deep_block_nesting, toml_deep_nesting, pyproject_huge, calibration_hostile, calibration_many_runs,
    hf_cache_hostile, model_folder_outside, cache_home_hostile, many_setters, heredoc_payloads,
    nul_and_non_utf8_contents, html_catalog_injection, chart_model_name_injection,
    payloads_check_formats, payloads_fix_formats, payloads_show_explain_diff,
)}

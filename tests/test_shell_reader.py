"""The shell reader on self-written scripts: invocations through every launcher, branches,
provenance spans a fix can splice, hazards, bad input, and that nothing is ever executed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.base.errors import InputError
from generator.reading.launch_script import LaunchScript, Override
from generator.reading.shell import read_file, read_script

MAIN = "verl.trainer.main_ppo"


def only(script: LaunchScript):
    assert len(script.invocations) == 1, [(i.line, i.entry) for i in script.invocations]
    return script.invocations[0]


def ov(inv, key: str) -> Override:
    found = [o for o in inv.overrides if o.key == key]
    assert found, [o.key for o in inv.overrides]
    return found[-1]


def span_text(script: LaunchScript, o: Override) -> str:
    span = o.provenance.span
    assert span is not None, o
    return script.source[span.start : span.end].decode()


def splice(script: LaunchScript, o: Override, new: str) -> bytes:
    span = o.provenance.span
    assert span is not None
    return script.source[: span.start] + new.encode() + script.source[span.end :]


# ---------------------------------------------------------------------------------------------
# invocations and launchers


@pytest.mark.parametrize(
    ("line", "launcher", "entry", "kind"),
    [
        (f"python3 -m {MAIN} a.b=1", "python3 -m", MAIN, "module"),
        (f"python -u -X faulthandler -m {MAIN} a.b=1", "python -m", MAIN, "module"),
        (f"HYDRA_FULL_ERROR=1 python3 -m {MAIN} a.b=1", "python3 -m", MAIN, "module"),
        (f"ray job submit --address=http://h:8265 --runtime-env=r.yaml --no-wait -- python3 -m {MAIN} a.b=1",
         "ray job submit python3 -m", MAIN, "module"),
        (f"srun --overlap --nodes=2 -w node1 python -m {MAIN} a.b=1", "srun python -m", MAIN, "module"),
        ("torchrun --standalone --nnodes=1 --nproc_per_node 8 -m verl.trainer.fsdp_sft_trainer a.b=1",
         "torchrun", "verl.trainer.fsdp_sft_trainer", "module"),
        (f"nohup python3 -m {MAIN} a.b=1 > run.log 2>&1 &", "python3 -m", MAIN, "module"),
        (f"env -u CUDA_VISIBLE_DEVICES VLLM_USE_V1=1 python3 -m {MAIN} a.b=1", "python3 -m", MAIN, "module"),
        (f"timeout -s INT 3600 python3 -m {MAIN} a.b=1", "python3 -m", MAIN, "module"),
        (f"exec python3 -m {MAIN} a.b=1", "python3 -m", MAIN, "module"),
        (f"time python3 -m {MAIN} a.b=1", "python3 -m", MAIN, "module"),
        (f"numactl --cpunodebind=0 --membind=0 python3 -m {MAIN} a.b=1", "python3 -m", MAIN, "module"),
        ("accelerate launch --num_processes 8 train.py a.b=1", "accelerate launch", "train.py", "file"),
        ("deepspeed --num_gpus 8 train.py a.b=1", "deepspeed", "train.py", "file"),
        ("python3 main_ppo_split.py trainer.n_gpus_per_node=8", "python3", "main_ppo_split.py", "file"),
        ("python3 -m recipe.dapo.main_dapo", "python3 -m", "recipe.dapo.main_dapo", "module"),
        ("python3 -m my.pkg.entry --config-name=x", "python3 -m", "my.pkg.entry", "module"),
        ("python3 -m verl.trainer.main_generation data.n_samples=1", "python3 -m",
         "verl.trainer.main_generation", "module"),
    ],
)
def test_launchers(line: str, launcher: str, entry: str, kind: str) -> None:
    inv = only(read_script(line + "\n"))
    assert (inv.launcher, inv.entry, inv.entry_kind) == (launcher, entry, kind)


def test_entrypoint_variable_split_into_dash_m() -> None:
    script = read_script('ENTRYPOINT=${ENTRYPOINT:-"-m verl.trainer.fsdp_sft_trainer"}\n'
                         "torchrun --standalone --nnodes=1 --nproc_per_node=8 ${ENTRYPOINT} data.x=1\n")
    inv = only(script)
    assert (inv.launcher, inv.entry, inv.entry_kind) == ("torchrun", "verl.trainer.fsdp_sft_trainer", "module")
    assert ov(inv, "data.x").value == "1"


@pytest.mark.parametrize(
    "line",
    ["python3 -c 'import verl; print(1)'", "pip install -e .[vllm]", "ray start --head --port=6379",
     "python3 -m pip install a=1", "echo a.b=1", "python3 -m verl.utils.something"],
)
def test_not_invocations(line: str) -> None:
    script = read_script(line + "\n")
    assert script.invocations == []


def test_config_flags_both_forms_and_quotes() -> None:
    inv = only(read_script(f"python3 -m {MAIN} --config-path=\"$PWD/config\" --config-name 'ppo_megatron_trainer' x=1\n"))
    assert inv.config_path == "<?unset:PWD>/config"
    assert inv.config_name == "ppo_megatron_trainer"
    inv = only(read_script(f"python3 -m {MAIN} -cp ./config -cn=ppo_trainer\n"))
    assert (inv.config_path, inv.config_name) == ("./config", "ppo_trainer")


def test_redirects_pipes_env_and_args() -> None:
    inv = only(read_script(f'PYTHONUNBUFFERED=1 python3 -m {MAIN} a.b=1 "$@" 2>&1 | tee log.txt\n'))
    assert inv.env == {"PYTHONUNBUFFERED": "1"}
    assert "2>&1" in inv.redirects and "| tee log.txt" in inv.redirects
    assert inv.passes_args
    for form in ("$@", '"${@:2}"', "$*"):
        assert only(read_script(f"python3 -m {MAIN} a=1 {form}\n")).passes_args, form
    assert not only(read_script(f"python3 -m {MAIN} a=1 $1\n")).passes_args


def test_ops_and_other_args() -> None:
    inv = only(read_script(f"python3 -m {MAIN} +a.b=1 ++c.d=2 ~e.f x.y= --multirun positional\n"))
    assert [(o.op, o.key, o.value) for o in inv.overrides] == [
        ("+", "a.b", "1"), ("++", "c.d", "2"), ("~", "e.f", None), ("=", "x.y", "")]
    assert inv.other_args == ["--multirun", "positional"]


# ---------------------------------------------------------------------------------------------
# branches


def test_branch_kinds() -> None:
    src = f"""
mode=megatron
if [[ $mode == megatron ]]; then
    python3 -m {MAIN} which=live
else
    python3 -m {MAIN} which=dead
fi
if [ -f /etc/some_file ]; then
    python3 -m {MAIN} which=conditional
fi
for seed in 1 2; do
    python3 -m {MAIN} which=loop seed=$seed
done
while read -r line; do python3 -m {MAIN} which=while; done < list.txt
if false; then python3 -m {MAIN} which=if-false; fi
"""
    script = read_script(src)
    got = [(i.branch, ov(i, "which").value) for i in script.invocations]
    assert ("live", "live") in got
    assert ("dead", "dead") in got
    assert ("conditional", "conditional") in got
    assert ("dead", "if-false") in got
    assert ("loop", "while") in got
    seeds = [ov(i, "seed").value for i in script.invocations if ov(i, "which").value == "loop"]
    assert seeds == ["1", "2"]


def test_undecidable_branch_makes_either_value() -> None:
    src = f"""
if [ -f /etc/x ]; then TP=2; else TP=4; fi
SAME=1
if [ -f /etc/y ]; then SAME=1; fi
python3 -m {MAIN} tp=$TP same=$SAME
"""
    inv = only(read_script(src))
    assert ov(inv, "tp").value == "<?either:TP>"
    assert "one of '2', '4'" in ov(inv, "tp").unknowns[0]
    assert ov(inv, "same").value == "1" and ov(inv, "same").resolved


def test_case_and_exit() -> None:
    src = f"""
engine=${{1:-vllm}}
case $engine in
  vllm) NAME=vllm_cfg ;;
  sglang) NAME=sglang_cfg ;;
esac
python3 -m {MAIN} --config-name=$NAME
exit 0
python3 -m {MAIN} after=exit
"""
    script = read_script(src)
    assert script.invocations[0].config_name == "vllm_cfg"
    assert script.invocations[0].branch == "live"
    assert script.invocations[1].branch == "dead"
    assert read_script(src, args=["sglang"]).invocations[0].config_name == "sglang_cfg"


def test_usage_check_on_arguments_is_not_decided() -> None:
    src = f"""
CFG=${{2:-ppo_trainer}}
MODE=${{3:-fast}}
if [ "$#" -lt 2 ]; then echo usage; exit 1; fi
python3 -m {MAIN} --config-name $CFG nproc=$1 mode=$MODE
"""
    inv = only(read_script(src))
    assert inv.branch == "live"
    assert ov(inv, "nproc").value == "<?$1>"
    # the config name is the second argument, which the guard asks for; a third may still default
    assert inv.config_name == "<?$2>" and ov(inv, "mode").value == "fast"


def test_usage_check_whose_else_exits_is_not_decided() -> None:
    """Issue 34: `if [ "$#" -ge 3 ]; then shift 3; else usage; exit 1; fi` guards the arguments in
    its else: a run given them goes on, so the call after it is reached."""
    src = f"""
EXP=${{1:-exp}}
if [ "$#" -ge 3 ]; then
    shift 3
else
    echo usage; exit 1
fi
python3 -m {MAIN} nproc=$1 "$@"
"""
    inv = only(read_script(src))
    assert inv.branch == "live"
    assert ov(inv, "nproc").value == "<?$1>"
    # a value set to an argument's default before the guard is that argument's: the run gives it
    named = only(read_script(src.replace("nproc=$1", "name=$EXP")))
    assert ov(named, "name").value == "<?$1>"
    # an else that does not exit is an ordinary branch: no arguments, no shift
    plain = only(read_script(src.replace("echo usage; exit 1", "echo none")))
    assert plain.branch == "live"


def test_nested_loops_are_bounded() -> None:
    loops = "".join(f"for v{n} in $(echo 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16); do " for n in range(4))
    script = read_script(loops + f"python3 -m {MAIN} a=$v0$v1$v2$v3; " + "done; " * 4)
    assert 1 <= len(script.invocations) <= 300
    assert {i.branch for i in script.invocations} == {"loop"}


def test_passes_args_through_functions() -> None:
    body = f'run() {{ python3 -m {MAIN} "$@"; }}\n'
    assert not only(read_script(body + "run a.b=1\n")).passes_args
    assert ov(only(read_script(body + "run a.b=1\n")), "a.b").value == "1"
    assert only(read_script(body + 'run a.b=1 "$@"\n')).passes_args


def test_functions_are_read_when_called() -> None:
    src = f"""
run() {{
    local tp=$1
    python3 -m {MAIN} tp=$tp
}}
never() {{ python3 -m {MAIN} never=1; }}
run 8
"""
    inv = only(read_script(src))
    assert ov(inv, "tp").value == "8"
    assert any("function run" in c for c in inv.context)


# ---------------------------------------------------------------------------------------------
# provenance


def test_literal_span_and_quoting() -> None:
    src = f"python3 -m {MAIN} a.b=256 \"c.d=x y\" e.f='[\"a\",\"b\"]' g.h=['x','y'] 'i.j=1'\n"
    script = read_script(src)
    inv = only(script)
    assert (span_text(script, ov(inv, "a.b")), ov(inv, "a.b").provenance.quoting) == ("256", "")
    assert (span_text(script, ov(inv, "c.d")), ov(inv, "c.d").provenance.quoting) == ("x y", '"')
    assert (span_text(script, ov(inv, "e.f")), ov(inv, "e.f").provenance.quoting) == ('["a","b"]', "'")
    assert (span_text(script, ov(inv, "g.h")), ov(inv, "g.h").provenance.quoting) == ("['x','y']", "")
    assert ov(inv, "g.h").value == "[x,y]"
    assert (span_text(script, ov(inv, "i.j")), ov(inv, "i.j").provenance.quoting) == ("1", "'")
    assert all(o.provenance.source == "literal" for o in inv.overrides)


def test_variable_span_follows_the_chain_and_defaults() -> None:
    src = f"""
BASE=128
MINI=$BASE
BS=${{TRAIN_BS:-64}}
NAME="qwen-run"
python3 -m {MAIN} mini=$MINI bs=${{BS}} name="$NAME" mixed=${{BASE}}_${{BS}} prod=$((BASE*2))
"""
    script = read_script(src)
    inv = only(script)
    mini = ov(inv, "mini")
    assert (mini.provenance.source, mini.provenance.variable, span_text(script, mini)) == ("variable", "BASE", "128")
    assert mini.provenance.span.line == 2
    bs = ov(inv, "bs")
    assert span_text(script, bs) == "64" and bs.provenance.variable == "TRAIN_BS"
    assert (span_text(script, ov(inv, "name")), ov(inv, "name").provenance.quoting) == ("qwen-run", '"')
    assert ov(inv, "mixed").value == "128_64" and ov(inv, "mixed").provenance.span is None
    assert ov(inv, "prod").value == "256" and ov(inv, "prod").provenance.span is None
    # Editing the span changes what bash would pass, and nothing else.
    edited = read_script(splice(script, bs, "32"))
    assert ov(only(edited), "bs").value == "32"
    assert ov(only(edited), "mixed").value == "128_32"


def test_array_and_string_provenance(fixtures_dir: Path) -> None:
    script = read_file(fixtures_dir / "shell" / "array_heredoc.sh")
    inv = only(script)
    tbs = ov(inv, "data.train_batch_size")
    assert (tbs.provenance.source, span_text(script, tbs), tbs.provenance.span.line) == ("array", "64", 12)
    files = ov(inv, "data.train_files")
    assert files.value == "['/data/a.parquet','/data/b.parquet']"
    assert files.provenance.quoting == '"'
    pp = ov(inv, "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size")
    assert (pp.value, span_text(script, pp), pp.provenance.variable) == ("1", "1", "PP")
    assert ov(inv, "trainer.total_epochs").value == "1"  # trailing backslash at end of file

    script = read_file(fixtures_dir / "shell" / "strings_srun.sh")
    inv = only(script)
    assert (inv.launcher, inv.config_name, inv.branch) == ("srun python -m", "ppo_megatron_trainer", "live")
    lr = ov(inv, "actor_rollout_ref.actor.optim.lr")
    assert (lr.provenance.source, span_text(script, lr), lr.provenance.quoting, lr.provenance.span.line) == (
        "string", "1e-6", '"', 8)
    tp = ov(inv, "actor_rollout_ref.actor.megatron.tensor_model_parallel_size")
    assert (tp.provenance.source, span_text(script, tp), tp.provenance.span.line) == ("string", "4", 7)
    critic = ov(inv, "critic.megatron.param_offload")  # derived by ${VAR//a/b}
    assert (critic.value, critic.provenance.source, critic.provenance.span) == ("True", "string", None)
    edited = read_script(splice(script, lr, "3e-6"), str(fixtures_dir / "shell" / "strings_srun.sh"))
    assert ov(only(edited), "actor_rollout_ref.actor.optim.lr").value == "3e-6"


def test_loop_over_array_fixture(fixtures_dir: Path) -> None:
    script = read_file(fixtures_dir / "shell" / "loop_array.sh")
    inv = only(script)
    assert inv.branch == "loop" and inv.passes_args
    assert (inv.config_path, inv.config_name) == ("config", "ppo_megatron_trainer.yaml")
    assert ov(inv, "actor_rollout_ref.rollout.name").value == "vllm"
    assert ov(inv, "data.return_raw_chat").provenance.source == "string"
    assert ov(inv, "actor_rollout_ref.actor.ppo_mini_batch_size").value == "128"
    assert ov(inv, "trainer.experiment_name").value == "qwen2.5-0.5b-megatron"
    assert ov(inv, "trainer.n_gpus_per_node").value == "8"
    assert ov(only(read_file(fixtures_dir / "shell" / "loop_array.sh", env={"NUM_GPUS": "4"})),
              "actor_rollout_ref.actor.ppo_mini_batch_size").value == "64"


def test_source_reads_neighbour_file(fixtures_dir: Path) -> None:
    script = read_file(fixtures_dir / "shell" / "sourcing_main.sh")
    inv = only(script)
    gpus = ov(inv, "trainer.n_gpus_per_node")
    assert gpus.value == "8"
    assert gpus.provenance.path and gpus.provenance.path.endswith("sourcing_common.sh")
    assert gpus.provenance.span.line == 1
    project = ov(inv, "trainer.project_name")
    assert not project.resolved and "does_not_exist.sh" in project.unknowns[0]


def test_tree_sitter_workarounds() -> None:
    # ${VAR:-["..."]} gives an ERROR node inside the expansion: read by our own lexer.
    src = f'TEST_FILE=${{TEST_FILE:-["/YOUR_TRAIN_FILE_PATH"]}}\npython3 -m {MAIN} data.val_files=$TEST_FILE\n'
    script = read_script(src)
    assert ov(only(script), "data.val_files").value == "[/YOUR_TRAIN_FILE_PATH]"
    assert not [h for h in script.hazards if h.kind == "parse-error"]
    # tree-sitter-bash#315: `$A/x-$B/y` is split into two sibling nodes.
    src = f"D=/d\nB=ds\nK=$D/data/collabllm-$B/x.parquet\npython3 -m {MAIN} k=$D/data/collabllm-$B/x.parquet k2=$K\n"
    inv = only(read_script(src))
    assert [o.value for o in inv.overrides] == ["/d/data/collabllm-ds/x.parquet"] * 2
    # trailing backslash at end of file
    inv = only(read_script(f"python3 -m {MAIN} \\\n  a.b=1 \\"))
    assert ov(inv, "a.b").value == "1"


# ---------------------------------------------------------------------------------------------
# hazards


def test_hazards_fixture(fixtures_dir: Path) -> None:
    script = read_file(fixtures_dir / "shell" / "hazards.sh")
    found = {(h.kind, h.line) for h in script.hazards}
    assert {
        ("unquoted-glob", 7), ("duplicate-key", 8), ("empty-expansion", 8), ("comment-in-continuation", 10),
        ("orphan-overrides", 11), ("backslash-space", 16), ("orphan-overrides", 17),
    } <= found
    by_kind = {h.kind: h for h in script.hazards}
    comment = by_kind["comment-in-continuation"]
    assert script.source[comment.span.start : comment.span.end].decode().strip().startswith("# the next")
    assert script.source[comment.span.end - 1 : comment.span.end] == b"\n"
    space = by_kind["backslash-space"]
    assert script.source[space.span.start - 1 : space.span.end] == b"\\  "
    dup = by_kind["duplicate-key"]
    assert "'True'" in dup.message and "use_kl_loss" in dup.message
    glob = by_kind["unquoted-glob"]
    assert script.source[glob.span.start : glob.span.end] == b"trainer.logger=['console','wandb']"
    first, second = script.invocations
    assert "trainer.nnodes" not in {o.key for o in first.overrides}
    assert [o.key for o in second.overrides] == ["algorithm.adv_estimator", "algorithm.use_pf_ppo"]
    assert second.other_args == [" "]  # bash passes the escaped space as an argument


def test_no_false_hazards() -> None:
    src = f"""
ARR=(
  a.b=1 \\
  # comment inside an array
  c.d=2
)
L="x.y=1 \\
   z.w=2"   # trailing comment
python3 -m {MAIN} "${{ARR[@]}}" $L 'q.r=[1,2]' "s.t=['a']" \\
    u.v=\\[1\\]
"""
    script = read_script(src)
    assert script.hazards == []


def test_parse_error_is_reported_and_rest_is_read() -> None:
    src = f"python3 -m {MAIN} a.b=1\nif [[ ; then\nfi fi )\npython3 -m {MAIN} c.d=2\n"
    script = read_script(src)
    assert any(h.kind == "parse-error" for h in script.hazards)
    assert "a.b" in {o.key for i in script.invocations for o in i.overrides}


# ---------------------------------------------------------------------------------------------
# bad input and safety


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "bin.sh"
    binary.write_bytes(b"python3 -m x a=1\0\1\2")
    latin = tmp_path / "latin.sh"
    latin.write_bytes(b"echo caf\xe9\n")
    big = tmp_path / "big.sh"
    with open(big, "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    cases = {tmp_path / "missing.sh": "no such file", tmp_path: "directory", binary: "binary",
             latin: "UTF-8", big: "too large"}
    for path, words in cases.items():
        with pytest.raises(InputError) as info:
            read_file(path)
        assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_read_error_is_one_line() -> None:
    with pytest.raises(InputError) as info:
        read_file("/proc/self/mem")  # exists, is a file, but reading it fails even for root
    assert "cannot read" in str(info.value)


def test_test_command_forms() -> None:
    src = f"""
X=megatron
if test "$X" = megatron; then A=1; else A=2; fi
if test -z "$X"; then B=1; else B=2; fi
if test ! -n ""; then C=1; else C=2; fi
python3 -m {MAIN} a=$A b=$B c=$C
"""
    inv = only(read_script(src))
    assert [o.value for o in inv.overrides] == ["1", "2", "1"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read anything")
def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "secret.sh"
    path.write_text("echo\n")
    path.chmod(0)
    with pytest.raises(InputError, match="permission"):
        read_file(path)


def test_non_ascii_offsets_are_bytes() -> None:
    src = f"# 模型\nNAME=qwen-中文\npython3 -m {MAIN} trainer.experiment_name=$NAME x=é\n".encode()
    script = read_script(src)
    inv = only(script)
    name = ov(inv, "trainer.experiment_name")
    assert name.value == "qwen-中文"
    assert span_text(script, name) == "qwen-中文"
    assert span_text(script, ov(inv, "x")) == "é"


def test_nothing_is_ever_executed(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    m = str(marker)
    src = f"""
A=$(touch {m}-assign)
B=`touch {m}-backtick`
C=${{UNSET:-$(touch {m}-default)}}
ARR=($(touch {m}-array) "`touch {m}-array2`")
cat <<EOF
$(touch {m}-heredoc)
EOF
if [ "$(touch {m}-cond)" = x ]; then echo; fi
case "$(touch {m}-case)" in *) ;; esac
for i in $(touch {m}-loop); do echo; done
f() {{ touch {m}-function; }}
f
source <(touch {m}-procsub)
eval "touch {m}-eval"
$(touch {m}-command-name) arg
python3 -m {MAIN} a=$(touch {m}-arg) b=`touch {m}-arg2` c=$((  $(touch {m}-arith) + 1 )) "${{ARR[@]}}"
touch {m}-plain
"""
    script = read_script(src, str(tmp_path / "s.sh"))
    inv = only(script)
    assert not ov(inv, "a").resolved
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# differential: our reading vs bash running our own fixtures with the launchers stubbed out

_STUBS = r"""
_record() { printf '%s\0' "$@" >> "$OUT"; printf '\1' >> "$OUT"; }
python3() { _record "$@"; }
python() { _record "$@"; }
srun() { while [[ "$1" == -* ]]; do shift; done; "$@"; }
set() { :; }
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
@pytest.mark.parametrize("name", ["loop_array.sh", "strings_srun.sh", "hazards.sh", "trailing_backslash.sh"])
def test_overrides_match_bash_on_own_fixtures(name: str, fixtures_dir: Path, tmp_path: Path) -> None:
    from generator.reading.overrides import looks_like_override

    path = fixtures_dir / "shell" / name
    out = tmp_path / "calls.bin"
    out.write_bytes(b"")
    subprocess.run(["bash", "--norc", "--noprofile", "-c", _STUBS + f'\nsource "{path}"'],
                   env={"PATH": "/usr/bin:/bin", "OUT": str(out)}, cwd=tmp_path, capture_output=True,
                   timeout=20, check=False)
    calls = [c.split(b"\0")[:-1] for c in out.read_bytes().split(b"\1")[:-1]]
    expected = [[a.decode() for a in call if looks_like_override(a.decode())] for call in calls]
    script = read_file(path)
    # bash ran with an empty environment, where an unset variable expands to nothing
    got = [[re.sub(r"<\?unset:\w+>", "", o.text) for o in inv.overrides] for inv in script.invocations]
    assert got == expected
    assert sum(len(call) for call in expected) >= 2


# ---------------------------------------------------------------------------------------------
# robustness: arbitrary bash-ish text never raises anything but InputError

_FRAGMENTS = [
    "python3 -m verl.trainer.main_ppo ", "a.b=", "$X", "${X:-", "}", "${X//a/b}", "$((", "))", "$(", ")", "`",
    "'", '"', "\\", "\\\n", "\n", " ", "(", "[[", "]]", "if ", "then ", "fi", "for x in ", "; do ", "done",
    "case $x in ", "esac", ";;", "<<EOF\n", "EOF\n", "#", "=", "+", "~", "[", "]", "{", "${#X}", "${X:1:2}",
    "$@", '"$@"', "${a[@]}", "a=(", "X=1 ", "export ", "local ", "declare -a ", "source x", "&&", "||",
    "|", "&", ">", "2>&1", "$'\\n'", "é", "${!X}", "${X^^}", "$1", "set -- a", "shift", "f() {", "}\nf ",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_FRAGMENTS), max_size=40))
def test_reader_never_crashes(parts: list[str]) -> None:
    script = read_script("".join(parts))
    for inv in script.invocations:
        for o in inv.overrides:
            span = o.provenance.span
            if span is not None and o.provenance.path is None:
                assert 0 <= span.start <= span.end <= len(script.source)


def test_brace_expansion_hazard() -> None:
    script = read_script(f"python3 -m {MAIN} +x.cfg={{a:1,b:2}} y.z='{{a:1,b:2}}'\nfor r in {{0..3}}; do :; done\n")
    inv = only(script)
    assert [o.text for o in inv.overrides] == ["+x.cfg=a:1", "+x.cfg=b:2", "y.z={a:1,b:2}"]
    (hazard,) = [h for h in script.hazards if h.kind == "brace-expansion"]
    assert hazard.line == 1 and "2 arguments" in hazard.message
    assert script.source[hazard.span.start : hazard.span.end] == b"+x.cfg={a:1,b:2}"


def test_source_relative_to_the_script_directory(tmp_path: Path) -> None:
    (tmp_path / "common.sh").write_text("TP=4\n")
    (tmp_path / "sub").mkdir()
    script = tmp_path / "run.sh"
    script.write_text('SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\nsource "$SCRIPT_DIR/common.sh"\n'
                      f"cd sub\npython3 -m {MAIN} tp=$TP\n")
    assert ov(only(read_file(script)), "tp").value == "4"
    script.write_text(f'source "$(dirname "$0")/common.sh"\npython3 -m {MAIN} tp=$TP\n')
    assert ov(only(read_file(script)), "tp").value == "4"
    script.write_text(f"cd sub\nsource ../common.sh\npython3 -m {MAIN} tp=$TP\n")
    assert ov(only(read_file(script)), "tp").value == "4"


@pytest.mark.parametrize(
    ("src", "line", "what"),
    [("if true; then\n echo hi\n", 2, "missing `fi`"), ("echo $(date\n", 1, "missing `)`"),
     (f"python3 -m {MAIN} a=1\nif [[ ; then ( fi\n", 2, "`if [[ ; then ( fi`")],
)
def test_parse_error_lines(src: str, line: int, what: str) -> None:
    (hazard,) = [h for h in read_script(src).hazards if h.kind == "parse-error"]
    assert hazard.line == line and what in hazard.message

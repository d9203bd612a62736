"""Issue 35: every way bash sets a variable is either evaluated or makes the variable unknown.

Each case is a line run between `BS=4` and a trainer call that passes `$BS`: the value the
reader shows must be the one bash ends with (checked against bash itself where the line needs
no input), or unknown. Before issue 35, `eval "BS=7"`, `((BS++))`, `let`, `printf -v`,
`mapfile`, `getopts`, `declare -n/-i/-u`, `select`, `source` of a missing file, `unset "BS"`,
a pipeline stage and others left `4` shown as known.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from generator.reading.shell import read_script
from generator.reading.shell.setters import names_arith_sets, names_text_sets, one_arith_step

MAIN = "verl.trainer.main_ppo"

# (the line, the value bash leaves in BS) for the ways the reader evaluates exactly.
EVALUATED = [
    ('eval "BS=7"', "7"),
    ("eval BS=7", "7"),
    ('eval "BS=7; X=1"', "7"),
    ('command eval "BS=7"', "7"),
    ('printf -v BS "%s" 7', "7"),
    ("declare -i BS=3+4", "7"),
    ("declare -u BS=abc", "ABC"),
    ("declare -l BS=AbC", "abc"),
    ("declare -c BS=hELLO", "Hello"),
    ("declare -u BS; BS=ab", "AB"),
    ("let BS=7", "7"),
    ('let "BS=BS*2"', "8"),
    ("((BS=7))", "7"),
    ("((BS++))", "5"),
    ("((--BS))", "3"),
    ("((BS+=3))", "7"),
    ("((BS<<=1))", "8"),
    (": $((BS=7))", "7"),
    ("Y=$((BS++))", "5"),
    ("a[BS++]=1", "5"),
    ("if ((BS=7)); then :; fi", "7"),
    (": ${BS:=9}", "4"),
    ("unset BS; : ${BS=9}", "9"),
    ("for BS in 7; do :; done", "7"),
    ("f() { BS=7; }; f", "7"),
    ("f() { local BS=7; }; f", "4"),
    ("x=$(BS=7)", "4"),
    ("{ BS=7; }", "7"),
    ("(BS=7)", "4"),
    ("echo 7 | { BS=7; }", "4"),  # every stage of a pipeline runs in a subshell
    ("true | while read -r l; do BS=7; done", "4"),
    ('bash -c "BS=7; echo"', "4"),  # another process
    ("unset -f BS", "4"),  # a function, not the variable
    ("export -n BS", "4"),
    ("declare -p BS >/dev/null", "4"),
    ("BS=7 true", "4"),
    ("declare BS=7", "7"),
    ("export BS=7", "7"),
    ("BS+=1", "41"),
    ('trap "BS=7" EXIT', "4"),  # runs after the script
    ('eval "$(conda shell.bash hook)"', "4"),  # conda's hook sets CONDA_*, PATH, PS1 only
    # issue 35's red-team round: a name computed at run time, arithmetic in a test, `local` outside a function
    ('n=BS; declare "$n=7"', "7"),
    ('n=BS; typeset "$n"=7', "7"),
    ('n=BS; export "$n=7"', "7"),
    ('n=BS; readonly "$n=7"', "7"),
    ("n=BS; declare $n=7", "7"),
    ('n=BS; declare -- "$n"=7', "7"),
    ('n=BS; f() { declare -g "$n=7"; }; f', "7"),
    ('declare "$(echo BS)=7"', "7"),
    ('n="BS=8 W=9"; declare $n', "8"),
    ('n=BS; declare "$n"', "4"),
    ("[[ $((BS=7)) ]]", "7"),
    ("[ $((BS=7)) ]", "7"),
    ("[[ $((BS=7)) -eq 7 ]]", "7"),
    ("[[ -n x ]] && [[ $((BS++)) ]]", "5"),
    ("local BS=7 2>/dev/null", "4"),  # bash: local can only be used in a function
    ("f() { BS=7; }; f &", "4"),  # a background command runs in a subshell
    ("BS=7 &", "4"),
    ("f() { BS=7; }; time f", "7"),
    ("until BS=7; do :; done", "7"),  # the condition runs at least once
    ("while BS=7; do break; done", "7"),
    ("f() { BS=7; return; BS=9; }; f", "7"),
    ("f() { for i in 1 2; do BS=$i; return; done; BS=9; }; f", "1"),
    ("f() { if [ -n x ]; then return; fi; BS=9; }; f", "4"),
    ("BS=7 export BS", "7"),  # the temporary value of a name export/readonly is given stays
    ("BS=7 readonly BS", "7"),
    ("BS=7 export W", "4"),
    ("case 7 in [0-9]) BS=7;& x) BS=8;; esac", "8"),  # `;&` falls through
    ("case 7 in [0-9]) BS=7;& x) BS=8;& y) BS=9;; z) BS=1;; esac", "9"),
]

# (the line, the marker the value becomes) for the ways whose value the reader cannot know.
UNKNOWN = [
    ('eval "$X"', "<?eval:BS>"),
    ('eval "$(some_tool --env)"', "<?eval:BS>"),
    ('eval "run $X"', "<?eval:BS>"),  # X may hold `; BS=7`
    ("read BS", "<?read:BS>"),
    ("read -a BS", "<?read:BS>"),
    ("IFS=, read BS X", "<?read:BS>"),
    ("builtin read BS", "<?read:BS>"),
    ("mapfile BS", "<?mapfile:BS>"),
    ("readarray -t BS < f", "<?mapfile:BS>"),
    ('printf -v BS "%d" "$X"', "<?printf:BS>"),
    ("declare -n R=BS; R=7", "<?nameref:BS>"),
    ("f() { local -i BS=2+2; echo; }; f; BS=3+4", "<?declare:BS>"),
    ("((BS=X))", "<?arith:BS>"),
    ("((BS=1, Y=2))", "<?arith:BS>"),
    (": $((BS += $X))", "<?arith:BS>"),
    ("for ((BS=0; BS<3; BS++)); do :; done", "<?either:BS>"),
    ("select BS in 1 2; do break; done", "<?either:BS>"),
    ("getopts ab BS", "<?getopts:BS>"),
    ("source ./nope.sh", "<?source:BS>"),
    (". ./nope.sh", "<?source:BS>"),
    ("source $X", "<?source:BS>"),
    ("unset BS", "<?unset:BS>"),
    ('unset "BS"', "<?unset:BS>"),
    ("X=BS; unset $X", "<?unset:BS>"),
    ("unset $Y", "<?unset:BS>"),
    ("shopt -s lastpipe; echo 7 | { BS=7; }", "<?either:BS>"),
    ("wait -p BS", "<?wait:BS>"),
    ('trap "BS=7" DEBUG', "<?trap:BS>"),
    ("exec {BS}>/dev/null", "<?fd:BS>"),
    ("coproc BS { :; }", "<?coproc:BS>"),
    ('declare "$X=7"', "<?declare:BS>"),  # a name not known statically: any variable
    ('n=BS; declare -i "$n=3+4"', "<?declare:BS>"),
    ("declare -i X; X='BS=7'", "<?arith:BS>"),  # bash evaluates an integer variable's value
    ("BS=([0]=7)", "<?index:BS>"),  # elements placed by index
    ("case 7 in [0-9]) BS=7;;& 7) BS=8;; esac", "<?either:BS>"),  # `;;&` goes on testing
]


def _value(tmp_path: Path, line: str) -> str:
    path = tmp_path / "run.sh"
    path.write_text(f"#!/bin/bash\nBS=4\n{line}\npython3 -m {MAIN} data.train_batch_size=$BS\n")
    script = read_script(path.read_bytes(), str(path))
    (override,) = script.invocations[0].overrides
    return str(override.value)


@pytest.mark.parametrize(("line", "value"), EVALUATED)
def test_a_setter_read_exactly_gives_bashs_value(tmp_path: Path, line: str, value: str) -> None:
    assert _value(tmp_path, line) == value


@pytest.mark.parametrize(("line", "marker"), UNKNOWN)
def test_a_setter_not_followed_makes_the_variable_unknown(tmp_path: Path, line: str, marker: str) -> None:
    assert _value(tmp_path, line) == marker


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_the_exact_values_are_bashs(tmp_path: Path) -> None:
    """Our own snippets (no script of a user's), run by bash in an empty folder."""
    for line, value in EVALUATED:
        text = f"BS=4\n{line}\necho \"$BS\"\n"
        done = subprocess.run(["bash", "--norc", "--noprofile", "-c", text], capture_output=True, text=True,
                              cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL, timeout=10,
                              check=False)
        assert done.stdout.splitlines()[-1:] == [value], (line, done.stdout, done.stderr)


def test_a_known_setup_hook_makes_only_its_own_variables_unknown(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    path.write_text('CONDA_PREFIX=/opt/c\nBS=4\neval "$(/opt/conda/bin/conda shell.bash hook 2>/dev/null)"\n'
                    f"python3 -m {MAIN} data.train_batch_size=$BS trainer.default_local_dir=$CONDA_PREFIX\n")
    script = read_script(path.read_bytes(), str(path))
    assert [str(o.value) for o in script.invocations[0].overrides] == ["4", "<?eval:CONDA_PREFIX>"]


def test_what_arithmetic_and_text_assign() -> None:
    assert names_arith_sets("a = 1, b += 2, c == d, e <= f, g >= h, i != j, k++, --l, m[2] = 3") == \
        ["a", "b", "k", "l", "m"]
    assert names_arith_sets("x << 1 >= y") == []
    assert one_arith_step(" x *= y + 1 ") is not None and one_arith_step("x = y = 1") is None
    found = names_text_sets("A=1; read -r B C; for D in x; do ((E++)); done; let F=1 G=2; printf -v H x")
    assert set(found) >= {"A", "B", "C", "D", "E", "F", "G", "H"}

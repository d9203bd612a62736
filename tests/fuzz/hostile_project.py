"""Hostile families of issue 21 for the fuzzer: shapes that expand (interpolations, shell
functions), regexes from the script, and a config tree that reaches outside the project.

  interp     Hydra/OmegaConf interpolations in overrides and in a fork's YAML: doubling chains,
             fan-in over a large subtree, cycles, nested oc.select
  functions  shell functions that call themselves or each other many times, in loops
  regexes    `[[ $x =~ re ]]` with patterns that backtrack, against long values
  tree       a config tree (and sourced files) reaching outside the project: symlinked YAML,
             `defaults:` entries with `../`, `--config-path` and `source` of an outside folder;
             and big YAML in the tree (flow lists, doubling interpolations, aliases)

Files outside the project hold SECRET; the harness fails a case that prints it.
"""

from __future__ import annotations

from hypothesis import strategies as st

from hostile import MAIN, FuzzCase

SECRET = "FUZZSECRET-91c2"
OUTSIDE = "{OUTSIDE}"  # replaced by the harness with the outside folder's path


@st.composite
def interp(draw, small: bool = False) -> FuzzCase:
    kind = draw(st.integers(0, 4))
    if kind == 0:  # each override doubles the one before
        levels = draw(st.integers(3, 20 if small else 40))
        words = ["+x.l0=ab"] + [f"+x.l{i}='${{x.l{i - 1}}}${{x.l{i - 1}}}'" for i in range(1, levels + 1)]
    elif kind == 1:  # many references to a large subtree
        leaves, refs = draw(st.sampled_from([(50, 50), (300, 300)] if small else [(50, 50), (300, 300), (1000, 1000)]))
        words = [f"+x.b.k{i}={i}" for i in range(leaves)] + [f"+y.r{i}='${{x.b}}'" for i in range(refs)]
    elif kind == 2:  # cycles and self references
        words = draw(st.sampled_from([["+x.a='${x.b}'", "+x.b='${x.a}'"], ["+x.a='${x.a}'"],
                                      ["+x.a='${.a}'"], ["+x.a='${..x}'"]]))
    elif kind == 3:  # nested selects and resolvers
        depth = draw(st.integers(1, 30 if small else 200))
        words = ["+x.v=1", "+x.s='" + "${oc.select:x.v," * depth + "0" + "}" * depth + "'",
                 "+x.e='${oc.env:HOME}'"]
    else:  # the doubling chain in a fork's YAML, and overrides on top
        levels = draw(st.integers(3, 40))
        lines = ["defaults:", "  - ppo_trainer", "  - _self_", "x:", "  l0: ab"]
        lines += [f"  l{i}: ${{x.l{i - 1}}}${{x.l{i - 1}}}" for i in range(1, levels + 1)]
        script = (f"{MAIN} --config-path=conf --config-name=mine +z.a='${{x.l{levels}}}${{x.l{levels}}}' "
                  "trainer.nnodes=1\n")
        return FuzzCase(script.encode(), files={"conf/mine.yaml": ("\n".join(lines) + "\n").encode()},
                        family="interp")
    script = f"{MAIN} \\\n    " + " \\\n    ".join(words) + " \\\n    trainer.nnodes=1\n"
    return FuzzCase(script.encode(), family="interp")


@st.composite
def functions(draw, small: bool = False) -> FuzzCase:
    calls = draw(st.integers(2, 12))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        body = "f() { " + "f; " * calls + "}\nf\n"
    elif kind == 1:
        body = "a() { " + "b; " * calls + "}\nb() { " + "a; " * calls + "}\na\n"
    elif kind == 2:  # in a loop, with a growing value
        body = ("X=a\ng() { X=$X$X; " + "g; " * calls + "}\n"
                "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do g; done\n")
    else:  # a chain of functions, each calling the next `calls` times
        depth = draw(st.integers(2, 8))
        body = "".join(f"f{i}() {{ " + f"f{i + 1}; " * calls + "}\n" for i in range(depth))
        body += f"f{depth}() {{ N=$((N+1)); }}\nN=0\nf0\n"
    script = body + f"{MAIN} trainer.nnodes=${{N:-1}} trainer.project_name=\"$X\"\n"
    return FuzzCase(script.encode(), family="functions")


BACKTRACKING = ("^(a+)+b$", "^(a|a)*b$", "^(a*)*b$", "(a|aa)+c", "^(([a-z])+.)+[A-Z]([a-z])+$", "(x+x+)+y",
                "^(\\w+\\s?)*$", "(.*a){12}", "\\1", "(?=a)", "[[:alpha:]]+", "(")


@st.composite
def regexes(draw, small: bool = False) -> FuzzCase:
    pattern = draw(st.sampled_from(BACKTRACKING))
    size = draw(st.sampled_from([10, 30, 1000] if small else [10, 30, 1000, 100_000]))
    value = draw(st.sampled_from(["a", "x", "ab ", "Aa"])) * size
    quoted = draw(st.booleans())
    test = f'[[ $Y =~ "{pattern}" ]]' if quoted else f"[[ $Y =~ {pattern} ]]"
    script = (f"Y={value}\nif {test}; then N=2; else N=1; fi\n"
              f"[[ ${{#Y}} -gt 3 && $Y =~ {pattern} ]] && M=1\n"
              f"{MAIN} trainer.nnodes=$N trainer.n_gpus_per_node=${{M:-8}}\n")
    return FuzzCase(script.encode(), family="regexes")


_SECRET_YAML = f"defaults:\n  - ppo_trainer\n  - _self_\nsecret_token: {SECRET}\naws: [{SECRET}\n".encode()


@st.composite
def tree(draw, small: bool = False) -> FuzzCase:
    kind = draw(st.integers(0, 6))
    call = f"{MAIN} --config-path=conf --config-name=mine trainer.nnodes=1\n"
    files: dict[str, bytes] = {}
    outside: dict[str, bytes] = {"secret.yaml": _SECRET_YAML, "hosts.yaml": f"root: {SECRET}\n".encode(),
                                 "env.sh": f"export TOKEN={SECRET}\nNAME={SECRET}\n".encode()}
    links: dict[str, str] = {}
    if kind == 0:  # the call's config is a link to a secret file
        links["conf/mine.yaml"] = "secret.yaml"
    elif kind == 1:  # a defaults entry that climbs out of the tree
        up = "../" * draw(st.integers(1, 12))
        files["conf/mine.yaml"] = f"defaults:\n  - ppo_trainer\n  - x@y: {up}outside/hosts\n  - _self_\n".encode()
        files["conf/x/.keep"] = b""
    elif kind == 2:  # --config-path at the outside folder
        call = f"{MAIN} --config-path={OUTSIDE} --config-name=secret trainer.nnodes=1\n"
    elif kind == 3:  # source an outside file, use its values
        call = (f"source {OUTSIDE}/env.sh\n. {OUTSIDE}/secret.yaml\n"
                f"{MAIN} trainer.nnodes=1 trainer.experiment_name=$NAME trainer.project_name=$TOKEN\n")
    elif kind == 4:  # one big flow list
        count = draw(st.sampled_from([10_000, 300_000] if small else [10_000, 300_000, 1_900_000]))
        files["conf/mine.yaml"] = ("big: [" + "1," * count + "1]\n").encode()
    elif kind == 5:  # many defaults entries over one large file
        entries = "".join(f"  - g@p{i}: big\n" for i in range(draw(st.sampled_from([10, 100, 400]))))
        files["conf/mine.yaml"] = f"defaults:\n  - ppo_trainer\n{entries}  - _self_\n".encode()
        lines = draw(st.sampled_from([100, 2000] if small else [100, 2000, 12_000]))
        files["conf/g/big.yaml"] = "".join(f"k{i}: {'v' * 60}\n" for i in range(lines)).encode()
    else:  # a nested default that is a link, and an alias bomb beside it
        files["conf/mine.yaml"] = b"defaults:\n  - ppo_trainer\n  - sub@s: inner\n  - _self_\n"
        links["conf/sub/inner.yaml"] = "secret.yaml"
        files["conf/sub/bomb.yaml"] = b"a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    return FuzzCase(call.encode(), files=files, outside=outside, links=links, family="tree")


PROJECT_FAMILIES = {"interp": interp, "functions": functions, "regexes": regexes, "tree": tree}

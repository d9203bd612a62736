"""Hostile inputs for the fuzzer (issue 13): each case is a launch script plus the files it points
at and the options that make a command read them.

Families:
  nesting   `$(…)`, `${…}`, `if`, `(( ))` and Python brackets/calls nested hundreds to thousands deep
  huge      very long lines, tens of thousands of overrides or assignments, a file over the size cap
  yaml      a --config-path folder whose YAML is an alias bomb, a fanning-out or self-referencing
            defaults list, or broken YAML
  model     a --model-config config.json with wrong types, NaN/Inf, 1e300, 5,000-digit ints,
            zero/negative/huge sizes, deep nesting, or not JSON at all
  control   ESC sequences, other C0/C1 control characters and bidi marks in values and comments
  crlf      CRLF or lone-CR line endings, also in the middle of continued commands

The script is named run.sh, or launch.py for a Python launcher. `small=True` keeps the sizes
that cost well under a second per input (the test tiers); bench/fuzz.py draws the full range.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from hypothesis import strategies as st

from generator.base.files import SCRIPT_LIMIT
from strategies import KEYS, script_bytes, script_text

MAIN = "python3 -m verl.trainer.main_ppo"


@dataclass(frozen=True)
class FuzzCase:
    script: bytes
    name: str = "run.sh"
    files: dict[str, bytes] = field(default_factory=dict)  # relative path -> content
    check_args: tuple[str, ...] = ()  # options for `gen check` (and explain) that read `files`
    family: str = "classic"
    # Files outside the project (issue 21): written beside the case folder, which then gets a
    # `.git` (the project root); `links` are case paths made symlinks to outside files.
    outside: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------- nesting


@st.composite
def nesting(draw, small: bool = False) -> FuzzCase:
    depth = draw(st.sampled_from([64, 200] if small else [64, 200, 500, 1000, 3000]))
    kind = draw(st.integers(0, 6))
    if kind == 0:
        value = "$(echo " * depth + "1" + ")" * depth
    elif kind == 1:
        value = "${X:-" * depth + "1" + "}" * depth
    elif kind == 2:
        value = "$((" * depth + "1" + "))" * depth
    elif kind == 3:
        value = '"$(echo "' * depth + "1" + '")"' * depth
    if kind <= 3:
        script = f"{MAIN} \\\n    data.train_batch_size={value}\n"
        return FuzzCase(script.encode(), family="nesting")
    if kind == 4:
        body = "if true; then\n" * depth + f"{MAIN} trainer.nnodes=1\n" + "fi\n" * depth
        return FuzzCase(body.encode(), family="nesting")
    if kind == 5:
        body = "f() {\n" * depth + f"{MAIN} trainer.nnodes=1\n" + "}\n" * depth
        return FuzzCase(body.encode(), family="nesting")
    # a Python launcher: nested brackets or calls in the override list
    open_, close = draw(st.sampled_from([("[", "]"), ("(", ")"), ("f(", ")"), ("{1: ", "}")]))
    source = ("import subprocess\n"
              f"x = {open_ * depth}1{close * depth}\n"
              "subprocess.run(['python3', '-m', 'verl.trainer.main_ppo', 'trainer.nnodes=1'])\n")
    return FuzzCase(source.encode(), name="launch.py", family="nesting")


# -------------------------------------------------------------------------------------- huge


@st.composite
def huge(draw, small: bool = False) -> FuzzCase:
    kind = draw(st.integers(0, 4))
    if kind == 0:  # one very long word
        size = draw(st.sampled_from([100_000] if small else [100_000, SCRIPT_LIMIT // 2, SCRIPT_LIMIT - 200]))
        script = f"{MAIN} trainer.project_name={'a' * size}\n"
    elif kind == 1:  # many overrides on one call
        return large_case("overrides", draw(st.sampled_from([200] if small else [200, 2_000, 20_000])))
    elif kind == 2:  # many assignments, then the call
        count = draw(st.sampled_from([1_000] if small else [1_000, 5_000, 50_000]))
        script = "".join(f"V{i}=${{V{i - 1}:-{i}}}\n" for i in range(count)) + f"{MAIN} trainer.nnodes=$V{count - 1}\n"
    elif kind == 3:  # just over the size cap: refused before it is read
        script = "#" + "x" * SCRIPT_LIMIT + f"\n{MAIN}\n"
    else:  # many trainer calls
        return large_case("calls", draw(st.sampled_from([50] if small else [50, 500, 3_000])))
    return FuzzCase(script.encode(), family="huge")


# -------------------------------------------------------------------------------------- yaml

ALIAS_BOMB = "\n".join(
    ["a: &a [" + ", ".join(["x"] * 9) + "]"]
    + [f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]" for i in range(8)]
) + "\n"


def _fan_out(levels: int, width: int) -> dict[str, str]:
    """A defaults list with `width` entries per level, `levels` deep: width**levels configs."""
    files = {}
    for level in range(levels):
        entries = "".join(f"  - l{level + 1}_{j}\n" for j in range(width)) if level + 1 < levels else ""
        for j in range(width if level else 1):
            name = "bomb" if level == 0 else f"l{level}_{j}"
            files[f"conf/{name}.yaml"] = f"defaults:\n{entries}  - _self_\nk{level}_{j}: 1\n" if entries \
                else f"k{level}_{j}: 1\n"
    return files


@st.composite
def yaml_config(draw, small: bool = False) -> FuzzCase:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        files = {"conf/bomb.yaml": ALIAS_BOMB}
    elif kind == 1:
        files = _fan_out(draw(st.sampled_from([3, 4, 5])), 10)
    elif kind == 2:  # a config whose defaults list names itself
        files = {"conf/bomb.yaml": "defaults:\n  - bomb\n  - _self_\nx: 1\n"}
    elif kind == 3:  # two configs that include each other
        files = {"conf/bomb.yaml": "defaults:\n  - other\n  - _self_\n",
                 "conf/other.yaml": "defaults:\n  - bomb\n  - _self_\n"}
    else:  # broken or hostile YAML
        files = {"conf/bomb.yaml": draw(st.sampled_from([
            "a: [", "a: !!python/object/apply:os.system ['touch /tmp/verl_gen_fuzz_marker']\n",
            "- a\n- b\n", "&a a: *a\n", "a: b: c\n", "\x00\x01", "defaults: 3\n", "defaults:\n  - {x: [}\n",
            "a: &x\n  b: *x\n"]))}
    script = (f"{MAIN} --config-path=conf --config-name=bomb \\\n"
              "    actor_rollout_ref.actor.ppo_mini_batch_size=64 trainer.nnodes=1\n")
    return FuzzCase(script.encode(), files={k: v.encode() for k, v in files.items()}, family="yaml")


# ------------------------------------------------------------------------------------- model

GOOD_MODEL = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
              "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
              "intermediate_size": 18944, "vocab_size": 152064, "max_position_embeddings": 32768}
HUGE_INT = object()  # stands for a 5,000-digit integer (Python refuses to str() one past 4,300 digits)
BAD_VALUES = ["28", None, 0, -1, -128, 10**12, HUGE_INT, 1e300, float("nan"), float("inf"), True, [], {}, 2.5,
              "1e300"]


@st.composite
def model_config(draw, small: bool = False) -> FuzzCase:
    kind = draw(st.integers(0, 3))
    if kind == 0:  # one or more fields given a hostile value
        config = dict(GOOD_MODEL)
        for key in draw(st.lists(st.sampled_from([*GOOD_MODEL, "head_dim", "num_experts", "n_routed_experts",
                                                  "moe_intermediate_size", "num_experts_per_tok"]),
                                 min_size=1, max_size=3)):
            config[key] = draw(st.sampled_from(BAD_VALUES))
        text = _json_with_huge_ints(config)
    elif kind == 1:  # deep nesting
        depth = draw(st.sampled_from([1000, 100_000]))
        text = "[" * depth + "]" * depth
    elif kind == 2:
        text = draw(st.sampled_from(["", "null", "[]", "{", "1", '"config"', "\x00", '{"hidden_size": 1}',
                                     '{"text_config": {"text_config": {}}}']))
    else:
        text = json.dumps(dict(GOOD_MODEL, **{"num_hidden_layers": draw(st.integers(-5, 10**15))}))
    script = (f"{MAIN} actor_rollout_ref.actor.megatron.tensor_model_parallel_size=4 \\\n"
              "    actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=2 trainer.n_gpus_per_node=8\n")
    return FuzzCase(script.encode(), files={"model/config.json": text.encode("utf-8", "surrogatepass")},
                    check_args=("--model-config", "model/config.json"), family="model")


def _json_with_huge_ints(config: dict) -> str:
    """JSON text of `config`, NaN/Infinity as Python writes them, HUGE_INT as 5,000 nines."""
    parts = []
    for key, value in config.items():
        text = "9" * 5000 if value is HUGE_INT else json.dumps(value, allow_nan=True)
        parts.append(f"{json.dumps(key)}: {text}")
    return "{" + ", ".join(parts) + "}"


# ----------------------------------------------------------------------------------- control

CONTROL = ["\x1b[2J", "\x1b]0;title\x07", "\x1b[31m", "\x07", "\x08", "\x0b", "\x0c", "\x7f", "\x9b31m",
           "\u202e", "\u2066", "\x1b", "\r"]


@st.composite
def control(draw, small: bool = False) -> FuzzCase:
    text = draw(script_text())
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(CONTROL)) + text[at:]
    text += f"\n{MAIN} trainer.project_name='{draw(st.sampled_from(CONTROL))}x' trainer.nnodes=1 # {CONTROL[0]}\n"
    return FuzzCase(text.encode("utf-8", "surrogatepass"), family="control")


# -------------------------------------------------------------------------------------- crlf


@st.composite
def crlf(draw, small: bool = False) -> FuzzCase:
    data = draw(script_text()).encode()
    kind = draw(st.integers(0, 2))
    if kind == 0:
        data = data.replace(b"\n", b"\r\n")
    elif kind == 1:
        data = data.replace(b"\n", b"\r")
    else:  # only some lines, e.g. an edit made on another system
        lines = data.split(b"\n")
        data = b"\n".join(line + (b"\r" if draw(st.booleans()) else b"") for line in lines)
    return FuzzCase(data, family="crlf")


# ------------------------------------------------------------------------------------ growth

# One line each that multiplies a value when repeated: followed statically, a few dozen lines
# need 2^40 characters. (`$S` stands for the variable, `$N` for its name.)
GROWERS = ('$N=$S$S', '$N="${$N}${$N}${$N}"', '$N=${$N//a/aaaaaaaa}', '$N=("${$N[@]}" "${$N[@]}")',
           '$N+=("${$N[@]}" x)', 'set -- "$@" "$@"', '$N="$$N$*"')
# Patterns whose backtracking regex would take n^k steps on a long value.
STARRY = ("*a*a*a*a*a*a*b", "a*a*a*a*a*c*", "*[ab]*[ab]*[ab]*[ab]*z")


@st.composite
def growth(draw, small: bool = False) -> FuzzCase:
    name = draw(st.sampled_from(["x", "A", "ARGS"]))
    lines = [f"{name}=a", "set -- a b"]
    for _ in range(draw(st.integers(5, 20 if small else 70))):
        line = draw(st.sampled_from(GROWERS)).replace("$S", f"${name}").replace("$N", name)
        lines.append(line)
    if draw(st.booleans()):  # then use it many times
        lines += [f"y{n}=${name}" for n in range(draw(st.sampled_from([10, 100] if small else [10, 100, 3000])))]
    pattern = draw(st.sampled_from(STARRY))
    lines += [f"case ${name} in {pattern}) N=1;; esac", f"[[ ${name} == {pattern} ]] && N=2",
              f"z=${{{name}%%{pattern}}}"]
    lines.append(f'{MAIN} trainer.project_name="${name}" trainer.nnodes=$N "${{{name}[@]}}" "$@"')
    return FuzzCase(("\n".join(lines) + "\n").encode(), family="growth")


# ------------------------------------------------------------------------------------- mixes

HOSTILE = {"nesting": nesting, "huge": huge, "yaml": yaml_config, "model": model_config, "control": control,
           "crlf": crlf, "growth": growth}


def _with_project_families() -> None:
    from hostile_project import PROJECT_FAMILIES  # issue 21's families (they import this module)

    HOSTILE.update(PROJECT_FAMILIES)


_with_project_families()


@st.composite
def classic(draw) -> FuzzCase:
    return FuzzCase(draw(script_bytes()))


def fuzz_case(families: tuple[str, ...] = ("classic", *HOSTILE), small: bool = False) -> st.SearchStrategy[FuzzCase]:
    """One strategy over the chosen families, equally likely."""
    table = {name: make(small=small) for name, make in HOSTILE.items()}
    table["classic"] = classic()
    return st.one_of([table[name] for name in families])


def large_case(kind: str, count: int) -> FuzzCase:
    """The largest accepted inputs of the `huge` family, built directly (for regression tests)."""
    if kind == "overrides":
        words = " \\\n    ".join(f"{KEYS[i % len(KEYS)]}={i}" for i in range(count))
        return FuzzCase(f"{MAIN} \\\n    {words}\n".encode(), family="huge")
    if kind == "calls":
        return FuzzCase("".join(f"{MAIN} trainer.nnodes={i}\n" for i in range(count)).encode(), family="huge")
    raise ValueError(kind)

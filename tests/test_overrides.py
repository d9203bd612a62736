"""generator.reading.overrides: the fast path must agree with Hydra's grammar, and format_value must
round-trip through Hydra."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.reading.overrides import (
    format_override,
    format_value,
    looks_like_override,
    parse_override,
    parse_override_fast,
    parse_override_hydra,
)


def _same(a, b) -> bool:
    """Equal value AND type (1 != 1.0 != True here), NaN equal to NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


def _examples(full: int) -> pytest.MarkDecorator:
    """A fifth of a property test's examples in the default tier; all `full` of them under `slow`."""
    return pytest.mark.parametrize("examples", [pytest.param(full // 5, id="sample"),
                                                pytest.param(full, id="all", marks=pytest.mark.slow)])


# Characters chosen so generated words hit every token kind of Hydra's value lexer and
# every character the fast path must refuse.
_VALUE_ALPHABET = "aeEfFiInNlLrtTuUsx_0123456789-+./@%*?|:$\\ ,=[]{}'\"~#<>()"
_KEY_ALPHABET = "abz_$-.0123456789@/"



def _fast_value_agrees_with_hydra(text: str):
    """Where the fast path takes `text`, Hydra's parser reads the same value; returns both parses
    (None when the fast path declines, which it may)."""
    fast = parse_override_fast(text)
    if fast is None:
        return None
    hydra = parse_override_hydra(text)
    assert hydra.error is None, (text, hydra.error)
    assert _same(fast.value, hydra.value), (text, fast.value, hydra.value)
    return fast, hydra

@_examples(1500)
def test_fast_path_value_equals_hydra(examples: int) -> None:
    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=st.text(alphabet=_VALUE_ALPHABET, max_size=10))
    def check(value: str) -> None:
        text = f"a.b={value}"
        parsed = _fast_value_agrees_with_hydra(text)
        if parsed is not None:
            fast, hydra = parsed
            assert (fast.key, fast.op) == (hydra.key, hydra.op)

    check()


# Numeric-looking strings are where typed tokens and joined text differ most.
_number_like = st.builds(
    lambda *parts: "".join(parts),
    st.sampled_from(["", "+", "-"]),
    st.text(alphabet="0123456789_", max_size=4),
    st.sampled_from(["", "."]),
    st.text(alphabet="0123456789_", max_size=3),
    st.sampled_from(["", "e", "E", "e-", "E+"]),
    st.text(alphabet="0123456789_", max_size=3),
    st.sampled_from(["", "inf", "nan", "a", ".", "x"]),
)


@_examples(1000)
def test_fast_path_numbers_equal_hydra(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(value=_number_like)
    def check(value: str) -> None:
        text = f"x={value}"
        _fast_value_agrees_with_hydra(text)

    check()


@_examples(800)
def test_fast_path_keys_equal_hydra(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(
        prefix=st.sampled_from(["", "+", "++", "~"]),
        key=st.text(alphabet=_KEY_ALPHABET, min_size=0, max_size=8),
        value=st.sampled_from(["", "1", "x", "=1", "True"]),
    )
    def check(prefix: str, key: str, value: str) -> None:
        text = f"{prefix}{key}{value and '=' + value.lstrip('=')}" if value != "" else f"{prefix}{key}"
        fast = parse_override_fast(text)
        if fast is None:
            return
        hydra = parse_override_hydra(text)
        assert hydra.error is None, (text, hydra.error)
        assert (fast.key, fast.op, fast.value_text) == (hydra.key, hydra.op, hydra.value_text)
        assert _same(fast.value, hydra.value)

    check()


def test_fast_path_covers_the_common_forms() -> None:
    for text in [
        "actor_rollout_ref.actor.optim.lr=1e-6",
        "trainer.n_gpus_per_node=8",
        "data.train_files=/data/gsm8k/train.parquet",
        "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct",
        "algorithm.use_kl_in_reward=False",
        "+actor_rollout_ref.actor.megatron.override_transformer_config.moe_aux_loss_coeff=0.01",
        "trainer.val_before_train=null",
        "actor_rollout_ref.rollout.name=vllm",
        "~trainer.logger",
        "trainer.experiment_name=",
    ]:
        assert parse_override_fast(text) is not None, text


@pytest.mark.parametrize(
    ("text", "key", "op", "value"),
    [
        ("actor_rollout_ref.actor.optim.lr=1e-6", "actor_rollout_ref.actor.optim.lr", "=", 1e-6),
        ("+a.b=bfloat16", "a.b", "+", "bfloat16"),
        ("++trainer.foo=3", "trainer.foo", "++", 3),
        ("~trainer.logger", "trainer.logger", "~", None),
        ("trainer.logger=['console','wandb']", "trainer.logger", "=", ["console", "wandb"]),
        ('trainer.logger=["console","wandb"]', "trainer.logger", "=", ["console", "wandb"]),
        ("trainer.logger=[console,wandb]", "trainer.logger", "=", ["console", "wandb"]),
        ("x={a:1,b:[1,2]}", "x", "=", {"a": 1, "b": [1, 2]}),
        ("x=True", "x", "=", True),
        ("x=-1", "x", "=", -1),
        ("x=1.", "x", "=", 1.0),
        ("x=http://h:8000/v1", "x", "=", "http://h:8000/v1"),
        ("x=", "x", "=", ""),
        ("x=${oc.env:X}", "x", "=", "${oc.env:X}"),
        ("x=[/YOUR_TRAIN_FILE_PATH]", "x", "=", ["/YOUR_TRAIN_FILE_PATH"]),
        ("x=1_000", "x", "=", 1000),
        ("x=inf", "x", "=", math.inf),
    ],
)
def test_parse_values(text, key, op, value) -> None:
    parsed = parse_override(text)
    assert parsed.error is None
    assert (parsed.key, parsed.op) == (key, op)
    assert _same(parsed.value, value)


@pytest.mark.parametrize(
    "text", ["x=a=b", "x=~/data", "x=<path>", "x=$((1+2))", "x=qwen3}", "+a", "x='a'b"]
)
def test_errors_are_one_line(text: str) -> None:
    parsed = parse_override(text)
    assert parsed.error
    assert "\n" not in parsed.error
    assert parsed.value is None


def test_sweep_is_reported_as_refused() -> None:
    parsed = parse_override("x=1,2,3")
    assert parsed.error and "multirun" in parsed.error
    assert parsed.value == [1, 2, 3]


def test_looks_like_override() -> None:
    assert looks_like_override("a.b=1")
    assert looks_like_override("+a.b=")
    assert looks_like_override("++a=1")
    assert looks_like_override("~a.b")
    assert looks_like_override("hydra/launcher=basic")
    assert not looks_like_override("--config-name=x")
    assert not looks_like_override("-m")
    assert not looks_like_override("plain")
    assert not looks_like_override("=3")
    assert not looks_like_override("a b=3")


_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet="ab Z_-/.:'\"\\,=[]{}$ 019eE", max_size=8),
)
_dict_keys = st.text(alphabet="abz_-", min_size=1, max_size=5).filter(
    lambda k: parse_override_fast("k=" + k) is not None and isinstance(parse_override_fast("k=" + k).value, str))
_values = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_dict_keys, inner, max_size=3)),
    max_leaves=6,
)


@_examples(800)
def test_format_value_round_trips_through_hydra(examples: int) -> None:
    @settings(max_examples=examples, deadline=None)
    @given(value=_values)
    def check(value) -> None:
        text = "k=" + format_value(value)
        parsed = parse_override_hydra(text)
        assert parsed.error is None, (value, text, parsed.error)
        assert _same(parsed.value, value), (value, text, parsed.value)

    check()


def test_format_value_examples() -> None:
    assert format_value(True) == "True"
    assert format_value(None) == "null"
    assert format_value(3) == "3"
    assert format_value(1e-6) == "1e-06"
    assert format_value("vllm") == "vllm"
    assert format_value("1") == "'1'"  # would otherwise become an int
    assert format_value(["console", "wandb"]) == "[console,wandb]"
    assert format_override("a.b", 2, "+") == "+a.b=2"
    assert format_value({"a": 1, "b": [True, None]}) == "{a:1,b:[True,null]}"
    with pytest.raises(TypeError):
        format_value(object())
    with pytest.raises(ValueError):
        format_value({"a:b": 1})


# Quoted strings and flat lists: the fast path's second branch. Elements mix typed
# primitives, quoted text with blanks and punctuation, and blanks around the commas.
_element = st.one_of(
    st.text(alphabet="aeEfFiInNlLrtTuUsx_0123456789-+./@%*?|:", min_size=1, max_size=6),
    st.builds(lambda q, body: f"{q}{body}{q}", st.sampled_from(["'", '"']),
              st.text(alphabet="ab 0-9.,:[]{}=#~()\t'\"\\$", max_size=6)),
)
_blank = st.sampled_from(["", " ", "  ", "\t"])
_list_text = st.builds(
    lambda items, pads: "[" + ",".join(f"{pads[i % len(pads)]}{item}{pads[(i + 1) % len(pads)]}"
                                        for i, item in enumerate(items)) + "]",
    st.lists(_element, max_size=4),
    st.lists(_blank, min_size=1, max_size=3),
)


@_examples(1500)
def test_fast_path_lists_and_quoted_equal_hydra(examples: int) -> None:
    @settings(max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(value=st.one_of(_list_text, _element))
    def check(value: str) -> None:
        text = f"trainer.logger={value}"
        _fast_value_agrees_with_hydra(text)

    check()


def test_fast_path_covers_the_common_list_forms() -> None:
    for text in ('trainer.logger=["console","wandb"]', "trainer.logger=[console,wandb]",
                 "data.train_files=['/d/a.parquet', '/d/b.parquet']", "x='a b'", "x=[]"):
        assert parse_override_fast(text) is not None, text

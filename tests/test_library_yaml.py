"""The fast recipe loader (libyaml + YAML 1.2 resolvers) reads exactly what ruamel.yaml reads."""

from __future__ import annotations

import math

import pytest
from ruamel.yaml import YAML

from generator.library.store import _load_yaml
from generator.base.resources import recipes_dir

SCALARS = ["yes", "no", "on", "off", "y", "n", "True", "FALSE", "tRUE", "~", "null", "Null", "", "1e-6", "1E6",
           "1.5e+3", ".5", "5.", "-0.0", "+12", "0o17", "0x1F", "017", "1_000", "1:20", "2024-01-01", ".inf",
           "-.Inf", ".nan", "0.7.0", "1.0", "12345678901234567890", "'quoted'", '"1"', "abc", "0b101",
           "1_0.5", "0x_1F", "+0b1", "-0b11", "1_000.5", "2024-01-01 10:00:00", "1e5_0", "0.", "-.5e3"]


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("scalar", SCALARS)
def test_scalars_match_ruamel(scalar):
    text = f"value: {scalar}\nlist: [{scalar or 'x'}]\n"
    expected = YAML(typ="safe", pure=True).load(text)
    got = _load_yaml(text)
    assert _same(got["value"], expected["value"]), (got, expected)
    assert _same(got["list"][0], expected["list"][0])


def test_packaged_recipes_parse_identically():
    ruamel = YAML(typ="safe", pure=True)
    for path in sorted(recipes_dir().glob("*.yaml")):
        text = path.read_text()
        assert _load_yaml(text) == ruamel.load(text), path.name

"""User values survive both parsers: bash (shq) and Hydra's override grammar (hydra_body)."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from generator.cli import app
from generator.base.errors import InputError
from generator.reading.overrides import format_value
from generator.render.quoting import MISSING_MARKER, hydra_body, shq

HOSTILE = [
    "/models/Qwen2 7B",
    "/tmp/$(touch /tmp/owned)/x",
    "/tmp/`touch /tmp/owned`/x",
    "it's",
    'say "hi"',
    "two\nlines",
    "back\\slash\\",
    "${oc.env:HOME}",
    "run\\${oc.env:SECRET_TOKEN}",
    "\\\\${x}",
    "a=b,c",
    "[x]",
    "~/models/*",
    "semi;colon&amp|pipe",
]


def _hydra_value(text: str) -> object:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create().parse_overrides([f"k='{text}'"])[0].value()


def _resolved(text: str) -> object:
    """What verl's code reads: Hydra parses the override, OmegaConf resolves the value."""
    from omegaconf import OmegaConf

    return OmegaConf.create({"k": _hydra_value(text)}).k


@pytest.mark.parametrize("raw", HOSTILE)
def test_hydra_body_reads_back_as_the_raw_value(raw: str, monkeypatch) -> None:
    monkeypatch.setenv("SECRET_TOKEN", "leaked")
    assert _resolved(hydra_body(raw)) == raw


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)
       | st.text(alphabet="\\${}'\":ab ", max_size=20))
def test_hydra_body_round_trips_any_text(raw: str) -> None:
    if raw == MISSING_MARKER:  # refused: see the next test
        return
    assert _resolved(hydra_body(raw)) == raw


def test_the_missing_marker_is_refused_not_written() -> None:
    """Hypothesis found '???': OmegaConf reads it as a missing value even inside Hydra quotes, so no
    body can carry it; a recipe given it stops with one line and exit 2 instead of writing it."""
    from omegaconf import OmegaConf
    from omegaconf.errors import MissingMandatoryValue

    cfg = OmegaConf.create({"k": MISSING_MARKER})
    with pytest.raises(MissingMandatoryValue):
        cfg.k  # noqa: B018 - reading is what raises
    with pytest.raises(InputError, match="MissingMandatoryValue"):
        hydra_body(MISSING_MARKER)
    result = CliRunner().invoke(app, ["recipe", "--model", "qwen2-7b", "--gpus", "8", "--project-name", "???",
                                      "-o", "-"])
    assert result.exit_code == 2
    assert "MissingMandatoryValue" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("raw", HOSTILE)
def test_shq_is_one_bash_word(raw: str, tmp_path) -> None:
    out = subprocess.run(["bash", "-c", f"printf '%s' {shq(raw)}"], capture_output=True, text=True,
                         cwd=tmp_path, check=True).stdout
    assert out == raw
    assert not (tmp_path / "owned").exists()


def test_generated_values_are_short_and_read_back_exactly() -> None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for value in (True, False, None, 0, 4, 1e-6, 3e-4, 1.2345678901e-5, 0.28, 0.6, 10.0, ["console"],
                  "low_var_kl", "token-mean"):
        text = format_value(value, short_floats=True)
        parsed = parser.parse_overrides([f"k={text}"])[0].value()
        assert parsed == value and type(parsed) is type(value), (value, text)
    assert (format_value(1e-6, short_floats=True), format_value(3e-4, short_floats=True)) == ("1e-6", "3e-4")
    assert format_value(1e-6) == "1e-06"


def test_format_value_keeps_the_users_spelling_when_it_reads_back() -> None:
    assert format_value(1e-6, spelling="1e-6") == "1e-6"
    assert format_value(True, spelling="true") == "true"
    assert format_value(2e-6, spelling="1e-6") == "2e-06"  # another value: the spelling is not used
    assert format_value(1, spelling="1.0") == "1"  # a float spelling of an int is another type


@pytest.mark.parametrize("raw", [*HOSTILE, 'a"b', "x${y", "x}'y", "}{", "'"])
def test_a_recipe_value_reads_back_through_our_reader_hydra_and_omegaconf(raw: str, tmp_path, monkeypatch) -> None:
    """The whole chain a user's value takes: gen recipe writes it into the script, our reader
    reads the script back (as bash would expand it), Hydra parses the override and OmegaConf
    resolves it: the run sees exactly what was typed."""
    import json

    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf
    from typer.testing import CliRunner

    from generator.cli import app

    monkeypatch.setenv("SECRET_TOKEN", "leaked")
    script = tmp_path / "run.sh"
    written = CliRunner().invoke(app, ["recipe", "--model", "qwen2-7b", "--gpus", "8", "--experiment-name", raw,
                                       "-o", str(script)])
    assert written.exit_code == 0, written.output
    shown = CliRunner().invoke(app, ["show", str(script), "--format", "json"])
    overrides = json.loads(shown.stdout)["files"][0]["invocations"][0]["overrides"]
    (value,) = [o["value"] for o in overrides if o["key"] == "trainer.experiment_name"]
    parsed = OverridesParser.create().parse_overrides([f"trainer.experiment_name={value}"])[0].value()
    assert OmegaConf.create({"k": parsed}).k == raw

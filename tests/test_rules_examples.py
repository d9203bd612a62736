"""Every rule's documented failing example produces its finding and the passing one does not
(the same examples `gen rule CODE` prints), on real schema defaults of the example's release."""

from __future__ import annotations

import re

import pytest

from generator.judging import load_rules
from generator.judging.examples import example_findings

REGISTRY = load_rules()
CONFIG_RULES = sorted(code for code, r in REGISTRY.items() if r.scope != "script")


def _findings(code: str, kind: str):
    rule = REGISTRY[code]
    example = getattr(rule, kind)
    assert example is not None, f"{code} has no {kind} example"
    return example_findings(rule, example)


@pytest.mark.parametrize("code", CONFIG_RULES)
def test_failing_example_is_reported(code):
    findings = _findings(code, "failing")
    assert findings, f"{code}: failing example produced no finding"
    for finding in findings:
        assert finding.message and "\n" not in finding.message
        assert finding.severity in ("error", "warning", "info")


@pytest.mark.parametrize("code", CONFIG_RULES)
def test_passing_example_is_clean(code):
    assert _findings(code, "passing") == []


SCRIPT_RULES = sorted(code for code, r in REGISTRY.items() if r.scope == "script")


@pytest.mark.parametrize("code", SCRIPT_RULES)
def test_shell_rule_examples(code):
    from generator.judging import script_findings
    from generator.judging.examples import example_script

    rule = REGISTRY[code]
    failing = script_findings(example_script(rule.failing), select=[code])
    assert [f.code for f in failing] == [code] * len(failing) and failing, f"{code}: no finding on its example"
    assert script_findings(example_script(rule.passing), select=[code]) == []


def test_registry_metadata_complete():
    for code, rule in REGISTRY.items():
        assert re.fullmatch(r"V[BPDRKSMX]\d{3}", code), code
        assert rule.title and rule.why and rule.fix_safety, code
        assert rule.stage in ("load", "init", "runtime", "silent", "shell", "static"), code
        assert rule.failing is not None and rule.passing is not None, code
    names = [r.name for r in REGISTRY.values()]
    assert len(names) == len(set(names)), "rule names must be unique"


def test_families_have_many_rules():
    families = {code[:2] for code in REGISTRY}
    assert families == {"VB", "VP", "VD", "VR", "VK", "VS", "VM", "VX"}

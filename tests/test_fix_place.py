"""Placing fixes at provenance spans, on hand-built read models (independent of the reader):
each kind of source, shared knobs, unknown values, and new-line insertion points."""

from __future__ import annotations

import pytest

from generator.config.types import Config
from generator.reading.edit_kinds import KeyEdit, TextEdit
from generator.fix.splice import apply_edits
from generator.fix.engine import fix_source
from generator.fix.migrate import delete_word_edit, migrate_source
from generator.fix.place import insertion_edit, place_fix
from generator.reading.launch_script import Invocation, LaunchScript, Override, Provenance, Span
from generator.rules.core import Finding, Fix


def _span(src: bytes, needle: str, occurrence: int = 0) -> Span:
    at = -1
    for _ in range(occurrence + 1):
        at = src.index(needle.encode(), at + 1)
    return Span(at, at + len(needle.encode()), src.count(b"\n", 0, at) + 1)


def _override(src: bytes, word: str, value_text: str, *, source="literal", quoting="", value_at: str | None = None,
              variable=None, occurrence=0, unknowns=()) -> Override:
    """An override whose word is `word` in the script; its value is written at `value_at`
    (default: the value part of the word itself)."""
    word_span = _span(src, word, occurrence)
    key_part, _, _ = word.lstrip("+~").partition("=")
    op = "++" if word.startswith("++") else "+" if word.startswith("+") else "="
    if value_at is None:
        start = word_span.start + word.index("=") + 1
        value_span = Span(start, word_span.end, word_span.line)
        if quoting and word.endswith(quoting):
            value_span = Span(start + 1, word_span.end - 1, word_span.line)
    else:
        value_span = _span(src, value_at)
    prov = Provenance(source, None if source == "unknown" else value_span, quoting, variable)
    return Override(f"{word}", key_part, op, value_text, word_span.line, word_span, prov, tuple(unknowns))


def _script(src: bytes, overrides: list[Override], cmd_start: str = "python3") -> LaunchScript:
    start = src.index(cmd_start.encode())
    end = len(src.rstrip(b"\n"))
    inv = Invocation(line=src.count(b"\n", 0, start) + 1, span=Span(start, end, 1), entry="verl.trainer.main_ppo",
                     entry_kind="module", launcher="python3 -m", config_path=None, config_name=None,
                     branch="live", passes_args=False, overrides=overrides)
    return LaunchScript(path="run.sh", source=src, invocations=[inv])


def _config(overrides: list[Override], schema_keys=()) -> Config:
    cfg = Config(version="0.7.0", schema="ppo_megatron_trainer")
    for key in schema_keys:
        cfg.values[key] = None
    for o in overrides:
        cfg.values[o.key] = o.value
        cfg.set_by[o.key] = o
    return cfg


def _apply(script: LaunchScript, fix: Fix, config=None) -> bytes:
    inv = script.invocations[0]
    placement = place_fix(fix, script, inv, config if config is not None else _config(inv.overrides))
    assert placement.reason is None, placement.reason
    return apply_edits(script.source, placement.edits)


MINI = "actor_rollout_ref.actor.ppo_mini_batch_size"


def test_literal_word_value_is_replaced_in_place():
    src = b"python3 -m verl.trainer.main_ppo \\\n    " + MINI.encode() + b"=60 \\\n    trainer.nnodes=1\n"
    ov = _override(src, f"{MINI}=60", "60")
    out = _apply(_script(src, [ov]), Fix("mini", (KeyEdit(MINI, 60, 64),)))
    assert out == src.replace(b"=60 ", b"=64 ")


def test_single_quoted_list_value_keeps_its_quotes():
    src = b"python3 -m m \\\n    trainer.logger='[\"console\"]' \\\n    a=1\n"
    ov = _override(src, "trainer.logger='[\"console\"]'", '["console"]', quoting="'")
    out = _apply(_script(src, [ov]), Fix("x", (KeyEdit("trainer.logger", ["console"], ["console", "wandb"]),)))
    assert b"trainer.logger='[console,wandb]' \\\n" in out


def test_variable_assignment_is_edited_not_the_call():
    src = b'MINI=60\npython3 -m m \\\n    ' + MINI.encode() + b'=$MINI \\\n    a=1\n'
    ov = _override(src, f"{MINI}=$MINI", "60", source="variable", value_at="60", variable="MINI")
    out = _apply(_script(src, [ov]), Fix("mini", (KeyEdit(MINI, 60, 64),)))
    assert out.startswith(b"MINI=64\n") and f"{MINI}=$MINI".encode() in out


def test_colon_dash_default_is_edited_in_double_quotes():
    src = b'MINI="${MINI:-60}"\npython3 -m m \\\n    ' + MINI.encode() + b'=${MINI} \\\n    a=1\n'
    ov = _override(src, f"{MINI}=${{MINI}}", "60", source="variable", quoting='"', value_at="60", variable="MINI")
    out = _apply(_script(src, [ov]), Fix("mini", (KeyEdit(MINI, 60, 64),)))
    assert out.startswith(b'MINI="${MINI:-64}"\n')


def test_array_element_is_edited():
    src = b"ARGS=(\n    a=1  # a comment\n    " + MINI.encode() + b"=60\n)\npython3 -m m \"${ARGS[@]}\"\n"
    ov = _override(src, f"{MINI}=60", "60", source="array")
    out = _apply(_script(src, [ov]), Fix("mini", (KeyEdit(MINI, 60, 64),)))
    assert out == src.replace(b"=60\n", b"=64\n")


def test_string_piece_refuses_values_that_word_splitting_would_break():
    src = b'ARGS="a=1 trainer.logger=x"\npython3 -m m $ARGS\n'
    ov = _override(src, "trainer.logger=x", "x", source="string", quoting='"')
    script = _script(src, [ov])
    ok = place_fix(Fix("x", (KeyEdit("trainer.logger", "x", "y"),)), script, script.invocations[0], _config([ov]))
    assert apply_edits(src, ok.edits) == src.replace(b"logger=x", b"logger=y")
    bad = place_fix(Fix("x", (KeyEdit("trainer.logger", "x", ["a", "b"]),)), script, script.invocations[0],
                    _config([ov]))
    assert bad.reason is not None and "pathname" in bad.reason


def test_unknown_value_is_never_edited_and_says_why():
    src = b"python3 -m m \\\n    trainer.nnodes=$SLURM_NNODES \\\n    a=1\n"
    ov = _override(src, "trainer.nnodes=$SLURM_NNODES", "<?unset:SLURM_NNODES>", source="unknown",
                   unknowns=("SLURM_NNODES is not set",))
    script = _script(src, [ov])
    placement = place_fix(Fix("n", (KeyEdit("trainer.nnodes", None, 2),)), script, script.invocations[0],
                          _config([ov]))
    assert placement.edits == [] and "SLURM_NNODES is not set" in placement.reason


def test_shared_knob_makes_the_fix_unsafe():
    src = b"TP=4\npython3 -m m \\\n    actor.tp=$TP \\\n    ref.tp=$TP \\\n    a=1\n"
    actor = _override(src, "actor.tp=$TP", "4", source="variable", value_at="4", variable="TP")
    ref = _override(src, "ref.tp=$TP", "4", source="variable", value_at="4", variable="TP")
    script = _script(src, [actor, ref])
    one = place_fix(Fix("tp", (KeyEdit("actor.tp", 4, 2),)), script, script.invocations[0], _config([actor, ref]))
    assert one.applicability == "unsafe" and "TP also sets ref.tp" in one.notes[0]
    both = place_fix(Fix("tp", (KeyEdit("actor.tp", 4, 2), KeyEdit("ref.tp", 4, 2))), script,
                     script.invocations[0], _config([actor, ref]))
    assert both.applicability == "safe"
    assert apply_edits(src, both.edits).startswith(b"TP=2\n")


def test_missing_key_is_inserted_after_the_last_continued_override_line():
    src = (b"python3 -m m \\\n    a=1 \\\n    b=2 \\\n    trainer.total_epochs=15 $@ 2>&1 | tee log\n")
    ovs = [_override(src, "a=1", "1"), _override(src, "b=2", "2"), _override(src, "trainer.total_epochs=15", "15")]
    out = _apply(_script(src, ovs), Fix("add", (KeyEdit("new.key", None, 3),)))
    assert out == src.replace(b"    trainer.total", b"    +new.key=3 \\\n    trainer.total")
    # a key the schema has is added without '+'
    out = _apply(_script(src, ovs), Fix("add", (KeyEdit("c.d", None, [1, 2]),)), _config(ovs, ["c.d"]))
    assert b"    c.d='[1,2]' \\\n    trainer.total" in out


def test_insertion_never_follows_a_comment_or_backslash_space_line():
    src = b"python3 -m m \\\n    a=1 \\\n    # note\n    b=2\n"
    ovs = [_override(src, "a=1", "1"), _override(src, "b=2", "2")]
    script = _script(src, ovs)
    edit, reason = insertion_edit(script, script.invocations[0], "c=3")
    assert edit is None and "comment" in reason
    src2 = b"python3 -m m \\\n    a=1 \\ \n    b=2\n"
    ovs2 = [_override(src2, "a=1", "1"), _override(src2, "b=2", "2")]
    edit, reason = insertion_edit(_script(src2, ovs2), _script(src2, ovs2).invocations[0], "c=3")
    assert edit is None


def test_one_line_command_gets_the_word_appended():
    src = b"python3 -m m a=1 b=2\n"
    ovs = [_override(src, "a=1", "1"), _override(src, "b=2", "2")]
    out = _apply(_script(src, ovs), Fix("add", (KeyEdit("c", None, 3),)), _config(ovs, ["c"]))
    assert out == b"python3 -m m a=1 b=2 c=3\n"


def test_two_new_keys_in_one_fix_share_one_insertion():
    src = b"python3 -m m \\\n    a=1 \\\n    b=2\n"
    ovs = [_override(src, "a=1", "1"), _override(src, "b=2", "2")]
    out = _apply(_script(src, ovs), Fix("add", (KeyEdit("c", None, 3), KeyEdit("d", None, 4))),
                 _config(ovs, ["c", "d"]))
    assert out == b"python3 -m m \\\n    a=1 \\\n    c=3 \\\n    d=4 \\\n    b=2\n"


def test_delete_word_never_leaves_a_dangling_backslash():
    src = b"python3 -m m \\\n    a=1 \\\n    old.key=2 \\\n    b=3\necho done\n"
    ov = _override(src, "old.key=2", "2")
    out = apply_edits(src, [delete_word_edit(_script(src, [ov]), ov)])
    assert out == b"python3 -m m \\\n    a=1 \\\n    b=3\necho done\n"
    last = b"python3 -m m \\\n    a=1 \\\n    old.key=2\necho done\n"
    ov = _override(last, "old.key=2", "2")
    out = apply_edits(last, [delete_word_edit(_script(last, [ov]), ov)])
    assert out == b"python3 -m m \\\n    a=1 \\\n    \necho done\n"


# --- the fix loop with a stub reader and checker --------------------------------------------


def _stub_pipeline():
    """A reader that finds `mini=N` and a checker that wants N % 8 == 0 (fix: next multiple)."""
    import re

    def read(source: bytes, path):
        match = re.search(rb"mini=(\d+)", source)
        ovs = []
        if match:
            word = Span(match.start(), match.end(), 1)
            ovs.append(Override(match.group().decode(), "mini", "=", match.group(1).decode(), 1, word,
                                Provenance("literal", Span(match.start(1), match.end(1), 1))))
        inv = Invocation(1, Span(0, len(source), 1), "m", "module", "python3 -m", None, None, "live", False, ovs)
        return LaunchScript(path, source, [inv])

    def check(script: LaunchScript):
        inv = script.invocations[0]
        cfg = _config(inv.overrides)
        findings = []
        value = int(cfg.values.get("mini", 8))
        if value % 8:
            new = (value // 8 + 1) * 8
            findings.append(Finding("VB999", "error", "mini not a multiple of 8", 1, "mini",
                                    Fix("round up", (KeyEdit("mini", value, new),))))
        return [(inv, cfg, findings)]

    return read, check


def test_fix_loop_reaches_a_fixpoint_and_is_idempotent():
    read, check = _stub_pipeline()
    first = fix_source(b"python3 -m m mini=60 x=1\n", "run.sh", read=read, check=check)
    assert first.fixed == b"python3 -m m mini=64 x=1\n" and first.remaining == []
    assert [a.code for a in first.applied] == ["VB999"]
    again = fix_source(first.fixed, "run.sh", read=read, check=check)
    assert not again.changed and again.applied == []


def test_fix_loop_respects_select():
    read, check = _stub_pipeline()
    skipped = fix_source(b"python3 -m m mini=60\n", "run.sh", read=read, check=check, select=("VS",))
    assert not skipped.changed and skipped.errors_left == 1


def test_structural_text_edits_pass_through():
    src = b"python3 -m m \\ \n    a=1\n"
    script = _script(src, [])
    fix = Fix("drop whitespace after the backslash", (TextEdit(src.index(b"\\ ") + 1, src.index(b"\\ ") + 2, ""),))
    placement = place_fix(fix, script, script.invocations[0], None)
    assert apply_edits(src, placement.edits) == b"python3 -m m \\\n    a=1\n"


@pytest.mark.parametrize("op,defaults,expected", [
    ("=", {"new.key": 1}, b"new.key=5"),
    ("+", {"new.key": 1}, b"new.key=5"),          # target has a value: '+' would fail
    ("+", {"new.key": None}, b"+new.key=5"),      # '+' on null is fine in Hydra
    ("=", {}, b"+new.key=5"),                     # not in the target schema: needs '+'
])
def test_migrate_rename_adjusts_the_op_to_the_target_schema(op, defaults, expected):
    from generator.schema import Rename

    prefix = "" if op == "=" else op
    src = f"python3 -m m \\\n    {prefix}old.key=5 \\\n    a=1\n".encode()
    ov = _override(src, f"{prefix}old.key=5", "5")

    def read(source, path):
        if source == src:
            return _script(src, [ov])
        return _script(source, [])

    result = migrate_source(src, "run.sh", read=read, from_version="0.4.1", to_version="0.7.0",
                            renames=[Rename("old.key", "new.key", "0.5.0")], value_changes=[],
                            target_defaults=lambda name: defaults)
    assert expected + b" \\\n" in result.fixed and result.refused == []


def test_knob_read_elsewhere_makes_the_fix_unsafe():
    src = (b"MICRO=6\nLOGPROB=$((MICRO * 2))\n"
           b"python3 -m m \\\n    actor.micro=$MICRO \\\n    a=1\n")
    micro = _override(src, "actor.micro=$MICRO", "6", source="variable", value_at="6", variable="MICRO")
    script = _script(src, [micro])
    placement = place_fix(Fix("micro", (KeyEdit("actor.micro", 6, 4),)), script, script.invocations[0],
                          _config([micro]))
    assert placement.applicability == "unsafe" and "MICRO is also used on line 2" in placement.notes
    alone = b"MICRO=6  # $MICRO in a comment does not count\npython3 -m m \\\n    actor.micro=$MICRO \\\n    a=1\n"
    micro = _override(alone, "actor.micro=$MICRO", "6", source="variable", value_at="6", variable="MICRO")
    script = _script(alone, [micro])
    placement = place_fix(Fix("micro", (KeyEdit("actor.micro", 6, 4),)), script, script.invocations[0],
                          _config([micro]))
    assert placement.applicability == "safe", placement.notes


def test_missing_key_goes_into_the_array_when_all_overrides_come_from_arrays():
    src = (b"ARGS=(\n    # batch\n    a.b=1   # note\n    c.d=2\n)\n"
           b"python3 -m m \"${ARGS[@]}\" $@\n")
    ovs = [_override(src, "a.b=1", "1", source="array"), _override(src, "c.d=2", "2", source="array")]
    out = _apply(_script(src, ovs), Fix("add", (KeyEdit("e.f", None, [1, 2]),)), _config(ovs, ["e.f"]))
    assert out == src.replace(b"    c.d=2\n", b"    c.d=2\n    e.f='[1,2]'\n")
    one_line = b"ARGS=(a.b=1 c.d=2)\npython3 -m m \"${ARGS[@]}\"\n"
    ovs = [_override(one_line, "a.b=1", "1", source="array"), _override(one_line, "c.d=2", "2", source="array")]
    script = _script(one_line, ovs)
    edit, reason = insertion_edit(script, script.invocations[0], "e.f=1")
    assert edit is None and "alone" in reason

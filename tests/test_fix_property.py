"""Property: wherever and however a value is written (command-line word, variable, `:-` default,
array element, string piece; bare, '…' or "…"), setting it to any value through the fixer makes
the shell reader see exactly that value, touches only the defining line, and keeps `bash -n`
passing. Uses the real shell reader on generated scripts."""

from __future__ import annotations

import subprocess

from hypothesis import HealthCheck, given, settings, strategies as st

from generator.reading.edit_kinds import KeyEdit
from generator.fix.splice import apply_edits
from generator.fix.place import place_fix
from generator.fix.values import hydra_text
from generator.rules.core import Fix

KEY = "actor_rollout_ref.actor.ppo_mini_batch_size"

STYLES = {
    "word-bare": ("", "    {key}={v} \\\n"),
    "word-single": ("", "    {key}='{v}' \\\n"),
    "word-double": ("", '    {key}="{v}" \\\n'),
    "variable-bare": ("MINI={v}\n", "    {key}=$MINI \\\n"),
    "variable-double": ('MINI="{v}"\n', '    {key}="${{MINI}}" \\\n'),
    "default-bare": ("MINI=${{MINI:-{v}}}\n", "    {key}=${{MINI}} \\\n"),
    "default-double": ('MINI="${{MINI:-{v}}}"\n', '    {key}="$MINI" \\\n'),
    "array": ("ARGS=(\n    a.b=1  # note\n    {key}={v}\n)\n", '    "${{ARGS[@]}}" \\\n'),
    "string": ('ARGS="a.b=1 {key}={v}"\n', "    $ARGS \\\n"),
    "array-variable": ("MINI={v}\nARGS=(\n    a.b=1\n    {key}=${{MINI}}\n)\n", '    "${{ARGS[@]}}" \\\n'),
}

values = st.one_of(
    st.integers(min_value=-5, max_value=100000),
    st.booleans(),
    st.sampled_from(["token-mean", "Qwen/Qwen2-7B", "a b", "it's", "$HOME", "x*y", "[1,2]", "#tag", "~/d"]),
    st.lists(st.sampled_from(["console", "wandb", "a'b"]), min_size=1, max_size=3),
)


def _script(style: str, old: int = 60) -> bytes:
    head, line = STYLES[style]
    return (
        "#!/usr/bin/env bash\nset -x\n"
        + head.format(key=KEY, v=old)
        + "python3 -m verl.trainer.main_ppo \\\n"
        + "    data.train_batch_size=256 \\\n"
        + line.format(key=KEY, v=old)
        + "    trainer.nnodes=1\n"
    ).encode()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(style=st.sampled_from(sorted(STYLES)), new=values)
def test_setting_a_value_anywhere_reads_back_exactly(style, new, tmp_path):
    from generator.reading.shell import read_script

    source = _script(style)
    script = read_script(source, "run.sh")
    invocation = script.invocations[0]
    placement = place_fix(Fix("set", (KeyEdit(KEY, 60, new),)), script, invocation, None)
    text = hydra_text(new)
    if placement.reason == "already applied":
        assert text == "60"  # the value is already what the fix asks for
        return
    if placement.reason is not None:
        # Refusals allowed: a value bash word-splits and globs (a string piece, or a variable
        # expanded unquoted at the call) cannot carry spaces or glob characters; a double-quoted
        # `${V:-...}` default cannot hold a single quote.
        splits = style in ("string", "variable-bare", "default-bare", "array-variable") and any(c in text for c in " \t*?[")
        single_quote = style == "default-double" and "'" in text
        assert splits or single_quote, placement.reason
        return
    fixed = apply_edits(source, placement.edits)
    again = read_script(fixed, "run.sh")
    values_read = {o.key: o.value for o in again.invocations[0].overrides}
    assert values_read[KEY] == text
    assert values_read["data.train_batch_size"] == "256"
    old_lines, new_lines = source.split(b"\n"), fixed.split(b"\n")
    assert len(old_lines) == len(new_lines)
    assert sum(a != b for a, b in zip(old_lines, new_lines)) == 1
    path = tmp_path / "run.sh"
    path.write_bytes(fixed)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0

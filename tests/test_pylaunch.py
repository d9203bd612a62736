"""libcst reading of Python launchers and Hydra entry modules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.base.errors import InputError
from generator.reading.edit_kinds import KeyEdit
from generator.fix.splice import apply_edits
from generator.reading.python.hydra_main import entry_config, find_entry_file, read_hydra_main
from generator.reading.python.override_lists import key_edits_to_text_edits, read_override_lists



def apply_key_edits(source: str, key_edits: list[KeyEdit]) -> tuple[bytes, list[str]]:
    """The launcher's edits for these keys, applied the way the fix engine applies them."""
    data = source.encode()
    edits, refused = key_edits_to_text_edits(data, key_edits)
    return apply_edits(data, edits), refused


MAIN_DAPO = '''\
import hydra
from omegaconf import OmegaConf


@hydra.main(config_path="config", config_name="dapo_trainer", version_base=None)
def main(config):
    run(config)
'''


def test_hydra_main_keywords():
    found = read_hydra_main(MAIN_DAPO)
    assert (found.function, found.config_path, found.config_name) == ("main", "config", "dapo_trainer")
    assert found.line == 5


def test_hydra_main_positional_and_imported_name():
    src = 'from hydra import main\n\n@main("cfg", "my_trainer")\ndef entry(c):\n    pass\n'
    found = read_hydra_main(src)
    assert (found.config_path, found.config_name) == ("cfg", "my_trainer")


def test_hydra_main_non_literal_argument_is_unknown():
    src = 'import hydra, os\n@hydra.main(config_path=os.path.join("a", "b"), config_name="x")\ndef m(c): ...\n'
    found = read_hydra_main(src)
    assert found.config_path is None and found.config_name == "x"


def test_no_hydra_main():
    assert read_hydra_main("def main():\n    pass\n") is None
    # a `main` decorator that does not come from hydra is not Hydra's
    assert read_hydra_main("from click import main\n@main('x')\ndef f(): ...\n") is None


def test_invalid_python_is_one_line_input_error():
    with pytest.raises(InputError) as err:
        read_hydra_main("def broken(:\n", "x.py")
    assert "\n" not in str(err.value) and "x.py" in str(err.value)


def test_entry_found_from_script_dir_or_repo_root(tmp_path):
    repo = tmp_path / "repo"
    (repo / "recipe" / "dapo" / "config").mkdir(parents=True)
    (repo / "recipe" / "dapo" / "main_dapo.py").write_text(MAIN_DAPO)
    script = repo / "recipe" / "dapo" / "run_dapo.sh"
    script.write_text("python3 -m recipe.dapo.main_dapo a=1\n")
    assert find_entry_file("recipe.dapo.main_dapo", script) == repo / "recipe" / "dapo" / "main_dapo.py"
    elsewhere = tmp_path / "elsewhere.sh"
    elsewhere.write_text("")
    assert find_entry_file("recipe.dapo.main_dapo", elsewhere) is None
    assert find_entry_file("recipe.dapo.main_dapo", elsewhere, repo_root=repo) is not None
    found = entry_config("recipe.dapo.main_dapo", script)
    assert found.config_dir == (repo / "recipe" / "dapo" / "config").resolve()
    assert found.config_name == "dapo_trainer"


LAUNCHER = '''\
import subprocess
from hydra import compose, initialize_config_dir

cmd = [
    "python3", "-m", "verl.trainer.main_ppo",
    "data.train_batch_size=256",
    'actor_rollout_ref.actor.ppo_mini_batch_size=60',
    "trainer.logger=['console']",
]
subprocess.run(cmd, check=True)

with initialize_config_dir(config_dir="/x"):
    cfg = compose(config_name="ppo_trainer", overrides=["trainer.nnodes=1", "+extra.key=2"])
'''


def test_override_lists_with_byte_spans():
    lists = read_override_lists(LAUNCHER)
    assert [lst.kind for lst in lists] == ["list", "compose"]
    first = lists[0]
    assert first.entry == "verl.trainer.main_ppo"
    assert [o.key for o in first.overrides] == [
        "data.train_batch_size", "actor_rollout_ref.actor.ppo_mini_batch_size", "trainer.logger"]
    data = LAUNCHER.encode()
    mini = first.overrides[1]
    assert data[mini.content_start:mini.content_end] == b"actor_rollout_ref.actor.ppo_mini_batch_size=60"
    assert mini.line == 7
    assert lists[1].overrides[1].op == "+"


def test_key_edit_changes_only_that_string_and_keeps_its_quotes():
    out, refused = apply_key_edits(
        LAUNCHER.replace('overrides=["trainer.nnodes=1", "+extra.key=2"]', 'overrides=overrides'),
        [KeyEdit("actor_rollout_ref.actor.ppo_mini_batch_size", 60, 64)])
    assert refused == []
    before = LAUNCHER.replace('overrides=["trainer.nnodes=1", "+extra.key=2"]', 'overrides=overrides')
    assert out.decode() == before.replace("ppo_mini_batch_size=60'", "ppo_mini_batch_size=64'")


def test_missing_key_is_appended_in_the_list_style():
    src = 'cmd = [\n    "python3",\n    "-m",\n    "m",\n    "a.b=1",\n]\n'
    out, refused = apply_key_edits(src, [KeyEdit("c.d", None, [1, 2])])
    assert refused == []
    assert out.decode() == 'cmd = [\n    "python3",\n    "-m",\n    "m",\n    "a.b=1",\n    "c.d=[1,2]",\n]\n'
    one_line = 'x = compose(config_name="c", overrides=["a=1"])\n'
    out, _ = apply_key_edits(one_line, [KeyEdit("b", None, "it's")])
    assert out.decode() == 'x = compose(config_name="c", overrides=["a=1", "b=\\"it\'s\\""])\n'
    ns = {}
    exec(compile("def compose(**k): return k\n" + out.decode(), "t", "exec"), ns)  # our own text
    assert ns["x"]["overrides"] == ["a=1", "b=\"it's\""]


def test_ambiguous_insertion_is_refused():
    _, refused = apply_key_edits(LAUNCHER, [KeyEdit("new.key", None, 1)])
    assert len(refused) == 1 and "ambiguous" in refused[0]


def test_edited_launcher_reads_back_with_the_new_value():
    out, _ = apply_key_edits(LAUNCHER, [KeyEdit("trainer.logger", ["console"], ["console", "wandb"])])
    values = {o.key: o.value for lst in read_override_lists(out) for o in lst.overrides}
    assert values["trainer.logger"] == "[console,wandb]"
    assert values["data.train_batch_size"] == "256"


def test_launcher_read_model_points_at_values_inside_the_literals():
    from generator.fix.place import place_fix
    from generator.fix.splice import apply_edits
    from generator.reading.python.override_lists import read_launcher
    from generator.rules.core import Fix

    script = read_launcher(LAUNCHER, "launch.py")
    assert [inv.entry for inv in script.invocations] == ["verl.trainer.main_ppo", "verl.trainer.main_ppo"]
    assert script.invocations[1].config_name == "ppo_trainer"
    first = script.invocations[0]
    mini = first.overrides[1]
    span = mini.provenance.span
    assert script.source[span.start:span.end] == b"60"
    placement = place_fix(Fix("mini", (KeyEdit(mini.key, 60, 64), KeyEdit("new.k", None, "a b"))),
                          script, first, None)
    out = apply_edits(script.source, placement.edits).decode()
    assert "'actor_rollout_ref.actor.ppo_mini_batch_size=64'," in out
    assert '"trainer.logger=[\'console\']",\n    "new.k=\'a b\'",\n]' in out


def test_gen_fix_on_a_python_launcher_edits_only_the_string(tmp_path):
    import shutil
    from pathlib import Path

    from typer.testing import CliRunner

    from generator.cli import app

    path = tmp_path / "launch.py"
    shutil.copy(Path(__file__).parent / "fixtures" / "fix" / "launch_subprocess.py", path)
    before = path.read_text().splitlines()
    result = CliRunner().invoke(app, ["fix", "--write", "--verl-version", "0.7.0", "--select", "VB107", str(path)])
    assert result.exit_code == 0, result.output
    after = path.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 1
    old, new = changed[0]
    assert old == '    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=6",'
    new_micro = int(new.split("=")[1].rstrip('",'))
    assert 16 % new_micro == 0 and new == old.replace("6", str(new_micro))
    again = CliRunner().invoke(app, ["fix", "--write", "--verl-version", "0.7.0", str(path)])
    assert path.read_text().splitlines() == after and again.exit_code == 0


def test_gen_migrate_on_a_python_launcher(tmp_path):
    import ast

    from typer.testing import CliRunner

    from generator.cli import app

    path = tmp_path / "old_launch.py"
    path.write_text(
        'from hydra import compose\n\n'
        'cfg = compose(config_name="ppo_trainer", overrides=[\n'
        '    "ray_init.num_cpus=8",\n'
        '    "critic.kl_ctrl.kl_coef=0.001",\n'
        '    "actor_rollout_ref.rollout.mode=sync",\n'
        '    "+data.trust_remote_code=True",\n'
        '])\n'
        'other = compose(config_name="ppo_trainer", overrides=["a.b=1", "critic.kl_ctrl.type=fixed"])\n')
    result = CliRunner().invoke(app, ["migrate", "--to", "0.7.0", "--from", "0.4.1", "--unsafe", "--write",
                                      str(path)])
    assert result.exit_code == 0, result.output
    text = path.read_text()
    ast.parse(text)  # still valid Python after deleting list elements
    assert '    "ray_kwargs.ray_init.num_cpus=8",\n    "actor_rollout_ref.rollout.mode=async",\n' in text
    assert '    "data.trust_remote_code=True",\n])' in text
    assert "kl_ctrl" not in text and 'overrides=["a.b=1"])' in text


# Top-level statements a launcher is made of; the chunked reading must find exactly what a
# concrete parse of the whole file finds.
_STATEMENTS = [
    "import subprocess\n",
    'subprocess.run(["python3", "-m", "verl.trainer.main_ppo", "data.train_batch_size=8",\n    "trainer.nnodes=1"])\n',
    'OVERRIDES = [\n    "actor_rollout_ref.rollout.n=4",  # comment with a "quote\n    \'+x.y=[1,2]\',\n]\n',
    "x = 1; y = ['a.b=2']\n",
    'def main():\n    cfg = compose(config_name="ppo_trainer", overrides=["a.b=3"])\n    return cfg\n',
    "@decorator(['k.v=5'])\nclass Launcher:\n    items = ['c.d=6']\n",
    "if __name__ == '__main__':\n    main()\nelse:\n    other = ['e.f=7']\n",
    'DOC = """not a list\n"a.b=1"\n"""\n',
    "values = (\n    1,\n    2,\n)\n",
    "try:\n    run(['g.h=8'])\nexcept Exception:\n    pass\nfinally:\n    done = ['i.j=9']\n",
    "# a comment ['no.list=1']\n",
    "s = 'a.b=1' \\\n    'c.d=2'\n",
]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(_STATEMENTS), min_size=1, max_size=8))
def test_chunked_reading_finds_what_a_whole_file_parse_finds(parts: list[str]) -> None:
    from generator.reading.python.override_lists import _override_lists_in, read_override_lists
    from generator.reading.python.chunks import Chunk

    data = "".join(parts).encode()
    whole = _override_lists_in(Chunk(0, 1, data), "launcher.py")
    assert read_override_lists(data, "launcher.py") == whole


def test_every_command_reads_python_launchers_through_read_launch(tmp_path) -> None:
    """`gen diff` and `gen import` read a Python launcher as `gen check` does (read_launch)."""
    from typer.testing import CliRunner

    from generator.cli import app
    from generator.reading.shell import read_launch

    launcher = tmp_path / "launch.py"
    launcher.write_text('import subprocess\nsubprocess.run(["python3", "-m", "verl.trainer.main_ppo",\n'
                        '    "data.train_batch_size=256", "actor_rollout_ref.rollout.n=4"])\n')
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=128 actor_rollout_ref.rollout.n=4\n")
    (call,) = read_launch(launcher).invocations
    assert call.launcher == "subprocess" and [o.value for o in call.overrides] == ["256", "4"]
    result = CliRunner().invoke(app, ["diff", str(script), str(launcher)])
    assert result.exit_code == 0, result.output
    assert "data.train_batch_size" in result.output and "256" in result.output

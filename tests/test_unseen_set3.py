"""Mechanisms found on issue 20's third evaluation set (projects nobody here had looked at), one per
test, on fixtures written here: a loop that repeats one mistake per value, placeholders carried by
one variable into several keys, placeholder shapes the set showed, a `\\` that ends a complete
command before a blank line, and the EasyR1-style dataclass config."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _check(script: Path, cwd: Path, *args: str) -> tuple[int, list[dict[str, object]]]:
    done = subprocess.run([sys.executable, "-m", "generator", "check", "--format", "json", *args, str(script)],
                          cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    document = json.loads(done.stdout)
    return done.returncode, list(document["files"][0]["findings"])


# --- one finding per cause in an unrolled loop -------------------------------------------------

LOOP_WITH_COMMAS = """sizes=(
  "small",
  "medium",
  "large",
  "huge"
)
for s in "${sizes[@]}"; do
  python3 -m verl.trainer.main_ppo \\
    data.train_files="data/${s}/train.parquet" \\
    trainer.experiment_name="run-${s}" \\
    trainer.n_gpus_per_node=8
done
"""


def test_a_loop_carried_mistake_is_one_finding_naming_the_other_values(tmp_path: Path) -> None:
    script = tmp_path / "sweep.sh"
    script.write_text(LOOP_WITH_COMMAS)
    code, findings = _check(script, tmp_path)
    grammar = [f for f in findings if f["code"] == "VK606"]
    # Three of four values end in `,` (the array's commas are part of the words): one finding per key.
    assert sorted((f["line"], f["key"]) for f in grammar) == [(9, "data.train_files"), (10, "trainer.experiment_name")]
    first = grammar[0]["message"]
    assert "small," in str(first) and "the same in 2 more passes of the loop" in str(first)
    assert "`s=medium,`" in str(first) and "`s=large,`" in str(first) and "huge" not in str(first)
    assert code == 1  # still an error: the run fails


def test_a_finding_only_one_value_gives_is_not_folded(tmp_path: Path) -> None:
    script = tmp_path / "sweep.sh"
    script.write_text(LOOP_WITH_COMMAS.replace('"small",', '"small"').replace('"medium",', '"medium"')
                      .replace('"large",', '"large"'))
    _, findings = _check(script, tmp_path)
    assert [f for f in findings if f["code"] == "VK606"] == []
    every_pass = [f for f in findings if f["code"] == "VX901"]
    assert len(every_pass) == 1 and "the same in 3 more passes" in str(every_pass[0]["message"])


# --- a `\` before a blank line ----------------------------------------------------------------

def _kinds(text: str) -> list[str]:
    from generator.reading.shell import read_script

    return [h.kind for h in read_script(text, "t.sh").hazards]


TRAINER = "python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\\n    trainer.n_gpus_per_node=8\n"


def test_a_stray_backslash_between_two_whole_commands_is_not_a_cut() -> None:
    text = "python -m mypkg.make_data \\\n    --out data/train.parquet \\\n\n# then train\n" + TRAINER
    assert "blank-in-continuation" not in _kinds(text)


def test_a_cut_that_strands_the_trainer_or_its_settings_is_still_found() -> None:
    for before in ("ray job submit --address=http://127.0.0.1:8265 \\\n\n-- ",  # the entry is cut off
                   "CUDA_VISIBLE_DEVICES=0,1 \\\n\n",                           # the settings are cut off
                   "nohup \\\n\n"):
        assert "blank-in-continuation" in _kinds(before + TRAINER), before
    overrides_cut = "python3 -m verl.trainer.main_ppo \\\n\n    data.train_batch_size=64 \\\n    trainer.n_gpus_per_node=8\n"
    assert "blank-in-continuation" in _kinds(overrides_cut)


# --- placeholders --------------------------------------------------------------------------------

def _placeholders(text: str) -> list[tuple[int, str]]:
    from generator.reading.shell import read_script

    return [(h.line, h.message) for h in read_script(text, "t.sh").hazards if h.kind == "placeholder-value"]


def test_one_placeholder_variable_reaching_two_keys_is_one_finding() -> None:
    text = ("SUITE=TASK_NAME_YOU_SELECT\nOUT=/your/save/path\nMODEL=/your/model/path\n"
            "python3 -m verl.trainer.main_ppo \\\n    data.task=suite_$SUITE \\\n    actor_rollout_ref.rollout.task=suite_${SUITE} \\\n"
            "    trainer.default_local_dir=$OUT \\\n    trainer.rollout_save_path=$OUT/rollout \\\n"
            "    actor_rollout_ref.model.path=$MODEL \\\n    critic.model.path=/your/model/path \\\n"
            "    trainer.n_gpus_per_node=8\n")
    found = _placeholders(text)
    # SUITE and OUT each once (naming the second key), MODEL once, and the literal on its own line.
    assert [line for line, _ in found] == [5, 7, 9, 10]
    assert "also reaches actor_rollout_ref.rollout.task at line 6" in found[0][1]
    assert "also reaches trainer.rollout_save_path at line 8" in found[1][1]
    assert "also reaches" not in found[2][1] + found[3][1]


def test_placeholder_shapes_of_the_third_set() -> None:
    from generator.reading.shell.placeholders import is_placeholder

    assert is_placeholder("path_to_base_model") and is_placeholder("['YOUR HOME DIR/data/train.parquet']")
    assert is_placeholder("YOUR SFT_MODEL_PATH")
    # Prose that merely says "your" and ordinary names are not placeholders.
    assert not is_placeholder("Please put your final answer in a box") and not is_placeholder("path_tokens")
    assert not is_placeholder("my_path_to_data")
    text = ('HOME="YOUR HOME DIR"\ntrain="[\'$HOME/data/train.parquet\']"\ntest="[\'$HOME/data/test.parquet\']"\n'
            'python3 -m verl.trainer.main_ppo \\\n    data.train_files="$train" \\\n    data.val_files="$test" \\\n'
            '    trainer.n_gpus_per_node=8\n')
    [(line, message)] = _placeholders(text)
    assert line == 5 and "also reaches data.val_files at line 6" in message


# --- a verl configured by dataclasses (EasyR1 style) -----------------------------------------------

def _dataclass_fork(root: Path) -> Path:
    (root / ".git").mkdir()
    trainer = root / "verl" / "trainer"
    trainer.mkdir(parents=True)
    (root / "verl" / "__init__.py").write_text('__version__ = "0.2.0.dev0"\n')
    (trainer / "__init__.py").write_text("")
    (trainer / "config.py").write_text(
        "from dataclasses import dataclass, field\n\n\n@dataclass\nclass DataConfig:\n    val_batch_size: int = -1\n\n\n"
        "@dataclass\nclass PPOConfig:\n    data: DataConfig = field(default_factory=DataConfig)\n")
    (trainer / "main.py").write_text(
        "from omegaconf import OmegaConf\nfrom .config import PPOConfig\n\n\ndef main():\n"
        "    config = OmegaConf.merge(OmegaConf.structured(PPOConfig()), OmegaConf.from_cli())\n")
    (trainer / "ray_trainer.py").write_text(
        "class Trainer:\n    def loader(self):\n        return make(batch_size=self.config.data.val_batch_size)\n")
    script = root / "examples" / "run_vlm.sh"
    script.parent.mkdir()
    script.write_text("python3 -m verl.trainer.main \\\n    config=examples/config.yaml \\\n"
                      "    data.val_batch_size=256 \\\n    worker.actor.model.model_path=Qwen/Qwen2.5-VL-3B-Instruct \\\n"
                      "    trainer.n_gpus_per_node=8\n")
    return script


def test_a_dataclass_configured_fork_is_named_and_its_keys_are_not_judged_against_a_release(tmp_path: Path) -> None:
    script = _dataclass_fork(tmp_path)
    done = subprocess.run([sys.executable, "-m", "generator", "check", "--format", "json", str(script)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    document = json.loads(done.stdout)
    file_doc = document["files"][0]
    codes = {f["code"] for f in file_doc["findings"]}
    # worker.* is not a key of any verl release and data.val_batch_size is live in the fork's trainer:
    # neither is reported from a packaged release's config.
    assert not codes & {"VK601", "VK602", "VK608"} and done.returncode == 0
    reason = json.dumps(file_doc["resolution"])
    assert "dataclasses" in reason and "schema unknown" in reason and str(tmp_path / "verl") in reason


def test_a_verl_with_yaml_is_not_taken_for_a_dataclass_fork(tmp_path: Path) -> None:
    from generator.schema.dataclass_fork import find_dataclass_verl

    script = _dataclass_fork(tmp_path)
    assert find_dataclass_verl(str(script)) == (tmp_path / "verl", tmp_path / "verl" / "trainer" / "config.py")
    (tmp_path / "verl" / "trainer" / "config").mkdir()
    assert find_dataclass_verl(str(script)) is None


def test_a_placeholder_only_exported_is_reported_at_its_export(tmp_path: Path) -> None:
    from generator.reading.shell import read_script

    text = ('export PYTHONPATH="<your_path_to_project>"/fork:$PYTHONPATH\necho "$PYTHONPATH"\n'
            "export WANDB_API_KEY=YOUR_WANDB_API_KEY\nexport HF_TOKEN=your_token_here\n"
            "export MODEL=/path/to/your/model\nexport WANDB_ENTITY=${WANDB_ENTITY:-\"your wandb team\"}\n"
            "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.model.path=$MODEL \\\n"
            "    trainer.logger=['console','wandb'] \\\n    trainer.n_gpus_per_node=8\n")
    found = _placeholders(text)
    # PYTHONPATH and the wandb key at their exports; MODEL where the call uses it; the HF token is
    # not reported, as the script uses no Hugging Face service by name, nor a default for what the
    # environment is meant to give.
    assert [line for line, _ in found] == [1, 3, 8]
    assert found[0][1].startswith("export PYTHONPATH=") and "exported to every program" in found[0][1]
    judge = _placeholders('export JUDGE_URL="your judge server/v1"\nexport NOTE="a note on your run"\n'
                          "python3 -m verl.trainer.main_ppo \\\n    trainer.n_gpus_per_node=8\n")
    assert [line for line, _ in judge] == [1]  # a setting left as "your …", not prose that mentions "your"
    # A variable a script run by this one reads is reported where that script uses it, not here.
    callee = tmp_path / "inner.sh"
    callee.write_text("python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.model.path=$BASE \\\n"
                      "    trainer.n_gpus_per_node=8\n")
    wrapper = tmp_path / "outer.sh"
    wrapper.write_text(f"export BASE=PATH/TO/BASE_MODEL\nbash {callee}\n")
    script = read_script(wrapper.read_bytes(), str(wrapper))
    messages = [h.message for h in script.hazards if h.kind == "placeholder-value"]
    assert len(messages) == 1 and not messages[0].startswith("export")


def test_a_value_repeating_its_variables_name_is_a_placeholder_and_labels_in_paths_are_folder_names() -> None:
    text = ("PROJECT=your_project_name\nEXP=your_experiment_name\nREF_MODEL_PATH=ref_model_path\nMODEL=model\n"
            "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.model.path=${REF_MODEL_PATH} \\\n"
            "    critic.model.path=$MODEL \\\n    trainer.project_name=$PROJECT \\\n    trainer.experiment_name=$EXP \\\n"
            "    trainer.default_local_dir=ckpts/$PROJECT/$EXP \\\n    trainer.n_gpus_per_node=8\n")
    found = _placeholders(text)
    # Only the model path: `model` may be a real folder, and the labels are valid names, in a path too.
    assert [line for line, _ in found] == [6] and "ref_model_path" in found[0][1]


# --- calls run through `bash -c` and wrappers in folder walks -------------------------------------

def test_a_call_in_a_bash_c_string_is_read() -> None:
    from generator.reading.shell import read_script

    for text in ('bash -c "python3 -m verl.trainer.main_ppo data.train_batch_size=7 trainer.n_gpus_per_node=8"\n',
                 'M=Qwen/Qwen2.5-7B\nsh -c "cd /srv && python3 -m verl.trainer.main_ppo '
                 'actor_rollout_ref.model.path=\\"$M\\" data.train_batch_size=7"\n'):
        script = read_script(text, "t.sh")
        [call] = script.invocations
        values = {ov.key: ov.value for ov in call.overrides}
        assert values["data.train_batch_size"] == "7"
    assert values["actor_rollout_ref.model.path"] == "Qwen/Qwen2.5-7B"


def test_a_folder_walk_keeps_a_wrapper_that_runs_a_launcher(tmp_path: Path) -> None:
    from generator.inputs.discover import expand_paths

    (tmp_path / ".git").mkdir()
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "run_x.sh").write_text(
        "python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=$BS \\\n    trainer.n_gpus_per_node=8\n")
    (tmp_path / "wrap.sh").write_text("export BS=7\nbash examples/run_x.sh\n")
    (tmp_path / "download.sh").write_text("bash scripts/fetch_data.sh\nwget https://example.com/data.tar\n")
    found = {Path(p).name for p in expand_paths([str(tmp_path)])}
    assert found == {"run_x.sh", "wrap.sh"}

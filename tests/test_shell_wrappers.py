"""Launch wrappers in front of the trainer call: each one's own options are skipped, and an
entry module is a Hydra trainer by name, by its overrides, or by its `@hydra.main`."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.reading.shell import read_file, read_script

MAIN = "verl.trainer.main_ppo"


@pytest.mark.parametrize("prefix, launcher", [
    ("uv run --with vllm --python 3.11 python3 -m", "uv run python3 -m"),
    ("uv run --frozen -m", "uv run -m"),
    ("conda run -n verl --no-capture-output python -m", "conda run python -m"),
    ("micromamba run -p /opt/env python -m", "micromamba run python -m"),
    ("pixi run -e cuda python -m", "pixi run python -m"),
    ("poetry run -C /src python -m", "poetry run python -m"),
    ("nohup setsid stdbuf -oL python3 -m", "python3 -m"),
    ("numactl --interleave=all taskset -c 0-7 python3 -m", "python3 -m"),
    ("timeout -s INT 10h time -p python3 -m", "python3 -m"),
    ("env -u CUDA_VISIBLE_DEVICES -i HOME=/root python3 -m", "python3 -m"),
])
def test_wrapper_options_are_skipped(prefix: str, launcher: str) -> None:
    script = read_script(f"{prefix} {MAIN} data.train_batch_size=64\n")
    (inv,) = script.invocations
    assert inv.entry == MAIN and inv.entry_kind == "module"
    assert inv.launcher == launcher
    assert [(o.key, o.value) for o in inv.overrides] == [("data.train_batch_size", "64")]
    assert inv.other_args == []  # no wrapper option leaked into the call's arguments


def test_env_assignments_reach_the_call() -> None:
    (inv,) = read_script(f"env -u X VLLM_USE_V1=1 python3 -m {MAIN} a.b=1\n").invocations
    assert inv.env == {"VLLM_USE_V1": "1"}


def test_ray_job_entrypoint_may_start_with_assignments() -> None:
    # Ray runs the entrypoint through a shell, so `-- NAME=1 python3 -m …` is a call with NAME set.
    src = (f"ray job submit --address=http://127.0.0.1:8265 --runtime-env-json='{{}}' "
           f"-- PYTHONUNBUFFERED=1 python3 -m {MAIN} data.train_batch_size=64\n")
    (inv,) = read_script(src).invocations
    assert (inv.entry, inv.launcher) == (MAIN, "ray job submit python3 -m")
    assert inv.env == {"PYTHONUNBUFFERED": "1"}
    assert [(o.key, o.value) for o in inv.overrides] == [("data.train_batch_size", "64")]


def test_uv_run_of_a_python_file() -> None:
    (inv,) = read_script("uv run --project . train.py data.train_batch_size=8\n").invocations
    assert (inv.entry, inv.entry_kind, inv.launcher) == ("train.py", "file", "uv run")


def test_a_subcommand_other_than_run_is_not_a_call() -> None:
    assert read_script(f"uv pip install verl {MAIN} a.b=1\n").invocations == []


def test_entry_with_hydra_main_is_a_trainer_without_overrides(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the project root: the entry module is read inside it only
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "main_grpo.py").write_text(
        "import hydra\n\n@hydra.main(config_path='config', config_name='grpo', version_base=None)\n"
        "def main(cfg):\n    pass\n")
    (tmp_path / "mypkg" / "plain.py").write_text("def main():\n    pass\n")
    (tmp_path / "scripts").mkdir()
    script_path = tmp_path / "scripts" / "run.sh"
    script_path.write_text("uv run -m mypkg.main_grpo\nuv run -m mypkg.plain\n")
    script = read_file(script_path)
    assert [(i.entry, i.line) for i in script.invocations] == [("mypkg.main_grpo", 1)]


def test_an_environment_manager_found_at_run_time_leads_to_the_call() -> None:
    # The manager's path comes from `command -v` (unknown statically); the call is a bash array
    # built on another array and run as "${CMD[@]}": its overrides keep their own lines.
    script = read_script(
        "CONDA_BIN=$(command -v conda || true)\n"
        'PYTHON=("$CONDA_BIN" run -n "$ENV_NAME" python)\n'
        f'CMD=("${{PYTHON[@]}}" -m {MAIN}\n'
        "  data.train_batch_size=64\n"
        '  "$@")\n'
        '"${CMD[@]}" 2>&1 | tee log\n')
    (inv,) = script.invocations
    assert inv.entry == MAIN and inv.launcher.endswith("run python -m")
    assert [(o.key, o.value, o.element_line) for o in inv.overrides] == [("data.train_batch_size", "64", 4)]


def test_an_unknown_command_with_run_but_no_python_program_is_no_call() -> None:
    assert read_script(f'"$TOOL" run -n x make {MAIN} a.b=1\n').invocations == []


def test_env_words_after_a_scanned_wrapper_reach_the_script_it_runs(tmp_path: Path) -> None:
    # `setsid` has no listed options: the scan stops at the next wrapper (`nohup`, `env`), so the
    # NAME=value words of `env` still set the callee's environment.
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.sh").write_text(
        f'BS=${{BS:-64}}\npython3 -m {MAIN} data.train_batch_size=$BS "$@"\n')
    launcher = tmp_path / "launch.sh"
    launcher.write_text('setsid nohup env \\\n  BS=32 \\\n  bash scripts/train.sh "$@" > log 2>&1 &\n')
    (inv,) = read_file(launcher).invocations
    assert [(o.key, o.value) for o in inv.overrides] == [("data.train_batch_size", "32")]

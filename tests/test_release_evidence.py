"""Evidence or silence (issue 34): an error or warning rests on the release the user's setup
names; where the release is only inferred from the script's keys, a finding that does not hold on
every release those keys allow is info and says what would settle it. verl's own requirements.txt
of a release, copied into a project without a `verl==` pin, names that release by its content."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.judging import check_script
from generator.schema import requirements_release
from generator.schema.resolution import resolve_script
from generator.reading.shell.script_reader import read_script

# rollout.mode=sync: verl 0.7.0 and later refuse it (VR508); 0.4.1 .. 0.6.1 run it. Every key
# here is in every packaged release's config, so the keys allow all of them.
SCRIPT = """python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer \\
    data.train_batch_size=64 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.mode=sync \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    return project / "run.sh"


def _findings(script_path: Path) -> dict[str, str]:
    script = read_script(script_path.read_bytes(), str(script_path))
    results = check_script(script, resolution=resolve_script(script, str(script_path)))
    return {f.code: f.severity for _inv, _config, findings in results for f in findings}


def test_a_finding_that_rests_on_the_inferred_release_is_info(tmp_path: Path) -> None:
    found = _findings(_project(tmp_path, {"run.sh": SCRIPT}))
    assert found["VR508"] == "info"  # 0.4.1 .. 0.6.1 accept rollout.mode=sync


def test_the_same_finding_is_an_error_where_a_pin_names_the_release(tmp_path: Path) -> None:
    found = _findings(_project(tmp_path, {"run.sh": SCRIPT, "requirements.txt": "verl==0.9.1\n"}))
    assert found["VR508"] == "error"


def test_a_finding_that_holds_on_every_allowed_release_stays_an_error(tmp_path: Path) -> None:
    # a mini batch larger than the step fails on every release (VB102)
    script = SCRIPT.replace("ppo_mini_batch_size=16", "ppo_mini_batch_size=128")
    found = _findings(_project(tmp_path, {"run.sh": script}))
    assert found["VB102"] == "error"
    assert found["VR508"] == "info"


def test_the_message_says_what_would_settle_it(tmp_path: Path) -> None:
    script_path = _project(tmp_path, {"run.sh": SCRIPT})
    script = read_script(script_path.read_bytes(), str(script_path))
    results = check_script(script, resolution=resolve_script(script, str(script_path)))
    message = next(f.message for _i, _c, fs in results for f in fs if f.code == "VR508")
    assert "does not hold on verl 0.4.1" in message and "--verl-version" in message
    fix = next(f.fix for _i, _c, fs in results for f in fs if f.code == "VR508")
    assert fix is None or fix.applicability == "unsafe"


# A project's copy of "verl's requirements.txt" (a fixture: the table below says which releases
# had it), reordered and re-commented as a fork would.
COPIED = "# deps\nray[default]\nhydra-core\naccelerate  # training\n"
TABLE = {requirements_release.fingerprint("accelerate\nhydra-core\nray[default]\n"): ("0.5.0", "0.6.1")}


@pytest.fixture
def verl_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(requirements_release, "_table", lambda: TABLE)


def test_verls_own_requirements_file_names_its_release(tmp_path: Path, verl_table: None) -> None:
    script_path = _project(tmp_path, {"run.sh": SCRIPT, "requirements.txt": COPIED})
    script = read_script(script_path.read_bytes(), str(script_path))
    found = resolve_script(script, str(script_path))
    assert found.release == "0.6.1" and found.allowed == ("0.5.0", "0.6.0", "0.6.1")
    assert "verl's own requirements file of release 0.5.0 .. 0.6.1" in found.reason
    assert "VR508" not in _findings(script_path)  # sync runs on every release the file allows


def test_a_requirements_file_that_is_not_verls_is_no_evidence(tmp_path: Path, verl_table: None) -> None:
    script_path = _project(tmp_path, {"run.sh": SCRIPT, "requirements.txt": COPIED + "torch\n"})
    script = read_script(script_path.read_bytes(), str(script_path))
    assert resolve_script(script, str(script_path)).release == "0.9.1"  # the keys' guess


def test_a_vendored_verl_without_a_version_file_is_judged_by_verls_requirements_beside_it(
        tmp_path: Path, verl_table: None) -> None:
    from generator.schema.release_schema import DATA_DIR  # noqa: F401  (packaged schemas exist)

    config = tmp_path / "proj" / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    (config / "ppo_megatron_trainer.yaml").write_text("data:\n  train_batch_size: 8\n")
    script_path = _project(tmp_path, {"run.sh": "python3 -m verl.trainer.main_ppo data.train_batch_size=64\n",
                                      "requirements.txt": COPIED})
    script = read_script(script_path.read_bytes(), str(script_path))
    found = resolve_script(script, str(script_path))
    assert found.base_release == "0.6.1" and "requirements file of release 0.5.0 .. 0.6.1" in found.reason


def test_keys_no_release_has_leave_every_release_possible(tmp_path: Path) -> None:
    # a fork's own key (no packaged release has it) names no release: the others still weigh
    script = SCRIPT.replace("trainer.n_gpus_per_node=8", "trainer.n_gpus_per_node=8 trainer.my_fork_switch=1")
    script_path = _project(tmp_path, {"run.sh": script})
    found = resolve_script(read_script(script_path.read_bytes(), str(script_path)), str(script_path))
    assert "0.4.1" in found.allowed and "0.9.1" in found.allowed
    assert _findings(script_path)["VR508"] == "info"


# A key every packaged release has, added with '+' (VK602 on each of them), from a script that runs
# verl from a folder outside the project: the verl that runs there is not one we read.
PLUS_EXISTING = SCRIPT.replace("trainer.nnodes=1", "trainer.nnodes=1 +trainer.val_before_train=False")


@pytest.mark.parametrize("prelude", ["cd ~/OtherVerl\n", "cd /opt/other_verl\n",
                                     "export PYTHONPATH=/opt/other_verl:$PYTHONPATH\n"])
def test_a_key_finding_of_a_script_running_verl_from_outside_the_project_is_info(tmp_path: Path,
                                                                                  prelude: str) -> None:
    script_path = _project(tmp_path, {"run.sh": prelude + PLUS_EXISTING})
    script = read_script(script_path.read_bytes(), str(script_path))
    results = check_script(script, resolution=resolve_script(script, str(script_path)))
    vk602 = [f for _inv, _config, findings in results for f in findings if f.code == "VK602"]
    assert [f.severity for f in vk602] == ["info"]
    assert "outside the project" in vk602[0].message or "cannot place" in vk602[0].message
    assert found_by(tmp_path / "inside", PLUS_EXISTING)["VK602"] == "error"  # run from the project: it stands
    # a release the project names is evidence: the finding stands wherever verl is imported from
    assert found_by(tmp_path / "pinned", prelude + PLUS_EXISTING, {"requirements.txt": "verl==0.9.1\n"})["VK602"] \
        == "error"


def found_by(where: Path, text: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return _findings(_project(where, {"run.sh": text, **(extra or {})}))

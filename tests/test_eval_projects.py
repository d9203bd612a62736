"""tools/eval_projects.py: precision of `gen check` over scripts inside project checkouts, scored
against verdicts kept outside the repository (issue 11's measurement). The checkouts here are
tiny ones written by the test."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import eval_projects  # noqa: E402  (tools/ is a folder of scripts)

CALL = "python3 -m verl.trainer.main_ppo"


def _checkouts(tmp_path: Path) -> Path:
    root = tmp_path / "checkouts"
    bad = root / "owner+bad"
    bad.mkdir(parents=True)
    # mini > train on the newest release: one error; the unknown key: another.
    (bad / "run.sh").write_text(f"{CALL} data.train_batch_size=8 actor_rollout_ref.actor.ppo_mini_batch_size=16 "
                                "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 "
                                "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 "
                                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1 "
                                "trainer.n_gpus_per_node=1 trainer.no_such_key=1\n")
    silent = root / "owner+silent"
    silent.mkdir()
    # Looks like a launcher (a Hydra override) but its program is not known: no call is read.
    # (A plain helper script would be "not a launch script", VS730, and pass.)
    (silent / "prep.sh").write_text("$LAUNCHER data.train_batch_size=8\n")
    return root


def test_precision_counts_verdicts_and_lists_the_unjudged(tmp_path: Path, capsys) -> None:
    root = _checkouts(tmp_path)
    scripts = tmp_path / "scripts.tsv"
    scripts.write_text("owner+bad\trun.sh\nowner+silent\tprep.sh\n")
    verdicts = tmp_path / "verdicts.tsv"
    verdicts.write_text("# project\tscript\tcode\tline\tkey\tverdict\tclass\tnote\n"
                        "owner+bad\trun.sh\tVK601\t1\ttrainer.no_such_key\tnoise\tfork-key\t\n")
    out = tmp_path / "result.json"
    assert eval_projects.main([str(root), str(scripts), str(verdicts), "--json", str(out)]) == 0
    summary = json.loads(out.read_text())["summary"]
    printed = capsys.readouterr().out
    assert summary["scripts"] == 2 and summary["noise"] == 1 and summary["real"] == 0
    assert summary["unjudged"] == summary["errors"] + summary["warnings"] - 1 >= 1
    assert summary["precision"] == 0.0 and summary["noise_classes"] == {"fork-key": 1}
    assert "owner+bad\trun.sh\tVB102\t1\tactor_rollout_ref.actor.ppo_mini_batch_size" in printed
    # the launcher-looking script whose call is not read: the check warns (VS709), never a silent pass
    assert summary["silent_passes"] == 0 and summary["no_call_warnings"] == 1
    # one project with a false finding of the two, both with findings; no placeholder judged yet
    assert summary["projects_with_findings"] == 2 and summary["projects_with_false_finding"] == 1
    assert summary["projects_without_false_finding"] == 0.5
    assert summary["placeholders"] == 0 and summary["precision_without_placeholders"] == 0.0


def test_precision_without_placeholders_leaves_out_real_placeholder_verdicts(tmp_path: Path) -> None:
    root = _checkouts(tmp_path)
    scripts = tmp_path / "scripts.tsv"
    scripts.write_text("owner+bad\trun.sh\nowner+silent\tprep.sh\n")
    out = tmp_path / "result.json"
    assert eval_projects.main([str(root), str(scripts), str(tmp_path / "none.tsv"), "--json", str(out)]) == 0
    judged = [f["id"] for s in json.loads(out.read_text())["scripts"] for f in s["findings"]]
    assert len(judged) >= 3
    # every finding judged: the first a real placeholder, the second real, the rest noise
    rows = [judged[0] + "\treal\tplaceholder\t", judged[1] + "\treal\t\t"]
    rows += [i + "\tnoise\tx\t" for i in judged[2:]]
    verdicts = tmp_path / "verdicts.tsv"
    verdicts.write_text("\n".join(rows) + "\n")
    assert eval_projects.main([str(root), str(scripts), str(verdicts), "--json", str(out)]) == 0
    summary = json.loads(out.read_text())["summary"]
    total = len(judged)
    assert summary["placeholders"] == 1 and summary["real"] == 2 and summary["unjudged"] == 0
    assert summary["precision"] == round(2 / total, 3)
    assert summary["precision_without_placeholders"] == round(1 / (total - 1), 3)


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    root = _checkouts(tmp_path)
    scripts = tmp_path / "scripts.tsv"
    scripts.write_text("owner+bad\tmissing.sh\n")
    assert eval_projects.main([str(root), str(scripts), str(tmp_path / "none.tsv")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    verdicts = tmp_path / "verdicts.tsv"
    verdicts.write_text("owner+bad\trun.sh\tVK601\t1\tk\tmaybe\n")
    scripts.write_text("owner+bad\trun.sh\n")
    assert eval_projects.main([str(root), str(scripts), str(verdicts)]) == 2

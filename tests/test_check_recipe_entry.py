"""Recipe entries are checked against their own config when the entry module sits beside the
script, as in a verl checkout. The corpus ships scripts without their entry modules, so this
test lays out a small checkout: the real script, verl-recipe's real config folder, and an entry
module whose @hydra.main names that config (nothing is imported or run)."""

from __future__ import annotations

import csv
import shutil

import pytest

from generator.judging import check_script
from generator.reading.shell import read_file

MAIN_DAPO = ('import hydra\n\n@hydra.main(config_path="config", config_name="dapo_trainer", version_base=None)\n'
             "def main(config):\n    raise SystemExit('never run')\n")
SNAPSHOT = "verl-recipe@21892b9"  # the verl-recipe commit verl HEAD pins


@pytest.mark.parametrize("script", ["run_dapo_qwen2.5_32b_rollout_corr.sh", "run_dapo_qwen3_moe_30b_vllm_fp8_rollout.sh"])
def test_dapo_scripts_report_the_findings_rows_once_the_entry_is_beside_them(tmp_path, corpus_dir, verl_config_dir,
                                                                            script):
    with (corpus_dir / "OCCURRENCES.tsv").open(encoding="utf-8") as handle:
        stored = {(row["tag"], row["path"]): (row["first_tag"], row["first_path"])
                  for row in csv.DictReader(handle, delimiter="\t")}
    first_tag, first_path = stored[(SNAPSHOT, f"dapo/{script}")]
    recipe = tmp_path / "recipe" / "dapo"
    recipe.mkdir(parents=True)
    shutil.copy(corpus_dir / "scripts" / first_tag / first_path, recipe / script)
    shutil.copytree(verl_config_dir / SNAPSHOT / "recipe" / "dapo" / "config", recipe / "config")
    (recipe / "main_dapo.py").write_text(MAIN_DAPO, encoding="utf-8")

    with (corpus_dir / "FINDINGS.tsv").open(encoding="utf-8") as handle:
        expected = {row["detail"].split("=", 1)[0] for row in csv.DictReader(handle, delimiter="\t")
                    if row["category"] == "hydra:unknown_key" and row["path"] == f"recipe/dapo/{script}"
                    and SNAPSHOT in row["present_in_tags"] and "version skew" not in row["detail"]}
    assert expected, "FINDINGS.tsv lists unknown keys for this script"

    results = check_script(read_file(str(recipe / script)), version="0.7.0+b178a3c")
    configs = [config for invocation, config, _ in results if invocation is not None]
    assert configs and not any(config.approximate for config in configs)
    reported = {f.key for _, _, findings in results for f in findings if f.code.startswith("VK6") and f.severity == "error"}
    assert expected <= reported

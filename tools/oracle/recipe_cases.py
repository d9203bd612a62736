"""The scripts `gen recipe --model M --gpus N` writes (no version flag) as oracle cases: the call
each one makes, for verl's own validation to judge (issue 19: every packaged model at its GPU
counts must pass verl 0.9.1's validation). Only scripts written for `version` are returned.

    cases += recipe_cases(version)          # e.g. in cli.py next to rule_example_cases

`$HOME` in the default data paths stays as written: verl only reads the paths when it loads data.
"""

from __future__ import annotations

from generator.plan.planned_scripts import planned_scripts, trainer_call

from .cases import Case, _model_path


def recipe_cases(version: str, every: int = 1) -> list[Case]:
    cases = []
    for planned in planned_scripts(every):
        if planned.spec.version != version:
            continue
        config_name, overrides = trainer_call(planned.spec)
        case = Case(ident=f"recipe:{planned.ident}", config_name=config_name, overrides=overrides,
                    note=f"gen recipe --model {planned.spec.model_slug} --gpus {planned.spec.gpus} "
                         f"--algo {planned.spec.algo} (verl {version})")
        case.model_path = _model_path(case.overrides)
        cases.append(case)
    return cases

"""Judging a variable a script uses but never sets: one a scheduler or launcher exports
(`$SLURM_JOB_NUM_NODES`, `$ARNOLD_WORKER_GPU`) is the run's to provide; one a letter or an
underscore away from a name the script does set (`$_EXP_NAME` beside `EXP_NAME=…`) is a typo."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from generator.reading.launch_script import Invocation

_WHOLLY_UNSET = re.compile(r"<\?unset:([A-Za-z_][A-Za-z0-9_]*)>")
# A call built on this many different variables the script never sets takes them from its caller
# by design (`export BASE_MODEL=… N_GPUS=…; bash train.sh`, or a README's `export model_path=…`
# before `bash train.sh`: issue 34), whatever their case; one or two, in a script that sets the
# rest of its settings itself, are more likely forgotten.
INPUTS_AT_LEAST = 3

# Prefixes of the variables job schedulers and cluster launchers export into every job.
_SCHEDULER_PREFIXES = ("SLURM_", "ARNOLD_", "PET_", "MLP_", "OMPI_", "PMI_", "PMIX_", "KUBERNETES_", "LSB_", "PBS_",
                       "SGE_", "MASTER_", "WORLD_", "NODE_RANK", "LOCAL_", "GROUP_RANK", "NPROC", "NNODES",
                       "CUDA_", "ROCR_", "HIP_", "ASCEND_", "NCCL_", "HOME", "USER", "PWD", "HOSTNAME", "RANK",
                       "TMPDIR", "PATH")


def environment_inputs(inv: Invocation, assigned: set[str]) -> list[str]:
    """The names a call's values are wholly made of that the script never sets,
    when there are INPUTS_AT_LEAST of them (the script's inputs); else []."""
    names: list[str] = []
    for ov in inv.overrides:
        m = _WHOLLY_UNSET.fullmatch(ov.value or "")
        if m and m.group(1) not in assigned and not from_scheduler(m.group(1)) and m.group(1) not in names:
            names.append(m.group(1))
    return names if len(names) >= INPUTS_AT_LEAST else []


def from_scheduler(name: str) -> bool:
    return name.startswith(_SCHEDULER_PREFIXES)


def near_miss(name: str, assigned: set[str]) -> str | None:
    """A name the script sets that `name` differs from by its leading/trailing underscores,
    its case, or one letter added, dropped or changed (names of 4 or more characters)."""
    if len(name) < 4:
        return None
    core = name.strip("_").lower()
    best = None
    for other in sorted(assigned):
        if other == name or len(other) < 4:
            continue
        if other.strip("_").lower() == core or _one_edit(name, other):
            best = other
            break
    return best


def _one_edit(a: str, b: str) -> bool:
    if abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        return sum(x != y for x, y in zip(a, b)) == 1
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    for i in range(len(long_)):
        if long_[:i] + long_[i + 1:] == short:
            return True
    return False

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

# Prefixes of the variables job schedulers, job platforms and cluster launchers export into every
# job, by source (the one home for this list; a value built on one is the run's to provide):
_PLATFORM_PREFIXES: dict[str, tuple[str, ...]] = {
    # Slurm sbatch(1) "OUTPUT ENVIRONMENT VARIABLES"
    "slurm": ("SLURM_",),
    # PBS Pro / Torque qsub(1) "Environment variables": PBS_NODEFILE, PBS_JOBID, PBS_ARRAY_INDEX
    "pbs": ("PBS_",),
    # IBM Spectrum LSF "Environment variables set for job execution": LSB_JOBID, LSB_HOSTS, LSF_*
    "lsf": ("LSB_", "LSF_"),
    # Grid Engine qsub(1) "ENVIRONMENTAL VARIABLES": SGE_TASK_ID
    "sge": ("SGE_",),
    # NVIDIA DGX Cloud Lepton, docs.nvidia.com/dgx-cloud/lepton/features/batch-jobs/predefined-env-vars:
    # LEPTON_JOB_TOTAL_WORKERS, LEPTON_JOB_WORKER_INDEX, LEPTON_RESOURCE_ACCELERATOR_NUM
    "lepton": ("LEPTON_",),
    # Kubeflow PyTorchJob (training-operator pytorch envvar.go): PET_NNODES, PET_NODE_RANK,
    # PET_NPROC_PER_NODE, with MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK; Kubernetes service
    # links KUBERNETES_SERVICE_HOST
    "kubeflow": ("PET_", "KUBERNETES_"),
    # Volcano job plugins env/svc (volcano.sh/docs/plugins): VC_TASK_INDEX, VC_<task>_HOSTS, VC_<task>_NUM
    "volcano": ("VC_",),
    # KubeRay pods (ray-operator common/pod.go): KUBERAY_GEN_RAY_START_CMD, RAY_CLUSTER_NAME, FQ_RAY_IP
    "kuberay": ("KUBERAY_", "FQ_RAY_IP", "RAY_CLUSTER_NAME"),
    # Volcengine machine learning platform (MLP_WORKER_NUM, MLP_WORKER_GPU, MLP_ROLE_INDEX) and its
    # predecessor Arnold (ARNOLD_WORKER_NUM, ARNOLD_WORKER_GPU, ARNOLD_ID)
    "volcengine": ("MLP_", "ARNOLD_"),
    # SkyPilot docs "Environment variables": SKYPILOT_NODE_RANK, SKYPILOT_NUM_NODES, SKYPILOT_NODE_IPS,
    # SKYPILOT_NUM_GPUS_PER_NODE, SKYPILOT_TASK_ID
    "skypilot": ("SKYPILOT_",),
    # AWS Batch multi-node parallel jobs: AWS_BATCH_JOB_NUM_NODES, AWS_BATCH_JOB_NODE_INDEX,
    # AWS_BATCH_JOB_MAIN_NODE_INDEX, AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS
    "aws-batch": ("AWS_BATCH_",),
    # SageMaker training toolkit: SM_NUM_GPUS, SM_HOSTS, SM_CURRENT_HOST
    "sagemaker": ("SM_NUM_", "SM_HOSTS", "SM_CURRENT_"),
    # MPI launchers: Open MPI OMPI_COMM_WORLD_*, MPICH/Hydra PMI_*, PMIx PMIX_*
    "mpi": ("OMPI_", "PMI_", "PMIX_"),
    # torchrun / torch.distributed.elastic (torch/distributed/run.py): MASTER_ADDR, MASTER_PORT,
    # WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, TORCHELASTIC_*; the NNODES/NPROC/
    # NODE_RANK names the platforms above and their launch wrappers export
    "torch-distributed": ("MASTER_", "WORLD_", "NODE_RANK", "LOCAL_", "GROUP_RANK", "TORCHELASTIC_", "NPROC",
                          "NNODES", "RANK"),
    # device runtimes: CUDA_VISIBLE_DEVICES, ROCR_/HIP_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES, NCCL_*
    "devices": ("CUDA_", "ROCR_", "HIP_", "ASCEND_", "NCCL_"),
    # POSIX login environment (environ(7))
    "posix": ("HOME", "USER", "PWD", "HOSTNAME", "TMPDIR", "PATH"),
}
_SCHEDULER_PREFIXES = tuple(p for prefixes in _PLATFORM_PREFIXES.values() for p in prefixes)

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

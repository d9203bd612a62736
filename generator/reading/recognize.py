"""Whether a file looks like a launch script at all, from its text alone: it names a trainer
entry (`main_ppo`, `verl.trainer`, a `recipe.….main…` module) or carries Hydra override
shapes (`a.b=value`, `+a.b=…`, `~a.b`). Helper scripts (data preparation, downloads, installs)
do neither: `gen check` says "not a launch script" for them and passes them (exit 0), in a
folder walk, for a file named on the command line and in the pre-commit hook alike. A file that
looks like a launcher but whose call could not be read keeps VS709 (exit 1). A folder walk also
keeps a wrapper that only runs a launcher (`export BS=64; bash examples/run_x.sh`, `scripts_run`),
as checking it checks the callee with the wrapper's settings."""

from __future__ import annotations

import re

from generator.base.safe_regex import lazy_pattern

# A launcher names the trainer it starts.
NAMES_TRAINER = lazy_pattern(rb"main_ppo|verl[./]trainer|recipe[./][\w./]*main")
# A dotted Hydra key given a value (or deleted) as a word of its own: `trainer.n_gpus_per_node=8`.
_OVERRIDE_SHAPE = lazy_pattern(rb"(?:^|[\s'\"])(?:\+\+?|~)?[A-Za-z_]\w*(?:\.\w+)+=|(?:^|\s)~[A-Za-z_]\w*(?:\.\w+)+(?=\s|$)",
                               re.MULTILINE)


# `bash x.sh`, `sh ./x.sh -a`, `source x.sh`, `. x.sh`: the text runs another script.
_RUNS_SCRIPT = lazy_pattern(rb"(?:^|[\s;&|(])(?:bash|sh|source|\.)[ \t]+(?:-\w+[ \t]+)*([^\s;&|'\"()]+\.sh)(?=[\s;&|)'\"]|$)",
                            re.MULTILINE)


def scripts_run(source: bytes) -> list[str]:
    """The `.sh` paths, as written, that the text runs with bash, sh or source (the first 20)."""
    return [m.group(1).decode("latin-1") for m in _RUNS_SCRIPT().finditer(source)][:20]


def names_trainer(source: bytes) -> bool:
    return NAMES_TRAINER().search(source) is not None


def looks_like_launcher(source: bytes) -> bool:
    """A trainer entry named, or Hydra override shapes in the text (comments included: a call
    commented out still marks the file as a launcher whose call is not read)."""
    return names_trainer(source) or _OVERRIDE_SHAPE().search(source) is not None

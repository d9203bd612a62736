"""VP308 — the GPUs a script makes visible on a node (CUDA_VISIBLE_DEVICES, `ray start --num-gpus`,
Slurm's `--gres=gpu:N` / `--gpus-per-node`) against the GPUs per node the trainer asks Ray for
(`trainer.n_gpus_per_node`, 8 unless set). Read from the script's text before the call, statically:
only literal values count; a value built at run time is not judged."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from generator.config.reader import ConfigReader
from generator.reading.edit_kinds import KeyEdit
from generator.rules.core import Context, Finding, Fix, ctx_finding, rule
from generator.base.safe_regex import lazy_pattern

_CVD = lazy_pattern(r"(?:^|[\s;&|(])(?:export\s+)?CUDA_VISIBLE_DEVICES=(['\"]?)([0-9][0-9,\s]*?)\1(?=$|[\s;&|)])")
_RAY_START = lazy_pattern(r"\bray\s+start\b.*?--num-gpus(?:=|\s+)['\"]?(\d+)")
_GRES = lazy_pattern(r"--gres(?:=|\s+)['\"]?gpu(?::[\w-]+)?:(\d+)")
_GPUS_PER_NODE = lazy_pattern(r"--gpus-per-node(?:=|\s+)['\"]?(?:[\w-]+:)?(\d+)")
# A word each limit is written with (what _CVD, _RAY_START, _GRES and _GPUS_PER_NODE match).
_WORDS = ("CUDA_VISIBLE_DEVICES=", "--num-gpus", "--gres", "--gpus-per-node")
_SLURM_LINE = lazy_pattern(r"^\s*(?:#SBATCH\b|(?:[\w./-]*/)?(?:srun|sbatch|salloc)\b)")


class Visible(NamedTuple):
    """GPUs per node a line of the script makes visible."""

    gpus: int
    line: int
    what: str


def visible_gpus(text: str, before_line: int, env_value: str | None = None) -> list[Visible]:
    """Every limit on the GPUs of a node the script sets up to `before_line` (the call's line);
    `env_value` is a CUDA_VISIBLE_DEVICES prefix on the call itself. The last CUDA_VISIBLE_DEVICES
    before the call wins; Slurm directives count wherever they are (#SBATCH heads the file)."""
    found: list[Visible] = []
    devices: Visible | None = None
    # Every pattern below needs one of these words: most scripts have none, and are not read line by line.
    lines = text.splitlines() if any(word in text for word in _WORDS) else []
    if lines:  # the patterns are compiled for such a script only
        cvd, ray_start, slurm_line = _CVD(), _RAY_START(), _SLURM_LINE()
        slurm_limits = ((_GRES(), "--gres=gpu:{n}"), (_GPUS_PER_NODE(), "--gpus-per-node={n}"))
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        is_sbatch = stripped.startswith("#SBATCH")
        if stripped.startswith("#") and not is_sbatch:
            continue
        code = line.split(" #", 1)[0]
        if slurm_line.match(code):
            for pattern, name in slurm_limits:
                hit = pattern.search(code)
                if hit:
                    found.append(Visible(int(hit.group(1)), number, name.format(n=hit.group(1))))
        if number >= before_line:
            continue
        hit = ray_start.search(code)
        if hit:
            found.append(Visible(int(hit.group(1)), number, f"ray start --num-gpus={hit.group(1)}"))
        for match in cvd.finditer(code):
            ids = [part for part in re.split(r"[,\s]+", match.group(2)) if part]
            devices = Visible(len(ids), number, f"CUDA_VISIBLE_DEVICES={','.join(ids)}")
    if env_value is not None and re.fullmatch(r"[0-9][0-9,\s]*", env_value.strip()):
        ids = [part for part in re.split(r"[,\s]+", env_value.strip()) if part]
        devices = Visible(len(ids), before_line, f"CUDA_VISIBLE_DEVICES={','.join(ids)}")
    if devices is not None:
        found.append(devices)
    return found


@rule("VP308", "fewer-visible-gpus-than-n-gpus-per-node", severity="error", stage="init", verl_ref="",
      backends=("megatron", "fsdp", "unknown"), scope="any")
def fewer_visible_gpus(ctx: Context) -> Iterator[Finding]:
    if ctx.script is None or ctx.invocation is None:
        return
    view = ConfigReader.of(ctx)
    per_node = view.gpus_per_node
    if per_node is None or per_node <= 0:
        return
    limits = visible_gpus(ctx.script.text, ctx.invocation.line, ctx.invocation.env.get("CUDA_VISIBLE_DEVICES"))
    if not limits:
        return
    tightest = min(limits, key=lambda v: v.gpus)
    if tightest.gpus >= per_node or tightest.gpus <= 0:
        return
    nodes = view.int("trainer.nnodes") or 1
    set_here = view.explicit("trainer.n_gpus_per_node")
    asked = f"trainer.n_gpus_per_node={per_node}" + ("" if set_here else " (the default)")
    message = (f"{asked} asks Ray for {per_node} GPUs on each of {nodes} node(s), but {tightest.what} "
               f"(line {tightest.line}) leaves {tightest.gpus} visible: verl's resource check stops the run "
               f"('Total available GPUs {tightest.gpus * nodes} is less than total desired GPUs {per_node * nodes}'), "
               f"or, when other nodes make up the total, Ray waits for a placement that never comes")
    fix = Fix(f"set trainer.n_gpus_per_node={tightest.gpus}",
              (KeyEdit("trainer.n_gpus_per_node", view.raw("trainer.n_gpus_per_node"), tightest.gpus),),
              applicability="unsafe")
    yield ctx_finding(fewer_visible_gpus, view, ("trainer.n_gpus_per_node",), message, fix=fix)

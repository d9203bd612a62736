"""How a plan stands against the Megatron layouts verl ships for the same model and GPU count
(issue 23: every departure from verl's practice is said in the plan, with the estimated gain).

For each row of the packaged `data/verl_layouts.yaml` (verl's example scripts) whose model and
GPU count are the plan's, verl's layout is evaluated with the script's own knobs (rollout TP,
offload, recompute, batching, gmu) on the plan's workload and batch, and set beside the plan's
choice: both estimated step times, the parts where the time goes, the knobs that differ and the
first ranking criterion the plan wins on. `report/departures.py` words it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.layout.candidate import Candidate, StepTime
from generator.model import ModelFacts
from generator.plan.enumeration import describe_layout
from generator.plan.practice import leaves_spare, within_step_band
from generator.plan.published import practice_marks
from generator.plan.ranking import deciding_criterion, rank_key
from generator.plan.reference import VerlLayout, verl_layouts
from generator.plan.result import Plan
from generator.plan.setting import Setting

# The parts of a step, as StepTime names them and as the plan's text says them.
PARTS = (("rollout_s", "rollout"), ("log_prob_s", "log-prob"), ("update_s", "update"), ("offload_s", "offload"),
         ("bubble_s", "pipeline bubble"), ("comm_s", "TP/CP/EP communication"), ("weight_sync_s", "weight sync"))
# A part counts as a reason when it saves at least this share of verl's estimated step.
REASON_SHARE = 0.03
MAX_ROWS = 3  # verl ships up to four examples for one model and GPU count; the same algorithm's first


@dataclass(frozen=True, slots=True)
class Departure:
    """verl's shipped layout `verl` (with its own knobs, on the plan's workload) against `ours`."""

    row_id: str
    script: str
    verl: Candidate
    ours: Candidate
    criterion: str | None  # the first ranking criterion `ours` wins on; None: they tie on every one

    @property
    def same_layout(self) -> bool:
        return describe_layout(self.verl) == describe_layout(self.ours) and self.verl.rollout_tp == self.ours.rollout_tp

    @property
    def same_knobs(self) -> bool:
        return self.same_layout and not knob_differences(self.ours, self.verl)

    @property
    def gain(self) -> float | None:
        """Share of verl's estimated step time the plan saves (negative: the plan is slower)."""
        if self.verl.score is None or self.ours.score is None or self.verl.score.total_s <= 0:
            return None
        return 1.0 - self.ours.score.total_s / self.verl.score.total_s

    @property
    def tie(self) -> bool:
        """Either estimate within STEP_TIME_ERROR_BAND of the other: a tie, which goes to practice."""
        if self.verl.score is None or self.ours.score is None:
            return False
        a, b = sorted((self.verl.score.total_s, self.ours.score.total_s))
        return within_step_band(a, b)

    @property
    def thin(self) -> bool:
        """verl's knobs fit this workload but leave less than the practice's spare in some phase."""
        return self.verl.fits and bool(self.verl.memory) and not leaves_spare(
            [p.gib for p in self.verl.memory], self.verl.limit_gib)

    def savings(self) -> list[tuple[str, float]]:
        """(part, seconds the plan saves on it) for the parts that save REASON_SHARE of verl's step
        or more, largest first (or the one part that saves most, when none does)."""
        return part_savings(self.verl.score, self.ours.score)


def part_savings(verl: StepTime | None, ours: StepTime | None) -> list[tuple[str, float]]:
    if verl is None or ours is None:
        return []
    saved = sorted(((label, getattr(verl, name) - getattr(ours, name)) for name, label in PARTS),
                   key=lambda item: -item[1])
    floor = REASON_SHARE * verl.total_s
    large = [(label, s) for label, s in saved if s >= floor and s > 0]
    # A small gain spread thin still has a largest part: name that one.
    return large or [(label, s) for label, s in saved[:1] if s > 0]


def knob_text(c: Candidate) -> str:
    batching = (f"dynamic batches of {c.token_budget} tokens" if c.use_dynamic_bsz
                else f"micro-batches of {c.micro_batch_per_gpu}")
    offload = "+".join(c.relief(short=True)) or "no offload"
    return f"{batching}, {offload}, gmu {c.gpu_memory_utilization:g}"


def knob_differences(ours: Candidate, verl: Candidate) -> list[str]:
    """What the plan sets otherwise than verl's script, as 'ours instead of verl's' phrases."""
    pairs = [(describe_layout(ours), describe_layout(verl)), (f"rollout TP{ours.rollout_tp}", f"TP{verl.rollout_tp}")]
    a, b = knob_text(ours).split(", "), knob_text(verl).split(", ")
    pairs += list(zip(a, b))
    return [f"{mine} instead of {theirs}" for mine, theirs in pairs if mine != theirs and
            not (mine.startswith("rollout TP") and mine == f"rollout {theirs}")]


def matching_rows(model: ModelFacts, gpus: int, algo: str) -> list[VerlLayout]:
    """verl's rows for this model and GPU count; those of the plan's algorithm when there are some."""
    rows = [row for row in verl_layouts() if row.row["gpus"] == gpus and row.model.name == model.name]
    same_algo = [row for row in rows if str(row.row["algo"]).lower() == algo.lower()]
    return (same_algo or rows)[:MAX_ROWS]


def departures(plan: Plan, model: ModelFacts, workload: dict[str, Any]) -> list[Departure]:
    """The plan against each of verl's shipped layouts for its model and GPU count.

    `workload` holds plan_layout's workload arguments (nodes, gpu, lengths, n, algo, ...) as the
    plan was made; the plan's own batch (train and mini batch size) is used for verl's layout too."""
    ours = plan.best
    if ours is None or ours.score is None:
        return []
    same_batch = {**workload, "train_batch_size": plan.train_batch_size,
                  "ppo_mini_batch_size": plan.ppo_mini_batch_size}
    seq_len = plan.prompt_len + plan.response_len
    per_node = max(1, plan.gpus // max(1, plan.nodes))
    setting = Setting(gpus=plan.gpus, gpus_per_node=per_node, gpu=workload["gpu"], prompt_len=plan.prompt_len,
                      response_len=plan.response_len, n=1, algo=plan.algo, train_batch_size=0, mini=0)
    out = []
    for row in matching_rows(model, plan.gpus, plan.algo):
        evaluated = row.evaluate_for(same_batch)
        if not evaluated.candidates:
            continue
        verl = evaluated.candidates[0]
        mine, theirs = practice_marks(model, ours, setting), practice_marks(model, verl, setting)
        criterion = deciding_criterion(
            rank_key(ours, seq_len, model.is_moe, per_node, violations=mine[0], published=mine[1]),
            rank_key(verl, seq_len, model.is_moe, per_node, violations=theirs[0], published=theirs[1]))
        out.append(Departure(row.id, str(row.row.get("script", row.id)), verl, ours, criterion))
    return out

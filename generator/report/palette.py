"""One colour per thing drawn, for every picture and every terminal bar (issue 36).

The memory model names 18 terms (generator/plan/memory.py TERM_ORDER); a legend of 18 hues is
unreadable, and the same actor weights are `weights` in the update and `actor-weights` in the
rollout. So a chart colours a term by its GROUP: eight groups, each one colour from the
Okabe-Ito colour-blind-safe set, the same in SVG, HTML and in the terminal (rich takes the hex
colour and maps it to what the terminal has). The parts of a step's time and the pipeline stages
of the layout picture have their own lists here too, so no drawing picks a colour of its own.
"""

from __future__ import annotations

# (group, its colour, the memory model's terms in it). Order: the legend's, and the order the
# segments of a bar are drawn in (a group's terms side by side, so one colour is one stretch).
TERM_GROUPS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("actor weights", "#0072B2", ("weights", "actor-weights")),
    ("gradients", "#E69F00", ("grads",)),
    ("optimizer", "#009E73", ("optimizer",)),
    ("activations", "#CC79A7", ("activations", "logits", "step-temporaries", "rollout-activations")),
    ("KV cache", "#56B4E9", ("kv-cache",)),
    ("rollout weights", "#F0E442", ("rollout-weights", "sync-bucket")),
    ("ref / critic", "#8C564B", ("ref-weights", "critic")),
    ("offloaded", "#BBBBBB", ("offloaded-weights", "offloaded-optimizer", "cpu-optimizer")),
    ("runtime", "#666666", ("cuda-graphs", "overhead")),
)
OTHER_GROUP = ("other", "#17BECF")  # a term no group lists (another producer's); never silently one of the above

# Colours in legend order, for a picture of other series (gen calibrate: measured, predicted, then
# the step's phases), so it draws from the same set as every memory chart.
SERIES_COLOURS: tuple[str, ...] = tuple(colour for _, colour, _ in TERM_GROUPS)

LIMIT_COLOUR = "#D62728"  # the usable limit, and a bar over it
OVER_FILL = "#FDE0E0"  # the background of a row whose bar is over the limit

# The parts of one step's time, by their generator.layout.candidate.StepTime field (their names are
# generator.plan.verl_departures.PARTS).
STEP_COLOURS: dict[str, str] = {
    "rollout_s": "#56B4E9", "log_prob_s": "#CC79A7", "update_s": "#0072B2", "offload_s": "#BBBBBB",
    "bubble_s": "#E69F00", "comm_s": "#009E73", "weight_sync_s": "#F0E442",
}

# Pipeline stages in the layout picture (light fills so the labels on them stay readable);
# after eight stages the list repeats, the stage number is written in every cell.
STAGE_FILLS = ("#CFE8F7", "#FBE3B8", "#C8EBDD", "#F2D3E6", "#FFF6B3", "#E3D3C9", "#DDDDDD", "#D5F0F5")
ROLLOUT_FILLS = ("#0072B2", "#E69F00")  # rollout replicas alternate between two bands


def _group_index() -> dict[str, int]:
    return {term: i for i, (_, _, terms) in enumerate(TERM_GROUPS) for term in terms}


_INDEX = _group_index()


def group_of(term: str) -> tuple[int, str, str]:
    """(legend position, group name, colour) of a memory term."""
    i = _INDEX.get(term)
    if i is None:
        return len(TERM_GROUPS), OTHER_GROUP[0], OTHER_GROUP[1]
    name, colour, _ = TERM_GROUPS[i]
    return i, name, colour


def group_colour(index: int) -> str:
    """The colour of the group at legend position `index` (`group_of`'s first value)."""
    return TERM_GROUPS[index][1] if index < len(TERM_GROUPS) else OTHER_GROUP[1]


def term_colour(term: str) -> str:
    return group_of(term)[2]


def stage_fill(stage: int) -> str:
    return STAGE_FILLS[stage % len(STAGE_FILLS)]


__all__ = ["LIMIT_COLOUR", "OTHER_GROUP", "OVER_FILL", "ROLLOUT_FILLS", "STAGE_FILLS", "STEP_COLOURS", "TERM_GROUPS",
           "group_colour", "group_of", "stage_fill", "term_colour"]

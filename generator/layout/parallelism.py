"""The layout records every layer shares, with no logic beyond their own fields.

`Parallelism` is how Megatron splits the actor, `Offload` what it moves to the CPU. The rules
(derive.Layout), the planner, the script reader, the renderer and the recipe library all speak
these types, so they live beneath every one of them. The planner's sized layout (`Candidate`,
its memory and step time) is in generator.layout.candidate: a check never builds one, and its classes
were a third of the dataclasses a check's start created.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple, NoReturn, TypedDict


class ParallelSizes(TypedDict):
    """Parallelism's fields as keyword arguments (typed, so `Candidate(**layout.sizes(), ...)` checks)."""

    tp: int
    pp: int
    cp: int
    ep: int
    etp: int | None
    vpp: int | None
    first_stage_layers: int | None
    last_stage_layers: int | None


class Parallelism:
    """How Megatron splits the actor: the one layout type the rules (Layout), the planner
    (Candidate) and the recipe library share.

    Immutable, compared and hashed by its fields (a rule's cache keys on a Layout), as the frozen
    dataclass it was; a plain class so that a check's start imports no dataclasses. A subclass
    adds its fields to `_NAMES`; the planner's Candidate, a dataclass, declares
    these fields again for its own methods (tests/test_layout_records.py keeps them in step)."""

    __slots__ = ("tp", "pp", "cp", "ep", "etp", "vpp", "first_stage_layers", "last_stage_layers")
    _NAMES: ClassVar[tuple[str, ...]] = __slots__
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int | None  # None: Megatron uses TP
    vpp: int | None
    first_stage_layers: int | None  # override_transformer_config.num_layers_in_first_pipeline_stage
    last_stage_layers: int | None

    def __init__(self, tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1, etp: int | None = None,
                 vpp: int | None = None, first_stage_layers: int | None = None,
                 last_stage_layers: int | None = None) -> None:
        put = object.__setattr__
        put(self, "tp", tp)
        put(self, "pp", pp)
        put(self, "cp", cp)
        put(self, "ep", ep)
        put(self, "etp", etp)
        put(self, "vpp", vpp)
        put(self, "first_stage_layers", first_stage_layers)
        put(self, "last_stage_layers", last_stage_layers)

    def _values(self) -> tuple[object, ...]:
        """The fields' values in `_NAMES` order: what equality, hashing and pickling use."""
        return tuple(getattr(self, name) for name in self._NAMES)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Parallelism) or other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"cannot delete field {name!r}")

    def __getstate__(self) -> tuple[object, ...]:
        return self._values()

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for name, value in zip(self._NAMES, state):
            object.__setattr__(self, name, value)

    @property
    def model_parallel_size(self) -> int:
        """TP·PP·CP: the ranks one copy of the model is split over (DP = W / this; generator.layout.derive)."""
        return self.tp * self.pp * self.cp

    def sizes(self) -> ParallelSizes:
        """These fields as keyword arguments, to build another Parallelism type from this one."""
        return ParallelSizes(tp=self.tp, pp=self.pp, cp=self.cp, ep=self.ep, etp=self.etp, vpp=self.vpp,
                             first_stage_layers=self.first_stage_layers, last_stage_layers=self.last_stage_layers)


class Offload(NamedTuple):
    param: bool = False  # actor (and, by interpolation, ref) params and grads to CPU between phases
    grad: bool = False  # emitted for symmetry with verl's examples; frees nothing by itself
    optimizer: bool = False  # Adam state + fp32 master shards to CPU between phases
    cpu_optimizer: bool = False  # Megatron's CPU optimizer (lowers the update peak)
    cpu_optimizer_fraction: float = 0.0

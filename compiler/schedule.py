"""Schedules as data: how to compute, as a list of frozen steps applied in order.

``create_schedule(C)`` starts an empty schedule; ``s[C].split(...)``, ``s.cache_write(...)``
and the other primitives append one :data:`Step` record each and return the new axes. The
stage states (loop relations, leaf order, annotations, attachment) are *derived* by replaying the
steps with the pure :func:`apply_step`, which validates each step: an unknown axis, an axis used
twice, or a ``compute_at`` that would create a cycle raises :class:`ScheduleError` naming the
stage and the axis at the call that made the mistake.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from compiler.errors import ScheduleError
from compiler.expr import Expr, IterKind, IterVar, Reduce, TensorRead, Var
from compiler.loop_ir import ForKind, Scope
from compiler.tensor import (
    VIRTUAL_THREAD_TAGS,
    ComputeOp,
    PlaceholderOp,
    Tensor,
    TensorIntrin,
    ThreadAxis,
    ThreadTag,
)
from compiler.visit import substitute, transform, walk

__all__ = [
    "Annotate",
    "Attach",
    "AttachKind",
    "Bind",
    "CacheRead",
    "CacheWrite",
    "ComputeAt",
    "Fuse",
    "Pragma",
    "Reorder",
    "Schedule",
    "ScheduleState",
    "SetAttach",
    "SetScope",
    "Split",
    "Stage",
    "StageState",
    "Step",
    "Tensorize",
    "ThreadTag",
    "apply_step",
    "create_schedule",
]


# ----------------------------------------------------------------------------------- steps
@dataclass(frozen=True)
class Split:
    """``parent`` becomes ``outer * factor + inner`` (``nparts`` fixes the outer extent)."""

    stage: ComputeOp
    parent: IterVar
    outer: IterVar
    inner: IterVar
    factor: int | None
    nparts: int | None


@dataclass(frozen=True)
class Fuse:
    """``outer`` and ``inner`` (adjacent) become one axis ``fused``."""

    stage: ComputeOp
    outer: IterVar
    inner: IterVar
    fused: IterVar


@dataclass(frozen=True)
class Reorder:
    """The given leaf axes take their positions in this order."""

    stage: ComputeOp
    order: tuple[IterVar, ...]


@dataclass(frozen=True)
class Annotate:
    """Run ``axis`` as a vectorized, unrolled, parallel or virtual-thread loop."""

    stage: ComputeOp
    axis: IterVar
    kind: ForKind


@dataclass(frozen=True)
class Bind:
    """Map ``axis`` to a GPU grid axis."""

    stage: ComputeOp
    axis: IterVar
    thread: ThreadTag


@dataclass(frozen=True)
class Pragma:
    """Annotate the loop ``axis`` with ``name = value`` for the code generator."""

    stage: ComputeOp
    axis: IterVar
    name: str
    value: Any


@dataclass(frozen=True)
class Tensorize:
    """Replace the loop nest from ``axis`` inward by a call to ``intrin``."""

    stage: ComputeOp
    axis: IterVar
    intrin: TensorIntrin


class AttachKind(Enum):
    ROOT = "root"
    INLINE = "inline"
    AT = "at"


@dataclass(frozen=True)
class Attach:
    """Where a stage is computed: at the root, inlined into its readers, or inside
    ``parent``'s loop ``axis``."""

    kind: AttachKind = AttachKind.ROOT
    parent: ComputeOp | None = None
    axis: IterVar | None = None


@dataclass(frozen=True)
class ComputeAt:
    stage: ComputeOp
    parent: ComputeOp
    axis: IterVar


@dataclass(frozen=True)
class SetAttach:
    """``compute_root`` or ``compute_inline``."""

    stage: ComputeOp
    kind: AttachKind


@dataclass(frozen=True)
class SetScope:
    stage: ComputeOp
    scope: Scope


@dataclass(frozen=True)
class CacheRead:
    """Read ``tensor`` through a copy ``cache`` in ``scope`` in the stages ``readers``."""

    tensor: Tensor
    scope: Scope
    readers: tuple[ComputeOp, ...]
    cache: Tensor

    @property
    def stage(self) -> ComputeOp:
        return self.cache.op


@dataclass(frozen=True)
class CacheWrite:
    """Compute ``tensor``'s body into ``cache`` in ``scope``; ``tensor`` then copies it."""

    tensor: Tensor
    scope: Scope
    cache: Tensor

    @property
    def stage(self) -> ComputeOp:
        return self.tensor.op


Step = (
    Split
    | Fuse
    | Reorder
    | Annotate
    | Bind
    | Pragma
    | Tensorize
    | ComputeAt
    | SetAttach
    | SetScope
    | CacheRead
    | CacheWrite
)


# ----------------------------------------------------------------------------------- state
@dataclass(frozen=True)
class StageState:
    """Everything the steps so far say about one stage."""

    op: ComputeOp
    body: Expr
    relations: tuple[Split | Fuse, ...] = ()
    leaves: tuple[IterVar, ...] = ()
    kinds: Mapping[IterVar, ForKind] = field(default_factory=dict)
    threads: Mapping[IterVar, ThreadTag] = field(default_factory=dict)
    pragmas: tuple[Pragma, ...] = ()
    tensorize: Tensorize | None = None
    attach: Attach = Attach()
    scope: Scope = Scope.GLOBAL

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def root_axes(self) -> tuple[IterVar, ...]:
        reduce = self.body.axes if isinstance(self.body, Reduce) else ()
        return self.op.axes + reduce

    def error(self, message: str, axis: IterVar | None = None) -> ScheduleError:
        return ScheduleError(message, stage=self.name, axis=axis.name if axis is not None else "")


@dataclass(frozen=True)
class ScheduleState:
    """The stage states, in creation order (consumers before the caches they get)."""

    outputs: tuple[ComputeOp, ...]
    stages: Mapping[ComputeOp, StageState]

    def stage(self, op: ComputeOp) -> StageState:
        return self.stages[op]


def _initial_stage(op: ComputeOp) -> StageState:
    state = StageState(op, op.body)
    return replace(state, leaves=state.root_axes)


def _leaf(state: StageState, axis: IterVar, what: str) -> int:
    if not isinstance(axis, IterVar):
        raise state.error(f"{what}: {axis!r} is not an axis")
    if axis in state.leaves:
        return state.leaves.index(axis)
    used = any(
        axis in ((r.parent,) if isinstance(r, Split) else (r.outer, r.inner))
        for r in state.relations
    )
    reason = "was already split or fused" if used else "is not an axis of this stage"
    raise state.error(f"{what}: the axis {reason}", axis)


def apply_step(schedule: ScheduleState, step: Step) -> ScheduleState:
    """``schedule`` with ``step`` applied; raises :class:`ScheduleError` if it cannot be."""
    if isinstance(step, CacheRead | CacheWrite):
        return _apply_cache(schedule, step)
    if step.stage not in schedule.stages:
        name = getattr(step.stage, "name", repr(step.stage))
        raise ScheduleError("not a compute stage of this schedule", stage=name)
    state = schedule.stage(step.stage)
    new = _APPLY[type(step)](schedule, state, step)
    return ScheduleState(schedule.outputs, {**schedule.stages, step.stage: new})


def _apply_split(_: ScheduleState, state: StageState, step: Split) -> StageState:
    position = _leaf(state, step.parent, "split")
    if (step.factor is None) == (step.nparts is None):
        raise state.error("split needs exactly one of factor and nparts", step.parent)
    which, given = ("factor", step.factor) if step.factor is not None else ("nparts", step.nparts)
    if not isinstance(given, int) or isinstance(given, bool) or given < 1:
        raise state.error(f"split size ({which}) {given!r} is not a positive integer", step.parent)
    leaves = (*state.leaves[:position], step.outer, step.inner, *state.leaves[position + 1 :])
    return replace(
        state,
        relations=(*state.relations, step),
        leaves=leaves,
        kinds=_moved(state.kinds, step.parent),
    )


def _moved(kinds: Mapping[IterVar, Any], axis: IterVar) -> dict[IterVar, Any]:
    return {key: value for key, value in kinds.items() if key is not axis}


def _apply_fuse(_: ScheduleState, state: StageState, step: Fuse) -> StageState:
    outer = _leaf(state, step.outer, "fuse")
    inner = _leaf(state, step.inner, "fuse")
    if inner != outer + 1:
        raise state.error("fuse needs adjacent axes, outer first", step.inner)
    if step.outer.kind is not step.inner.kind:
        raise state.error("cannot fuse a reduction axis with a spatial one", step.inner)
    leaves = (*state.leaves[:outer], step.fused, *state.leaves[inner + 1 :])
    return replace(state, relations=(*state.relations, step), leaves=leaves)


def _apply_reorder(_: ScheduleState, state: StageState, step: Reorder) -> StageState:
    positions = [_leaf(state, axis, "reorder") for axis in step.order]
    seen: set[IterVar] = set()
    for axis in step.order:
        if axis in seen:
            raise state.error("reorder: the axis is used twice", axis)
        seen.add(axis)
    leaves = list(state.leaves)
    for position, axis in zip(sorted(positions), step.order, strict=True):
        leaves[position] = axis
    return replace(state, leaves=tuple(leaves))


def _apply_annotate(_: ScheduleState, state: StageState, step: Annotate) -> StageState:
    _leaf(state, step.axis, step.kind.value)
    previous = state.kinds.get(step.axis)
    if previous is not None and previous is not step.kind:
        raise state.error(
            f"{step.kind.value}: the axis is already {previous.value} (axis used twice)",
            step.axis,
        )
    if step.axis in state.threads:
        raise state.error(
            f"{step.kind.value}: the axis is bound to {state.threads[step.axis].value}", step.axis
        )
    if step.axis.kind is IterKind.REDUCE and step.kind in (ForKind.VECTORIZED, ForKind.PARALLEL):
        raise state.error(f"a reduction axis cannot be {step.kind.value}", step.axis)
    return replace(state, kinds={**state.kinds, step.axis: step.kind})


def _apply_bind(_: ScheduleState, state: StageState, step: Bind) -> StageState:
    _leaf(state, step.axis, "bind")
    if step.axis in state.threads or step.thread in state.threads.values():
        raise state.error("bind: the axis or the thread tag is used twice", step.axis)
    if step.axis.kind is IterKind.REDUCE:
        raise state.error(
            f"bind: a reduction axis cannot be bound to {step.thread.value} (threads would "
            "race on the same output; split it and keep the reduction in each thread)",
            step.axis,
        )
    if step.axis in state.kinds:
        raise state.error(
            f"bind: the axis is already {state.kinds[step.axis].value} (axis used twice)",
            step.axis,
        )
    return replace(state, threads={**state.threads, step.axis: step.thread})


def _apply_pragma(_: ScheduleState, state: StageState, step: Pragma) -> StageState:
    _leaf(state, step.axis, "pragma")
    if not isinstance(step.name, str) or not step.name:
        raise state.error(
            f"pragma: the pragma name must be a non-empty str, got {_describe(step.name)}",
            step.axis,
        )
    return replace(state, pragmas=(*state.pragmas, step))


def _apply_tensorize(_: ScheduleState, state: StageState, step: Tensorize) -> StageState:
    _leaf(state, step.axis, "tensorize")
    if not isinstance(step.intrin, TensorIntrin):
        raise state.error(
            "tensorize: the intrinsic must be a TensorIntrin (from te.decl_tensor_intrin), "
            f"got {_describe(step.intrin)}",
            step.axis,
        )
    if state.tensorize is not None:
        raise state.error("tensorize: the stage is already tensorized", step.axis)
    return replace(state, tensorize=step)


def _apply_compute_at(schedule: ScheduleState, state: StageState, step: ComputeAt) -> StageState:
    if not isinstance(step.parent, ComputeOp):
        raise state.error(
            f"compute_at: the parent must be a stage (s[T]), got {_describe(step.parent)}"
        )
    if not isinstance(step.axis, IterVar):
        raise state.error(f"compute_at: {_describe(step.axis)} is not an axis")
    if step.parent not in schedule.stages:
        raise state.error(f"compute_at: {step.parent.name!r} is not a stage of this schedule")
    parent = schedule.stage(step.parent)
    if step.axis not in parent.leaves:
        raise ScheduleError(
            f"compute_at: the axis is not a loop of stage {parent.name!r}",
            stage=state.name,
            axis=getattr(step.axis, "name", repr(step.axis)),
        )
    cursor: StageState | None = parent
    while cursor is not None:
        if cursor.op is state.op:
            raise state.error(
                f"compute_at {parent.name!r} would create a cycle (it is computed inside "
                f"{state.name!r})",
                step.axis,
            )
        up = cursor.attach.parent if cursor.attach.kind is AttachKind.AT else None
        cursor = schedule.stage(up) if up is not None else None
    if state.op in schedule.outputs:
        raise state.error("compute_at: an output of the schedule stays at the root", step.axis)
    return replace(state, attach=Attach(AttachKind.AT, step.parent, step.axis))


def _apply_attach(schedule: ScheduleState, state: StageState, step: SetAttach) -> StageState:
    if step.kind is AttachKind.INLINE:
        if isinstance(state.body, Reduce):
            raise state.error("compute_inline: a reduction cannot be inlined")
        if state.op in schedule.outputs:
            raise state.error("compute_inline: an output of the schedule cannot be inlined")
    return replace(state, attach=Attach(step.kind))


def _apply_scope(_: ScheduleState, state: StageState, step: SetScope) -> StageState:
    return replace(state, scope=step.scope)


_APPLY = {
    Split: _apply_split,
    Fuse: _apply_fuse,
    Reorder: _apply_reorder,
    Annotate: _apply_annotate,
    Bind: _apply_bind,
    Pragma: _apply_pragma,
    Tensorize: _apply_tensorize,
    ComputeAt: _apply_compute_at,
    SetAttach: _apply_attach,
    SetScope: _apply_scope,
}


def _reading(body: Expr, old: Tensor, new: Tensor) -> Expr:
    def swap(node: Any) -> Any:
        if isinstance(node, TensorRead) and node.tensor is old:
            return TensorRead(new, node.indices)
        return None

    return transform(body, swap)


def _apply_cache(schedule: ScheduleState, step: CacheRead | CacheWrite) -> ScheduleState:
    stages = dict(schedule.stages)
    cache_op = step.cache.op
    if isinstance(step, CacheRead):
        for reader in step.readers:
            if reader not in stages:
                raise ScheduleError("cache_read: not a stage of this schedule", stage=reader.name)
            state = stages[reader]
            if not any(
                isinstance(n, TensorRead) and n.tensor is step.tensor for n in walk(state.body)
            ):
                raise state.error(f"cache_read: does not read {step.tensor.name!r}")
            stages[reader] = replace(state, body=_reading(state.body, step.tensor, step.cache))
        stages[cache_op] = replace(_initial_stage(cache_op), scope=step.scope)
        return ScheduleState(schedule.outputs, stages)
    op = step.tensor.op
    if op not in stages:
        raise ScheduleError("cache_write: not a compute stage of this schedule", stage=op.name)
    state = stages[op]
    if state.relations or state.kinds or state.attach != Attach():
        raise state.error("cache_write must come before any other step on the stage")
    copy_body = TensorRead(step.cache, tuple(axis.var for axis in op.axes))
    stages[op] = replace(state, body=copy_body, leaves=op.axes)
    stages[cache_op] = replace(_initial_stage(cache_op), scope=step.scope)
    return ScheduleState(schedule.outputs, stages)


# --------------------------------------------------------------------------------- builders
def _describe(value: Any) -> str:
    """``value`` with its type, for error messages (``str 'C'``, ``int 3``)."""
    return f"{type(value).__name__} {value!r}"


def _label(value: Any) -> str:
    """What to call ``value`` where an error needs a stage name and it may not be a stage."""
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return value if isinstance(value, str) else repr(value)


def _scope(scope: Scope | str, stage: str, what: str) -> Scope:
    if isinstance(scope, Scope):
        return scope
    try:
        return Scope(scope)
    except (ValueError, TypeError):
        known = ", ".join(repr(s.value) for s in Scope)
        raise ScheduleError(
            f"{what}: unknown scope {scope!r} (known: {known})", stage=stage
        ) from None


def _outputs(outputs: Tensor | ComputeOp | Sequence[Tensor | ComputeOp]) -> tuple[ComputeOp, ...]:
    items = outputs if isinstance(outputs, list | tuple) else [outputs]
    ops = []
    for item in items:
        op = item.op if isinstance(item, Tensor) else item
        if not isinstance(op, ComputeOp | PlaceholderOp):
            raise ScheduleError(
                f"create_schedule: an output must be a tensor (or a compute op), got "
                f"{_describe(item)}",
                stage=_label(item),
            )
        if not isinstance(op, ComputeOp):
            raise ScheduleError("a schedule's outputs must be computes", stage=op.name)
        ops.append(op)
    return tuple(ops)


def _axis(stage: ComputeOp, axis: Any, what: str) -> IterVar:
    """``axis``, checked to be an axis (before it is used to build a step)."""
    if not isinstance(axis, IterVar):
        raise ScheduleError(f"{what}: {_describe(axis)} is not an axis", stage=stage.name)
    return axis


class Schedule:
    """A list of steps over the stages that compute ``outputs`` (see the module docstring)."""

    def __init__(self, outputs: tuple[ComputeOp, ...]) -> None:
        stages: dict[ComputeOp, StageState] = {}
        pending = list(outputs)
        while pending:
            op = pending.pop()
            if op in stages:
                continue
            stages[op] = _initial_stage(op)
            pending.extend(t.op for t in op.inputs if isinstance(t.op, ComputeOp))
        self._steps: list[Step] = []
        self._state = ScheduleState(outputs, stages)

    @property
    def steps(self) -> tuple[Step, ...]:
        """The steps applied so far, in order."""
        return tuple(self._steps)

    @property
    def state(self) -> ScheduleState:
        """The stage states the steps produce."""
        return self._state

    @property
    def outputs(self) -> tuple[ComputeOp, ...]:
        return self._state.outputs

    def apply(self, step: Step) -> None:
        """Validate and append ``step``."""
        self._state = apply_step(self._state, step)
        self._steps.append(step)

    def __getitem__(self, key: Tensor | ComputeOp) -> Stage:
        op = key.op if isinstance(key, Tensor) else key
        if not isinstance(op, ComputeOp | PlaceholderOp):
            raise ScheduleError(
                f"a schedule is indexed by a tensor (s[C]) or its op, got {_describe(key)}",
                stage=_label(key),
            )
        if isinstance(op, PlaceholderOp):
            raise ScheduleError("a placeholder has no stage to schedule", stage=op.name)
        if op not in self._state.stages:
            raise ScheduleError("not a stage of this schedule", stage=op.name)
        return Stage(self, op)

    def cache_read(
        self, tensor: Tensor, scope: Scope | str, readers: Sequence[Tensor | ComputeOp]
    ) -> Tensor:
        """A copy of ``tensor`` in ``scope`` that the ``readers`` read instead."""
        if not isinstance(tensor, Tensor):
            raise ScheduleError(
                f"cache_read: needs a tensor, got {_describe(tensor)}", stage=_label(tensor)
            )
        scope = _scope(scope, tensor.name, "cache_read")
        if not isinstance(readers, list | tuple):
            raise ScheduleError(
                f"cache_read: the readers must be a list of tensors, got {_describe(readers)}",
                stage=tensor.name,
            )
        for reader in readers:
            if not isinstance(reader, Tensor | ComputeOp):
                raise ScheduleError(
                    f"cache_read: a reader must be a tensor (or a compute op), got "
                    f"{_describe(reader)}",
                    stage=_label(reader),
                )
        axes = tuple(IterVar(Var(f"ax{d}"), extent) for d, extent in enumerate(tensor.shape))
        cache_op = ComputeOp(
            f"{tensor.name}.{scope.value}", axes, TensorRead(tensor, tuple(a.var for a in axes))
        )
        reader_ops = tuple(r.op if isinstance(r, Tensor) else r for r in readers)
        cache = Tensor(cache_op)
        self.apply(CacheRead(tensor, scope, reader_ops, cache))
        return cache

    def cache_write(self, tensor: Tensor, scope: Scope | str) -> Tensor:
        """A stage computing ``tensor``'s body in ``scope``; ``tensor`` becomes its copy."""
        if not isinstance(tensor, Tensor):
            raise ScheduleError(
                f"cache_write: needs a tensor, got {_describe(tensor)}", stage=_label(tensor)
            )
        op = tensor.op
        if not isinstance(op, ComputeOp):
            raise ScheduleError("cache_write needs a compute", stage=tensor.name)
        scope = _scope(scope, tensor.name, "cache_write")
        axes = tuple(IterVar(Var(a.name), a.extent) for a in op.axes)
        current = self._state.stage(op).body if op in self._state.stages else op.body
        body = substitute(  # the stage's body so far: it reads the caches made before
            current, {old.var: new.var for old, new in zip(op.axes, axes, strict=True)}
        )
        cache = Tensor(ComputeOp(f"{op.name}.{scope.value}", axes, body))
        self.apply(CacheWrite(tensor, scope, cache))
        return cache


class Stage:
    """``s[C]``: the primitives that schedule one stage (each appends one step)."""

    def __init__(self, schedule: Schedule, op: ComputeOp) -> None:
        self._schedule = schedule
        self.op = op

    @property
    def state(self) -> StageState:
        return self._schedule.state.stage(self.op)

    @property
    def leaf_iter_vars(self) -> tuple[IterVar, ...]:
        """The current loops, outermost first."""
        return self.state.leaves

    def split(
        self, parent: IterVar, factor: int | None = None, nparts: int | None = None
    ) -> tuple[IterVar, IterVar]:
        """Split ``parent`` into ``(outer, inner)``: inner extent ``factor`` (or outer extent
        ``nparts``)."""
        _axis(self.op, parent, "split")
        outer = IterVar(Var(f"{parent.name}.outer"), 0, parent.kind)
        inner = IterVar(Var(f"{parent.name}.inner"), 0, parent.kind)
        self._schedule.apply(Split(self.op, parent, outer, inner, factor, nparts))
        return outer, inner

    def tile(
        self, x: IterVar, y: IterVar, x_factor: int, y_factor: int
    ) -> tuple[IterVar, IterVar, IterVar, IterVar]:
        """Split ``x`` and ``y`` and order the loops ``x.outer, y.outer, x.inner, y.inner``."""
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *axes: IterVar) -> IterVar:
        """Fuse adjacent ``axes`` (outermost first) into one loop."""
        if not axes:
            raise ScheduleError("fuse needs at least one axis", stage=self.op.name)
        for axis in axes:
            _leaf(self.state, _axis(self.op, axis, "fuse"), "fuse")
        fused = axes[0]
        for inner in axes[1:]:
            new = IterVar(Var(f"{fused.name}.{inner.name}.fused"), 0, inner.kind)
            self._schedule.apply(Fuse(self.op, fused, inner, new))
            fused = new
        return fused

    def reorder(self, *axes: IterVar) -> None:
        """Put ``axes`` in this relative order (the other loops keep their places)."""
        self._schedule.apply(Reorder(self.op, tuple(axes)))

    def vectorize(self, axis: IterVar) -> None:
        self._schedule.apply(Annotate(self.op, axis, ForKind.VECTORIZED))

    def unroll(self, axis: IterVar) -> None:
        self._schedule.apply(Annotate(self.op, axis, ForKind.UNROLLED))

    def parallel(self, axis: IterVar) -> None:
        self._schedule.apply(Annotate(self.op, axis, ForKind.PARALLEL))

    def vthread(self, axis: IterVar) -> None:
        """Run ``axis`` as virtual threads (interleaved by latency hiding on an accelerator;
        a serial loop on the CPU)."""
        self._schedule.apply(Annotate(self.op, axis, ForKind.VTHREAD))

    def bind(self, axis: IterVar, thread: ThreadAxis | ThreadTag | str) -> None:
        """Bind ``axis`` to ``thread`` (``te.thread_axis(tag)``, a :class:`ThreadTag` or its
        tag): a GPU grid axis appends a :class:`Bind` step; a virtual thread (``"cthread"``,
        ``"vthread"``) appends the same step as :meth:`vthread`."""
        tag = thread.tag if isinstance(thread, ThreadAxis) else thread
        if tag in VIRTUAL_THREAD_TAGS:
            self.vthread(axis)
            return
        try:
            grid = ThreadTag(tag)
        except ValueError:
            known = ", ".join((*VIRTUAL_THREAD_TAGS, *(t.value for t in ThreadTag)))
            raise ScheduleError(
                f"bind: unknown thread tag {tag!r} (known: {known})",
                stage=self.op.name,
                axis=getattr(axis, "name", repr(axis)),
            ) from None
        self._schedule.apply(Bind(self.op, axis, grid))

    def pragma(self, axis: IterVar, name: str, value: Any = True) -> None:
        self._schedule.apply(Pragma(self.op, axis, name, value))

    def tensorize(self, axis: IterVar, intrin: TensorIntrin) -> None:
        self._schedule.apply(Tensorize(self.op, axis, intrin))

    def compute_at(self, parent: Stage, axis: IterVar) -> None:
        """Compute this stage inside ``parent``'s loop ``axis`` (``parent`` is ``s[T]``; the
        tensor ``T`` itself is taken too)."""
        parent_op = parent.op if isinstance(parent, Stage | Tensor) else parent
        self._schedule.apply(ComputeAt(self.op, parent_op, axis))

    def compute_inline(self) -> None:
        self._schedule.apply(SetAttach(self.op, AttachKind.INLINE))

    def compute_root(self) -> None:
        self._schedule.apply(SetAttach(self.op, AttachKind.ROOT))

    def set_scope(self, scope: Scope | str) -> None:
        self._schedule.apply(SetScope(self.op, _scope(scope, self.op.name, "set_scope")))


def create_schedule(outputs: Tensor | ComputeOp | Sequence[Tensor | ComputeOp]) -> Schedule:
    """An empty schedule (every stage at the root, loops in declaration order)."""
    return Schedule(_outputs(outputs))

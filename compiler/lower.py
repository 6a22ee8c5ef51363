"""Lowering: a schedule becomes a loop-IR function, then the pass pipeline runs on it.

:func:`schedule_to_ir` builds the loop nests the schedule describes: it inlines stages marked
``compute_inline``, infers the region each attached stage must compute
(:func:`compiler.arith.covering_region`), turns every stage into loops over its leaf axes (split,
fused, reordered, annotated), allocates intermediate buffers where they are attached, initialises
reductions just outside their first reduction loop and guards the tails of splits that do not
divide. :data:`PIPELINE` then lists the pure passes that rewrite the result; :func:`lower` runs
both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from compiler.arith import Interval, covering_region, fits
from compiler.errors import CompileError, ScheduleError
from compiler.expr import (
    Binary,
    BinOp,
    Const,
    DType,
    Expr,
    IterKind,
    IterVar,
    Reduce,
    TensorRead,
    Var,
)
from compiler.loop_ir import (
    Allocate,
    AttrKey,
    AttrStmt,
    Buffer,
    For,
    ForKind,
    IfThenElse,
    Load,
    LoweredFunc,
    Scope,
    Stmt,
    Store,
    seq,
)
from compiler.passes import flatten, insert_barriers, simplify, tensorize
from compiler.passes.gpu import THREAD_TAGS
from compiler.pipeline import Pass, run_pipeline
from compiler.schedule import AttachKind, Schedule, Split, StageState
from compiler.tensor import ComputeOp, PlaceholderOp, Tensor
from compiler.visit import free_vars, substitute, transform, walk

__all__ = ["GPU_PIPELINE", "PIPELINE", "lower", "schedule_to_ir"]


#: The CPU lowering pipeline, in order (the accelerator's passes join it in a later layer);
#: :func:`compiler.pipeline.run_pipeline` runs it, observed by the active instruments.
PIPELINE: tuple[Pass[LoweredFunc], ...] = (
    Pass("simplify", simplify),
    Pass("tensorize", tensorize),
    Pass("flatten", flatten),
    Pass("simplify", simplify),
)

#: The GPU lowering pipeline: the CPU's, then barriers after the shared-memory fills.
GPU_PIPELINE: tuple[Pass[LoweredFunc], ...] = (*PIPELINE, Pass("insert_barriers", insert_barriers))


def lower(
    schedule: Schedule,
    args: Sequence[Tensor],
    name: str = "main",
    passes: Sequence[Pass[LoweredFunc]] = PIPELINE,
) -> LoweredFunc:
    """The loop IR of ``schedule`` as a function over ``args`` (inputs and outputs, in call
    order), after ``passes`` (:data:`PIPELINE`; :data:`GPU_PIPELINE` for a GPU kernel).
    ``print(lower(...))`` shows it."""
    return run_pipeline(schedule_to_ir(schedule, args, name), passes)


# ------------------------------------------------------------------------------ the nests
@dataclass
class _Nest:
    """One stage's loops: extents, root-axis values in leaf variables, tail guards, buffer."""

    stage: StageState
    body: Expr
    region: tuple[Interval, ...] = ()
    buffer: Buffer | None = None
    leaf_extent: dict[IterVar, int] = field(default_factory=dict)
    root_value: dict[IterVar, Expr] = field(default_factory=dict)
    guards: list[Expr] = field(default_factory=list)

    @property
    def leaves(self) -> tuple[IterVar, ...]:
        return self.stage.leaves

    def global_index(self, axis: IterVar, dim: int | None = None) -> Expr:
        """The value (in the tensor's coordinates) of root ``axis`` in leaf variables."""
        local = self.root_value[axis]
        if axis.kind is IterKind.REDUCE:
            return local + axis.begin if axis.begin else local
        assert dim is not None
        return self.region[dim].begin + local


def _derive_loops(nest: _Nest, root_extent: dict[IterVar, int]) -> None:
    """Leaf extents, root values and tail guards from the stage's split/fuse relations."""
    extent = dict(root_extent)
    uneven: list[tuple[IterVar, int]] = []  # splits whose parts overshoot their parent
    for relation in nest.stage.relations:
        if isinstance(relation, Split):
            total = extent[relation.parent]
            if relation.factor is not None:
                inner = min(relation.factor, total)
                outer = -(-total // inner)
            else:
                outer = min(relation.nparts, total)
                inner = -(-total // outer)
            extent[relation.outer], extent[relation.inner] = outer, inner
            if outer * inner != total:
                uneven.append((relation.parent, total))
        else:
            extent[relation.fused] = extent[relation.outer] * extent[relation.inner]
    value: dict[IterVar, Expr] = {leaf: leaf.var for leaf in nest.leaves}
    for relation in reversed(nest.stage.relations):
        if isinstance(relation, Split):
            inner_extent = extent[relation.inner]
            value[relation.parent] = value[relation.outer] * inner_extent + value[relation.inner]
        else:
            inner_extent = extent[relation.inner]
            value[relation.outer] = value[relation.fused] // inner_extent
            value[relation.inner] = value[relation.fused] % inner_extent
    nest.leaf_extent = {leaf: extent[leaf] for leaf in nest.leaves}
    nest.root_value = value
    nest.guards = [value[parent] < total for parent, total in uneven]


def _inline(states: dict[ComputeOp, StageState]) -> dict[ComputeOp, Expr]:
    """Each stage's body with the reads of inlined stages replaced by their bodies."""
    inlined = {op for op, s in states.items() if s.attach.kind is AttachKind.INLINE}
    done: dict[ComputeOp, Expr] = {}

    def body_of(op: ComputeOp) -> Expr:
        if op not in done:

            def expand(node: object) -> Expr | None:
                if isinstance(node, TensorRead) and node.tensor.op in inlined:
                    producer = node.tensor.op
                    mapping = dict(zip((a.var for a in producer.axes), node.indices, strict=True))
                    return substitute(body_of(producer), mapping)
                return None

            done[op] = transform(states[op].body, expand)
        return done[op]

    return {op: body_of(op) for op in states if op not in inlined}


def _reads(body: Expr) -> list[TensorRead]:
    return [n for n in walk(body) if isinstance(n, TensorRead)]


def _topological(bodies: dict[ComputeOp, Expr], outputs: Sequence[ComputeOp]) -> list[ComputeOp]:
    order: list[ComputeOp] = []
    state: dict[ComputeOp, int] = {}

    def visit(op: ComputeOp) -> None:
        if state.get(op) == 2:
            return
        state[op] = 1
        for read in _reads(bodies[op]):
            producer = read.tensor.op
            if isinstance(producer, ComputeOp) and state.get(producer) != 2:
                visit(producer)
        state[op] = 2
        order.append(op)

    for op in outputs:
        visit(op)
    return order


def _consumers(bodies: dict[ComputeOp, Expr], ops: list[ComputeOp]) -> dict[ComputeOp, list]:
    readers: dict[ComputeOp, list[ComputeOp]] = {op: [] for op in ops}
    for op in ops:
        for read in _reads(bodies[op]):
            producer = read.tensor.op
            if producer in readers and op not in readers[producer]:
                readers[producer].append(op)
    return readers


class _Builder:
    """Turns the schedule's stages into loop nests (one use per :func:`schedule_to_ir`)."""

    def __init__(self, schedule: Schedule, args: Sequence[Tensor]) -> None:
        state = schedule.state
        self.states = dict(state.stages)
        self.bodies = _inline(self.states)
        self.order = _topological(self.bodies, state.outputs)
        self.readers = _consumers(self.bodies, self.order)
        self.params = self._params(args, state.outputs)
        self.buffers: dict[object, Buffer] = {t.op: b for t, b in self.params}
        self.nests: dict[ComputeOp, _Nest] = {}
        self.ranges: dict[Var, tuple[int, int]] = {}
        self.attached: dict[tuple[ComputeOp, IterVar], list[ComputeOp]] = {}
        for op in reversed(self.order):
            self._infer(op)

    def _params(self, args: Sequence[Tensor], outputs: Sequence[ComputeOp]) -> list:
        params = []
        seen: set[object] = set()
        for position, tensor in enumerate(args):
            if not isinstance(tensor, Tensor):
                raise CompileError(f"argument {position} is not a tensor: {tensor!r}")
            if tensor.op in seen:
                raise CompileError("appears twice among the arguments", tensor=tensor.name)
            seen.add(tensor.op)
            params.append((tensor, Buffer(tensor.name, tensor.shape, tensor.dtype)))
        for op in outputs:
            if op not in seen:
                raise CompileError("an output of the schedule is not an argument", tensor=op.name)
        for op in seen:
            state = self.states.get(op)
            if state is not None and state.attach.kind is not AttachKind.ROOT:
                raise state.error(
                    f"is an argument, so it must be computed whole at the root, not "
                    f"{state.attach.kind.value}",
                    state.attach.axis,
                )
        for op in self.order:
            for read in _reads(self.bodies[op]):
                if isinstance(read.tensor.op, PlaceholderOp) and read.tensor.op not in seen:
                    raise CompileError(
                        "is read but is not among the arguments",
                        tensor=read.tensor.name,
                        op=op.name,
                    )
        return params

    # -------------------------------------------------------------------- bound inference
    def _infer(self, op: ComputeOp) -> None:
        stage = self.states[op]
        nest = _Nest(stage, self.bodies[op])
        attach = stage.attach
        if attach.kind is AttachKind.AT:
            axis = _attach_leaf(self.states[attach.parent], attach.axis)
            nest.region = self._attached_region(op, attach.parent, axis)
            self.attached.setdefault((attach.parent, axis), []).append(op)
        else:
            nest.region = tuple(Interval(Const(0, DType.INT32), n) for n in op.shape)
        root_extent = {axis: iv.extent for axis, iv in zip(op.axes, nest.region, strict=True)}
        if isinstance(nest.body, Reduce):
            root_extent.update({axis: axis.extent for axis in nest.body.axes})
        _derive_loops(nest, root_extent)
        if attach.kind is AttachKind.AT:
            for dim, interval in enumerate(nest.region):
                if not fits(interval, op.shape[dim], self.ranges):
                    index = nest.global_index(op.axes[dim], dim)
                    nest.guards += [index >= 0, index < op.shape[dim]]
        for leaf, extent in nest.leaf_extent.items():
            self.ranges[leaf.var] = (0, extent - 1)
        if op not in self.buffers:
            shape = tuple(iv.extent for iv in nest.region)
            self.buffers[op] = Buffer(op.name, shape, op.dtype, stage.scope)
        nest.buffer = self.buffers[op]
        self.nests[op] = nest

    def _attached_region(
        self, op: ComputeOp, parent: ComputeOp, axis: IterVar
    ) -> tuple[Interval, ...]:
        stage = self.states[op]
        if parent not in self.nests:
            raise stage.error(f"compute_at: stage {parent.name!r} is inlined or unused", axis)
        consumer = self.nests[parent]
        position = consumer.leaves.index(axis)
        inner_axes = consumer.leaves[position:]
        inside = {
            r
            for (p, a), stages in self.attached.items()
            if p is parent and a in inner_axes
            for r in stages
        }
        others = [r for r in self.readers[op] if r is not parent and r not in inside]
        if not self.readers[op] or others:
            names = ", ".join(repr(r.name) for r in self.readers[op]) or "no stage"
            raise stage.error(
                f"compute_at {parent.name!r}: every reader must be {parent.name!r} or a stage "
                f"computed inside this loop of {parent.name!r} (read by {names})",
                axis,
            )
        ranged = {
            leaf.var: (0, consumer.leaf_extent[leaf] - 1)
            for leaf in consumer.leaves[position + 1 :]
        }
        if stage.scope is Scope.SHARED:  # one copy serves every thread of the block
            ranged.update(self._thread_ranges())
        reads = []
        for reader in self.readers[op]:
            nest = self.nests[reader]
            if reader is not parent:  # computed further in: all of its (inferred) region
                ranged.update({leaf.var: (0, nest.leaf_extent[leaf] - 1) for leaf in nest.leaves})
            mapping = self._root_mapping(nest)
            reads += [
                tuple(substitute(index, mapping) for index in read.indices)
                for read in _reads(nest.body)
                if read.tensor.op is op
            ]
        return covering_region(reads, op.shape, ranged)

    def _thread_ranges(self) -> dict[Var, tuple[int, int]]:
        """The range of every loop bound to a threadIdx axis so far."""
        return {
            leaf.var: (0, nest.leaf_extent[leaf] - 1)
            for nest in self.nests.values()
            for leaf, tag in nest.stage.threads.items()
            if tag in THREAD_TAGS and leaf in nest.leaf_extent
        }

    @staticmethod
    def _root_mapping(nest: _Nest) -> dict[Var, Expr]:
        op = nest.stage.op
        mapping = {axis.var: nest.global_index(axis, dim) for dim, axis in enumerate(op.axes)}
        if isinstance(nest.body, Reduce):
            mapping.update({axis.var: nest.global_index(axis) for axis in nest.body.axes})
        return mapping

    # ------------------------------------------------------------------------ statements
    def build(self, name: str) -> LoweredFunc:
        for stages in self.attached.values():  # producers before the stages that read them
            stages.sort(key=self.order.index)
        body = seq(
            *(
                self._stage(op)
                for op in self.order
                if self.states[op].attach.kind is AttachKind.ROOT
            )
        )
        for op in reversed(self.order):
            buffer = self.buffers[op]
            is_param = any(buffer is b for _, b in self.params)
            if self.states[op].attach.kind is AttachKind.ROOT and not is_param:
                body = Allocate(buffer, body)
        return LoweredFunc(name, tuple(b for _, b in self.params), body)

    def _value(self, nest: _Nest, expr: Expr) -> Expr:
        """``expr`` of the stage's body in leaf variables, tensor reads as buffer loads."""
        mapping = self._root_mapping(nest)

        def convert(node: object) -> Expr | None:
            if isinstance(node, Var):
                return mapping.get(node)
            if isinstance(node, TensorRead):
                producer = node.tensor.op
                buffer = self.buffers[producer]
                region = self.nests[producer].region if producer in self.nests else ()
                indices = tuple(
                    index - region[dim].begin if region else index
                    for dim, index in enumerate(node.indices)
                )
                return Load(buffer, indices)
            return None

        return transform(expr, convert)

    def _stage(self, op: ComputeOp) -> Stmt:
        nest = self.nests[op]
        stage = nest.stage
        buffer = nest.buffer
        assert buffer is not None
        local = tuple(nest.root_value[axis] for axis in op.axes)
        leaves = nest.leaves
        tensorize_at = leaves.index(stage.tensorize.axis) if stage.tensorize else len(leaves)
        if isinstance(nest.body, Reduce):
            reduce = nest.body
            source = self._value(nest, reduce.source)
            update = Binary(reduce.combiner.value, Load(buffer, local), source)
            core: Stmt = Store(buffer, local, update)
            first_reduce = next(
                (i for i, leaf in enumerate(leaves) if leaf.kind is IterKind.REDUCE), len(leaves)
            )
            init_at = min(first_reduce, tensorize_at)
            identity = Store(buffer, local, reduce.combiner.identity(op.dtype))
            init = self._init_nest(nest, init_at, identity)
        else:
            core = Store(buffer, local, self._value(nest, nest.body))
            init_at, init = len(leaves) + 1, None
        guards_at = self._guard_positions(nest, list(range(len(leaves))))

        def build(position: int) -> Stmt:
            parts: list[Stmt | None] = [init if position == init_at else None]
            if position == tensorize_at and stage.tensorize is not None:
                parts.append(AttrStmt(AttrKey.TENSORIZE, stage.tensorize.intrin, loops(position)))
            elif position == len(leaves):
                parts.append(core)
            else:
                parts.append(loops(position))
            return seq(*parts)

        def loops(position: int) -> Stmt:
            if position == len(leaves):
                return core
            leaf = leaves[position]
            if position >= tensorize_at and (op, leaf) in self.attached:
                raise stage.error("a stage is computed inside the tensorized loops", leaf)
            inner = build(position + 1) if position < tensorize_at else loops(position + 1)
            for producer in reversed(self.attached.get((op, leaf), [])):
                inner = Allocate(self.buffers[producer], seq(self._stage(producer), inner))
            inner = _guarded(guards_at.get(position, []), inner)
            return self._loop(nest, leaf, inner)

        return _guarded(guards_at.get(-1, []), build(0))

    def _init_nest(self, nest: _Nest, at: int, store: Store) -> Stmt:
        """The loops over the spatial leaves from position ``at`` on, storing the identity."""
        positions = [
            i for i in range(at, len(nest.leaves)) if nest.leaves[i].kind is IterKind.SPATIAL
        ]
        spatial = {leaf.var for leaf in nest.leaves if leaf.kind is IterKind.SPATIAL}
        guards = self._guard_positions(nest, positions, only=spatial)
        stmt: Stmt = store
        for index in reversed(positions):
            stmt = self._loop(nest, nest.leaves[index], _guarded(guards.get(index, []), stmt))
        return stmt

    @staticmethod
    def _guard_positions(
        nest: _Nest, positions: Sequence[int], only: set[Var] | None = None
    ) -> dict[int, list[Expr]]:
        """Each guard at the innermost leaf position it uses (``-1``: before every loop).

        With ``only`` (an initialisation nest over ``positions``), guards that use other leaf
        variables are left out, and so are those decided by the loops outside the nest.
        """
        leaf_position = {leaf.var: i for i, leaf in enumerate(nest.leaves)}
        placed: dict[int, list[Expr]] = {}
        for guard in nest.guards:
            used = [leaf_position[v] for v in free_vars(guard) if v in leaf_position]
            if only is None:
                placed.setdefault(max(used, default=-1), []).append(guard)
                continue
            if any(nest.leaves[i].var not in only for i in used):
                continue
            inside = [i for i in used if i in positions]
            if inside:
                placed.setdefault(max(inside), []).append(guard)
        return placed

    def _loop(self, nest: _Nest, leaf: IterVar, body: Stmt) -> Stmt:
        stage = nest.stage
        thread = stage.threads.get(leaf)
        kind = ForKind.THREAD_BINDING if thread else stage.kinds.get(leaf, ForKind.SERIAL)
        loop: Stmt = For(
            leaf.var, nest.leaf_extent[leaf], kind, body, thread.value if thread else ""
        )
        for pragma in stage.pragmas:
            if pragma.axis is leaf:
                loop = AttrStmt(AttrKey.PRAGMA, (pragma.name, pragma.value), loop)
        return loop


def _attach_leaf(parent: StageState, axis: IterVar) -> IterVar:
    """The loop an attachment at ``axis`` of ``parent`` means: the axis while it is a loop;
    once split or fused later, the innermost loop (in loop order) of those it became, where its
    value is complete (TVM's semantics)."""
    if axis in parent.leaves:
        return axis
    became = {axis}
    for relation in parent.relations:
        if isinstance(relation, Split) and relation.parent in became:
            became |= {relation.outer, relation.inner}
        elif not isinstance(relation, Split) and {relation.outer, relation.inner} & became:
            became.add(relation.fused)
    return max((leaf for leaf in parent.leaves if leaf in became), key=parent.leaves.index)


def _guarded(conditions: list[Expr], body: Stmt) -> Stmt:
    if not conditions:
        return body
    cond = conditions[0]
    for extra in conditions[1:]:
        cond = Binary(BinOp.AND, cond, extra)
    return IfThenElse(cond, body)


def schedule_to_ir(schedule: Schedule, args: Sequence[Tensor], name: str = "main") -> LoweredFunc:
    """The loop nests of ``schedule`` over ``args``, before any pass runs."""
    if not isinstance(schedule, Schedule):
        raise ScheduleError("lower needs a schedule from create_schedule", stage=name)
    builder = _Builder(schedule, args)
    return builder.build(name)

"""The accumulator's elementwise stages: ``share_acc_storage`` and ``lower_alu``.

``share_acc_storage`` is TVM's in-place storage rewrite for the accumulator: a stage marked
``alu`` that reads another accumulator buffer at the very element it writes, when that buffer
is read nowhere else and lives as long, computes into that buffer instead of its own (so the
tutorials' chains ``res_conv -> res_shr -> res_max -> res_min`` run in place).

``lower_alu`` turns every ``alu`` stage into ALU compute steps. The stored value must be a chain
of operations on one accumulator row, each taking a constant or another accumulator row:
``+``/``-`` constant (ADD), ``min``/``max`` (MIN/MAX), ``>>``/``<<`` a constant (SHR), ``*`` a
constant that fits the ALU's multiplier (MUL), a cast to a narrower integer type (a left and a
right shift, which wrap as the cast does), and reductions with the same operators. A row may
also be the operand of MUL where it is read through a cast to the multiplier's width (``x *
m[i].astype("int8").astype("int32")``: exactly what MUL computes, as it reads the row's low
8 bits, signed) and of ``>>`` (SHR by a row: the ALU reads its low ``shr_arg_bits`` bits as a
signed amount, so the row's values must be shifts ``0..acc_width-1``, as the requantising
operators' per-channel shifts are; their type rule checks it). A chain that
starts from another row than the one written is copied first (reset, then ADD). A stage that
needs an operation the configuration lacks (MUL without ``alu_mul``) is a CompileError.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from compiler.accel.env import ALU
from compiler.accel.rows import (
    perfect_nest,
    rewrite_top_down,
    row_index,
    row_shape,
    split_element_loops,
)
from compiler.accel.stmts import ComputeStep, Dma, SramRow
from compiler.arith import simplify_expr
from compiler.errors import CompileError
from compiler.expr import Binary, BinOp, Cast, Const, DType, Expr
from compiler.loop_ir import (
    Allocate,
    AttrKey,
    AttrStmt,
    For,
    Load,
    LoweredFunc,
    Scope,
    Stmt,
    Store,
    seq,
)
from compiler.visit import children, transform, walk
from isa import AccelConfig, AluOp, MemId, Opcode

__all__ = ["lower_alu", "share_acc_storage"]


def _alu_pragma(node: object) -> bool:
    return isinstance(node, AttrStmt) and node.key is AttrKey.PRAGMA and node.value[0] == ALU


# ------------------------------------------------------------------------ storage sharing
def share_acc_storage(func: LoweredFunc) -> LoweredFunc:
    """``func`` with each ``alu`` stage writing in place where it can (module docstring)."""
    body = func.body
    while True:
        pair = _next_alias(body)
        if pair is None:
            return LoweredFunc(func.name, func.params, body)
        body = _rename(body, *pair)


def _enclosing_loops(body: Stmt) -> dict[object, frozenset]:
    """The loop variables around each Allocate's buffer."""
    found: dict[object, frozenset] = {}

    def visit(stmt: object, loops: frozenset) -> None:
        if isinstance(stmt, Allocate):
            found[stmt.buffer] = loops
        if isinstance(stmt, For):
            loops = loops | {stmt.var}
        for child in children(stmt):
            if isinstance(child, Stmt):
                visit(child, loops)

    visit(body, frozenset())
    return found


def _next_alias(body: Stmt) -> tuple[object, object] | None:
    """(Y, X): an ``alu`` stage writing Y that may write into X instead; None if none is left."""
    allocated = _enclosing_loops(body)
    for node in walk(body):
        if not _alu_pragma(node):
            continue
        _, store = perfect_nest(node.body)
        if not isinstance(store, Store) or store.buffer not in allocated:
            continue
        target = store.buffer
        load = _base(store.value, store)
        if isinstance(load, Load):
            source = load.buffer
            if (
                source is not target
                and source.scope is Scope.ACCEL_ACC
                and source in allocated
                and source.shape == target.shape
                and allocated[source] == allocated[target]
                and load.indices == store.indices
                and _reads(body, source) == _reads(node, source)
            ):
                return target, source
    return None


def _base(expr: Expr, store: Store) -> Expr:
    """Where the chain that computes ``expr`` starts (as :func:`_chain` reads it): the only
    load a stage may compute in place into, as every other operand is read after it."""
    while True:
        if isinstance(expr, Cast):
            expr = expr.value
        elif isinstance(expr, Binary) and (expr.op in _COMMUTATIVE or expr.op is BinOp.MUL):
            expr = _pick(expr.a, expr.b, store)[0]
        elif isinstance(expr, Binary) and expr.op is BinOp.SUB and _is_zero(expr.a):
            expr = expr.b  # a negation
        elif isinstance(expr, Binary):
            expr = expr.a
        else:
            return expr


def _reads(stmt: Stmt, buffer: object) -> int:
    """How often ``stmt`` reads ``buffer`` other than to update it in place (a reduction's
    accumulation): loads, and SRAM rows the accelerator's statements name."""
    count = 0

    def visit(node: object, updating: bool) -> None:
        nonlocal count
        if isinstance(node, Load | SramRow) and node.buffer is buffer and not updating:
            count += 1
        if isinstance(node, Dma) and node.opcode is Opcode.LOAD:
            return  # its SRAM row is written, and its DRAM side is no buffer of ours
        if isinstance(node, Store):
            updating = node.buffer is buffer
        for child in children(node):
            visit(child, updating)

    visit(stmt, False)
    return count


def _rename(body: Stmt, old: object, new: object) -> Stmt:
    """``body`` with buffer ``old`` replaced by ``new``; the statements of the stage that
    computed ``old`` keep its name (an :class:`AttrKey.STAGE` around them)."""

    def name_stage(node: object) -> object:
        if _alu_pragma(node):
            _, store = perfect_nest(node.body)
            if isinstance(store, Store) and store.buffer is old:
                return AttrStmt(AttrKey.STAGE, old.name, node)
        return None

    def swap(node: object) -> object:
        if isinstance(node, Allocate) and node.buffer is old:
            return node.body
        if getattr(node, "buffer", None) is old:
            return replace(node, buffer=new)
        return None

    return transform(transform(body, name_stage), swap)


# ------------------------------------------------------------------------------- lowering
def lower_alu(cfg: AccelConfig) -> Callable[[LoweredFunc], LoweredFunc]:
    """The pass for ``cfg``: every ``alu`` stage as ALU compute steps (module docstring)."""

    def run(func: LoweredFunc) -> LoweredFunc:
        def stage(node: Stmt, name: str | None = None) -> Stmt | None:
            if isinstance(node, AttrStmt) and node.key is AttrKey.STAGE:
                return rewrite_top_down(node.body, lambda s: stage(s, node.value))
            if _alu_pragma(node):
                return rewrite_top_down(node.body, lambda s: _leaf_nest(cfg, s, name))
            return None

        return LoweredFunc(func.name, func.params, rewrite_top_down(func.body, stage))

    return run


#: A chain: its starting value (an accumulator load or a constant) and the operations applied,
#: each with a constant or a load as its operand.
_Chain = tuple[Expr, list[tuple[AluOp, Expr]]]

_COMMUTATIVE = {BinOp.ADD: AluOp.ADD, BinOp.MIN: AluOp.MIN, BinOp.MAX: AluOp.MAX}


def _leaf_nest(cfg: AccelConfig, stmt: Stmt, name: str | None) -> Stmt | None:
    """A nest of one store of an ``alu`` stage (``name``, else its buffer's) as ALU steps."""
    if not isinstance(stmt, For | Store):
        return None
    loops, store = perfect_nest(stmt)
    if not isinstance(store, Store):
        return None
    stage = name or store.buffer.name
    if store.buffer.scope is not Scope.ACCEL_ACC:
        raise CompileError(
            f"an alu stage must write the accumulator scope, not {store.buffer.scope.value}",
            tensor=stage,
        )
    shape = row_shape(cfg, MemId.ACC)
    rows, _ = split_element_loops(stage, loops, store.buffer, store.indices, shape)
    dst = SramRow(store.buffer, row_index(stage, store.buffer, store.indices))
    base, ops = _chain(cfg, stage, store.value, store)
    steps: list[ComputeStep] = []
    if isinstance(base, Const):
        steps.append(ComputeStep(stage, dst=dst, reset=True))
        if base.value:
            steps.append(ComputeStep(stage, dst=dst, alu_op=AluOp.ADD, imm=int(base.value)))
    else:
        src = _row(cfg, stage, base, store)
        if src.buffer is not dst.buffer or src.index != dst.index:
            steps.append(ComputeStep(stage, dst=dst, reset=True))
            steps.append(ComputeStep(stage, dst=dst, alu_op=AluOp.ADD, src=src))
    for op, operand in ops:
        if isinstance(operand, Const):
            steps.append(ComputeStep(stage, dst=dst, alu_op=op, imm=int(operand.value)))
        else:
            steps.append(
                ComputeStep(stage, dst=dst, alu_op=op, src=_row(cfg, stage, operand, store))
            )
    if not steps:  # a copy onto itself
        steps.append(ComputeStep(stage, dst=dst, alu_op=AluOp.SHR, imm=0))
    for step in steps:
        _check_available(cfg, stage, step)
        _check_immediate(cfg, stage, step)
    nests = []
    for step in steps:
        nest: Stmt = step
        for loop in reversed(rows):
            nest = For(loop.var, loop.extent, loop.kind, nest)
        nests.append(nest)
    return seq(*nests)


def _check_available(cfg: AccelConfig, stage: str, step: ComputeStep) -> None:
    """A CompileError when the configuration lacks the step's ALU operation."""
    why = None if step.alu_op is None else cfg.missing_alu_op(step.alu_op)
    if why is not None:
        raise CompileError(
            f"the stage needs the ALU's {step.alu_op.name}, but {why}",
            tensor=stage,
            op=step.alu_op.name,
        )


def _check_immediate(cfg: AccelConfig, stage: str, step: ComputeStep) -> None:
    """A CompileError unless the step's immediate fits its field (and MUL's multiplier)."""
    if step.imm is None:
        return
    bits = cfg.alu_imm_bits
    if step.alu_op is AluOp.SHR:
        bits = min(bits, cfg.shr_arg_bits)
    if step.alu_op is AluOp.MUL:
        bits = min(bits, cfg.mul_arg_bits)
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= step.imm <= high:
        raise CompileError(
            f"the constant {step.imm} of {step.alu_op.name} does not fit the ALU's {bits}-bit "
            f"immediate ({low}..{high})",
            tensor=stage,
            op=step.alu_op.name,
        )


def _row(cfg: AccelConfig, stage: str, load: Load, store: Store) -> SramRow:
    if load.buffer.scope is not Scope.ACCEL_ACC:
        raise CompileError(
            f"the ALU reads {load.buffer.name!r} from {load.buffer.scope.value}; its operands "
            "must be in the accumulator scope (cache_read it there with dma_copy)",
            tensor=stage,
        )
    if tuple(load.indices[-2:]) != tuple(store.indices[-2:]):
        raise CompileError(
            f"the ALU works lane by lane: {load.buffer.name!r} must be read at the element "
            "each lane writes",
            tensor=stage,
        )
    return SramRow(load.buffer, row_index(stage, load.buffer, load.indices))


def _chain(cfg: AccelConfig, stage: str, expr: Expr, store: Store) -> _Chain:
    """``expr`` as a chain of ALU operations (module docstring), or a CompileError."""
    if isinstance(expr, Load | Const):
        return expr, []
    if isinstance(expr, Cast):
        base, ops = _chain(cfg, stage, expr.value, store)
        bits = expr.dtype.bits
        if expr.dtype.is_float or expr.value.dtype.is_float:
            raise CompileError("the ALU has no floating point", tensor=stage, op="cast")
        if bits < cfg.acc_width and bits < expr.value.dtype.bits:
            shift = cfg.acc_width - bits
            ops = [*ops, (AluOp.SHR, _int(-shift)), (AluOp.SHR, _int(shift))]
        return base, ops
    if not isinstance(expr, Binary):
        raise CompileError(
            f"the ALU cannot compute a {type(expr).__name__}", tensor=stage, op=type(expr).__name__
        )
    op = expr.op
    a, b = expr.a, expr.b
    if op in _COMMUTATIVE or op is BinOp.MUL:
        chain_side, operand = _pick(a, b, store)
        base, ops = _chain(cfg, stage, chain_side, store)
        if op is BinOp.MUL:
            row = _narrowed_load(operand)
            if row is not None and operand.value.dtype.bits == cfg.mul_arg_bits:
                return base, [*ops, (AluOp.MUL, row)]
            if not isinstance(operand, Const):
                raise CompileError(
                    f"the ALU multiplies by the low {cfg.mul_arg_bits} bits of its operand: "
                    f"only a constant multiplier, or a row cast to int{cfg.mul_arg_bits}, is "
                    "exact",
                    tensor=stage,
                    op="*",
                )
            limit = 1 << (cfg.mul_arg_bits - 1)
            if not -limit <= operand.value < limit:
                raise CompileError(
                    f"multiplier {operand.value} does not fit the ALU's {cfg.mul_arg_bits}-bit "
                    "operand",
                    tensor=stage,
                    op="*",
                )
            return base, [*ops, (AluOp.MUL, operand)]
        return base, [*ops, (_COMMUTATIVE[op], _operand(stage, operand, op))]
    if op is BinOp.SUB and isinstance(b, Const):
        base, ops = _chain(cfg, stage, a, store)
        return base, [*ops, (AluOp.ADD, _int(-int(b.value)))]
    if op is BinOp.SUB and _is_zero(a):  # -x, as simplify writes x * -c
        base, ops = _chain(cfg, stage, b, store)
        if ops and ops[-1][0] is AluOp.MUL:
            return base, [*ops[:-1], (AluOp.MUL, _int(-int(ops[-1][1].value)))]
        return base, [*ops, (AluOp.MUL, _int(-1))]
    shifts = {"SHR": 1, "SHL": -1}
    if op.name in shifts:
        if isinstance(b, Load) and op.name == "SHR":
            base, ops = _chain(cfg, stage, a, store)
            return base, [*ops, (AluOp.SHR, b)]
        if not isinstance(b, Const):
            raise CompileError(
                "the ALU shifts by a constant, or right by a row", tensor=stage, op=op.value
            )
        base, ops = _chain(cfg, stage, a, store)
        return base, [*ops, (AluOp.SHR, _int(shifts[op.name] * int(b.value)))]
    raise CompileError(
        f"the ALU has no operation for {op.value!r} in this form", tensor=stage, op=op.value
    )


def _is_zero(expr: Expr) -> bool:
    return isinstance(expr, Const) and expr.value == 0


def _int(value: int) -> Const:
    return Const(value, DType.INT32)


def _pick(a: Expr, b: Expr, store: Store) -> tuple[Expr, Expr]:
    """(chain side, operand side) of a commutative operation."""
    if _simple(b) and not _simple(a):
        return a, b
    if _simple(a) and not _simple(b):
        return b, a
    if isinstance(b, Load) and b.buffer is store.buffer and b.indices == store.indices:
        return b, a
    if isinstance(a, Const):
        return b, a
    return a, b


def _simple(expr: Expr) -> bool:
    return isinstance(expr, Load | Const) or _narrowed_load(expr) is not None


def _narrowed_load(expr: Expr) -> Load | None:
    """The load in ``expr`` where ``expr`` is a load cast to a narrower integer type and back
    (``Cast(int32, Cast(int8, load))``), else None."""
    if not isinstance(expr, Cast) or not isinstance(expr.value, Cast):
        return None
    inner = expr.value
    if not isinstance(inner.value, Load) or inner.dtype.is_float or expr.dtype.is_float:
        return None
    return inner.value if inner.dtype.bits < inner.value.dtype.bits else None


def _operand(stage: str, operand: Expr, op: BinOp) -> Expr:
    if not isinstance(operand, Load | Const):
        raise CompileError(
            "both operands are computed: the ALU combines a row with a constant or a stored "
            "row (split the expression into stages)",
            tensor=stage,
            op=op.value,
        )
    return simplify_expr(operand) if isinstance(operand, Const) else operand

"""The ``inject_dma`` pass: copy stages marked ``dma_copy`` become LOAD and STORE instructions.

A copy stage is a perfect loop nest storing, element by element, a DRAM argument into an SRAM
buffer (a LOAD) or an accumulator buffer into a DRAM argument (a STORE, whose cast to the output
type is the accumulator-to-OUT narrowing the hardware does). The loops inside one row are
dropped; of the loops over rows, the innermost run that is contiguous in SRAM and DRAM becomes
the transfer's ``x`` dimension, the next run (dense in SRAM) its ``y`` dimension with the DRAM
stride as ``x_stride``, and any loops further out stay loops around the transfer (one
instruction per iteration), so every copy the schedule can express is lowered.

Padding comes from the compute's bounds conditions: a LOAD whose value is ``select(cond,
data[...], 0)`` (``topi.nn.pad``, ``te.if_then_else``) becomes a transfer of the rows where the
conditions hold, zero-padded by the DMA engine up to the loop's extent on each side. Each
condition must bound one transfer dimension's loop (with coefficient 1) by expressions of the
loops outside the copy; the pads are computed from them for every tile.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from compiler.accel.env import DMA_COPY
from compiler.accel.rows import (
    SRAM_MEMORY,
    coefficient,
    perfect_nest,
    row_index,
    row_shape,
    split_element_loops,
)
from compiler.accel.stmts import Dma, SramRow
from compiler.arith import ONE, from_linear, linear, simplify_expr
from compiler.errors import CompileError
from compiler.expr import (
    Binary,
    BinOp,
    Cast,
    CmpOp,
    Compare,
    Const,
    DType,
    Expr,
    Select,
    Var,
)
from compiler.loop_ir import (
    AttrKey,
    AttrStmt,
    Buffer,
    For,
    ForKind,
    Load,
    LoweredFunc,
    Scope,
    Store,
)
from compiler.visit import free_vars, substitute, transform, walk
from isa import AccelConfig, MemId, Opcode

__all__ = ["inject_dma"]


def inject_dma(cfg: AccelConfig) -> Callable[[LoweredFunc], LoweredFunc]:
    """The pass for ``cfg``: every ``dma_copy`` nest replaced by :class:`Dma` statements, each
    grown over the loops that enclose it alone where the rows allow (fewer, larger transfers)."""

    def run(func: LoweredFunc) -> LoweredFunc:
        def replace(node: object) -> object:
            if (
                isinstance(node, AttrStmt)
                and node.key is AttrKey.PRAGMA
                and node.value[0] == DMA_COPY
            ):
                return _lower_copy(cfg, node.body)
            if isinstance(node, For) and isinstance(node.body, Dma):
                return _absorb(node)
            return None

        return LoweredFunc(func.name, func.params, transform(func.body, replace))

    return run


@dataclass
class _Dim:
    """A loop over rows: its extent, SRAM and DRAM row strides, and DRAM bounds (if any)."""

    loop: For
    sram: int
    dram: int
    bounds: tuple[Expr | None, Expr | None] = (None, None)

    @property
    def padded(self) -> bool:
        return self.bounds != (None, None)


def _lower_copy(cfg: AccelConfig, body: object) -> object:
    loops, store = perfect_nest(body)
    if not isinstance(store, Store):
        found = type(store).__name__
        stores = [n.buffer.name for n in walk(store) if isinstance(n, Store)]
        raise CompileError(
            f"a dma_copy stage must be a loop nest around one copy, found a {found} (a tail "
            "guard from a split that does not divide?)",
            tensor=stores[0] if stores else "",
        )
    stage = store.buffer.name
    if store.buffer.scope is Scope.GLOBAL:
        return _store(cfg, stage, loops, store)
    if store.buffer.scope not in SRAM_MEMORY:
        raise CompileError(
            f"dma_copy writes {store.buffer.scope.value}, not an accelerator buffer", tensor=stage
        )
    return _load(cfg, stage, loops, store)


def _strip_cast(value: Expr) -> Expr:
    while isinstance(value, Cast):
        value = value.value
    return value


def _load(cfg: AccelConfig, stage: str, loops: list[For], store: Store) -> object:
    sram = store.buffer
    mem = SRAM_MEMORY[sram.scope]
    value = _strip_cast(store.value)
    cond: Expr | None = None
    if isinstance(value, Select):
        pad = _strip_cast(value.false_value)
        if not (isinstance(pad, Const) and pad.value == 0):
            raise CompileError(
                "the DMA engine pads with zeros only; the pad value is not 0", tensor=stage
            )
        cond, value = value.cond, _strip_cast(value.true_value)
    if not isinstance(value, Load) or value.buffer.scope is not Scope.GLOBAL:
        raise CompileError(
            "a dma_copy into an accelerator buffer must copy a tensor from DRAM "
            "(an argument of the function)",
            tensor=stage,
        )
    source = value.buffer
    mem = _load_memory(cfg, stage, mem, source, sram)
    shape = row_shape(cfg, MemId.ACC if mem is MemId.ACC_8BIT else mem)
    rows, _ = split_element_loops(stage, loops, sram, store.indices, shape)
    split_element_loops(stage, loops, source, value.indices, shape)
    if list(store.indices[-2:]) != list(value.indices[-2:]):
        raise CompileError("the copy must keep each element's place within its row", tensor=stage)
    bounds = _bounds(stage, cond, rows) if cond is not None else {}
    return _transfer(
        stage,
        Opcode.LOAD,
        mem,
        rows,
        (sram, row_index(stage, sram, store.indices)),
        (source, row_index(stage, source, value.indices)),
        bounds,
    )


def _load_memory(cfg: AccelConfig, stage: str, mem: MemId, source: Buffer, sram: Buffer) -> MemId:
    """The memory type of a LOAD from ``source`` into ``sram`` (checked dtypes)."""
    want = {MemId.INP: cfg.inp_width, MemId.WGT: cfg.wgt_width, MemId.ACC: cfg.acc_width}[mem]
    bits = source.dtype.bits
    if mem is MemId.ACC and bits == 8 and cfg.acc8_elem_bytes == cfg.batch * cfg.block_out:
        return MemId.ACC_8BIT
    if bits != want or source.dtype.is_float:
        raise CompileError(
            f"loads {source.name!r} of {source.dtype} into {sram.scope.value}, which holds "
            f"int{want}" + (" (or int8, sign-extended)" if mem is MemId.ACC else ""),
            tensor=stage,
        )
    return mem


def _store(cfg: AccelConfig, stage: str, loops: list[For], store: Store) -> object:
    target = store.buffer
    value = store.value
    if isinstance(value, Cast):
        value = value.value
    if not isinstance(value, Load) or value.buffer.scope is not Scope.ACCEL_ACC:
        raise CompileError(
            "a dma_copy into DRAM must copy an accumulator-scope buffer (cast to the output type)",
            tensor=stage,
        )
    if target.dtype.bits != cfg.out_width or target.dtype.is_float:
        raise CompileError(
            f"stores {target.dtype}, but the accelerator's output is int{cfg.out_width}",
            tensor=stage,
        )
    shape = row_shape(cfg, MemId.OUT)
    rows, _ = split_element_loops(stage, loops, target, store.indices, shape)
    split_element_loops(stage, loops, value.buffer, value.indices, shape)
    if list(store.indices[-2:]) != list(value.indices[-2:]):
        raise CompileError("the copy must keep each element's place within its row", tensor=stage)
    return _transfer(
        stage,
        Opcode.STORE,
        MemId.OUT,
        rows,
        (value.buffer, row_index(stage, value.buffer, value.indices)),
        (target, row_index(stage, target, store.indices)),
        {},
    )


def _bounds(stage: str, cond: Expr, rows: list[For]) -> dict[Var, list]:
    """For each row loop a condition bounds, ``[lo, hi)`` expressions (None: unbounded)."""
    by_var: dict[Var, list] = {}
    loop_vars = {lp.var for lp in rows}
    for conjunct in _conjuncts(cond):
        if not isinstance(conjunct, Compare):
            raise CompileError(f"cannot read a padding bound from {conjunct}", tensor=stage)
        diff = linear(simplify_expr(conjunct.a - conjunct.b))
        used = [v for v in loop_vars if v in diff]
        if len(used) != 1 or abs(diff[used[0]]) != 1:
            raise CompileError(
                "a padding condition must bound exactly one loop of the copy (coefficient 1)",
                tensor=stage,
            )
        var = used[0]
        if any(atom != ONE and var in free_vars(atom) for atom in diff if atom is not var):
            raise CompileError("a padding condition is not linear in its loop", tensor=stage)
        sign = diff[var]
        rest = from_linear({a: -c * sign for a, c in diff.items() if a is not var})
        # the condition is  sign * (var - rest) OP 0
        op = conjunct.op if sign > 0 else _MIRROR[conjunct.op]
        lo_hi = by_var.setdefault(var, [None, None])
        if op is CmpOp.GE:
            lo_hi[0] = _tighter(BinOp.MAX, lo_hi[0], rest)
        elif op is CmpOp.GT:
            lo_hi[0] = _tighter(BinOp.MAX, lo_hi[0], rest + 1)
        elif op is CmpOp.LT:
            lo_hi[1] = _tighter(BinOp.MIN, lo_hi[1], rest)
        elif op is CmpOp.LE:
            lo_hi[1] = _tighter(BinOp.MIN, lo_hi[1], rest + 1)
        else:
            raise CompileError(f"cannot pad by an {op.value} condition", tensor=stage)
    return by_var


_MIRROR = {CmpOp.GE: CmpOp.LE, CmpOp.GT: CmpOp.LT, CmpOp.LT: CmpOp.GT, CmpOp.LE: CmpOp.GE}


def _tighter(op: BinOp, old: Expr | None, new: Expr) -> Expr:
    return new if old is None else simplify_expr(Binary(op, old, new))


def _conjuncts(cond: Expr) -> list[Expr]:
    if isinstance(cond, Binary) and cond.op is BinOp.AND:
        return _conjuncts(cond.a) + _conjuncts(cond.b)
    return [cond]


def _transfer(
    stage: str,
    opcode: Opcode,
    mem: MemId,
    rows: list[For],
    sram: tuple[Buffer, Expr],
    dram: tuple[Buffer, Expr],
    bounds: dict[Var, list],
) -> object:
    """The transfer of ``rows`` (outermost first) as loops around one :class:`Dma`."""
    dims = [
        _Dim(
            loop,
            coefficient(stage, sram[1], loop.var),
            coefficient(stage, dram[1], loop.var),
            tuple(bounds.get(loop.var, (None, None))),
        )
        for loop in rows
    ]
    for loop in rows:
        if loop.kind not in (ForKind.SERIAL, ForKind.UNROLLED):
            raise CompileError(
                f"the loop {loop.var.name!r} inside a dma_copy is {loop.kind.value}",
                tensor=stage,
            )
    x, rest = _take_run(dims, sram_start=1, dram_start=1)
    x_extent = _extent(x)
    y, outer = _take_run(rest, sram_start=x_extent, dram_start=None)
    for dim in outer:
        if dim.padded:
            raise CompileError(
                f"padding on the loop {dim.loop.var.name!r}, which the 2-D transfer cannot "
                "hold (only its two innermost dimensions can be padded)",
                tensor=stage,
            )
    zero = {dim.loop.var: Const(0, DType.INT32) for dim in x + y}
    dma = Dma(
        stage,
        opcode,
        mem,
        SramRow(sram[0], simplify_expr(substitute(sram[1], zero))),
        dram[0],
        simplify_expr(substitute(dram[1], zero)),
        _extent(y),
        x_extent,
        y[-1].dram if y else x_extent,
        _range(y),
        _range(x),
    )
    stmt: object = dma
    for dim in reversed(outer):
        stmt = For(dim.loop.var, dim.loop.extent, ForKind.SERIAL, stmt)
    return stmt


def _absorb(loop: For) -> Dma | None:
    """The transfer inside ``loop`` grown to cover the loop's iterations, when its rows stay
    dense in SRAM and 2-D in DRAM; None when they do not (the loop stays)."""
    dma = loop.body
    assert isinstance(dma, Dma)
    if loop.kind not in (ForKind.SERIAL, ForKind.UNROLLED):
        return None
    try:
        sram = coefficient(dma.stage, dma.sram.index, loop.var)
        dram = coefficient(dma.stage, dma.dram_index, loop.var)
    except CompileError:
        return None
    for bounds in (dma.y_bounds, dma.x_bounds):
        if bounds is not None and any(loop.var in free_vars(b) for b in bounds):
            return None
    x, y, n = dma.x_extent, dma.y_extent, loop.extent
    if y == 1 and dma.x_bounds is None and dma.y_bounds is None and sram == dram == x:
        grown = replace(dma, x_extent=x * n, x_stride=x * n)
    elif y == 1 and dma.y_bounds is None and sram == x:
        grown = replace(dma, y_extent=n, x_stride=dram)
    elif dma.y_bounds is None and sram == x * y and dram == dma.x_stride * y:
        grown = replace(dma, y_extent=y * n)
    else:
        return None
    zero = {loop.var: Const(0, DType.INT32)}
    return replace(
        grown,
        sram=SramRow(dma.sram.buffer, simplify_expr(substitute(dma.sram.index, zero))),
        dram_index=simplify_expr(substitute(dma.dram_index, zero)),
    )


def _take_run(
    dims: list[_Dim], sram_start: int, dram_start: int | None
) -> tuple[list[_Dim], list[_Dim]]:
    """The innermost run of ``dims`` that forms one transfer dimension, and the dims outside.

    The run's innermost loop must have SRAM stride ``sram_start`` (and DRAM stride
    ``dram_start`` when given); each next loop out must continue it densely in both memories.
    A padded loop forms a run of its own.
    """
    if not dims:
        return [], []
    first = dims[-1]
    if first.sram != sram_start or (dram_start is not None and first.dram != dram_start):
        return [], dims
    run = [first]
    extent = first.loop.extent
    for dim in reversed(dims[:-1]):
        if first.padded or dim.padded:
            break
        if dim.sram != extent * first.sram or dim.dram != extent * first.dram:
            break
        run.insert(0, dim)
        extent *= dim.loop.extent
    return run, dims[: len(dims) - len(run)]


def _extent(run: list[_Dim]) -> int:
    extent = 1
    for dim in run:
        extent *= dim.loop.extent
    return extent


def _range(run: list[_Dim]) -> tuple[Expr, Expr] | None:
    if len(run) != 1 or not run[0].padded:
        return None
    lo, hi = run[0].bounds
    return (
        lo if lo is not None else Const(0, DType.INT32),
        hi if hi is not None else Const(run[0].loop.extent, DType.INT32),
    )

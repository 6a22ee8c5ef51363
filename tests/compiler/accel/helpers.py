"""Small accelerator schedules with numpy references, and helpers that inspect what the
accelerator's passes and code generator made of them (shared by this package's tests).

Every case is a :class:`Case`: a schedule, its arguments (inputs first, the output last) and an
independent numpy reference of the output, so each test can both look at the IR or the program
and run the program on the functional simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from compiler import build, create_schedule, te
from compiler.accel import AccelFunction, Env, accel_pipeline, lower_accel
from compiler.arith import ONE, linear
from compiler.expr import Expr, Node, Var
from compiler.loop_ir import Allocate, For, LoweredFunc, Stmt
from compiler.schedule import Schedule
from compiler.te import Tensor
from compiler.templates import nn
from compiler.visit import walk
from isa import AccelConfig, GemmInsn, MemId, MemInsn, Opcode, Operand, step_indices

__all__ = [
    "Case",
    "allocated",
    "alu_case",
    "conv2d_inputs",
    "conv_case",
    "decoded_gemms",
    "dram_row",
    "env_of",
    "epilogue_case",
    "index_form",
    "loads",
    "matmul_case",
    "nodes",
    "with_loops",
]


def env_of(preset: str) -> Env:
    """The target environment of an :class:`AccelConfig` preset."""
    return Env(AccelConfig.preset(preset))


# ------------------------------------------------------------------------------ the cases
@dataclass
class Case:
    """A schedule over ``args`` (inputs, then the output) and a numpy ``reference`` computing
    the output from the inputs; ``geometry`` holds a case's shape parameters."""

    env: Env
    schedule: Schedule
    args: tuple[Tensor, ...]
    reference: Callable[..., np.ndarray]
    int32_range: int = 1 << 20
    geometry: dict = field(default_factory=dict)

    @property
    def passes(self) -> tuple:
        return accel_pipeline(self.env.cfg)

    def lower(self, count: int | None = None) -> LoweredFunc:
        """The IR after the first ``count`` passes (all of them by default)."""
        passes = None if count is None else self.passes[:count]
        return lower_accel(self.schedule, self.args, self.env.cfg, passes=passes)

    def around(self, name: str) -> tuple[LoweredFunc, LoweredFunc]:
        """The IR just before and just after the first pass called ``name``."""
        index = [p.name for p in self.passes].index(name)
        return self.lower(index), self.lower(index + 1)

    def build(self) -> AccelFunction:
        return build(self.schedule, list(self.args), target=self.env.target)

    def inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Random inputs: int8 over its whole range, int32 within ``int32_range``."""
        rng = np.random.default_rng(seed)
        arrays = []
        for tensor in self.args[:-1]:
            dtype = tensor.dtype.numpy
            bound = 128 if dtype == np.int8 else self.int32_range
            arrays.append(rng.integers(-bound, bound, size=tensor.shape, dtype=dtype))
        return arrays

    def run(
        self, function: AccelFunction | None = None, seed: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """(the program's output on fsim, the reference's) for random inputs."""
        function = self.build() if function is None else function
        arrays = self.inputs(seed)
        out = np.zeros(self.args[-1].shape, self.args[-1].dtype.numpy)
        function(*arrays, out)
        return out, self.reference(*arrays)


def _copy(tensor: Tensor, name: str) -> Tensor:
    return te.compute(tensor.shape, lambda *i: tensor(*i), name)


def _gemm_tensors(env: Env, n: int, m: int) -> dict[str, Tensor]:
    """``C_buf = A x B^T`` over ``n`` input and ``m`` output blocks, A and B through copies."""
    a = te.placeholder((1, n, env.BATCH, env.BLOCK_IN), env.inp_dtype, "A")
    b = te.placeholder((m, n, env.BLOCK_OUT, env.BLOCK_IN), env.wgt_dtype, "B")
    a_buf, b_buf = _copy(a, "A_buf"), _copy(b, "B_buf")
    ko = te.reduce_axis((0, n), "ko")
    ki = te.reduce_axis((0, env.BLOCK_IN), "ki")
    acc = env.acc_dtype
    c_buf = te.compute(
        (1, m, env.BATCH, env.BLOCK_OUT),
        lambda bo, co, bi, ci: te.sum(
            a_buf[bo, ko, bi, ki].astype(acc) * b_buf[co, ko, ci, ki].astype(acc), axis=[ko, ki]
        ),
        "C_buf",
    )
    return {"A": a, "B": b, "A_buf": a_buf, "B_buf": b_buf, "C_buf": c_buf}


def _gemm_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The int32 (wrapping) accumulator of ``_gemm_tensors``."""
    wide = np.einsum("onbi,mnci->ombc", a.astype(np.int64), b.astype(np.int64))
    return wide.astype(np.int32)


def _schedule_gemm(
    env: Env,
    s: Schedule,
    tensors: dict[str, Tensor],
    *,
    loads_in_reduction: bool,
    scoped: tuple[str, ...],
    copies: tuple[str, ...],
    order: str,
    tensorize: str | None,
) -> None:
    scopes = {"A_buf": env.inp_scope, "B_buf": env.wgt_scope, "C_buf": env.acc_scope}
    c_buf = tensors["C_buf"]
    for name in scoped:
        s[tensors[name]].set_scope(scopes[name])
    stage = s[c_buf]
    axes = {axis.var.name: axis for axis in stage.op.axis + stage.op.reduce_axis}
    if loads_in_reduction:
        s[tensors["A_buf"]].compute_at(stage, axes["ko"])
        s[tensors["B_buf"]].compute_at(stage, axes["ko"])
    for name in copies:
        s[tensors[name]].pragma(s[tensors[name]].op.axis[0], env.dma_copy)
    stage.reorder(*(axes[name] for name in order.split()))
    if tensorize is not None:
        stage.tensorize(axes[tensorize], env.gemm)


def matmul_case(
    env: Env,
    n: int = 3,
    m: int = 4,
    *,
    loads_in_reduction: bool = True,
    scoped: tuple[str, ...] = ("A_buf", "B_buf", "C_buf"),
    copies: tuple[str, ...] = ("A_buf", "B_buf", "C"),
    order: str = "ko bo co bi ci ki",
    tensorize: str | None = "bi",
) -> Case:
    """``C = int8(A x B^T)`` over ``n`` input and ``m`` output blocks: ``C_buf``'s loops in
    ``order`` (axes ``bo co bi ci``, reduction ``ko ki``), tensorized at ``tensorize``. With
    ``loads_in_reduction`` A and B are loaded per reduction step (inside ``ko``), else once, up
    front. ``scoped`` / ``copies`` name the stages set in their accelerator scope / marked
    ``dma_copy`` (leave one out to get a broken schedule)."""
    tensors = _gemm_tensors(env, n, m)
    c_buf = tensors["C_buf"]
    c = tensors["C"] = te.compute(c_buf.shape, lambda *i: c_buf(*i).astype(env.out_dtype), "C")
    s = create_schedule(c)
    _schedule_gemm(
        env,
        s,
        tensors,
        loads_in_reduction=loads_in_reduction,
        scoped=scoped,
        copies=copies,
        order=order,
        tensorize=tensorize,
    )

    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return _gemm_reference(a, b).astype(np.int8)

    return Case(env, s, (tensors["A"], tensors["B"], c), reference, geometry={"n": n, "m": m})


def epilogue_case(env: Env, n: int = 2, m: int = 2, *, source_read_later: bool) -> Case:
    """An ``n`` x ``m`` block matmul whose accumulator goes through two ALU stages before the
    store: ``S = C_buf >> 3``, then ``T = max(S, 0)`` or, with ``source_read_later``,
    ``T = S + C_buf`` (``C_buf`` is then still read after ``S`` is computed)."""
    tensors = _gemm_tensors(env, n, m)
    c_buf = tensors["C_buf"]
    shifted = te.compute(c_buf.shape, lambda *i: c_buf(*i) >> 3, "S")
    if source_read_later:
        last = te.compute(c_buf.shape, lambda *i: shifted(*i) + c_buf(*i), "T")
    else:
        last = te.compute(c_buf.shape, lambda *i: te.maximum(shifted(*i), 0), "T")
    c = tensors["C"] = te.compute(c_buf.shape, lambda *i: last(*i).astype(env.out_dtype), "C")
    s = create_schedule(c)
    _schedule_gemm(
        env,
        s,
        tensors,
        loads_in_reduction=False,
        scoped=("A_buf", "B_buf", "C_buf"),
        copies=("A_buf", "B_buf", "C"),
        order="ko bo co bi ci ki",
        tensorize="bi",
    )
    for stage in (shifted, last):
        s[stage].set_scope(env.acc_scope)
        s[stage].pragma(s[stage].op.axis[0], env.alu)

    def reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        acc = _gemm_reference(a, b)
        value = (acc >> 3) + acc if source_read_later else np.maximum(acc >> 3, 0)
        return value.astype(np.int8)

    return Case(env, s, (tensors["A"], tensors["B"], c), reference)


def alu_case(
    env: Env,
    te_fn: Callable[[Expr, Expr], Expr],
    np_fn: Callable[[np.ndarray, np.ndarray | None], np.ndarray],
    rows: tuple[int, int] = (2, 3),
    x_dtype: str = "int32",
) -> Case:
    """``C = int8(R)`` with ``R = te_fn(X_buf, Y_buf)`` one ALU stage, ``X_buf`` / ``Y_buf``
    the arguments ``X`` (of ``x_dtype``) / ``Y`` (int32) loaded into the accumulator as int32
    (only those ``te_fn`` reads are arguments); ``np_fn`` computes ``R`` from them as int32
    numpy arrays (``Y`` None when unused)."""
    shape = (*rows, env.BATCH, env.BLOCK_OUT)
    x = te.placeholder(shape, x_dtype, "X")
    y = te.placeholder(shape, env.acc_dtype, "Y")
    x_buf = te.compute(shape, lambda *i: x(*i).astype(env.acc_dtype), "X_buf")
    y_buf = _copy(y, "Y_buf")
    r = te.compute(shape, lambda *i: te_fn(x_buf(*i), y_buf(*i)), "R")
    c = te.compute(shape, lambda *i: r(*i).astype(env.out_dtype), "C")
    read = [t.op for t in r.op.inputs]
    used = [(arg, buf) for arg, buf in ((x, x_buf), (y, y_buf)) if buf.op in read]
    s = create_schedule(c)
    for _, buf in used:
        s[buf].set_scope(env.acc_scope)
        s[buf].pragma(s[buf].op.axis[0], env.dma_copy)
    s[r].set_scope(env.acc_scope)
    s[r].pragma(s[r].op.axis[0], env.alu)
    s[c].pragma(s[c].op.axis[0], env.dma_copy)

    def reference(*arrays: np.ndarray) -> np.ndarray:
        wide = (array.astype(np.int32) for array in arrays)
        named = dict(zip((arg.name for arg, _ in used), wide, strict=True))
        return np_fn(named["X"], named.get("Y")).astype(np.int32).astype(np.int8)

    return Case(env, s, (*(arg for arg, _ in used), c), reference)


def conv_case(
    env: Env,
    *,
    size: int = 6,
    ci: int = 2,
    co: int = 2,
    kernel: int = 3,
    pad: int = 1,
    stride: int = 1,
    tile_h: int = 2,
    ic_step: int = 1,
    threads: int = 1,
    shift: int = 8,
    pad_value: int = 0,
) -> Case:
    """A 2-D convolution in the packed layouts (``ci`` / ``co`` channel blocks, a ``size`` x
    ``size`` image, the input padded with ``nn.pad``), ``clip(conv >> shift, 0, 127)`` on the
    ALU: output tiles of ``tile_h`` full rows, the reduction in steps of ``ic_step`` input
    blocks with the padded input and the weights loaded per step, and ``threads`` virtual
    threads over the row tiles. ``pad_value`` fills the padding (the reference assumes 0)."""
    b, bi, bo = env.BATCH, env.BLOCK_IN, env.BLOCK_OUT
    data = te.placeholder((1, ci, size, size, b, bi), env.inp_dtype, "data")
    weight = te.placeholder((co, ci, kernel, kernel, bo, bi), env.wgt_dtype, "kernel")
    padded = nn.pad(data, [0, 0, pad, pad, 0, 0], pad_value=pad_value, name="data_pad")
    out = (size + 2 * pad - kernel) // stride + 1
    ic = te.reduce_axis((0, ci), "ic")
    dy = te.reduce_axis((0, kernel), "dy")
    dx = te.reduce_axis((0, kernel), "dx")
    ici = te.reduce_axis((0, bi), "ic_tns")
    acc = env.acc_dtype
    conv = te.compute(
        (1, co, out, out, b, bo),
        lambda n, c, y, x, bb, cc: te.sum(
            padded[n, ic, y * stride + dy, x * stride + dx, bb, ici].astype(acc)
            * weight[c, ic, dy, dx, cc, ici].astype(acc),
            axis=[ic, dy, dx, ici],
        ),
        "res_conv",
    )
    shr = te.compute(conv.shape, lambda *i: conv(*i) >> shift, "res_shr")
    low = te.compute(conv.shape, lambda *i: te.maximum(shr(*i), 0), "res_max")
    high = te.compute(conv.shape, lambda *i: te.minimum(low(*i), 127), "res_min")
    res = te.compute(conv.shape, lambda *i: high(*i).astype(env.out_dtype), "res")

    s = create_schedule(res)
    n, c, y, x, bb, cc = s[res].op.axis
    y_o, y_i = s[res].split(y, factor=tile_h)
    s[res].reorder(n, y_o, c, y_i, x, bb, cc)
    if threads > 1:
        y_o, thread = s[res].split(y_o, factor=threads)
        s[res].reorder(thread, n)
        s[res].bind(thread, te.thread_axis("cthread"))
    s[res].pragma(c, env.dma_copy)
    s[conv].set_scope(env.acc_scope)
    s[conv].compute_at(s[res], y_o)
    for stage in (shr, low, high):
        s[stage].set_scope(env.acc_scope)
        s[stage].compute_at(s[res], y_o)
        s[stage].pragma(s[stage].op.axis[0], env.alu)
    cn, cco, cy, cx, cb, ccc = s[conv].op.axis
    ic_o, ic_i = s[conv].split(ic, factor=ic_step)
    s[conv].reorder(ic_o, cn, cco, cy, ic_i, dy, dx, cx, cb, ccc, ici)
    s[conv].tensorize(cb, env.gemm)
    s[padded].set_scope(env.inp_scope)
    s[padded].compute_at(s[conv], ic_o)
    s[padded].pragma(s[padded].op.axis[0], env.dma_copy)
    weights = s.cache_read(weight, env.wgt_scope, [conv])
    s[weights].compute_at(s[conv], ic_o)
    s[weights].pragma(s[weights].op.axis[0], env.dma_copy)

    def reference(d: np.ndarray, k: np.ndarray) -> np.ndarray:
        """The convolution computed directly in the packed layouts."""
        dp = np.pad(d.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0), (0, 0)))
        total = np.zeros(res.shape, np.int64)
        span = stride * (out - 1) + 1
        for ky in range(kernel):
            for kx in range(kernel):
                window = dp[:, :, ky : ky + span : stride, kx : kx + span : stride]
                total += np.einsum("ncyxbi,ocji->noyxbj", window, k[:, :, ky, kx].astype(np.int64))
        return np.clip(total.astype(np.int32) >> shift, 0, 127).astype(np.int8)

    geometry = {"size": size, "pad": pad, "stride": stride, "kernel": kernel, "out": out}
    geometry |= {"tile_h": tile_h, "ci": ci, "co": co, "ic_step": ic_step, "threads": threads}
    return Case(env, s, (data, weight, res), reference, geometry=geometry)


def conv2d_inputs(
    env: Env, size: int, channels_in: int, channels_out: int, kernel: int
) -> tuple[Tensor, Tensor, Tensor]:
    """The packed ``data``, ``kernel`` and ``bias`` placeholders of a ``size`` x ``size``
    convolution layer (channels in whole blocks) for the CONV2D template."""
    blocks_in, blocks_out = channels_in // env.BLOCK_IN, channels_out // env.BLOCK_OUT
    assert blocks_in * env.BLOCK_IN == channels_in and blocks_out * env.BLOCK_OUT == channels_out
    data = te.placeholder(
        (1, blocks_in, size, size, env.BATCH, env.BLOCK_IN), env.inp_dtype, "data"
    )
    weights = te.placeholder(
        (blocks_out, blocks_in, kernel, kernel, env.BLOCK_OUT, env.BLOCK_IN),
        env.wgt_dtype,
        "kernel",
    )
    bias = te.placeholder((1, blocks_out, 1, 1, env.BATCH, env.BLOCK_OUT), env.acc_dtype, "bias")
    return data, weights, bias


# ---------------------------------------------------------------------------- inspection
def nodes(root: LoweredFunc | Node, kind: type) -> list:
    """Every node of ``kind`` in ``root`` (a function's body, or any statement or expression),
    parents before children, in program order."""
    top = root.body if isinstance(root, LoweredFunc) else root
    return [node for node in walk(top) if isinstance(node, kind)]


def with_loops(func: LoweredFunc, kind: type) -> list[tuple[object, list[tuple[str, int]]]]:
    """Every statement of ``kind`` in ``func`` (not looking inside one), in program order,
    with the ``(name, extent)`` of the loops around it, outermost first."""
    found: list[tuple[object, list[tuple[str, int]]]] = []

    def visit(stmt: object, loops: list[tuple[str, int]]) -> None:
        if isinstance(stmt, kind):
            found.append((stmt, loops))
            return
        if isinstance(stmt, For):
            loops = [*loops, (stmt.var.name, stmt.extent)]
        for name in getattr(stmt, "children", ()):
            value = getattr(stmt, name)
            for child in value if isinstance(value, tuple) else (value,):
                if isinstance(child, Stmt):
                    visit(child, loops)

    visit(func.body, [])
    return found


def allocated(func: LoweredFunc) -> set[str]:
    """The names of the buffers ``func`` allocates."""
    return {node.buffer.name for node in nodes(func, Allocate)}


def index_form(expr: Expr) -> dict[str, int]:
    """A linear index as ``{variable name: coefficient}`` (key ``"1"``: the constant)."""
    form = {}
    for atom, coef in linear(expr).items():
        assert atom == ONE or isinstance(atom, Var), f"not linear: {expr}"
        form["1" if atom == ONE else atom.name] = coef
    return form


def loads(function: AccelFunction, mem: MemId) -> list[MemInsn]:
    """The program's LOAD instructions into ``mem`` that move data, in program order."""
    return [
        insn
        for insn in function.program.instructions
        if isinstance(insn, MemInsn)
        and insn.opcode is Opcode.LOAD
        and insn.memory_type is mem
        and insn.x_size
    ]


def dram_row(function: AccelFunction, name: str) -> int:
    """The element index (as ``dram_base`` counts) where argument ``name`` starts."""
    buffer = function.layout[name]
    assert buffer.address % buffer.elem_bytes == 0
    return buffer.address // buffer.elem_bytes


def decoded_gemms(program) -> Iterator[tuple[GemmInsn, dict[Operand, np.ndarray]]]:
    """Each GEMM instruction of ``program`` with each operand's row at every step, in execution
    order, from the micro-ops the program's LOAD UOPs placed in the micro-op buffer."""
    buffer: dict[int, object] = {}
    for insn in program.instructions:
        if isinstance(insn, MemInsn) and insn.opcode is Opcode.LOAD:
            if insn.memory_type is MemId.UOP:
                start = insn.dram_base - program.uop_base
                for i in range(insn.x_size):
                    buffer[insn.sram_base + i] = program.uops[start + i]
        elif isinstance(insn, GemmInsn):
            uops = [buffer[i] for i in range(insn.uop_bgn, insn.uop_end)]
            rows = {}
            for operand in Operand:
                base = np.array([getattr(u, operand.uop_field) for u in uops], dtype=np.int64)
                rows[operand] = step_indices(insn, base, operand)
            yield insn, rows

"""Loop IR to LLVM IR (llvmlite), optimised and compiled for a target (the host by default).

Every function takes one pointer per buffer parameter, then a pointer to a *parallel launcher*
(``void launch(void (*body)(i64 begin, i64 end, void *closure), void *closure, i64 extent)``;
null runs parallel loops serially). A parallel loop's body is outlined into its own function over a
chunk of iterations and handed to the launcher, so the caller decides how to spread it across
threads (:mod:`compiler.codegen.runtime` uses a thread pool; native code calls release the GIL).

A vectorized loop is emitted as vector code: each expression is evaluated once per vector, values
that do not depend on the loop variable stay scalar, contiguous accesses become vector loads and
stores (aligned where the offset provably is), other accesses gather or scatter lane by lane. A
loop whose body cannot be vectorized that way (an inner serial loop, a condition that varies per
lane) is emitted as a scalar loop instead. Unrolled loops are emitted once per iteration. Float
arithmetic carries fast-math flags, except division, which stays IEEE's correctly rounded one (a
quantizer's ``round(x / scale)`` must give the numpy kernel's integer, ties included); integer
arithmetic wraps at its width, and no operation is left undefined for any operand (division by
0, shifts by an amount outside the width).
"""

from __future__ import annotations

import math
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import llvmlite.binding as llvm
import llvmlite.ir as ir

from compiler.arith import ONE, fold_shift, from_linear, linear
from compiler.codegen.intrinsics import lower_intrinsic
from compiler.codegen.target import Target
from compiler.errors import CompileError
from compiler.expr import (
    Binary,
    BinOp,
    Call,
    Cast,
    CmpOp,
    Compare,
    Const,
    DType,
    Expr,
    Not,
    Select,
    Var,
)
from compiler.loop_ir import (
    Allocate,
    AttrKey,
    AttrStmt,
    Buffer,
    BufferAddress,
    CallIntrinsic,
    For,
    ForKind,
    IfThenElse,
    Load,
    LoweredFunc,
    Scope,
    Seq,
    Stmt,
    Store,
)
from compiler.visit import free_vars, walk

__all__ = ["LLVMModule", "codegen", "optimise"]

_INDEX = ir.IntType(64)
_PTR = ir.PointerType()
_ALIGN = 64  # bytes: the alignment of every buffer we allocate
_MAX_UNROLL = 256  # iterations an unrolled loop may have before it stays a loop
_MAX_LANES = 64
_STACK_LIMIT = 64 * 1024  # bytes: larger global-scope buffers go to the heap
_FAST = ("fast",)
_BODY_TYPE = ir.FunctionType(ir.VoidType(), [_INDEX, _INDEX, _PTR])
_LAUNCH_TYPE = ir.FunctionType(ir.VoidType(), [ir.PointerType(_BODY_TYPE), _PTR, _INDEX])
_LAUNCHER = ir.PointerType(_LAUNCH_TYPE)


def _llvm_type(dtype: DType) -> ir.Type:
    if dtype is DType.FLOAT32:
        return ir.FloatType()
    return ir.IntType(dtype.bits)


def _splat(builder: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    vector_type = ir.VectorType(value.type, lanes)
    if isinstance(value, ir.Constant):
        return ir.Constant(vector_type, [value.constant] * lanes)
    single = builder.insert_element(
        ir.Constant(vector_type, ir.Undefined), value, ir.Constant(ir.IntType(32), 0)
    )
    return builder.shuffle_vector(
        single,
        ir.Constant(vector_type, ir.Undefined),
        ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes),
    )


def _vector_pointer(vector_type: ir.VectorType, address: ir.Value) -> ir.PointerType:
    """A pointer to ``vector_type`` in ``address``'s address space."""
    return ir.PointerType(vector_type, addrspace=address.type.addrspace)


def _is_vector(value: ir.Value) -> bool:
    return isinstance(value.type, ir.VectorType)


@dataclass
class _Vector:
    """The loop variable of the vectorized loop being emitted."""

    var: Var
    lanes: int


@dataclass
class _Scope:
    """Per-function emission state."""

    function: ir.Function
    builder: ir.IRBuilder
    allocas: ir.IRBuilder  # at the end of the block that holds every alloca
    launcher: ir.Value | None  # None in a GPU kernel (no parallel loops)
    values: dict[Var, ir.Value] = field(default_factory=dict)
    pointers: dict[Buffer, ir.Value] = field(default_factory=dict)
    in_parallel: bool = False


def _new_scope(function: ir.Function, launcher: ir.Value | None) -> _Scope:
    allocas = function.append_basic_block("allocas")
    body = function.append_basic_block("body")
    return _Scope(function, ir.IRBuilder(body), ir.IRBuilder(allocas), launcher)


def _finish(scope: _Scope) -> None:
    scope.builder.ret_void()
    scope.allocas.branch(scope.function.blocks[1])


class _Emitter:
    """Emits one lowered function (and its outlined parallel bodies) into ``module``."""

    def __init__(self, module: ir.Module, func: LoweredFunc, intrinsics: _Intrinsics) -> None:
        self.module = module
        self.func = func
        self.intrinsics = intrinsics
        self.vector: _Vector | None = None
        self.guarded = 0  # > 0 while emitting the branches of a select
        self.outlined = 0
        self.stride_vars = _stride_vars(func.params)
        self.scope = self.enter(self.declare())
        self.stmt(func.body)
        _finish(self.scope)

    def declare(self) -> ir.Function:
        """The function: a pointer per buffer, an i64 per stride variable, the launcher."""
        params = [_PTR] * len(self.func.params) + [_INDEX] * len(self.stride_vars) + [_LAUNCHER]
        return ir.Function(self.module, ir.FunctionType(ir.VoidType(), params), self.func.name)

    def enter(self, function: ir.Function) -> _Scope:
        """The scope of ``function``'s body, its parameters bound (a launcher comes last)."""
        params = self.func.params
        for arg in function.args[: len(params)]:
            arg.add_attribute("noalias")
        extra = len(params) + len(self.stride_vars)
        launcher = function.args[extra] if len(function.args) > extra else None
        scope = _new_scope(function, launcher)
        for buffer, arg in zip(params, function.args, strict=False):
            scope.pointers[buffer] = arg
            arg.name = buffer.name
        for var, arg in zip(self.stride_vars, function.args[len(params) :], strict=False):
            scope.values[var] = arg
        return scope

    @property
    def b(self) -> ir.IRBuilder:
        return self.scope.builder

    # --------------------------------------------------------------------------- statements
    def stmt(self, s: Stmt) -> None:
        if isinstance(s, Seq):
            for part in s.stmts:
                self.stmt(part)
        elif isinstance(s, For):
            self.loop(s)
        elif isinstance(s, Store):
            self.store(s)
        elif isinstance(s, Allocate):
            self.allocate(s)
        elif isinstance(s, IfThenElse):
            self.branch(s)
        elif isinstance(s, AttrStmt):
            if s.key is AttrKey.TENSORIZE:
                raise CompileError("a tensorize request survived lowering", op=s.value.name)
            self.stmt(s.body)
        elif isinstance(s, CallIntrinsic):
            self.call_intrinsic(s)
        else:
            raise CompileError(f"the LLVM backend cannot emit {type(s).__name__}")

    def loop(self, s: For) -> None:
        if s.kind is ForKind.THREAD_BINDING:
            raise CompileError(
                f"loop {s.var.name!r} is bound to {s.thread}: GPU thread axes need a GPU target",
                axis=s.var.name,
            )
        if s.kind is ForKind.UNROLLED and s.extent <= _MAX_UNROLL:
            for i in range(s.extent):
                self.scope.values[s.var] = ir.Constant(_INDEX, i)
                self.stmt(s.body)
            return
        if s.kind is ForKind.VECTORIZED and self.vector is None and _vectorizable(s):
            self.vector = _Vector(s.var, s.extent)
            try:
                self.stmt(s.body)
            finally:
                self.vector = None
            return
        if s.kind is ForKind.PARALLEL and not self.scope.in_parallel:
            self.parallel(s)
            return
        self.serial(s.var, ir.Constant(_INDEX, 0), ir.Constant(_INDEX, s.extent), s.body)

    def serial(self, var: Var, begin: ir.Value, end: ir.Value, body: Stmt) -> None:
        """``for var in begin .. end - 1`` (runs nothing when ``begin >= end``)."""
        b = self.b
        pre = b.block
        loop = b.append_basic_block(f"{var.name}.loop")
        exit_ = b.append_basic_block(f"{var.name}.exit")
        b.cbranch(b.icmp_signed("<", begin, end), loop, exit_)
        b.position_at_end(loop)
        phi = b.phi(_INDEX, var.name)
        phi.add_incoming(begin, pre)
        self.scope.values[var] = phi
        self.stmt(body)
        step = b.add(phi, ir.Constant(_INDEX, 1), flags=("nsw",))
        phi.add_incoming(step, b.block)
        b.cbranch(b.icmp_signed("<", step, end), loop, exit_)
        b.position_at_end(exit_)

    def parallel(self, s: For) -> None:
        """Outline the body over a chunk ``begin .. end`` and hand it to the launcher."""
        captured_vars = sorted(
            (v for v in free_vars(s.body) if v in self.scope.values and v is not s.var),
            key=lambda v: v.name,
        )
        inner_buffers = {n.buffer for n in walk(s.body) if isinstance(n, Allocate)}
        captured_buffers = [
            buf
            for buf in dict.fromkeys(
                n.buffer for n in walk(s.body) if isinstance(n, Load | Store | BufferAddress)
            )
            if buf not in inner_buffers
        ]
        self.outlined += 1
        body_fn = ir.Function(self.module, _BODY_TYPE, f"{self.func.name}.parallel{self.outlined}")
        # the closure: one i64 slot per captured variable, then per captured buffer pointer
        slots = len(captured_vars) + len(captured_buffers)
        closure = self._entry_alloca(_INDEX, max(slots, 1))
        values = [self.scope.values[v] for v in captured_vars] + [
            self.b.ptrtoint(self.scope.pointers[buf], _INDEX) for buf in captured_buffers
        ]
        for slot, value in enumerate(values):
            at = self.b.gep(closure, [ir.Constant(_INDEX, slot)], source_etype=_INDEX)
            self.b.store(value, at)
        self._launch(body_fn, closure, s.extent)
        # the outlined body: unpack the closure, loop over the chunk
        outer_scope = self.scope
        begin, end, closure_arg = body_fn.args
        self.scope = _new_scope(body_fn, outer_scope.launcher)
        self.scope.in_parallel = True
        for slot, item in enumerate([*captured_vars, *captured_buffers]):
            at = self.b.gep(closure_arg, [ir.Constant(_INDEX, slot)], source_etype=_INDEX)
            loaded = self.b.load(at, typ=_INDEX)
            if isinstance(item, Var):
                self.scope.values[item] = loaded
            else:
                self.scope.pointers[item] = self.b.inttoptr(loaded, _PTR)
        self.serial(s.var, begin, end, s.body)
        _finish(self.scope)
        self.scope = outer_scope

    def _launch(self, body_fn: ir.Function, closure: ir.Value, extent: int) -> None:
        b = self.b
        launcher = self.scope.launcher
        args = [body_fn, closure, ir.Constant(_INDEX, extent)]
        is_null = b.icmp_unsigned("==", launcher, ir.Constant(_LAUNCHER, None))
        with b.if_else(is_null) as (serially, threaded):
            with serially:
                b.call(body_fn, [ir.Constant(_INDEX, 0), args[2], closure])
            with threaded:
                b.call(launcher, args)

    def _entry_alloca(self, typ: ir.Type, count: int) -> ir.Value:
        slot = self.scope.allocas.alloca(typ, size=count)
        slot.align = _ALIGN
        return slot

    def allocate(self, s: Allocate) -> None:
        buffer = s.buffer
        elem = _llvm_type(buffer.dtype)
        size = buffer.size * buffer.dtype.bytes
        if buffer.scope is Scope.LOCAL or size <= _STACK_LIMIT:
            self.scope.pointers[buffer] = self._entry_alloca(elem, buffer.size)
            self.stmt(s.body)
            return
        rounded = -(-size // _ALIGN) * _ALIGN
        alloc = self._libc("aligned_alloc", _PTR, [_INDEX, _INDEX])
        pointer = self.b.call(alloc, [ir.Constant(_INDEX, _ALIGN), ir.Constant(_INDEX, rounded)])
        self.scope.pointers[buffer] = pointer
        self.stmt(s.body)
        self.b.call(self._libc("free", ir.VoidType(), [_PTR]), [pointer])

    def _libc(self, name: str, result: ir.Type, params: list[ir.Type]) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(result, params), name)

    def branch(self, s: IfThenElse) -> None:
        cond = self.expr(s.cond)
        if _is_vector(cond):
            raise CompileError("a condition varies across vector lanes", op="if")
        if s.otherwise is None:
            with self.b.if_then(cond):
                self.stmt(s.then)
            return
        with self.b.if_else(cond) as (then, otherwise):
            with then:
                self.stmt(s.then)
            with otherwise:
                self.stmt(s.otherwise)

    def store(self, s: Store) -> None:
        value = self.expr(s.value)
        pointer = self.scope.pointers[s.buffer]
        elem = _llvm_type(s.buffer.dtype)
        (index,) = s.indices
        if self.vector is None or self.vector.var not in free_vars(index):
            if _is_vector(value):  # the same element for every lane: the last lane wins
                value = self.b.extract_element(
                    value, ir.Constant(ir.IntType(32), self.vector.lanes - 1)
                )
            offset = self._clamp(self.index(index), s.buffer, index)
            address = self.b.gep(pointer, [offset], inbounds=True, source_etype=elem)
            self.b.store(value, address, align=s.buffer.dtype.bytes)
            return
        lanes = self.vector.lanes
        if not _is_vector(value):
            value = _splat(self.b, value, lanes)
        base = self._contiguous_base(index)
        if base is not None:
            offset = self._clamp(self.index(base), s.buffer, base)
            address = self.b.gep(pointer, [offset], inbounds=True, source_etype=elem)
            address = self.b.bitcast(address, _vector_pointer(value.type, address))
            self.b.store(value, address, align=self._alignment(s.buffer, base))
            return
        offsets = self._clamp(self.index(index), s.buffer, index)
        for lane in range(lanes):
            at = ir.Constant(ir.IntType(32), lane)
            address = self.b.gep(
                pointer, [self.b.extract_element(offsets, at)], inbounds=True, source_etype=elem
            )
            self.b.store(self.b.extract_element(value, at), address, align=s.buffer.dtype.bytes)

    def call_intrinsic(self, s: CallIntrinsic) -> None:
        function = self.intrinsics.function(s.intrin, self.module)
        args = [
            self.address(arg) if isinstance(arg, BufferAddress) else self.index(arg)
            for arg in s.args
        ]
        self.b.call(function, [*args, ir.Constant(_LAUNCHER, None)])

    def address(self, arg: BufferAddress) -> ir.Value:
        (index,) = arg.indices
        elem = _llvm_type(arg.buffer.dtype)
        pointer = self.scope.pointers[arg.buffer]
        return self.b.gep(pointer, [self.index(index)], inbounds=True, source_etype=elem)

    # -------------------------------------------------------------------------- expressions
    def _contiguous_base(self, index: Expr) -> Expr | None:
        """``index`` at lane 0 if it advances by exactly one per lane, else ``None``."""
        assert self.vector is not None
        form = linear(index)
        var = self.vector.var
        if form.get(var) != 1:
            return None
        rest = {atom: coef for atom, coef in form.items() if atom is not var}
        if any(atom != ONE and var in free_vars(atom) for atom in rest):
            return None
        return from_linear(rest)

    def _alignment(self, buffer: Buffer, base: Expr) -> int:
        """Bytes of alignment provable for a vector access at ``base`` of ``buffer``."""
        assert self.vector is not None
        element = buffer.dtype.bytes
        if buffer.scope is Scope.GLOBAL and buffer in self.func.params:
            return element
        step = 0
        for coef in linear(base).values():
            step = math.gcd(step, coef)
        multiple = (step or 1 << 30) * element
        width = self.vector.lanes * element
        align = math.gcd(multiple, _ALIGN)
        return max(element, min(align, width if width & (width - 1) == 0 else element))

    def index(self, e: Expr) -> ir.Value:
        """``e`` (an int32 index) as i64, or a vector of i64 inside a vectorized loop."""
        return self.expr(e, index=True)

    def expr(self, e: Expr, index: bool = False) -> ir.Value:
        b = self.b
        if isinstance(e, Const):
            if e.dtype is DType.INT32 and index:
                return ir.Constant(_INDEX, int(e.value))
            return ir.Constant(_llvm_type(e.dtype), e.value)
        if isinstance(e, Var):
            value = self.scope.values.get(e)
            if self.vector is not None and e is self.vector.var:
                value = self._ramp()
            if value is None:
                raise CompileError(f"variable {e.name!r} is not bound here", axis=e.name)
            return value if index else self._narrow(value, ir.IntType(32))
        if isinstance(e, Binary):
            return self.binary(e, index)
        if isinstance(e, Compare):
            return self.compare(e)
        if isinstance(e, Not):
            value = self.expr(e.a)
            return b.xor(value, self._like(value, ir.Constant(ir.IntType(1), 1)))
        if isinstance(e, Select):
            cond = self.expr(e.cond)
            self.guarded += 1
            try:
                yes = self.expr(e.true_value, index)
                no = self.expr(e.false_value, index)
            finally:
                self.guarded -= 1
            cond, yes, no = self._unify(cond, yes, no)
            return b.select(cond, yes, no)
        if isinstance(e, Cast):
            return self.cast(e, index)
        if isinstance(e, Call):
            (arg,) = (self.expr(a) for a in e.args)
            return b.call(self._intrinsic(e.func.value, arg.type, 1), [arg], fastmath=_FAST)
        if isinstance(e, Load):
            value = self.load(e)
            return self._widen(value) if index else value
        if isinstance(e, BufferAddress):
            return self.address(e)
        raise CompileError(f"the LLVM backend cannot emit {type(e).__name__}")

    def _intrinsic(self, name: str, typ: ir.Type, arity: int) -> ir.Function:
        """The overloaded LLVM intrinsic ``llvm.NAME`` for float or float-vector ``typ``."""
        suffix = f"v{typ.count}f32" if isinstance(typ, ir.VectorType) else "f32"
        full = f"llvm.{name}.{suffix}"
        existing = self.module.globals.get(full)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(typ, [typ] * arity), full)

    def _ramp(self) -> ir.Value:
        assert self.vector is not None
        lanes = self.vector.lanes
        return ir.Constant(ir.VectorType(_INDEX, lanes), list(range(lanes)))

    def _narrow(self, value: ir.Value, typ: ir.IntType) -> ir.Value:
        target = ir.VectorType(typ, value.type.count) if _is_vector(value) else typ
        if isinstance(value, ir.Constant) and not _is_vector(value):
            return ir.Constant(typ, value.constant)
        return self.b.trunc(value, target)

    def _widen(self, value: ir.Value) -> ir.Value:
        target = ir.VectorType(_INDEX, value.type.count) if _is_vector(value) else _INDEX
        return self.b.sext(value, target)

    def _like(self, value: ir.Value, scalar: ir.Constant) -> ir.Value:
        if _is_vector(value):
            return ir.Constant(
                ir.VectorType(scalar.type, value.type.count), [scalar.constant] * value.type.count
            )
        return scalar

    def _unify(self, *values: ir.Value) -> list[ir.Value]:
        lanes = next((v.type.count for v in values if _is_vector(v)), None)
        if lanes is None:
            return list(values)
        return [v if _is_vector(v) else _splat(self.b, v, lanes) for v in values]

    def binary(self, e: Binary, index: bool) -> ir.Value:
        b = self.b
        a, c = self._unify(self.expr(e.a, index), self.expr(e.b, index))
        if (
            isinstance(a, ir.Constant)
            and isinstance(c, ir.Constant)
            and index
            and not _is_vector(a)
        ):
            folded = _fold_index(e.op, a.constant, c.constant)
            if folded is not None:
                return ir.Constant(_INDEX, folded)
        op = e.op
        if op in (BinOp.SHR, BinOp.SHL):
            return self.shift(e, a, c)
        if e.dtype.is_float:
            if op is BinOp.MIN or op is BinOp.MAX:
                name = "minimum" if op is BinOp.MIN else "maximum"
                return b.call(self._intrinsic(name, a.type, 2), [a, c])
            if op is BinOp.DIV:  # IEEE's: a reciprocal would move a quotient across a tie
                return b.fdiv(a, c)
            emit = {BinOp.ADD: b.fadd, BinOp.SUB: b.fsub, BinOp.MUL: b.fmul}
            return emit[op](a, c, flags=_FAST)
        if op is BinOp.AND:
            return b.and_(a, c)
        if op is BinOp.OR:
            return b.or_(a, c)
        if op is BinOp.ADD:
            return b.add(a, c)
        if op is BinOp.SUB:
            return b.sub(a, c)
        if op is BinOp.MUL:
            return b.mul(a, c)
        if op in (BinOp.MIN, BinOp.MAX):
            pick = b.icmp_signed("<" if op is BinOp.MIN else ">", a, c)
            return b.select(pick, a, c)
        return self.floor_divide(op, a, c)

    def shift(self, e: Binary, a: ir.Value, c: ir.Value) -> ir.Value:
        """``a >> c`` (arithmetic) or ``a << c`` as :class:`BinOp` defines them. LLVM's shifts
        are poison for an amount of the width or more, so unless the amount is a constant in
        range it is clamped to ``bits - 1`` (read as unsigned: a negative one too), and a left
        shift by such an amount selects 0. ``bits`` is the dtype's, also for an index computed
        in 64 bits."""
        b = self.b
        emit = b.ashr if e.op is BinOp.SHR else b.shl
        bits = e.dtype.bits
        if isinstance(e.b, Const) and 0 <= e.b.value < bits:
            return emit(a, c)
        element = a.type.element if _is_vector(a) else a.type
        last = self._like(c, ir.Constant(element, bits - 1))
        inside = b.icmp_unsigned("<=", c, last)
        shifted = emit(a, b.select(inside, c, last))
        if e.op is BinOp.SHR:
            return shifted
        return b.select(inside, shifted, self._like(a, ir.Constant(element, 0)))

    def floor_divide(self, op: BinOp, a: ir.Value, c: ir.Value) -> ir.Value:
        """Floor division or modulo. A divisor of 0 gives 0 and one of -1 wraps (numpy's
        results), where the hardware would trap and kill the process."""
        b = self.b
        element = a.type.element if _is_vector(a) else a.type
        zero, one, minus_one = (self._like(a, ir.Constant(element, v)) for v in (0, 1, -1))
        constant = isinstance(c, ir.Constant) and not _is_vector(c)
        risky = not constant or c.constant in (0, -1)
        trap = b.or_(b.icmp_signed("==", c, zero), b.icmp_signed("==", c, minus_one))
        divisor = b.select(trap, one, c) if risky else c
        quotient = b.sdiv(a, divisor)
        remainder = b.srem(a, divisor)
        # floor semantics: adjust when the remainder is non-zero and its sign differs from c's
        adjust = b.and_(
            b.icmp_signed("!=", remainder, zero),
            b.xor(b.icmp_signed("<", remainder, zero), b.icmp_signed("<", divisor, zero)),
        )
        if op is BinOp.FLOOR_DIV:
            result = b.select(adjust, b.sub(quotient, one), quotient)
            special = b.select(b.icmp_signed("==", c, zero), zero, b.sub(zero, a))
        else:
            result = b.select(adjust, b.add(remainder, divisor), remainder)
            special = zero
        return b.select(trap, special, result) if risky else result

    def compare(self, e: Compare) -> ir.Value:
        a, c = self._unify(self.expr(e.a), self.expr(e.b))
        if e.a.dtype.is_float:
            if e.op is CmpOp.NE:
                return self.b.fcmp_unordered("!=", a, c)
            return self.b.fcmp_ordered(e.op.value, a, c)
        if e.a.dtype is DType.BOOL:
            return self.b.icmp_unsigned(e.op.value, a, c)
        return self.b.icmp_signed(e.op.value, a, c)

    def cast(self, e: Cast, index: bool) -> ir.Value:
        b = self.b
        source = e.value.dtype
        value = self.expr(e.value)
        target_dtype = e.dtype
        scalar = _INDEX if index and target_dtype is DType.INT32 else _llvm_type(target_dtype)
        target = ir.VectorType(scalar, value.type.count) if _is_vector(value) else scalar
        if target_dtype is DType.BOOL:
            zero = self._like(
                value, ir.Constant(value.type.element if _is_vector(value) else value.type, 0)
            )
            if source.is_float:
                return b.fcmp_unordered("!=", value, zero)
            return b.icmp_unsigned("!=", value, zero)
        if source is DType.BOOL:
            return b.uitofp(value, target) if target_dtype.is_float else b.zext(value, target)
        if source.is_float and target_dtype.is_float:
            return value
        if source.is_float:
            return b.fptosi(value, target)
        if target_dtype.is_float:
            return b.sitofp(value, target)
        source_bits = value.type.element.width if _is_vector(value) else value.type.width
        if scalar.width > source_bits:
            return b.sext(value, target)
        if scalar.width < source_bits:
            return b.trunc(value, target)
        return value

    def load(self, e: Load) -> ir.Value:
        b = self.b
        buffer = e.buffer
        elem = _llvm_type(buffer.dtype)
        pointer = self.scope.pointers[buffer]
        (index,) = e.indices
        uniform = self.vector is None or self.vector.var not in free_vars(index)
        if uniform or (not self.guarded and self._contiguous_base(index) is not None):
            base = index if uniform else self._contiguous_base(index)
            offset = self._clamp(self.index(base), buffer, base)
            address = b.gep(pointer, [offset], inbounds=True, source_etype=elem)
            if uniform:
                return b.load(address, typ=elem, align=buffer.dtype.bytes)
            vector_type = ir.VectorType(elem, self.vector.lanes)
            address = b.bitcast(address, _vector_pointer(vector_type, address))
            return b.load(address, typ=vector_type, align=self._alignment(buffer, base))
        offsets = self._clamp(self.index(index), buffer, index)
        lanes = self.vector.lanes
        result = ir.Constant(ir.VectorType(elem, lanes), ir.Undefined)
        for lane in range(lanes):
            at = ir.Constant(ir.IntType(32), lane)
            address = b.gep(
                pointer, [b.extract_element(offsets, at)], inbounds=True, source_etype=elem
            )
            result = b.insert_element(
                result, b.load(address, typ=elem, align=buffer.dtype.bytes), at
            )
        return result

    def _clamp(self, offset: ir.Value, buffer: Buffer, index: Expr) -> ir.Value:
        """Keep the address inside the buffer where it cannot be proven to stay there: in a
        select's branches (the value is then discarded when the branch is not taken) and where
        the index depends on data (``A[B[i]]``: an out-of-range ``B[i]`` reads the nearest
        element instead of faulting)."""
        indirect = any(isinstance(n, Load) for n in walk(index))
        if not (self.guarded or indirect) or buffer.strides is not None:
            return offset
        b = self.b
        low = self._like(offset, ir.Constant(_INDEX, 0))
        high = self._like(offset, ir.Constant(_INDEX, buffer.size - 1))
        offset = b.select(b.icmp_signed("<", offset, low), low, offset)
        return b.select(b.icmp_signed(">", offset, high), high, offset)


def _fold_index(op: BinOp, x: int, y: int) -> int | None:
    if op is BinOp.ADD:
        return x + y
    if op is BinOp.SUB:
        return x - y
    if op is BinOp.MUL:
        return x * y
    if op is BinOp.FLOOR_DIV and y:
        return x // y
    if op is BinOp.FLOOR_MOD and y:
        return x % y
    if op in (BinOp.SHR, BinOp.SHL):  # an index is int32, computed in 64 bits
        return fold_shift(op, x, y, DType.INT32.bits)
    return None


def _vectorizable(loop: For) -> bool:
    """Whether ``loop``'s body can be emitted as vector code (see the module docstring)."""
    if loop.extent > _MAX_LANES:
        return False

    def ok(s: Stmt) -> bool:
        if isinstance(s, Store):
            return True
        if isinstance(s, Seq):
            return all(ok(part) for part in s.stmts)
        if isinstance(s, For):
            return s.kind is ForKind.UNROLLED and s.extent <= _MAX_UNROLL and ok(s.body)
        if isinstance(s, IfThenElse):
            uniform = loop.var not in free_vars(s.cond)
            return uniform and ok(s.then) and (s.otherwise is None or ok(s.otherwise))
        if isinstance(s, AttrStmt):
            return s.key is AttrKey.PRAGMA and ok(s.body)
        return False

    return ok(loop.body)


def _stride_vars(params: Sequence[Buffer]) -> list[Var]:
    """The variables among the parameters' strides, in order (they become i64 arguments)."""
    found: dict[Var, None] = {}
    for buffer in params:
        for stride in buffer.strides or ():
            for var in sorted(free_vars(stride), key=lambda v: v.name):
                found.setdefault(var, None)
    return list(found)


class _Intrinsics:
    """Implementations of tensor intrinsics, compiled from their declarations on first use."""

    def __init__(self) -> None:
        self._made: dict[object, str] = {}

    def function(self, intrin: object, module: ir.Module) -> ir.Function:
        name = self._made.get(intrin)
        if name is None:
            lowered = lower_intrinsic(intrin)
            name = lowered.name
            self._made[intrin] = name
            _Emitter(module, lowered, self)
        return module.globals[name]


# ------------------------------------------------------------------------------------ module
@dataclass
class LLVMModule:
    """Optimised LLVM IR for ``target``, with ways to get machine code out of it."""

    ir_text: str
    target: Target
    func: LoweredFunc
    _module: llvm.ModuleRef

    def jit(self) -> tuple[int, object]:
        """Compile for this process: ``(address of the function, engine to keep alive)``."""
        if not self.target.is_host:
            raise CompileError(
                f"cannot run code for {self.target.triple} here: use emit_object or "
                "export_library to cross-compile",
                op=self.func.name,
            )
        engine = llvm.create_mcjit_compiler(
            llvm.parse_assembly(self.ir_text), self.target.machine()
        )
        engine.finalize_object()
        return engine.get_function_address(self.func.name), engine

    def emit_assembly(self) -> str:
        return self.target.machine().emit_assembly(self._module)

    def emit_object(self, path: str | Path | None = None) -> bytes:
        """The object file's bytes (written to ``path`` when given)."""
        data = self.target.machine().emit_object(self._module)
        if path is not None:
            Path(path).write_bytes(data)
        return data

    def export_library(self, path: str | Path, cc: str = "cc") -> Path:
        """Link a shared library with the system compiler ``cc`` (a cross compiler for
        another target)."""
        path = Path(path)
        with tempfile.TemporaryDirectory() as scratch:
            obj = Path(scratch) / "kernel.o"
            self.emit_object(obj)
            try:
                subprocess.run(
                    [cc, "-shared", "-o", str(path), str(obj)],
                    check=True,
                    capture_output=True,
                    text=True,
                )
            except (OSError, subprocess.CalledProcessError) as error:
                detail = getattr(error, "stderr", "") or str(error)
                raise CompileError(f"linking {path.name} with {cc} failed: {detail}") from None
        return path


def codegen(func: LoweredFunc, target: Target | str = "llvm") -> LLVMModule:
    """Compile ``func`` (after the lowering pipeline) to optimised LLVM IR for ``target``."""
    target = Target.parse(target)
    machine = target.machine()
    module = ir.Module(name=func.name)
    module.triple = target.triple
    module.data_layout = str(machine.target_data)
    _Emitter(module, func, _Intrinsics())
    parsed = optimise(module, machine, func.name)
    return LLVMModule(str(parsed), target, func, parsed)


def optimise(module: ir.Module, machine: llvm.TargetMachine, name: str) -> llvm.ModuleRef:
    """``module`` parsed, verified and optimised (-O3, vectorizers on) for ``machine``."""
    try:
        parsed = llvm.parse_assembly(str(module))
        parsed.verify()
    except RuntimeError as error:
        raise CompileError(f"generated LLVM IR is invalid: {error}", op=name) from None
    options = llvm.PipelineTuningOptions(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(parsed, builder)
    return parsed

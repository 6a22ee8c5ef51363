"""Tensor expressions: what to compute, independent of how (the definitions behind ``te``).

``placeholder`` declares an input; ``compute(shape, fcompute)`` declares a tensor whose element
at each index is ``fcompute(*axes)``; reductions (``sum``, ``max``, ``min``) run over axes made
by ``reduce_axis``. Shapes are static. Every read is checked when the compute is declared: the
index count, and (where the index does not sit under a ``select``) that the index stays inside the
tensor for every value of the axes, so a mistake names the tensor, the dimension and the compute.

TVM's spellings work too: ``A(i, j)`` reads like ``A[i, j]`` (so ``lambda *i: A(*i)`` copies a
tensor), ``expr.astype(dtype)`` casts, ``max(x, 0)`` and ``min(x, 127)`` are elementwise when
their second operand is not a reduction axis, ``if_then_else`` and ``all`` are ``select`` and
``all_of``, and ``thread_axis("cthread")`` is what ``Stage.bind`` takes for virtual threads.

This layer knows scalar expressions and their arithmetic only, not schedules or the loop IR;
:mod:`compiler.te` is the public namespace, these names and ``create_schedule``.
"""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from compiler.arith import const_bounds
from compiler.errors import CompileError
from compiler.expr import (
    Binary,
    BinOp,
    Call,
    CmpOp,
    Compare,
    DType,
    Expr,
    IterKind,
    IterVar,
    MathFunc,
    Reduce,
    ReduceOp,
    Select,
    TensorRead,
    Var,
    as_expr,
    const,
)
from compiler.visit import walk

__all__ = [
    "VIRTUAL_THREAD_TAGS",
    "ComputeOp",
    "DType",
    "Operation",
    "PlaceholderOp",
    "Tensor",
    "TensorIntrin",
    "ThreadAxis",
    "ThreadTag",
    "all",
    "all_of",
    "cast",
    "compute",
    "const",
    "decl_tensor_intrin",
    "equal",
    "exp",
    "if_then_else",
    "log",
    "max",
    "max_value",
    "maximum",
    "min",
    "min_value",
    "minimum",
    "not_equal",
    "placeholder",
    "reduce_axis",
    "round",
    "select",
    "sqrt",
    "sum",
    "thread_axis",
]


@dataclass(frozen=True, eq=False)
class PlaceholderOp:
    """An input tensor."""

    name: str
    shape: tuple[int, ...]
    dtype: DType

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return ()


@dataclass(frozen=True, eq=False)
class ComputeOp:
    """``output[axes] = body``; ``body`` may be a :class:`Reduce` at its top (only there)."""

    name: str
    axes: tuple[IterVar, ...]
    body: Expr

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(axis.extent for axis in self.axes)

    @property
    def dtype(self) -> DType:
        return self.body.dtype

    @property
    def reduce_axes(self) -> tuple[IterVar, ...]:
        return self.body.axes if isinstance(self.body, Reduce) else ()

    @property
    def axis(self) -> tuple[IterVar, ...]:
        """TVM's name for :attr:`axes`."""
        return self.axes

    @property
    def reduce_axis(self) -> tuple[IterVar, ...]:
        """TVM's name for :attr:`reduce_axes`."""
        return self.reduce_axes

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """The tensors this op reads, in order of first appearance."""
        seen: dict[Tensor, None] = {}
        for node in walk(self.body):
            if isinstance(node, TensorRead):
                seen.setdefault(node.tensor, None)
        return tuple(seen)


Operation = PlaceholderOp | ComputeOp


@dataclass(frozen=True, eq=False)
class Tensor:
    """The output of an operation; ``tensor[i, j]`` reads it inside another compute."""

    op: Operation

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def shape(self) -> tuple[int, ...]:
        return self.op.shape

    @property
    def dtype(self) -> DType:
        return self.op.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> TensorRead:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != self.ndim:
            raise CompileError(
                f"indexed with {len(indices)} indices, has {self.ndim} dimensions",
                tensor=self.name,
            )
        exprs = []
        for dim, index in enumerate(indices):
            expr = as_expr(index)
            if expr.dtype is not DType.INT32:
                raise CompileError(
                    f"index must be int32, got {expr.dtype}", tensor=self.name, axis=str(dim)
                )
            exprs.append(expr)
        return TensorRead(self, tuple(exprs))

    def __call__(self, *indices: Any) -> TensorRead:
        """``A(i, j)`` is ``A[i, j]`` (TVM's spelling, as in ``lambda *i: A(*i)``)."""
        return self[indices]

    def __repr__(self) -> str:
        return f"Tensor({self.name}, {self.shape}, {self.dtype})"


def _is_int(value: Any) -> bool:
    """Whether ``value`` is an integer (Python's or numpy's), not a ``bool``."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _shape(shape: Sequence[int] | int, name: str) -> tuple[int, ...]:
    if _is_int(shape):
        dims: tuple[Any, ...] = (shape,)
    elif isinstance(shape, list | tuple):
        dims = tuple(shape)
    else:
        raise CompileError(
            f"the shape must be an int or a tuple of ints, got {type(shape).__name__} {shape!r}",
            tensor=name,
        )
    for dim, extent in enumerate(dims):
        if not _is_int(extent) or extent < 1:
            raise CompileError(
                f"extent {extent!r} is not a positive integer", tensor=name, axis=str(dim)
            )
    dims = tuple(int(extent) for extent in dims)
    return dims


def placeholder(
    shape: Sequence[int] | int, dtype: str | DType = "float32", name: str = "placeholder"
) -> Tensor:
    """An input tensor of static ``shape`` and ``dtype``."""
    return Tensor(PlaceholderOp(name, _shape(shape, name), DType.of(dtype)))


def reduce_axis(dom: tuple[int, int] | int, name: str = "k") -> IterVar:
    """A reduction axis over ``range(*dom)`` (or ``range(dom)``)."""
    if _is_int(dom):
        begin, end = 0, dom
    elif isinstance(dom, list | tuple) and len(dom) == 2 and builtins.all(map(_is_int, dom)):
        begin, end = dom
    else:
        raise CompileError(
            f"the domain must be an int or a (begin, end) pair of ints, got "
            f"{type(dom).__name__} {dom!r}",
            axis=name,
            op="reduce_axis",
        )
    if end <= begin:
        raise CompileError(f"empty reduction range {begin}..{end}", axis=name)
    return IterVar(Var(name), end - begin, IterKind.REDUCE, begin)


def _axis_names(fcompute: Callable[..., Any], ndim: int) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if len(params) == ndim and builtins.all(p.kind is p.POSITIONAL_OR_KEYWORD for p in params):
        return [p.name for p in params]
    return [f"ax{dim}" for dim in range(ndim)]


def _check_arity(fcompute: Callable[..., Any], ndim: int, name: str) -> None:
    """``fcompute`` must take one argument per dimension (``lambda *i:`` takes any number)."""
    if not callable(fcompute):
        raise CompileError(
            f"fcompute must be a function of the axes, got {type(fcompute).__name__} {fcompute!r}",
            tensor=name,
            op="compute",
        )
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return  # no signature to check (some builtins): calling it will tell
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    keyword_only = [p.name for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    variadic = builtins.any(p.kind is p.VAR_POSITIONAL for p in params)
    if len(required) <= ndim and (variadic or ndim <= len(positional)) and not keyword_only:
        return
    if keyword_only:
        takes = f"has required keyword-only arguments ({', '.join(keyword_only)})"
    elif variadic:
        takes = f"takes at least {len(required)} axis arguments"
    elif len(required) == len(positional):
        takes = f"takes {len(positional)} axis argument{'s' * (len(positional) != 1)}"
    else:
        takes = f"takes {len(required)} to {len(positional)} axis arguments"
    raise CompileError(
        f"fcompute {takes} but the shape has {ndim} dimension{'s' * (ndim != 1)}: give it one "
        "argument per dimension (or `lambda *i:`)",
        tensor=name,
        op="compute",
    )


def compute(
    shape: Sequence[int] | int, fcompute: Callable[..., Any], name: str = "compute"
) -> Tensor:
    """The tensor whose element at ``axes`` is ``fcompute(*axes)``."""
    dims = _shape(shape, name)
    _check_arity(fcompute, len(dims), name)
    axes = tuple(
        IterVar(Var(axis_name), extent)
        for axis_name, extent in zip(_axis_names(fcompute, len(dims)), dims, strict=True)
    )
    try:
        body = as_expr(fcompute(*axes))
    except CompileError as error:
        raise error.within(name) from None
    if body.dtype is DType.BOOL:
        raise CompileError("a compute must produce numbers, not conditions: cast it", tensor=name)
    op = ComputeOp(name, axes, body)
    _check_body(op)
    return Tensor(op)


def _check_body(op: ComputeOp) -> None:
    nested = [n for n in walk(op.body) if isinstance(n, Reduce) and n is not op.body]
    if nested:
        raise CompileError("a reduction may only be the whole body of a compute", tensor=op.name)
    ranges = {axis.var: (axis.begin, axis.begin + axis.extent - 1) for axis in op.axes}
    ranges.update({axis.var: (axis.begin, axis.begin + axis.extent - 1) for axis in op.reduce_axes})
    bound = set(ranges)
    guarded = {
        id(node)
        for select in walk(op.body)
        if isinstance(select, Select)
        for branch in (select.true_value, select.false_value)
        for node in walk(branch)
    }
    for node in walk(op.body):
        if not isinstance(node, TensorRead):
            continue
        for dim, (index, extent) in enumerate(zip(node.indices, node.tensor.shape, strict=True)):
            unknown = {n for n in walk(index) if isinstance(n, Var)} - bound
            if unknown:
                names = ", ".join(sorted(v.name for v in unknown))
                raise CompileError(
                    f"index uses {names}, which is not an axis of this compute",
                    tensor=node.tensor.name,
                    axis=str(dim),
                    op=op.name,
                )
            if id(node) in guarded:
                continue
            lo, hi = const_bounds(index, ranges)
            if lo is not None and hi is not None and (lo < 0 or hi >= extent):
                raise CompileError(
                    f"index {lo}..{hi} leaves the dimension's range 0..{extent - 1}",
                    tensor=node.tensor.name,
                    axis=str(dim),
                    op=op.name,
                )


# ------------------------------------------------------------------------------ elementwise
def maximum(a: Any, b: Any) -> Expr:
    """Elementwise maximum."""
    return Binary(BinOp.MAX, *_same_dtype("maximum", a, b))


def minimum(a: Any, b: Any) -> Expr:
    """Elementwise minimum."""
    return Binary(BinOp.MIN, *_same_dtype("minimum", a, b))


def _same_dtype(op: str, a: Any, b: Any) -> tuple[Expr, Expr]:
    left = as_expr(a, as_expr(b).dtype if isinstance(b, Expr) else None)
    right = as_expr(b, left.dtype)
    if left.dtype is not right.dtype:
        raise CompileError(f"dtypes {left.dtype} and {right.dtype} differ: cast one", op=op)
    return left, right


def equal(a: Any, b: Any) -> Expr:
    """The condition ``a == b``."""
    return Compare(CmpOp.EQ, *_same_dtype("equal", a, b))


def not_equal(a: Any, b: Any) -> Expr:
    """The condition ``a != b``."""
    return Compare(CmpOp.NE, *_same_dtype("not_equal", a, b))


def all_of(*conds: Any) -> Expr:
    """The conjunction of the conditions ``conds`` (``true`` when there are none)."""
    if not conds:
        return const(True, DType.BOOL)
    result = as_expr(conds[0])
    for cond in conds[1:]:
        result = result & as_expr(cond)
    return result


def select(cond: Any, true_value: Any, false_value: Any) -> Expr:
    """``true_value`` where ``cond`` holds, else ``false_value``."""
    condition = as_expr(cond)
    if condition.dtype is not DType.BOOL:
        raise CompileError(f"select needs a condition, got {condition.dtype}", op="select")
    left, right = _same_dtype("select", true_value, false_value)
    return Select(condition, left, right)


#: TVM's name for :func:`all_of` (``tvm.tir.all``).
all = all_of
#: TVM's name for :func:`select` (``tvm.tir.if_then_else``).
if_then_else = select


def cast(dtype: str | DType, value: Any) -> Expr:
    """``value`` converted to ``dtype`` (``value`` itself when it already has ``dtype``)."""
    return as_expr(value).astype(dtype)


# ------------------------------------------------------------------------------- reductions
def _is_reduction(axis: Any) -> bool:
    """Whether ``axis`` asks for a reduction: an axis made by ``reduce_axis``, or a list or
    tuple (of them)."""
    return isinstance(axis, list | tuple) or (
        isinstance(axis, IterVar) and axis.kind is IterKind.REDUCE
    )


def _reducer(
    combiner: ReduceOp, elementwise: Callable[[Any, Any], Expr] | None = None
) -> Callable[[Any, Any], Expr]:
    name = combiner.name.lower()

    def reduce(expr: Any, axis: Any) -> Expr:
        if elementwise is not None and not _is_reduction(axis):
            return elementwise(expr, axis)
        axes = tuple(axis) if isinstance(axis, list | tuple) else (axis,)
        for item in axes:
            if not isinstance(item, IterVar) or item.kind is not IterKind.REDUCE:
                raise CompileError(
                    f"{name} reduces over axes made by reduce_axis, got {item!r}", op=name
                )
        return Reduce(combiner, as_expr(expr), axes)

    reduce.__name__ = name
    reduce.__doc__ = (
        f"The {name} of ``expr`` over the reduction ``axis`` (an axis made by ``reduce_axis``, "
        "or a list or tuple of them)."
    )
    if elementwise is not None:
        reduce.__doc__ += (
            f" Given any other second operand, TVM's elementwise form (``te.{name}(x, 0)``): "
            f"``{elementwise.__name__}(expr, axis)``."
        )
    return reduce


sum = _reducer(ReduceOp.SUM)
max = _reducer(ReduceOp.MAX, maximum)
min = _reducer(ReduceOp.MIN, minimum)


def _math(func: MathFunc) -> Callable[[Any], Expr]:
    def apply(value: Any) -> Expr:
        expr = as_expr(value)
        if not expr.dtype.is_float:
            raise CompileError(f"{func.value} needs float32, got {expr.dtype}", op=func.value)
        return Call(func, (expr,))

    apply.__name__ = func.value
    apply.__doc__ = f"Elementwise {func.value} (float32)."
    return apply


exp = _math(MathFunc.EXP)
log = _math(MathFunc.LOG)
sqrt = _math(MathFunc.SQRT)
round = _math(MathFunc.ROUND)  # TVM's spelling (shadows the builtin here)
round.__doc__ = "Elementwise rounding to the nearest integer, ties to even (float32)."


def max_value(dtype: str | DType) -> Expr:
    """The largest value of ``dtype`` (``inf`` for floats)."""
    return ReduceOp.MIN.identity(DType.of(dtype))


def min_value(dtype: str | DType) -> Expr:
    """The smallest value of ``dtype`` (``-inf`` for floats)."""
    return ReduceOp.MAX.identity(DType.of(dtype))


# --------------------------------------------------------------------------------- threads
class ThreadTag(Enum):
    """GPU grid axes a loop can be bound to."""

    BLOCK_X = "blockIdx.x"
    BLOCK_Y = "blockIdx.y"
    BLOCK_Z = "blockIdx.z"
    THREAD_X = "threadIdx.x"
    THREAD_Y = "threadIdx.y"
    THREAD_Z = "threadIdx.z"


#: Tags of virtual threads: ``bind`` to one runs the loop as virtual threads (``vthread``).
VIRTUAL_THREAD_TAGS = ("cthread", "vthread")


@dataclass(frozen=True)
class ThreadAxis:
    """TVM's thread axis, which ``Stage.bind`` binds a loop to: a virtual thread (``tag`` in
    :data:`VIRTUAL_THREAD_TAGS`) or a GPU grid axis (``tag`` a :class:`ThreadTag`'s value)."""

    tag: str


def thread_axis(tag: str) -> ThreadAxis:
    """The thread axis named ``tag`` (``"cthread"``, ``"vthread"``, ``"blockIdx.x"``,
    ``"threadIdx.x"``, ...); an unknown tag raises :class:`CompileError` naming it."""
    known = (*VIRTUAL_THREAD_TAGS, *(t.value for t in ThreadTag))
    if tag not in known:
        raise CompileError(
            f"unknown thread tag {tag!r} (known: {', '.join(known)})", op="thread_axis"
        )
    return ThreadAxis(tag)


# ------------------------------------------------------------------------------ intrinsics
@dataclass(frozen=True, eq=False)
class TensorIntrin:
    """A declared micro-kernel: ``output`` computed from the placeholders ``inputs``.

    ``tensorize`` replaces a loop nest that computes the same thing with one call. A reduction
    intrinsic *accumulates* into its output (the caller's loop nest initialises it). Code
    generators implement it from this declaration (the CPU backend compiles the compute itself
    into a function that takes each operand's address and row strides).
    """

    name: str
    output: Tensor
    inputs: tuple[Tensor, ...]


def decl_tensor_intrin(output: Tensor, name: str) -> TensorIntrin:
    """Declare ``output`` (a compute over placeholders only) as a tensor intrinsic."""
    if not isinstance(output.op, ComputeOp):
        raise CompileError("an intrinsic is declared by a compute", tensor=output.name)
    inputs = output.op.inputs
    for tensor in inputs:
        if not isinstance(tensor.op, PlaceholderOp):
            raise CompileError(
                "an intrinsic may only read placeholders", tensor=tensor.name, op=name
            )
    return TensorIntrin(name, output, inputs)

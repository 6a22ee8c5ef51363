"""The operator contract: what every graph operator is, in one class per operator.

An operator is a subclass of :class:`Operator` that names itself (``name``, as graphs and saved
models spell it, ONNX's name for ONNX operators) and holds everything that follows from that
name alone: its attribute record (a frozen dataclass whose fields, with their defaults, are the
attribute schema), its arity, its type rule (output types from input types), its numpy kernel
and its multiply-accumulate count. Defining the class registers it in :data:`OPERATORS`; the
registration checks that the parts agree (the kernel's keyword-only parameters are the
record's fields, its positional parameters admit the arity), so a kernel can no longer drift
from the record it is called with.

``compiler`` and ``runtime`` both import this package (``runtime`` never imports ``compiler``):
the compiler's graph IR takes its ``Op`` enum, attribute records and type rules from here, the
runtime's executor its kernels. What only the compiler knows (frontend converters, quantization
rules, accelerator templates) is registered there, per operator, against these names.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from isa.compat import StrEnum
from isa.errors import VtaforgeError

try:  # the narrow dtypes are ml_dtypes' numpy types; importing it registers their names
    import ml_dtypes
except ImportError:  # numpy alone (as on a board): the narrow dtypes are not among DTYPES
    ml_dtypes = None

__all__ = [
    "DTYPES",
    "FLOAT8",
    "FLOATS",
    "INTEGERS",
    "MANY",
    "NARROW",
    "NARROW_FLOATS",
    "NARROW_INTEGERS",
    "NATIVE",
    "NUMERIC",
    "OPERATORS",
    "AxisAttrs",
    "NoAttrs",
    "OperandError",
    "Operator",
    "OperatorError",
    "Origin",
    "Rule",
    "TensorType",
    "broadcast",
    "check_definition",
    "f32",
    "floating",
    "kernel_kwargs",
    "limits",
    "need",
    "resolve_axis",
    "same_dtype",
]

#: The float element types (float32 is the one the quantizer and the accelerator know).
FLOATS = ("float32", "float16", "float64")
#: The integer element types, signed then unsigned.
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
#: The element types that arithmetic takes.
NUMERIC = FLOATS + INTEGERS
#: numpy's own element types: what the operators that take any dtype take.
NATIVE = (*NUMERIC, "bool")
#: The float8 types with ONNX's ``saturate`` (a value past the largest finite one becomes it).
FLOAT8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
#: The narrow float types (as ml_dtypes names them; empty without ml_dtypes).
NARROW_FLOATS = (*FLOAT8, "float8_e8m0fnu", "float4_e2m1fn", "bfloat16") if ml_dtypes else ()
#: The narrow integer types (empty without ml_dtypes).
NARROW_INTEGERS = ("int4", "uint4", "int2", "uint2") if ml_dtypes else ()
#: The element types that ml_dtypes adds to numpy: values of them are moved (graph inputs,
#: constants), converted (Cast), quantized and dequantized only; arithmetic refuses them.
NARROW = NARROW_FLOATS + NARROW_INTEGERS
#: The element types a value may have.
DTYPES = (*NATIVE, *NARROW)


class OperatorError(VtaforgeError, ValueError):
    """A value or an operator application that the operator contract refuses."""


class OperandError(OperatorError):
    """A type rule's complaint about the operands it was given (the compiler adds the node)."""


def f32(array: np.ndarray) -> np.ndarray:
    """``array`` as float32 (itself where it is already)."""
    return np.asarray(array, dtype=np.float32)


def floating(array: np.ndarray) -> np.ndarray:
    """``array`` as an array of its own float dtype (float16, float32 or float64), or as
    float32 where it is not of a float dtype (a kernel computes in its operand's float type)."""
    array = np.asarray(array)
    return array if array.dtype.kind == "f" else array.astype(np.float32)


def limits(dtype: str) -> tuple[float, float]:
    """The least and the greatest finite value of ``dtype``, one of :data:`NUMERIC` or
    :data:`NARROW` (whose ranges ml_dtypes' ``finfo`` and ``iinfo`` give)."""
    integer = dtype in INTEGERS or dtype in NARROW_INTEGERS
    info = (ml_dtypes or np).iinfo(dtype) if integer else (ml_dtypes or np).finfo(dtype)
    return float(info.min), float(info.max)


def need(condition: bool, message: str) -> None:
    """Raise :class:`OperandError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise OperandError(message)


@dataclass(frozen=True)
class TensorType:
    """A value's static shape and element type (one of :data:`DTYPES`)."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        if self.dtype not in DTYPES:
            raise OperatorError(f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if any(d < 0 for d in self.shape):
            raise OperatorError(f"shape {list(self.shape)} has a negative dimension")

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class NoAttrs:
    """The attribute record of operators without attributes."""


@dataclass(frozen=True)
class AxisAttrs:
    """Operators of one axis (Flatten, Concat, Softmax, ...): the axis, non-negative (resolved
    against the rank by the frontends)."""

    axis: int


def resolve_axis(attrs: AxisAttrs, rank: int) -> int:
    """``attrs.axis``, which must lie in ``[0, rank)``."""
    need(0 <= attrs.axis < rank, f"axis {attrs.axis} is out of range for rank {rank}")
    return attrs.axis


class Origin(StrEnum):
    """Where an operator comes from, which says what else it should have."""

    #: an ONNX operator of the same name and semantics, read by the frontends
    ONNX = "onnx"
    #: an integer operator that the quantize pass introduces (the accelerator's arithmetic)
    QUANTIZED = "quantized"
    #: a layout change that the model planner inserts between the CPU and the accelerator
    LAYOUT = "layout"
    #: an operator of another origin whose constant operands the CPU target laid out at
    #: compile time for its kernels (weights pre-packed into their blocks)
    CPU = "cpu"


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """numpy's (and ONNX's multidirectional) broadcast of two shapes."""
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + a
    b = (1,) * (rank - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        need(x == y or x == 1 or y == 1, f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


def same_dtype(inputs: Sequence[TensorType], *allowed: str) -> str:
    """The one dtype of ``inputs``, which must be one of ``allowed``."""
    dtype = inputs[0].dtype
    need(dtype in allowed, f"needs {' or '.join(allowed)} operands, got {dtype}")
    need(all(t.dtype == dtype for t in inputs), "mixes operand dtypes")
    return dtype


#: Every operator, by name, in the order of definition.
OPERATORS: dict[str, type[Operator]] = {}

#: An arity's upper end for operators that take any number of inputs.
MANY = 1 << 30


class Operator:
    """One operator's contract. Subclasses that set ``name`` are registered; intermediate
    classes (sharing a type rule, say) leave it unset.

    - ``name``: as graphs and saved models spell it; ``member``: the compiler's ``Op`` enum
      member; ``origin``: an :class:`Origin`.
    - ``Attrs``: the attribute record, a frozen dataclass (fields with defaults are optional).
    - ``arity``: the least and the most inputs (optional inputs trail).
    - :meth:`infer`: the output types from the attribute record, the input types and the arrays
      of inputs that are constants (None elsewhere); raises :class:`OperandError`.
    - :meth:`kernel`: the output array from the input arrays (positionally; optional trailing
      inputs may be left out) and the record's fields as keyword arguments (tuples may arrive as
      lists: a saved model's JSON gives lists). It must not write to its inputs; operators that
      only move data may return an input or a view of it, so callers must not write to a result.
    - :meth:`macs`: multiply-accumulates of one application (0 for operators that have none).
    """

    name: ClassVar[str]
    member: ClassVar[str]
    origin: ClassVar[Origin] = Origin.ONNX
    Attrs: ClassVar[type] = NoAttrs
    arity: ClassVar[tuple[int, int]] = (1, 1)

    @staticmethod
    def infer(
        attrs: Any, inputs: Sequence[TensorType], consts: Sequence[np.ndarray | None]
    ) -> list[TensorType]:
        raise NotImplementedError

    @staticmethod
    def kernel(*arrays: np.ndarray, **attrs: Any) -> np.ndarray:
        raise NotImplementedError

    @staticmethod
    def macs(attrs: Any, inputs: Sequence[TensorType], outputs: Sequence[TensorType]) -> int:
        del attrs, inputs, outputs
        return 0

    @classmethod
    def output_types(
        cls,
        attrs: Any,
        inputs: Sequence[TensorType],
        consts: Sequence[np.ndarray | None] | None = None,
    ) -> list[TensorType]:
        """:meth:`infer` after checking the record's type and the arity (every complaint an
        :class:`OperandError`)."""
        if not isinstance(attrs, cls.Attrs):
            raise OperandError(f"needs a {cls.Attrs.__name__} record, got {type(attrs).__name__}")
        low, high = cls.arity
        need(
            low <= len(inputs) <= high,
            f"takes {low}"
            + (f" to {'any number of' if high == MANY else high}" if high != low else "")
            + f" inputs, got {len(inputs)}",
        )
        return cls.infer(attrs, inputs, consts if consts is not None else [None] * len(inputs))

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            check_definition(cls)
            OPERATORS[cls.name] = cls


def check_definition(cls: type[Operator]) -> None:
    """Raise TypeError where an operator's parts disagree (run when it is defined)."""
    where = f"operator {cls.__name__} ({getattr(cls, 'name', '?')})"
    if cls.name in OPERATORS:
        raise TypeError(f"{where}: the name is registered twice")
    if any(other.member == cls.member for other in OPERATORS.values()):
        raise TypeError(f"{where}: the member {cls.member} is taken")
    if not (dataclasses.is_dataclass(cls.Attrs) and cls.Attrs.__dataclass_params__.frozen):
        raise TypeError(f"{where}: Attrs must be a frozen dataclass")
    for method in ("infer", "kernel"):
        if getattr(cls, method) is getattr(Operator, method):
            raise TypeError(f"{where}: defines no {method}")
    fields = [f.name for f in dataclasses.fields(cls.Attrs)]
    params = inspect.signature(cls.kernel).parameters.values()
    keywords = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    if sorted(keywords) != sorted(fields):
        raise TypeError(
            f"{where}: the kernel's keyword-only parameters {keywords} are not the fields of "
            f"{cls.Attrs.__name__} {fields}"
        )
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is p.empty for p in positional)
    variadic = any(p.kind is p.VAR_POSITIONAL for p in params)
    low, high = cls.arity
    if not 0 <= low <= high or required > low or (not variadic and len(positional) < high):
        raise TypeError(
            f"{where}: the kernel's positional parameters ({len(positional)}, {required} "
            f"required{', and more' if variadic else ''}) do not admit the arity {cls.arity}"
        )


def kernel_kwargs(attrs: object) -> dict[str, Any]:
    """An attribute record as its operator's kernel's keyword arguments (its fields)."""
    return {f.name: getattr(attrs, f.name) for f in dataclasses.fields(attrs)}


#: A type rule's signature (for helpers shared by several operators).
Rule = Callable[[Any, Sequence[TensorType], Sequence[np.ndarray | None]], list[TensorType]]

"""The compiler's exception types.

:class:`CompileError` covers everything from tensor expressions down to machine code (a bad
dtype mix, an out-of-range index, an argument that does not match a compiled function);
:class:`ScheduleError` covers invalid schedules. Both derive from :class:`isa.VtaforgeError` and
name where the problem is: the tensor (or stage), the axis and the operation concerned.
:class:`QuantizationWarning` is not an error: the model compiles, but calibration saw data that
cannot choose its scales, or a value whose int8 form is all zero.
"""

from __future__ import annotations

from isa import VtaforgeError

__all__ = [
    "CompileError",
    "GraphError",
    "QuantizationWarning",
    "ScheduleError",
    "UnknownInputShape",
    "UnsupportedOperator",
]


def _where(**parts: object) -> str:
    named = [f"{key} {value!r}" for key, value in parts.items() if value not in ("", None)]
    return ", ".join(named)


class CompileError(VtaforgeError, ValueError):
    """A computation cannot be compiled or called as written.

    ``tensor`` names the tensor (or function argument), ``axis`` the axis or dimension, ``op``
    the operation concerned and ``node`` the graph node; each is ``""`` when it does not apply.
    """

    def __init__(
        self, message: str, *, tensor: str = "", axis: str = "", op: str = "", node: str = ""
    ) -> None:
        self.tensor = tensor
        self.axis = axis
        self.op = op
        self.node = node
        self.detail = message
        where = _where(node=node, tensor=tensor, axis=axis, op=op)
        super().__init__(f"{where}: {message}" if where else message)

    def within(self, tensor: str) -> CompileError:
        """The same error located in ``tensor`` (kept if it already names one)."""
        return CompileError(
            self.detail, tensor=self.tensor or tensor, axis=self.axis, op=self.op, node=self.node
        )


class GraphError(CompileError):
    """A model or graph is malformed or cannot be compiled: bad structure, a shape that does not
    fit an operator, a file that is not a model, an input of the wrong shape or dtype."""


class UnknownInputShape(GraphError):
    """A model input's shape is not fixed (a dynamic or missing dimension) and was not given:
    ``tensor`` names the input, ``axis`` the dimension where one is dynamic."""


class UnsupportedOperator(GraphError):
    """A model uses an operator, or an attribute value, that the frontend does not support:
    ``op`` is its type, ``node`` its name and ``opset`` the model's opset (0 where unknown).

    ``needs_constant`` names the graph inputs that an operand the converter needs as a constant
    (axes, a shape, pads) is, or is computed from: binding them as constants at import
    (``from_onnx(..., constants={name: array})``) can lift the refusal; empty otherwise."""

    def __init__(
        self,
        message: str,
        *,
        op: str,
        node: str = "",
        opset: int = 0,
        needs_constant: tuple[str, ...] = (),
    ) -> None:
        self.opset = opset
        self.needs_constant = tuple(needs_constant)
        suffix = f" (opset {opset})" if opset else ""
        super().__init__(f"{message}{suffix}", op=op, node=node)


class QuantizationWarning(UserWarning):
    """Quantization went through but its result is doubtful, and the message names the value
    (and node) concerned: calibration data that are constant (an input one value in every
    sample, or samples all identical), or a value whose observed range collapses (all zero, or
    so small against its producer's inputs that its int8 form is zero)."""


class ScheduleError(VtaforgeError, ValueError):
    """A schedule primitive cannot be applied: ``stage`` and ``axis`` say where."""

    def __init__(self, message: str, *, stage: str, axis: str = "") -> None:
        self.stage = stage
        self.axis = axis
        self.detail = message
        super().__init__(f"{_where(stage=stage, axis=axis)}: {message}")

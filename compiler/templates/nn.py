"""Neural-network operators as plain computes, spelled as TVM's ``topi.nn`` spells them (so
``from compiler import templates as topi; topi.nn.pad(...)`` reads like TVM code)."""

from __future__ import annotations

from collections.abc import Sequence

from compiler import te
from compiler.errors import CompileError
from compiler.expr import Expr
from compiler.te import Tensor

__all__ = ["pad"]


def pad(
    data: Tensor,
    pad_before: Sequence[int],
    pad_after: Sequence[int] | None = None,
    pad_value: float | Expr = 0,
    name: str = "PadInput",
) -> Tensor:
    """``data`` padded by ``pad_before[d]`` elements before and ``pad_after[d]`` after each
    dimension ``d`` (``pad_after`` defaults to ``pad_before``), the new elements ``pad_value``
    converted to ``data``'s dtype: TVM's ``topi.nn.pad``.

    The compute's element is ``data[index - before]`` where every padded dimension's index is
    inside ``data`` (``if_then_else(all(...), ...)``, one pair of conditions per dimension with
    non-zero padding), else the pad value; with no padding at all it is a copy. Pads that are
    not one non-negative integer per dimension raise :class:`CompileError` naming ``data``.
    """
    before = tuple(pad_before)
    after = tuple(pad_after) if pad_after else before
    for what, pads in (("pad_before", before), ("pad_after", after)):
        if len(pads) != data.ndim:
            raise CompileError(
                f"{what} has {len(pads)} entries, the tensor {data.ndim} dimensions",
                tensor=data.name,
                op="pad",
            )
        for dim, amount in enumerate(pads):
            if not isinstance(amount, int) or amount < 0:
                raise CompileError(
                    f"{what} {amount!r} is not a non-negative integer",
                    tensor=data.name,
                    axis=str(dim),
                    op="pad",
                )
    if isinstance(pad_value, Expr):
        fill = pad_value.astype(data.dtype)
    else:
        fill = te.const(pad_value, data.dtype)
    padded = [dim for dim in range(data.ndim) if before[dim] or after[dim]]

    def element(*index: Expr) -> Expr:
        source = data(*(i - before[d] if d in padded else i for d, i in enumerate(index)))
        if not padded:
            return source
        inside = (
            cond
            for d in padded
            for cond in (index[d] >= before[d], index[d] < data.shape[d] + before[d])
        )
        return te.if_then_else(te.all(*inside), source, fill)

    shape = tuple(n + b + a for n, b, a in zip(data.shape, before, after, strict=True))
    return te.compute(shape, element, name)

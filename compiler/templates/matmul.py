"""Matrix multiplication ``C = A @ B`` (``B`` optionally stored transposed, as in a dense
layer's weight), with ``B`` packed into panels of ``tile_n`` contiguous columns: inside the
kernel, or, where ``columns`` is given, beforehand (``B`` is then the panels, ``(N/tile_n, K,
tile_n)`` holding ``columns`` columns and zeros after them: :func:`pack_panels`, which a
compiler applies to constant weights once).

The schedule is a register-blocked micro-kernel: a ``tile_m x tile_n`` accumulator tile held in
a local buffer (registers, once unrolled and vectorized) across the whole ``k`` loop, fed by one
broadcast element of ``A`` and one contiguous vector of the packed ``B`` panel per row. The
default tile is the target's (``target``: None for the host): ``tile_n`` two vectors wide,
``tile_m`` as many rows as the accumulator budget (half the vector registers) allows, dividing
``m`` where it can.
"""

from __future__ import annotations

from compiler import te
from compiler.errors import CompileError
from compiler.schedule import Schedule, create_schedule
from compiler.te import Tensor
from compiler.templates._util import TargetSpec, register_rows, target_model, vector_choices
from compiler.templates.knobs import Config, Knob, KnobSpace, Template

__all__ = ["MATMUL", "panel_width"]


def _dims(a: Tensor, b: Tensor, transpose_b: bool, columns: int | None) -> tuple[int, int, int]:
    packed = columns is not None
    if a.ndim != 2 or b.ndim != (3 if packed else 2):
        wrong = a.name if a.ndim != 2 else b.name
        raise CompileError("matmul needs two matrices (or a matrix and panels)", tensor=wrong)
    m, k = a.shape
    if packed:
        panels, kb, width = b.shape
        if not 0 < columns <= panels * width or columns <= (panels - 1) * width:
            raise CompileError(f"{panels} panels of {width} do not hold {columns} columns")
        return m, columns, _inner(k, kb, b)
    n, kb = b.shape if transpose_b else b.shape[::-1]
    return m, n, _inner(k, kb, b)


def _inner(k: int, kb: int, b: Tensor) -> int:
    if k != kb:
        raise CompileError(f"inner extents differ: {k} and {kb}", tensor=b.name, op="matmul")
    return k


def panel_width(n: int, target: TargetSpec = None) -> int:
    """The default ``tile_n`` of a product with ``n`` columns on ``target``: the panel width
    that weights packed beforehand should have."""
    return vector_choices(n, target_model(target).lanes, (2, 1, 4, 0.5))[0]


#: Row counts of the register tile, largest first.
_ROWS = (12, 8, 6, 4, 2, 1)


def _space(
    a: Tensor,
    b: Tensor,
    transpose_b: bool = False,
    out_dtype: str | None = None,
    columns: int | None = None,
    target: TargetSpec = None,
) -> KnobSpace:
    m, n, _ = _dims(a, b, transpose_b, columns)
    model = target_model(target)
    if columns is not None:
        widths = (b.shape[2],)  # the panels' own
    else:
        widths = vector_choices(n, model.lanes, (2, 1, 4, 0.5))
    rows = register_rows(model, m, -(-widths[0] // model.lanes), _ROWS, exact=True)
    return KnobSpace(
        (
            Knob("tile_n", widths),
            Knob("tile_m", (rows, *(t for t in _ROWS if t <= m and t != rows))),
            Knob("vectorize", (True, False)),
            Knob("unroll", (True, False)),
            Knob("parallel", (True, False)),
        )
    )


def _declare(
    a: Tensor,
    b: Tensor,
    cfg: Config,
    transpose_b: bool = False,
    out_dtype: str | None = None,
    columns: int | None = None,
    target: TargetSpec = None,
) -> tuple[Schedule, Tensor]:
    del target  # the space's: ``cfg`` carries what it chose
    m, n, k_extent = _dims(a, b, transpose_b, columns)
    bn, mr = cfg["tile_n"], cfg["tile_m"]
    panels = -(-n // bn)
    dtype = te.DType.of(out_dtype) if out_dtype else a.dtype

    def packed(x, y, z):
        column = x * bn + z
        value = b[column, y] if transpose_b else b[y, column]
        return value if panels * bn == n else te.select(column < n, value, te.const(0, b.dtype))

    prepacked = columns is not None
    packed_b = (
        b if prepacked else te.compute((panels, k_extent, bn), packed, name=f"{b.name}.packed")
    )
    k = te.reduce_axis(k_extent, "k")
    c = te.compute(
        (m, n),
        lambda i, j: te.sum(
            te.cast(dtype, a[i, k]) * te.cast(dtype, packed_b[j // bn, k, j % bn]), axis=k
        ),
        name="C",
    )
    s = create_schedule(c)
    acc = s.cache_write(c, "local")
    i, j = c.op.axis
    io, jo, ii, ji = s[c].tile(i, j, mr, bn)
    s[c].reorder(jo, io, ii, ji)
    s[acc].compute_at(s[c], io)
    x, y = acc.op.axis
    s[acc].reorder(k, x, y)
    if cfg["vectorize"]:
        s[acc].vectorize(y)
        s[c].vectorize(ji)
    if cfg["unroll"]:
        s[acc].unroll(x)
    if cfg["parallel"]:
        s[c].parallel(jo)
    if not prepacked:
        px, _, pz = packed_b.op.axis
        if cfg["vectorize"]:
            s[packed_b].vectorize(pz)
        if cfg["parallel"]:
            s[packed_b].parallel(px)
    return s, c


MATMUL = Template("matmul", _space, _declare)

"""Per-channel fixed-point requantisation: a weight scale per output channel, any real number,
and the integers that requantise each channel's accumulator with the ALU's MUL and SHR.

A layer reads int8 data at scale ``2**-e_x`` and writes int8 at scale ``2**-e_y``; channel
``c`` of its float weights has the largest magnitude ``a_c``. Its accumulator is rescaled by
``r_c = s_c * 2**(e_y - e_x)`` with ``s_c`` the channel's weight scale. The ALU multiplies by
8 signed bits, so :func:`fixed_point` chooses ``r_c = m_c * 2**-t_c`` with ``m_c`` in 64..127
(seven bits of precision) and the weight scale that makes it exact: ``s_c = m_c * 2**(e_x -
e_y - t_c)``, the least such scale at or above ``a_c / 127`` (so no weight is clipped and the
int8 weights use at least 64/65 of their range). The requantisation then has no rounding of
its own beyond the final shift's.

Weights that already lie on an int8 grid (a model quantized before, its weights read as
``q * s_c`` with integer ``|q| <= 127``: per channel ``s_c = a_c / 127``, or per tensor, the
largest channel's) keep that grid: the int8 weights are ``q`` and ``m_c`` is the rounded
``r_c * 2**t_c``, within 1/128 of the rescale, instead of re-quantizing the weights.

The product ``acc * m_c`` must stay within 32 bits: where the int8 weights' largest absolute
row sum could take it past ``2**30``, the accumulator is first shifted right by ``shift`` bits
(the truncation's mean error compensated in the bias). The bias carries the float bias at the
product's scale plus the rounding constant of the per-channel shift ``shifts_c = t_c -
shift``. A layer whose output scale is too fine for its inputs (some ``r_c > 127``, or a
per-channel shift below zero) gets a coarser output exponent, as the power-of-two scheme's
"a shift cannot be negative" does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.opset.integer import MAX_SHIFT

__all__ = ["FixedPoint", "fixed_point"]

#: The multiplier's largest value (the ALU's MUL reads 8 signed bits).
_M_MAX = 127
#: What the product and the bias may each reach (their sum stays within 32 bits).
_HALF_RANGE = 1 << 30


@dataclass(frozen=True)
class FixedPoint:
    """One layer's per-channel requantisation: int8 ``weights`` (the float weights' shape),
    and per output channel the int8 ``multiplier`` and ``shifts`` and the int32 ``bias``; the
    accumulator's right ``shift`` before the multiply; the output exponent ``e_y`` (the one
    asked for, or coarser where it had to be); ``scales``, the weight scale of each channel."""

    weights: np.ndarray
    multiplier: np.ndarray
    shifts: np.ndarray
    bias: np.ndarray
    shift: int
    e_y: int
    scales: np.ndarray


def fixed_point(w: np.ndarray, bias: np.ndarray | None, e_x: int, e_y: int) -> FixedPoint:
    """The per-channel requantisation of float weights ``w`` (output channels first) and
    float ``bias`` (one per channel, or None) between input exponent ``e_x`` and output
    exponent ``e_y`` (module docstring)."""
    rows = np.asarray(w, dtype=np.float64).reshape(w.shape[0], -1)
    magnitude = np.max(np.abs(rows), axis=1) if rows.shape[1] else np.zeros(rows.shape[0])
    b = np.zeros(rows.shape[0]) if bias is None else np.asarray(bias, np.float64).reshape(-1)
    grid = _grid(rows, magnitude)
    while True:
        ratio = np.where(grid > 0, grid, magnitude / 127.0) * 2.0 ** (e_y - e_x)
        t = _exponents(ratio)
        shift = _pre_shift(_quantized(rows, ratio, t, e_x, e_y, grid)[2], ratio, t)
        # the bias must fit at the product's scale; a channel of zero weights needs no shift
        t = np.where(magnitude > 0, np.minimum(t, shift + _bias_room(b, e_y)), shift)
        m, scales, q = _quantized(rows, ratio, t, e_x, e_y, grid)
        shifts = t - shift
        if shifts.min() < 0:  # the output scale is too fine for the inputs: make it coarser
            e_y -= int(-shifts.min())
            continue
        return FixedPoint(
            q.astype(np.int8).reshape(w.shape),
            m.astype(np.int8),
            shifts.astype(np.int8),
            _bias(b, m, shifts, shift, e_y, magnitude > 0),
            shift,
            e_y,
            scales,
        )


def _quantized(
    rows: np.ndarray,
    ratio: np.ndarray,
    t: np.ndarray,
    e_x: int,
    e_y: int,
    grid: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(multipliers, weight scales, int8 weights as floats) for the exponents ``t``: the least
    multiplier with ``m * 2**-t >= ratio`` (1 for a zero ratio) and the scale that makes the
    requantisation exact; on a channel of the ``grid`` (its scale there, else 0), that scale
    and the nearest multiplier (at least 1)."""
    on_grid = grid > 0
    m = np.where(ratio > 0, np.ceil(ratio * 2.0**t), 1.0)
    m = np.where(on_grid, np.maximum(1.0, np.round(ratio * 2.0**t)), m)
    scales = np.where(on_grid, grid, m * 2.0 ** (e_x - e_y - t))
    q = np.clip(np.round(rows / scales[:, None]), -127, 127)
    return m, scales, q


def _grid(rows: np.ndarray, magnitude: np.ndarray) -> np.ndarray:
    """Per channel, the scale ``s`` of an int8 grid its weights lie on (``w = q * s`` with
    integer ``|q| <= 127`` up to float32 rounding; ``s`` the channel's largest magnitude, or
    the tensor's, over 127), else 0."""
    out = np.zeros(rows.shape[0])
    if not rows.size:
        return out
    for candidate in (magnitude / 127.0, np.full(rows.shape[0], magnitude.max() / 127.0)):
        live = (magnitude > 0) & (out == 0)  # (a channel of zeros needs no grid)
        steps = rows[live] / candidate[live, None]
        on = np.all(np.abs(steps - np.round(steps)) < 1e-3, axis=1)
        out[np.flatnonzero(live)[on]] = candidate[live][on]
    return out


def _bias_room(b: np.ndarray, e_y: int) -> np.ndarray:
    """Per channel, how many bits the bias may be scaled up by (``shifts`` at most) and stay
    below 2**29: the bias in output units, ``|b| * 2**e_y``, takes the rest."""
    units = np.abs(b) * 2.0**e_y
    return np.maximum(0, 29 - np.ceil(np.log2(units + 1))).astype(np.int64)


def _exponents(ratio: np.ndarray) -> np.ndarray:
    """Per channel, the largest ``t <= 31`` with ``ratio * 2**t <= 127`` (possibly negative;
    a zero ratio takes 31)."""
    t = np.full(ratio.shape, MAX_SHIFT, dtype=np.int64)
    positive = ratio > 0
    t[positive] = np.minimum(t[positive], np.floor(np.log2(_M_MAX / ratio[positive])))
    return t


def _pre_shift(q: np.ndarray, ratio: np.ndarray, t: np.ndarray) -> int:
    """The least right shift of the accumulator (at most ``|x| <= 128`` times a row's absolute
    sum of the int8 weights ``q``) after which its product with the multiplier (for the
    exponents ``t``) stays below 2**30."""
    m = np.where(ratio > 0, np.ceil(ratio * 2.0**t), 1.0)
    reach = 128 * np.sum(np.abs(q), axis=1)
    shift = 0
    while np.any(np.ceil(reach / 2.0**shift) * m >= _HALF_RANGE):
        shift += 1
    return shift


def _bias(
    b: np.ndarray, m: np.ndarray, shifts: np.ndarray, shift: int, e_y: int, live: np.ndarray
) -> np.ndarray:
    """The int32 bias added to the product: the float bias at the product's scale
    (``2**-(e_y + shifts)``), the rounding constant of the shift by ``shifts``, and, in the
    ``live`` channels (of non-zero weights), the mean error of the truncating pre-shift by
    ``shift`` times the multiplier; saturated where an enormous bias would leave the range
    (its channel's output saturates anyway)."""
    exact = b * 2.0 ** (e_y + shifts.astype(np.float64))
    rounding = np.where(shifts > 0, 2.0 ** (shifts.astype(np.float64) - 1), 0.0)
    truncation = np.where(live, m * (2.0**shift - 1) / 2.0 ** (shift + 1), 0.0)
    total = np.round(exact) + rounding + np.round(truncation)
    return np.clip(total, -_HALF_RANGE, _HALF_RANGE).astype(np.int32)

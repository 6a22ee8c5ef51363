"""Calibration: what each value of a float graph does over sample inputs, and how each value's
int8 range is chosen from that.

:func:`calibrate` runs the float graph on the samples and keeps, per value, its minimum,
maximum and largest magnitude, and a seeded subsample of its elements (:class:`Calibration`).
A calibration method turns one value's observations into a threshold ``T`` (the magnitude that
int8's 127 stands for); the value's scale is then ``2**-e`` with ``e = exponent(T)``, the
largest exponent with ``T * 2**e <= 127``, as VTA's power-of-two scheme needs. The methods are
data (:data:`CALIBRATION_METHODS`, name -> class), chosen by a spec ``NAME`` or
``NAME:PARAMETER`` (:func:`calibration_method`):

- ``max``: ``T = max|x|``, nothing is clipped (min-max calibration);
- ``percentile[:P]``: ``T`` is the ``P``-th percentile of ``|x|`` over the subsample (default
  99.99), so the rarest ``100 - P`` per cent of the elements are clipped;
- ``mse`` (the default): among ``exponent(max|x|)`` and the three exponents above it (each
  doubling the resolution and halving the range) the one whose squared quantization error over
  the subsample is least, ``T = 127 * 2**-e``: outliers are clipped when that pays;
- ``entropy[:BINS]``: KL-divergence minimisation as TensorRT and TVM calibrate: a histogram of
  ``|x|`` in ``BINS`` bins (default 2048) over ``[0, max|x|]``; for each candidate ``T`` at a
  bin edge from the 128th on, the reference distribution (the bins below ``T``, the clipped
  elements added to the last) against its quantization to 128 levels (the int8 magnitudes),
  each level's mass spread evenly over its non-empty bins; ``T`` is the candidate of least
  divergence (:func:`divergences`).

:func:`quantization_table` prints the :class:`QuantRecord` that the quantizer keeps for every
int8 value (observed range, threshold, exponent, clipped fraction). Calibration warns
(:class:`~compiler.errors.QuantizationWarning`) when its data cannot say anything: an input
constant over every sample, or samples all identical.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from compiler.errors import GraphError, QuantizationWarning
from compiler.graph.interpret import run_graph
from compiler.graph.ir import Graph
from isa.errors import did_you_mean

__all__ = [
    "CALIBRATION_METHODS",
    "Calibration",
    "CalibrationMethod",
    "EntropyCalibration",
    "MaxCalibration",
    "MseCalibration",
    "PercentileCalibration",
    "QuantRecord",
    "calibrate",
    "calibration_method",
    "clipped_fraction",
    "divergences",
    "exponent",
    "quantization_table",
]

#: Exponents are kept in this range (scales between 2**-24 and 2**16).
_E_MIN, _E_MAX = -16, 24
#: Elements of each value kept per calibration sample to choose its exponent.
_KEEP = 8192
#: The magnitudes a symmetric int8 value holds (0 to 127): the entropy method's levels.
_LEVELS = 128
#: What the entropy method puts in an empty bin so that every divergence is finite.
_EPS = 1e-4


def exponent(max_abs: float) -> int:
    """The largest ``e`` with ``max_abs * 2**e <= 127`` (clamped to a sane range)."""
    if not math.isfinite(max_abs):
        raise GraphError(f"a calibrated value reached {max_abs}")
    if max_abs <= 0:
        return _E_MAX
    return int(min(_E_MAX, max(_E_MIN, math.floor(math.log2(127.0 / max_abs)))))


def to_int8(array: np.ndarray, e: int) -> np.ndarray:
    """``array`` at scale ``2**-e``, rounded to nearest (ties to even) and clipped to int8."""
    return np.clip(np.round(array.astype(np.float64) * 2.0**e), -128, 127).astype(np.int8)


def clipped_fraction(elements: np.ndarray, e: int) -> float:
    """The fraction of ``elements`` that int8 at scale ``2**-e`` cannot hold (clipped)."""
    if not elements.size:
        return 0.0
    scaled = np.round(elements.astype(np.float64) * 2.0**e)
    return float(np.count_nonzero((scaled > 127) | (scaled < -128)) / elements.size)


# ----------------------------------------------------------------------------------- methods
class CalibrationMethod:
    """How one value's int8 range is chosen from its observations: :meth:`threshold` (the
    magnitude int8's 127 stands for) and :meth:`choose` (that and the exponent). Subclasses
    are frozen dataclasses with at most one parameter, registered in
    :data:`CALIBRATION_METHODS` under :attr:`name`."""

    name: ClassVar[str]
    #: What the parameter after ``NAME:`` is (empty: the method takes none).
    parameter: ClassVar[str] = ""

    def threshold(self, max_abs: float, elements: np.ndarray) -> float:
        raise NotImplementedError

    def choose(self, max_abs: float, elements: np.ndarray) -> tuple[float, int]:
        """(threshold, exponent): the exponent derived from the threshold (:func:`exponent`)."""
        t = self.threshold(max_abs, elements)
        return t, exponent(t)

    @property
    def spec(self) -> str:
        """The text that names this method with its parameter (``percentile:99.9``)."""
        return self.name

    @classmethod
    def parse(cls, text: str | None) -> CalibrationMethod:
        """The method with parameter ``text`` (None: the default)."""
        if text is None:
            return cls()
        raise GraphError(f"calibration method {cls.name!r} takes no parameter, got {text!r}")


@dataclass(frozen=True)
class MaxCalibration(CalibrationMethod):
    """Min-max: the range is the largest observed magnitude (nothing is clipped)."""

    name: ClassVar[str] = "max"

    def threshold(self, max_abs: float, elements: np.ndarray) -> float:
        return max_abs


@dataclass(frozen=True)
class PercentileCalibration(CalibrationMethod):
    """The ``percent``-th percentile of ``|x|`` over the subsample (numpy's linear
    interpolation); where that is 0 but the value is not (most elements zero), the largest
    magnitude, since a zero range would clip every other element to nothing."""

    percent: float = 99.99
    name: ClassVar[str] = "percentile"
    parameter: ClassVar[str] = "a percent in (0, 100]"

    def __post_init__(self) -> None:
        if not 0 < self.percent <= 100:
            raise GraphError(
                f"calibration method 'percentile' takes {self.parameter}, got {self.percent}"
            )

    def threshold(self, max_abs: float, elements: np.ndarray) -> float:
        if max_abs <= 0 or not elements.size:
            return max_abs
        t = float(np.percentile(np.abs(elements), self.percent))
        return t if t > 0 else max_abs

    @property
    def spec(self) -> str:
        return f"{self.name}:{self.percent:g}"

    @classmethod
    def parse(cls, text: str | None) -> CalibrationMethod:
        return cls() if text is None else cls(_number(cls, text, float))


@dataclass(frozen=True)
class MseCalibration(CalibrationMethod):
    """The exponent among ``exponent(max|x|)`` and the three above it whose mean squared
    quantization error over the subsample is least (ties: the smallest, the widest range);
    the threshold is that exponent's range, ``127 * 2**-e``. The exponent may exceed the
    clamp of :func:`exponent` for tiny values, as it always has."""

    name: ClassVar[str] = "mse"

    def choose(self, max_abs: float, elements: np.ndarray) -> tuple[float, int]:
        e = exponent(max_abs)
        x = elements
        errors = [float(np.mean((x - to_int8(x, k) * 2.0**-k) ** 2)) for k in range(e, e + 4)]
        best = e + int(np.argmin(errors))
        return 127.0 * 2.0**-best, best

    def threshold(self, max_abs: float, elements: np.ndarray) -> float:
        return self.choose(max_abs, elements)[0]


@dataclass(frozen=True)
class EntropyCalibration(CalibrationMethod):
    """KL-divergence minimisation over a histogram of ``|x|`` in ``bins`` bins (see the
    module docstring and :func:`divergences`): the threshold is the upper edge of the
    candidate of least divergence (ties: the smallest)."""

    bins: int = 2048
    name: ClassVar[str] = "entropy"
    parameter: ClassVar[str] = f"a number of histogram bins of at least {_LEVELS}"

    def __post_init__(self) -> None:
        if self.bins < _LEVELS:
            raise GraphError(
                f"calibration method 'entropy' takes {self.parameter}, got {self.bins}"
            )

    def threshold(self, max_abs: float, elements: np.ndarray) -> float:
        if max_abs <= 0 or not elements.size:
            return max_abs
        hist, _ = np.histogram(np.abs(elements), bins=self.bins, range=(0.0, max_abs))
        kept = _LEVELS + int(np.argmin(divergences(hist)))
        return max_abs * kept / self.bins

    @property
    def spec(self) -> str:
        return self.name if self.bins == 2048 else f"{self.name}:{self.bins}"

    @classmethod
    def parse(cls, text: str | None) -> CalibrationMethod:
        return cls() if text is None else cls(_number(cls, text, int))


def divergences(hist: np.ndarray) -> np.ndarray:
    """The entropy method's divergence of each candidate threshold over the histogram
    ``hist`` of ``|x|``: entry ``k`` for the candidate that keeps the first ``128 + k`` bins.

    For ``i`` bins kept: the reference ``P`` is those bins with every later bin's count added
    to the last (the clipped elements land on the threshold); ``Q`` merges the ``i`` bins into
    128 levels (level ``j`` holds bins ``floor(j*i/128)`` to ``floor((j+1)*i/128) - 1``) and
    spreads each level's count evenly over its non-empty bins (empty ones stay empty). Empty
    bins of both get ``1e-4`` (counts), both are normalised, and the divergence is
    ``sum P log(P / Q)``."""
    counts = np.asarray(hist, dtype=np.float64)
    total = float(counts.sum())
    out = np.empty(max(0, counts.size - _LEVELS + 1))
    for k, i in enumerate(range(_LEVELS, counts.size + 1)):
        kept = counts[:i]
        p = kept.copy()
        p[-1] += total - float(kept.sum())
        starts = (np.arange(_LEVELS) * i) // _LEVELS
        nonzero = kept > 0
        sums = np.add.reduceat(kept, starts)
        filled = np.add.reduceat(nonzero.astype(np.float64), starts)
        level = np.repeat(np.arange(_LEVELS), np.diff(np.append(starts, i)))
        mean = np.divide(sums, filled, out=np.zeros(_LEVELS), where=filled > 0)
        q = np.where(nonzero, mean[level], 0.0)
        p = np.where(p > 0, p, _EPS)
        q = np.where(q > 0, q, _EPS)
        p /= p.sum()
        q /= q.sum()
        out[k] = float(np.sum(p * np.log(p / q)))
    return out


def _number(cls: type[CalibrationMethod], text: str, kind: type) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        value = None
    if value is None or (kind is float and not math.isfinite(value)):
        raise GraphError(f"calibration method {cls.name!r} takes {cls.parameter}, got {text!r}")
    return value


#: Every calibration method by name: a spec ``NAME`` or ``NAME:PARAMETER`` names one
#: (:func:`calibration_method`); ``vtaforge compile --calibration-method`` lists them.
CALIBRATION_METHODS: dict[str, type[CalibrationMethod]] = {
    cls.name: cls
    for cls in (MaxCalibration, PercentileCalibration, MseCalibration, EntropyCalibration)
}


def calibration_method(spec: str | CalibrationMethod) -> CalibrationMethod:
    """The method a spec names (``"mse"``, ``"percentile:99.9"``, ``"entropy:4096"``), or the
    method given; an unknown name is a GraphError naming the known ones."""
    if isinstance(spec, CalibrationMethod):
        return spec
    name, colon, parameter = str(spec).partition(":")
    cls = CALIBRATION_METHODS.get(name.strip())
    if cls is None:
        known = ", ".join(repr(n) for n in CALIBRATION_METHODS)
        hint = did_you_mean(name, CALIBRATION_METHODS)
        raise GraphError(f"unknown calibration method {name!r}{hint}: the methods are {known}")
    return cls.parse(parameter.strip() if colon else None)


# ------------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class Calibration:
    """What each value of a float graph did over the calibration samples: its largest
    magnitude, a seeded subsample of its elements (at most 8192 per sample), and its smallest
    and largest element."""

    max_abs: Mapping[str, float]
    elements: Mapping[str, np.ndarray]
    samples: int
    minimum: Mapping[str, float] = field(default_factory=dict)
    maximum: Mapping[str, float] = field(default_factory=dict)

    def choose(self, value: str, method: str | CalibrationMethod = "mse") -> tuple[float, int]:
        """``value``'s (threshold, exponent) by ``method`` (a spec or a method object)."""
        if value not in self.max_abs:
            raise GraphError(f"value {value!r} was not observed by calibration")
        return calibration_method(method).choose(self.max_abs[value], self.elements[value])

    def exponent(self, value: str, method: str | CalibrationMethod = "mse") -> int:
        """The exponent of ``value``'s scale ``2**-e`` by ``method`` (see the module
        docstring): ``"max"`` keeps every observed element in range; ``"mse"`` clips outliers
        where that lowers the squared error."""
        return self.choose(value, method)[1]

    def threshold(self, value: str, method: str | CalibrationMethod = "mse") -> float:
        """The magnitude ``method`` gives int8's 127 for ``value``."""
        return self.choose(value, method)[0]


def calibrate(graph: Graph, samples: Iterable[Mapping[str, np.ndarray] | Sequence]) -> Calibration:
    """Run ``graph`` on each sample (the inputs by name or in order) and record what every
    float value did (:class:`Calibration`). Warns (:class:`QuantizationWarning`) where an
    input is one constant over every sample, or where several samples are all identical."""
    rng = np.random.default_rng(0)
    max_abs: dict[str, float] = {}
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    kept: dict[str, list[np.ndarray]] = {}
    inputs = _InputWatch(graph.inputs)
    count = 0
    for sample in samples:
        values = run_graph(graph, sample, keep=True)
        inputs.observe(values)
        for name, array in values.items():
            if array.dtype != np.float32 or not array.size:
                continue
            flat = array.ravel()
            max_abs[name] = max(max_abs.get(name, 0.0), float(np.max(np.abs(flat))))
            low[name] = min(low.get(name, math.inf), float(np.min(flat)))
            high[name] = max(high.get(name, -math.inf), float(np.max(flat)))
            if flat.size > _KEEP:
                flat = flat[rng.choice(flat.size, _KEEP, replace=False)]
            kept.setdefault(name, []).append(flat.astype(np.float64))
        count += 1
    if not count:
        raise GraphError("calibration needs at least one sample")
    inputs.warn(count)
    elements = {name: np.concatenate(parts) for name, parts in kept.items()}
    return Calibration(max_abs, elements, count, low, high)


class _InputWatch:
    """Whether each graph input varied over the samples, and whether the samples did."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        self.first: dict[str, np.ndarray] = {}
        self.varies: dict[str, bool] = {}
        self.samples_differ = False

    def observe(self, values: Mapping[str, np.ndarray]) -> None:
        for name in self.names:
            array = values[name]
            if name not in self.first:
                self.first[name] = np.array(array, copy=True)
                flat = array.ravel()
                self.varies[name] = flat.size > 1 and bool(np.any(flat != flat[0]))
                continue
            first = self.first[name]
            same = np.array_equal(array, first)
            self.samples_differ |= not same
            if not self.varies[name] and not same:
                self.varies[name] = True

    def warn(self, count: int) -> None:
        for name in self.names:
            if not self.varies[name] and (count > 1 or self.first[name].size > 1):
                value = self.first[name].ravel()[0].item()
                warnings.warn(
                    f"calibration input {name!r} is constant ({value!r} in every element of "
                    f"{count} sample{'s' * (count > 1)}): the scales chosen from it suit no "
                    f"other data",
                    QuantizationWarning,
                    stacklevel=3,
                )
        constant = all(not self.varies[n] for n in self.names)
        if count > 1 and self.names and not self.samples_differ and not constant:
            warnings.warn(
                f"the {count} calibration samples are identical: calibration saw one input",
                QuantizationWarning,
                stacklevel=3,
            )


# ----------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class QuantRecord:
    """How one int8 value of the quantized graph was scaled: the float ``value`` and the
    ``node`` producing it in the float graph (``""`` for a graph input), the calibration
    ``method`` (its spec), the observed ``minimum``, ``maximum`` and ``abs_max``, the
    method's ``threshold``, the ``exponent`` of the scale ``2**-exponent`` the int8 value has
    (``exponent(threshold)``, except where the graph constrains it: a requantising shift
    cannot be negative, a Concat's inputs share its scale, pools and data movement keep their
    input's), the fraction of the calibration subsample's elements ``clipped`` at it, and the
    name of the int8 value in the quantized graph (``int8_value``: ``value`` itself, or
    another where that name is taken)."""

    value: str
    node: str
    method: str
    minimum: float
    maximum: float
    abs_max: float
    threshold: float
    exponent: int
    clipped: float
    int8_value: str

    @property
    def scale(self) -> float:
        return 2.0**-self.exponent


def quantization_table(records: Iterable[QuantRecord]) -> str:
    """One line per record: value, node, method, observed range, threshold, scale, clipped."""
    rows = [
        (
            r.value,
            r.node or "(input)",
            r.method,
            f"{r.minimum:.4g}",
            f"{r.maximum:.4g}",
            f"{r.abs_max:.4g}",
            f"{r.threshold:.4g}",
            f"2^{-r.exponent}",
            f"{100 * r.clipped:.3f}%",
        )
        for r in records
    ]
    head = ("value", "node", "method", "min", "max", "abs max", "threshold", "scale", "clipped")
    widths = [max(len(str(c)) for c in column) for column in zip(head, *rows, strict=False)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in (head, *rows)
    ]
    return "\n".join(lines)

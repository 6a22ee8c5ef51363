"""The shape of a conformance case, the configurations the suite runs, and helpers the cases
share.

A case is data: a name, the presets it supports, a size class, whether it uses the ALU's MUL, and
``build(cfg, seed)``, which returns a :class:`Built`: the program, the DRAM it starts from, and
``check(dram)``, which compares the program's output regions with an independent numpy
computation and raises AssertionError naming the case and region on a mismatch.

The suite's configurations (:data:`CONFIGS`) are the presets and *variants* of them that take an
optional operation away (``tiny_nomul``: tiny without the ALU multiplier). A case runs on a
variant when it supports the variant's preset and uses nothing the variant lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import numpy as np

from isa import AccelConfig, AluOp, DramBuffer, MemId, Program, ProgramBuilder
from isa import Stage as S
from runtime.programs import row_kernel

__all__ = [
    "CONFIGS",
    "VARIANTS",
    "Built",
    "ConformanceCase",
    "Expectation",
    "Size",
    "as_bytes",
    "built",
    "planes_of",
    "preset_of",
    "random_ints",
    "row_kernel",
    "store_acc_planes",
    "wrap_np",
]


class Size(Enum):
    """SMALL cases suit every level, the slow RTL simulation included; LARGE ones do not."""

    SMALL = "small"
    LARGE = "large"


@dataclass(frozen=True)
class Built:
    """A built case: run ``program`` from a copy of ``dram``, then ``check`` the result;
    ``outputs`` are the DRAM buffers the check compares."""

    program: Program
    dram: np.ndarray
    check: Callable[[np.ndarray], None]
    outputs: tuple[DramBuffer, ...]


#: Variants of presets the suite runs too: name -> (preset, the parameters it changes).
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    "tiny_nomul": ("tiny", {"alu_mul": False}),
}
#: Every configuration the suite runs, by name: the presets, then the variants.
CONFIGS: dict[str, AccelConfig] = {
    **{name: AccelConfig.preset(name) for name in AccelConfig.preset_names()},
    **{
        name: AccelConfig.preset(preset).replace(**changes)
        for name, (preset, changes) in VARIANTS.items()
    },
}


@dataclass(frozen=True)
class ConformanceCase:
    """``presets``: the presets the case supports (and their variants, see :meth:`runs_on`);
    ``uses_mul``: the case needs the ALU's MUL, so configurations without it refuse it."""

    name: str
    build: Callable[[AccelConfig, int], Built]
    presets: tuple[str, ...] = ("default", "tiny")
    size: Size = Size.SMALL
    uses_mul: bool = False

    def runs_on(self, config: str) -> bool:
        """Whether the suite runs the case on ``CONFIGS[config]``."""
        return preset_of(config) in self.presets and (CONFIGS[config].alu_mul or not self.uses_mul)


def preset_of(config: str) -> str:
    """The preset that suite configuration ``config`` is (or is a variant of)."""
    return VARIANTS[config][0] if config in VARIANTS else config


@dataclass(frozen=True)
class Expectation:
    """``buffer`` must hold ``values`` as little-endian ``width``-bit integers."""

    name: str
    buffer: DramBuffer
    values: np.ndarray
    width: int

    def check(self, dram: np.ndarray) -> None:
        size = self.values.size * self.width // 8
        region = dram[self.buffer.address : self.buffer.address + size]
        actual = region.view(f"<i{self.width // 8}").reshape(self.values.shape)
        np.testing.assert_array_equal(
            actual, self.values, err_msg=f"{self.name}: buffer {self.buffer.name}"
        )


def built(program: Program, expectations: list[Expectation]) -> Built:
    """A Built whose DRAM is the program's extent, zeroed, and whose check tests every
    expectation."""

    def check(dram: np.ndarray) -> None:
        for expectation in expectations:
            expectation.check(dram)

    dram = np.zeros(program.dram_extent, dtype=np.uint8)
    return Built(program, dram, check, tuple(e.buffer for e in expectations))


def random_ints(rng: np.random.Generator, width: int, shape, low=None, high=None) -> np.ndarray:
    """Random ``width``-bit signed integers (default: the full range) as int64."""
    low = -(1 << (width - 1)) if low is None else low
    high = (1 << (width - 1)) - 1 if high is None else high
    return rng.integers(low, high, size=shape, endpoint=True, dtype=np.int64)


def wrap_np(values: np.ndarray, width: int) -> np.ndarray:
    """Two's-complement wrap to ``width`` bits, written independently of the simulator."""
    modulus = 1 << width
    return ((values.astype(object) + modulus // 2) % modulus - modulus // 2).astype(np.int64)


def as_bytes(values: np.ndarray, width: int) -> bytes:
    """Values as little-endian ``width``-bit integers (after checking they fit)."""
    assert np.array_equal(wrap_np(values, width), values), "value does not fit its width"
    return values.astype(f"<i{width // 8}").tobytes()


def store_acc_planes(
    b: ProgramBuilder, rows: int, first: int, scratch: int, name: str
) -> tuple[DramBuffer, int]:
    """Store every bit of accumulator rows ``first..first+rows`` through the narrower OUT path.

    Plane ``j`` is the accumulator shifted right by ``j * out_width``: copied to scratch rows
    (reset, then ADD), shifted (SHR), and stored; the STORE of all planes then holds the full
    ``acc_width`` value of each lane, so a check sees high bits too. Returns the DRAM buffer and
    the number of planes.
    """
    cfg = b.cfg
    planes = cfg.acc_width // cfg.out_width
    out = b.alloc(name, MemId.OUT, planes * rows)
    b.alu(row_kernel(scratch, scratch, planes * rows), AluOp.ADD, reset=True)
    for j in range(planes):
        plane = scratch + j * rows
        b.alu(row_kernel(plane, first, rows), AluOp.ADD)
        b.alu(row_kernel(plane, plane, rows), AluOp.SHR, imm=j * cfg.out_width)
    b.dep_push(S.COMPUTE, S.STORE)
    b.dep_pop(S.COMPUTE, S.STORE)
    b.store_2d(out, sram=scratch, y_size=1, x_size=planes * rows)
    return out, planes


def planes_of(values: np.ndarray, cfg: AccelConfig) -> np.ndarray:
    """What :func:`store_acc_planes` stores for accumulator ``values`` (rows, batch, block)."""
    planes = cfg.acc_width // cfg.out_width
    return np.stack([wrap_np(values >> (j * cfg.out_width), cfg.out_width) for j in range(planes)])

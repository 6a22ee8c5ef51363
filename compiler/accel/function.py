"""``build`` for the accelerator: a schedule compiled into an :class:`AccelFunction`.

The function holds an :class:`isa.Program` whose DRAM segments for the arguments start zeroed
(``program``: save it, disassemble it, run it anywhere), where each argument lives
(``layout``), the lowered IR and the instruction stream with its tokens. Calling it on numpy
arrays binds the inputs into the program's segments, runs it on a device of any level
(``runtime.open_device``: ``fsim``, ``sim``, ``rtl``, or a device object) and copies the outputs
back, returning the device's stats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from compiler.accel.emit import Generated, generate
from compiler.accel.lower import lower_accel
from compiler.accel.stream import format_stream
from compiler.errors import CompileError
from compiler.loop_ir import LoweredFunc
from compiler.schedule import Schedule
from compiler.te import Tensor
from isa import AccelConfig, DramBuffer, DramSegment, MemId, Program

__all__ = ["AccelFunction", "Argument", "build_accel"]


@dataclass(frozen=True)
class Argument:
    """One argument: its tensor's name, shape and numpy dtype, and its DRAM buffer."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    dram: DramBuffer

    @property
    def is_output(self) -> bool:
        return self.dram.memory_type is MemId.OUT


class AccelFunction:
    """A compiled accelerator function (see the module docstring)."""

    def __init__(self, cfg: AccelConfig, lowered: LoweredFunc, generated: Generated) -> None:
        self.cfg = cfg
        self.lowered = lowered
        self.program: Program = generated.program
        self.layout: dict[str, DramBuffer] = generated.layout
        self.arguments = tuple(
            Argument(p.name, p.shape, p.dtype.numpy, generated.layout[p.name])
            for p in lowered.params
        )
        self._generated = generated

    @property
    def name(self) -> str:
        return self.lowered.name

    def stream(self) -> str:
        """The instruction stream as text: each transfer and kernel run with its tokens."""
        return format_stream(list(self._generated.ops), list(self._generated.tokens))

    def bind(self, *arrays: np.ndarray) -> Program:
        """The program with the input arrays in its DRAM segments (outputs stay zeroed)."""
        self._check(arrays)
        segments = []
        for argument, array, segment in zip(
            self.arguments, arrays, self.program.segments, strict=True
        ):
            data = segment.data
            if not argument.is_output:
                data = np.ascontiguousarray(array, dtype=argument.dtype.newbyteorder("<"))
                data = data.tobytes()
            segments.append(DramSegment(segment.name, segment.address, data))
        return replace(self.program, segments=tuple(segments))

    def __call__(self, *arrays: np.ndarray, device: object = "fsim", **options: object) -> object:
        """Run on ``device`` (a kind for ``runtime.open_device``, with ``options``, or a device
        object), fill the output arrays and return the device's ``RunStats``."""
        from runtime import open_device

        program = self.bind(*arrays)
        runner = open_device(device, self.cfg, **options) if isinstance(device, str) else device
        dram = np.zeros(program.dram_extent, dtype=np.uint8)
        stats = runner.run(program, dram)
        for argument, array in zip(self.arguments, arrays, strict=True):
            if argument.is_output:
                raw = dram[argument.dram.address : argument.dram.end]
                array[...] = raw.view(argument.dtype.newbyteorder("<")).reshape(argument.shape)
        return stats

    def _check(self, arrays: Sequence[np.ndarray]) -> None:
        if len(arrays) != len(self.arguments):
            raise CompileError(
                f"takes {len(self.arguments)} arrays ({', '.join(a.name for a in self.arguments)})"
                f", got {len(arrays)}",
                op=self.name,
            )
        for argument, array in zip(self.arguments, arrays, strict=True):
            if not isinstance(array, np.ndarray):
                raise CompileError(
                    f"needs a numpy array, got {type(array).__name__}", tensor=argument.name
                )
            if array.shape != argument.shape or array.dtype != argument.dtype:
                raise CompileError(
                    f"expects {argument.dtype}{list(argument.shape)}, got "
                    f"{array.dtype}{list(array.shape)}",
                    tensor=argument.name,
                )
            if argument.is_output and not array.flags.writeable:
                raise CompileError("the output array is read-only", tensor=argument.name)

    def __repr__(self) -> str:
        args = ", ".join(a.name for a in self.arguments)
        insns = len(self.program.instructions)
        return f"<AccelFunction {self.name}({args}): {insns} instructions, {self.cfg.fingerprint}>"


def build_accel(
    schedule: Schedule, args: Sequence[Tensor], cfg: AccelConfig, name: str = "main"
) -> AccelFunction:
    """Compile ``schedule`` over ``args`` for the accelerator of ``cfg``."""
    lowered = lower_accel(schedule, args, cfg, name)
    return AccelFunction(cfg, lowered, generate(cfg, lowered))

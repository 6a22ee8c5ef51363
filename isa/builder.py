"""``ProgramBuilder``: the assembler-level API that hand-written kernels and the compiler use.

It has the duties VTA's C++ runtime had (vta-facts 3.3-3.4):

- **DRAM buffers**, allocated in order and aligned to their element size (``dram_base`` counts
  elements); every allocated buffer becomes a :class:`~isa.program.DramSegment` (zeros when no
  data is given) and every :meth:`~ProgramBuilder.extern` one a
  :class:`~isa.program.DramRegion`, so a program carries its whole DRAM footprint
  (:attr:`Program.dram_extent`).
- **2-D loads and stores** with zero padding, checked against the buffer and the SRAM depth.
- **Micro-op kernels**: a :class:`Kernel` is data (micro-ops plus up to two :class:`Loop`
  levels). Kernels are placed in the micro-op buffer as a ring; a kernel already resident (same
  micro-ops) is reused without a LOAD UOP, and placing a new one evicts the kernels it overlaps.
- **Dependency tokens** folded like VTA's ``InsnQueue``: :meth:`~ProgramBuilder.dep_pop` marks a
  pop pending on the next instruction of the popping stage; :meth:`~ProgramBuilder.dep_push` sets
  the flag on the last instruction when it belongs to the pushing stage, else appends a no-op.
- :meth:`~ProgramBuilder.finish` drains every outstanding token, makes every load and store
  happen before FINISH (SEMANTICS section 7) and returns the :class:`~isa.program.Program`.

Anything that cannot become a valid program raises :class:`~isa.errors.BuilderError` at the call
that causes it.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass

import numpy as np

from isa.config import AccelConfig
from isa.encoding import UOP_BYTES, encode, encode_uop
from isa.errors import BuilderError, EncodingError, ProgramError
from isa.instructions import AluInsn, FinishInsn, GemmInsn, Instruction, MemInsn, Uop, stage_of
from isa.opcodes import AluOp, MemId, Opcode, Stage
from isa.program import DramRegion, DramSegment, Program, check_dram_region
from isa.steps import Operand, max_index, operand_buffers, window_violation
from isa.tokens import Token, popped_tokens, pushed_tokens, token_between

__all__ = ["DramBuffer", "Kernel", "Loop", "ProgramBuilder"]

_MAX_LOOPS = 2


@dataclass(frozen=True)
class DramBuffer:
    """A DRAM buffer of ``elems`` elements of ``memory_type`` at byte ``address``."""

    name: str
    memory_type: MemId
    address: int
    elems: int
    elem_bytes: int

    @property
    def nbytes(self) -> int:
        return self.elems * self.elem_bytes

    @property
    def end(self) -> int:
        """First byte address after the buffer."""
        return self.address + self.nbytes


@dataclass(frozen=True)
class Loop:
    """One loop level of a kernel: ``extent`` iterations, each advancing the accumulator (dst),
    input or source accumulator (src) and weight (wgt) rows by the given factors."""

    extent: int
    dst_factor: int = 0
    src_factor: int = 0
    wgt_factor: int = 0


@dataclass(frozen=True)
class Kernel:
    """Micro-ops run in order inside up to two loops (``loops`` lists the outermost first)."""

    uops: tuple[Uop, ...]
    loops: tuple[Loop, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "uops", tuple(self.uops))
        object.__setattr__(self, "loops", tuple(self.loops))
        if not all(isinstance(u, Uop) for u in self.uops):
            raise BuilderError("a kernel's micro-ops must be Uop records")
        if not all(isinstance(lp, Loop) for lp in self.loops):
            raise BuilderError("a kernel's loops must be Loop records")


def _align_up(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


class ProgramBuilder:
    """Builds one :class:`~isa.program.Program` for ``cfg`` (see the module docstring).

    DRAM buffers are placed from byte ``dram_start`` upwards; the micro-op table goes after
    them when :meth:`finish` is called. A builder builds one program: after :meth:`finish`,
    every call raises BuilderError.
    """

    def __init__(self, cfg: AccelConfig, *, dram_start: int = 0) -> None:
        if not isinstance(cfg, AccelConfig):
            raise BuilderError(f"cfg must be an AccelConfig, not {type(cfg).__name__}")
        if dram_start < 0:
            raise BuilderError(f"dram_start={dram_start} must be >= 0")
        self.cfg = cfg
        self._cursor = dram_start
        self._buffers: list[DramBuffer] = []
        self._data: dict[str, bytes] = {}
        self._insns: list[Instruction] = []
        self._pending: dict[Stage, set[str]] = {stage: set() for stage in Stage}
        self._outstanding: Counter[Token] = Counter()
        self._stage_counts: Counter[Stage] = Counter()
        # Micro-op buffer ring and the DRAM micro-op table.
        self._resident: dict[tuple[Uop, ...], int] = {}
        self._uop_cursor = 0
        self._table: list[Uop] = []
        self._table_offsets: dict[tuple[Uop, ...], int] = {}
        self._uop_loads: list[tuple[int, int]] = []  # (instruction index, table offset)
        self._checked: set[tuple[Instruction, tuple[Uop, ...]]] = set()  # kernels checked
        self._finished = False

    # ------------------------------------------------------------------ DRAM buffers
    def alloc(
        self, name: str, memory_type: MemId, elems: int, data: object | None = None
    ) -> DramBuffer:
        """A DRAM buffer of ``elems`` elements of ``memory_type``, aligned to the element size.

        ``data`` (bytes or a C-contiguous array, exactly the buffer's size, little-endian as
        DRAM holds it) is its initial content; without it the buffer starts zeroed.
        """
        memory_type, elem_bytes = self._new_buffer(name, memory_type, elems)
        address = _align_up(self._cursor, elem_bytes)
        buffer = DramBuffer(name, memory_type, address, elems, elem_bytes)
        if data is None:
            raw = bytes(buffer.nbytes)
        else:
            try:
                raw = memoryview(data).cast("B").tobytes()  # type: ignore[arg-type]
            except (TypeError, ValueError) as err:
                raise BuilderError(
                    f"buffer {name}: data must be bytes or a C-contiguous array ({err})"
                ) from None
            if len(raw) != buffer.nbytes:
                raise BuilderError(
                    f"buffer {name}: data has {len(raw)} bytes, the buffer {buffer.nbytes} "
                    f"({elems} x {elem_bytes}-byte {memory_type.name} elements)"
                )
        self._buffers.append(buffer)
        self._data[name] = raw
        self._cursor = buffer.end
        return buffer

    def extern(self, name: str, memory_type: MemId, elems: int, address: int) -> DramBuffer:
        """A DRAM buffer that the caller owns at byte ``address`` (aligned to the element size):
        the program reads or writes it but carries no data for it, only a region naming its
        bytes (a compiled model's tensors live in one DRAM image that its programs share)."""
        memory_type, elem_bytes = self._new_buffer(name, memory_type, elems)
        if isinstance(address, bool) or not isinstance(address, int) or address < 0:
            raise BuilderError(f"buffer {name}: address {address!r} must be an integer >= 0")
        if address % elem_bytes:
            raise BuilderError(
                f"buffer {name}: address {address:#x} is not aligned to its {elem_bytes}-byte "
                f"{memory_type.name} elements"
            )
        buffer = DramBuffer(name, memory_type, address, elems, elem_bytes)
        try:
            check_dram_region(self.cfg, address, buffer.end, f"buffer {name}")
        except ProgramError as err:
            raise BuilderError(str(err)) from None
        self._buffers.append(buffer)
        return buffer

    def _new_buffer(self, name: str, memory_type: MemId, elems: int) -> tuple[MemId, int]:
        """Check a new buffer's name and size; its memory type and element bytes."""
        self._check_open()
        memory_type = MemId(memory_type)
        if isinstance(elems, bool) or not isinstance(elems, int) or elems < 1:
            raise BuilderError(f"buffer {name}: elems={elems!r} must be a positive integer")
        if any(b.name == name for b in self._buffers):
            raise BuilderError(f"buffer name {name!r} is used twice")
        try:
            DramSegment(name, 0, b"")  # validates the name
        except ProgramError as err:
            raise BuilderError(f"buffer {name!r}: {err}") from None
        return memory_type, self.cfg.elem_bytes(memory_type)

    @property
    def dram_size(self) -> int:
        """Bytes of DRAM the buffers (and, after :meth:`finish`, the micro-op table) occupy."""
        return self._cursor

    def _dram_base(
        self,
        buffer: DramBuffer,
        memory_type: MemId,
        offset: int,
        y_size: int,
        x_size: int,
        x_stride: int,
        what: str,
    ) -> int:
        if buffer not in self._buffers:
            raise BuilderError(f"{what}: {buffer.name} is not a buffer of this builder")
        elem_bytes = self.cfg.elem_bytes(memory_type)
        if buffer.address % elem_bytes:
            raise BuilderError(
                f"{what}: buffer {buffer.name} at byte {buffer.address:#x} is not aligned to "
                f"{elem_bytes}-byte {memory_type.name} elements"
            )
        elems = buffer.nbytes // elem_bytes
        if x_size < 1 or y_size < 0 or x_stride < 0 or offset < 0:
            raise BuilderError(
                f"{what}: x_size={x_size} must be >= 1 and y_size={y_size}, "
                f"x_stride={x_stride}, offset={offset} >= 0"
            )
        last = offset + (y_size - 1) * x_stride + x_size if y_size else offset
        if last > elems:
            raise BuilderError(
                f"{what}: elements up to {last - 1} of buffer {buffer.name} are accessed, but it "
                f"holds {elems} {memory_type.name} elements"
            )
        return buffer.address // elem_bytes + offset

    # ------------------------------------------------------------------ loads and stores
    def load_2d(
        self,
        buffer: DramBuffer,
        *,
        sram: int,
        y_size: int,
        x_size: int,
        x_stride: int | None = None,
        offset: int = 0,
        y_pad_0: int = 0,
        y_pad_1: int = 0,
        x_pad_0: int = 0,
        x_pad_1: int = 0,
        memory_type: MemId | None = None,
    ) -> None:
        """LOAD ``y_size`` rows of ``x_size`` elements (``x_stride`` apart, from element
        ``offset`` of ``buffer``) into SRAM rows from ``sram``, zero-padded on each side.

        ``memory_type`` defaults to the buffer's; micro-ops are loaded by :meth:`gemm` and
        :meth:`alu`, never here.
        """
        mem = buffer.memory_type if memory_type is None else MemId(memory_type)
        if mem in (MemId.OUT, MemId.UOP):
            raise BuilderError(f"load_2d: cannot load {mem.name} (use store_2d, gemm or alu)")
        pads = {"y_pad_0": y_pad_0, "y_pad_1": y_pad_1, "x_pad_0": x_pad_0, "x_pad_1": x_pad_1}
        rows = (y_pad_0 + y_size + y_pad_1) * (x_pad_0 + x_size + x_pad_1)
        self._transfer(
            "load_2d",
            Opcode.LOAD,
            mem,
            buffer,
            sram=sram,
            rows=rows,
            offset=offset,
            y_size=y_size,
            x_size=x_size,
            x_stride=x_stride,
            pads=pads,
        )

    def store_2d(
        self,
        buffer: DramBuffer,
        *,
        sram: int,
        y_size: int,
        x_size: int,
        x_stride: int | None = None,
        offset: int = 0,
    ) -> None:
        """STORE OUT rows ``sram .. sram + y_size * x_size`` to ``y_size`` rows of ``x_size``
        elements, ``x_stride`` apart, from element ``offset`` of ``buffer``."""
        self._transfer(
            "store_2d",
            Opcode.STORE,
            MemId.OUT,
            buffer,
            sram=sram,
            rows=y_size * x_size,
            offset=offset,
            y_size=y_size,
            x_size=x_size,
            x_stride=x_stride,
            pads={},
        )

    def _transfer(
        self,
        what: str,
        opcode: Opcode,
        mem: MemId,
        buffer: DramBuffer,
        *,
        sram: int,
        rows: int,
        offset: int,
        y_size: int,
        x_size: int,
        x_stride: int | None,
        pads: dict[str, int],
    ) -> None:
        """Check and append a LOAD or STORE of ``rows`` SRAM rows from ``sram``."""
        self._check_open()
        x_stride = x_size if x_stride is None else x_stride
        dram_base = self._dram_base(buffer, mem, offset, y_size, x_size, x_stride, what)
        self._check_sram(what, mem, sram, rows)
        insn = self._record(
            what,
            MemInsn,
            opcode=opcode,
            memory_type=mem,
            sram_base=sram,
            dram_base=dram_base,
            y_size=y_size,
            x_size=x_size,
            x_stride=x_stride,
            **pads,
        )
        self._append(insn)

    def _check_sram(self, what: str, mem: MemId, sram: int, rows: int) -> None:
        depth = self.cfg.buffer_depth(mem)
        if sram < 0 or sram + rows > depth:
            raise BuilderError(
                f"{what}: SRAM rows {sram}..{sram + rows - 1} lie outside the {mem.name} buffer "
                f"(depth {depth})"
            )

    # ------------------------------------------------------------------ compute
    def gemm(self, kernel: Kernel, *, reset: bool = False) -> None:
        """GEMM over ``kernel`` (with ``reset``, zero the accumulator rows instead)."""
        self._compute("gemm", GemmInsn, kernel, reset_reg=reset)

    def alu(
        self, kernel: Kernel, op: AluOp, *, imm: int | None = None, reset: bool = False
    ) -> None:
        """ALU ``op`` over ``kernel``: with ``imm`` against the immediate, else against the
        accumulator rows the micro-ops' src indices name."""
        fields = {"alu_opcode": AluOp(op), "use_imm": imm is not None, "imm": imm or 0}
        if any(lp.wgt_factor for lp in kernel.loops):
            raise BuilderError("alu: ALU kernels have no weight operand (wgt_factor must be 0)")
        self._compute("alu", AluInsn, kernel, reset_reg=reset, **fields)

    def _compute(self, what: str, record: type, kernel: Kernel, **fields: object) -> None:
        self._check_open()
        n = len(kernel.uops)
        depth = self.cfg.uop_buff_depth
        if not 1 <= n <= depth:
            raise BuilderError(
                f"{what}: a kernel of {n} micro-ops does not fit the micro-op buffer "
                f"(1..{depth} micro-ops)"
            )
        if len(kernel.loops) > _MAX_LOOPS:
            raise BuilderError(f"{what}: {len(kernel.loops)} loop levels; at most {_MAX_LOOPS}")
        for loop in kernel.loops:
            if loop.extent < 1:
                raise BuilderError(f"{what}: loop extent {loop.extent} must be >= 1")
        outer, inner = (Loop(1), Loop(1), *kernel.loops)[-_MAX_LOOPS:]
        loop_fields = {
            "iter_out": outer.extent,
            "iter_in": inner.extent,
            "dst_factor_out": outer.dst_factor,
            "dst_factor_in": inner.dst_factor,
            "src_factor_out": outer.src_factor,
            "src_factor_in": inner.src_factor,
        }
        if record is GemmInsn:
            loop_fields |= {"wgt_factor_out": outer.wgt_factor, "wgt_factor_in": inner.wgt_factor}
        insn = self._record(what, record, uop_bgn=0, uop_end=n, **loop_fields, **fields)
        if (insn, kernel.uops) not in self._checked:  # a kernel recurs: checked once
            self._check_kernel(what, insn, kernel.uops)
            self._checked.add((insn, kernel.uops))
        begin = self._place(kernel.uops)
        self._append(dataclasses.replace(insn, uop_bgn=begin, uop_end=begin + n))

    def _check_kernel(self, what: str, insn: GemmInsn | AluInsn, uops: tuple[Uop, ...]) -> None:
        for index, uop in enumerate(uops):
            try:
                encode_uop(uop, self.cfg)
            except EncodingError as err:
                raise BuilderError(f"{what}: micro-op {index}: {err.detail}") from None
        fields = {op: np.array([getattr(u, op.uop_field) for u in uops]) for op in Operand}
        cfg = self.cfg
        for operand, mem in operand_buffers(insn).items():
            top = max_index(insn, fields[operand], operand)
            if top >= cfg.buffer_depth(mem):
                raise BuilderError(
                    f"{what}: the kernel reaches {mem.name} row {top} through "
                    f"{operand.uop_field}, beyond the buffer's {cfg.buffer_depth(mem)} rows"
                )
        violation = window_violation(insn, fields, cfg.acc_raw_window)
        if violation is not None:
            raise BuilderError(f"{what}: kernel {violation.describe()}")

    def _place(self, uops: tuple[Uop, ...]) -> int:
        """The micro-op buffer row where ``uops`` start, loading them if not resident."""
        if uops in self._resident:
            return self._resident[uops]
        n = len(uops)
        begin = self._uop_cursor if self._uop_cursor + n <= self.cfg.uop_buff_depth else 0
        end = begin + n
        self._resident = {
            k: b for k, b in self._resident.items() if b + len(k) <= begin or b >= end
        }
        self._resident[uops] = begin
        self._uop_cursor = end
        if uops not in self._table_offsets:
            self._table_offsets[uops] = len(self._table)
            self._table.extend(uops)
        load = MemInsn(
            opcode=Opcode.LOAD,
            memory_type=MemId.UOP,
            sram_base=begin,
            dram_base=0,  # the table's address is known at finish()
            y_size=1,
            x_size=n,
            x_stride=n,
        )
        self._uop_loads.append((len(self._insns), self._table_offsets[uops]))
        self._append(load)
        return begin

    # ------------------------------------------------------------------ dependency tokens
    def dep_push(self, source: Stage, dest: Stage) -> None:
        """``source`` pushes a token toward its neighbour ``dest`` after its last instruction."""
        self._check_open()
        token = self._token(source, dest)
        self._commit_pending(token.source)
        flag = "push_next_dep" if token.dest > token.source else "push_prev_dep"
        last = self._insns[-1] if self._insns else None
        if last is not None and stage_of(last) == token.source and not getattr(last, flag):
            self._insns[-1] = dataclasses.replace(last, **{flag: True})
            self._outstanding[token] += 1
        else:
            self._append(self._nop(token.source, **{flag: True}))

    def dep_pop(self, source: Stage, dest: Stage) -> None:
        """``dest``'s next instruction first pops the token ``source`` pushed toward it."""
        self._check_open()
        token = self._token(source, dest)
        flag = "pop_prev_dep" if token.source < token.dest else "pop_next_dep"
        if flag in self._pending[token.dest]:
            self._commit_pending(token.dest)
        self._pending[token.dest].add(flag)

    def _token(self, source: Stage, dest: Stage) -> Token:
        token = token_between(source, dest)
        if token is None:
            raise BuilderError(
                f"no token runs from {Stage(source).name} to {Stage(dest).name}: only "
                f"neighbouring stages synchronise"
            )
        return token

    def _commit_pending(self, stage: Stage) -> None:
        if self._pending[stage]:
            self._append(self._nop(stage))

    @staticmethod
    def _nop(stage: Stage, **flags: bool) -> Instruction:
        """An instruction of ``stage`` that does nothing but carry dependency flags."""
        opcode, mem = {
            Stage.LOAD: (Opcode.LOAD, MemId.INP),
            Stage.COMPUTE: (Opcode.LOAD, MemId.UOP),
            Stage.STORE: (Opcode.STORE, MemId.OUT),
        }[stage]
        return MemInsn(
            opcode=opcode,
            memory_type=mem,
            sram_base=0,
            dram_base=0,
            y_size=0,
            x_size=0,
            x_stride=0,
            **flags,
        )

    # ------------------------------------------------------------------ instructions
    def _record(self, what: str, record: type, **fields: object) -> Instruction:
        """An instruction record whose fields fit this configuration, or a BuilderError."""
        try:
            return self._fits(what, record(**fields))
        except EncodingError as err:
            raise BuilderError(f"{what}: {err.detail}") from None

    def _fits(self, what: str, insn: Instruction) -> Instruction:
        try:
            encode(insn, self.cfg)
        except EncodingError as err:
            raise BuilderError(f"{what}: {err.detail}") from None
        return insn

    def _append(self, insn: Instruction) -> None:
        stage = stage_of(insn)
        if self._pending[stage]:
            insn = dataclasses.replace(insn, **dict.fromkeys(self._pending[stage], True))
            self._pending[stage].clear()
        for token in popped_tokens(insn):
            self._outstanding[token] -= 1
        for token in pushed_tokens(insn):
            self._outstanding[token] += 1
        self._stage_counts[stage] += 1
        self._insns.append(insn)

    @property
    def instructions(self) -> tuple[Instruction, ...]:
        """The instructions recorded so far (micro-op loads not yet pointing at the table)."""
        return tuple(self._insns)

    # ------------------------------------------------------------------ finish
    def finish(self) -> Program:
        """Append the epilogue and FINISH; return the program.

        The epilogue pops every token still owed to the load and store modules, has each of
        them push one token to compute after its last instruction, and has compute pop
        everything owed to it, so every load and store happens before FINISH and every counter
        ends at zero.
        """
        self._check_open()
        for stage in Stage:
            self._commit_pending(stage)
        owed = {t: n for t, n in self._outstanding.items() if n < 0}
        if owed:
            listing = ", ".join(f"{t.value} {-n}" for t, n in owed.items())
            raise BuilderError(f"more pops than pushes ({listing}): the program would deadlock")
        for token in (Token.G2L, Token.G2S):
            for _ in range(self._outstanding[token]):
                self.dep_pop(token.source, token.dest)
            self._commit_pending(token.dest)
        for stage in (Stage.STORE, Stage.LOAD):
            if self._stage_counts[stage]:
                self.dep_push(stage, Stage.COMPUTE)
        for token in (Token.S2G, Token.L2G):
            for _ in range(self._outstanding[token]):
                self.dep_pop(token.source, token.dest)
        self._commit_pending(Stage.COMPUTE)
        self._append(FinishInsn())
        self._finished = True
        uop_base = _align_up(self._cursor, UOP_BYTES) // UOP_BYTES
        for index, offset in self._uop_loads:
            load = dataclasses.replace(self._insns[index], dram_base=uop_base + offset)
            self._insns[index] = self._fits("micro-op load", load)
        if self._table:
            self._cursor = (uop_base + len(self._table)) * UOP_BYTES
        segments = [
            DramSegment(b.name, b.address, self._data[b.name])
            for b in self._buffers
            if b.name in self._data
        ]
        regions = [
            DramRegion(b.name, b.address, b.nbytes)
            for b in self._buffers
            if b.name not in self._data
        ]
        return Program(self.cfg, self._insns, self._table, uop_base, segments, regions)

    def _check_open(self) -> None:
        if self._finished:
            raise BuilderError("finish() was called: this builder's program is complete")

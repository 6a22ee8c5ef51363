"""``AccelConfig``: the one place where the accelerator's hardware numbers are written.

A configuration stores only *primary* parameters: data widths, the GEMM core's shape, buffer sizes
in bytes, the AXI data width, the clock, the widths of the instruction fields that do not
follow from buffer sizes, and the optional ALU operations (``alu_mul``). Everything else
(element sizes, buffer depths, index widths, the instruction layouts of :mod:`isa.fields`, the
ALU opcodes of :attr:`AccelConfig.alu_ops`) is derived from them, so changing one value changes
every consumer consistently: the encoder, the simulators, the Amaranth hardware and the compiler.

The default values are VTA's PYNQ configuration (vta-facts 1.1), and for it the instruction
layout equals VTA's ``hw_spec.h`` bit for bit. Configurations are frozen, hashable, validated on
construction (:class:`~isa.errors.ConfigError` names the parameter, value and rule), saved as JSON,
and read from VTA's own ``vta_config.json`` files.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from isa.errors import ConfigError, did_you_mean
from isa.files import CONFIGURATION, read_file
from isa.opcodes import AluOp, MemId

__all__ = [
    "ACC_RAW_WINDOW",
    "AXI_MAX_BEATS",
    "AXI_PAGE_BYTES",
    "DSP_A_BITS",
    "DSP_B_BITS",
    "FETCH_BUFFER_INSNS",
    "INSN_WIDTH",
    "MUL_ARG_BITS",
    "READ_OUTSTANDING",
    "TOKEN_COUNTER_BITS",
    "UOP_WIDTH",
    "WRITE_OUTSTANDING",
    "AccelConfig",
    "TimingConfig",
    "fetch_buffer_beats",
]

#: Every instruction is 128 bits wide (VTA_INS_WIDTH).
INSN_WIDTH = 128
#: Every micro-op is 32 bits wide (VTA_UOP_WIDTH); its fields must fit.
UOP_WIDTH = 32
#: Width of the opcode field and of the memory-type and ALU-opcode fields (HW_VER 0.0.2).
OPCODE_BITS = 3
MEMOP_ID_BITS = 3
ALU_OPCODE_BITS = 3
#: ACC_8BIT loads read 8-bit integers from DRAM, whatever the configured input width.
ACC_8BIT_WIDTH = 8
#: The ALU's MUL uses the low 8 bits of its operand, signed (VTA_MUL_ARG_BIT_WIDTH): one DSP
#: per lane instead of a full acc_width x acc_width multiplier.
MUL_ARG_BITS = 8
#: A GEMM or ALU step may not read an accumulator row that either of the two steps before it in
#: the same instruction writes (VTA's UopKernel::VerifyDep window): the hardware pipelines the
#: accumulator at one step per cycle without forwarding.
ACC_RAW_WINDOW = 2
#: Width of each dependency-token counter; a push beyond its maximum is an error.
TOKEN_COUNTER_BITS = 16
#: AXI4 rules every memory burst follows: at most 256 beats (an 8-bit ARLEN/AWLEN), and never
#: across a 4 KiB address boundary.
AXI_MAX_BEATS = 256
AXI_PAGE_BYTES = 4096
#: The signed operand widths of a DSP48E1 multiplier (the A port after the pre-adder, the B
#: port): the GEMM core packs two weights into one A operand where both products fit
#: (:attr:`AccelConfig.gemm_packed_pairs`).
DSP_A_BITS = 25
DSP_B_BITS = 18
#: Instructions the fetch module's beat buffer holds; fetch requests a read burst only when the
#: buffer has room for all of its data, so this bounds its bursts.
FETCH_BUFFER_INSNS = 4
#: Read bursts in flight on the shared read port (the read arbiter's route FIFO), and write
#: bursts the store module may have awaiting data or response.
READ_OUTSTANDING = 4
WRITE_OUTSTANDING = 4

# VTA's pkg_config.py: targets other than these fall back to the PYNQ values, as VTA does.
_VTA_TARGETS: dict[str, tuple[int, float]] = {
    "ultra96": (128, 333.0),
    "zcu104": (128, 333.0),
    "de10nano": (64, 100.0),
    "pynq": (64, 100.0),
}
_VTA_FALLBACK_TARGET = "pynq"
# Keys of vta_config.json files that describe the build or the runtime, not the architecture.
_VTA_IGNORED_KEYS = frozenset({"TARGET", "HW_VER", "HW_CLK_TARGET", "ACC_DEP_DISTANCE"})


#: Field metadata of a parameter that changes neither the ISA (instruction and micro-op layouts,
#: operations, SRAM shapes) nor the memory map (element sizes, the DRAM address space): a program
#: built under one value runs unchanged under another (:meth:`AccelConfig.isa_parameters`).
_NOT_ISA = {"isa": False}


def _is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def _log2(value: int) -> int:
    return value.bit_length() - 1


@dataclass(frozen=True)
class AccelConfig:
    """A VTA-style accelerator configuration (primary parameters only; see the module doc).

    Sizes are in bytes and widths in bits. Use :meth:`preset` for the named configurations and
    :meth:`replace` to derive a variant (``AccelConfig.preset("tiny").replace(alu_mul=False)``):
    both validate.
    """

    # Data widths (bits). Outputs have the input width, as in VTA.
    inp_width: int = 8
    wgt_width: int = 8
    acc_width: int = 32
    # GEMM core shape: BATCH x BLOCK_IN inputs times BLOCK_IN x BLOCK_OUT weights per cycle.
    batch: int = 1
    block_in: int = 16
    block_out: int = 16
    # On-chip buffer sizes (bytes).
    uop_buff_size: int = 32 * 1024
    inp_buff_size: int = 32 * 1024
    wgt_buff_size: int = 256 * 1024
    acc_buff_size: int = 128 * 1024
    # Platform.
    axi_width: int = dataclasses.field(default=64, metadata=_NOT_ISA)
    clock_mhz: float = dataclasses.field(default=100.0, metadata=_NOT_ISA)
    # Depth of each module's command queue between fetch and the module (VTA: 512).
    cmd_queue_depth: int = dataclasses.field(default=512, metadata=_NOT_ISA)
    # Two GEMM products that share an input in one DSP multiplier, where the widths allow it
    # (:attr:`gemm_packed_pairs`); the results and the cycles are the same either way.
    gemm_dsp_packing: bool = dataclasses.field(default=True, metadata=_NOT_ISA)
    # Instruction fields whose widths do not follow from the buffers (VTA hw_spec_const.h).
    sram_addr_bits: int = 16
    dram_addr_bits: int = 32
    mem_size_bits: int = 16
    mem_stride_bits: int = 16
    mem_pad_bits: int = 4
    loop_iter_bits: int = 14
    alu_imm_bits: int = 16
    # Optional ALU operations (a bool each; VTA's vta_config.json has no such key: True there).
    # Without ``alu_mul`` the ALU has no MUL: no multiplier is built (one DSP per lane saved),
    # and a MUL instruction does not encode, decode, assemble, build, compile or simulate.
    alu_mul: bool = True

    # ------------------------------------------------------------------ construction
    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "clock_mhz":
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ConfigError(f.name, value, "must be a number of MHz")
                object.__setattr__(self, f.name, float(value))
            elif isinstance(f.default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(f.name, value, "must be true or false")
            elif isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f.name, value, "must be an integer")
        self._validate()

    def _validate(self) -> None:
        for name in ("inp_width", "wgt_width"):
            value = getattr(self, name)
            if not (_is_pow2(value) and 8 <= value <= 32):
                raise ConfigError(
                    name, value, "must be a power of two from 8 to 32 (DRAM is byte-addressed)"
                )
        if not (_is_pow2(self.acc_width) and 8 <= self.acc_width <= 64):
            raise ConfigError("acc_width", self.acc_width, "must be a power of two from 8 to 64")
        for name in ("batch", "block_in", "block_out"):
            value = getattr(self, name)
            if not (_is_pow2(value) and value <= 1024):
                raise ConfigError(name, value, "must be a power of two from 1 to 1024")
        dot_bits = self.inp_width + self.wgt_width + _log2(self.block_in)
        if self.acc_width < dot_bits:
            raise ConfigError(
                "acc_width",
                self.acc_width,
                f"too narrow for a full dot product: inp_width + wgt_width + log2(block_in) "
                f"= {self.inp_width} + {self.wgt_width} + {_log2(self.block_in)} = {dot_bits} bits",
            )
        for name, mem in (
            ("uop_buff_size", MemId.UOP),
            ("inp_buff_size", MemId.INP),
            ("wgt_buff_size", MemId.WGT),
            ("acc_buff_size", MemId.ACC),
        ):
            size = getattr(self, name)
            elem = self.elem_bytes(mem)
            if not _is_pow2(size):
                raise ConfigError(name, size, "must be a power of two (bytes)")
            if size < 2 * elem:
                raise ConfigError(
                    name, size, f"must hold at least two {mem.name} elements of {elem} bytes"
                )
        if not (_is_pow2(self.axi_width) and 32 <= self.axi_width <= 1024):
            raise ConfigError("axi_width", self.axi_width, "must be a power of two from 32 to 1024")
        if not 1 <= self.cmd_queue_depth <= 65536:
            raise ConfigError("cmd_queue_depth", self.cmd_queue_depth, "must be from 1 to 65536")
        if not (0.0 < self.clock_mhz <= 1000.0) or math.isnan(self.clock_mhz):
            raise ConfigError("clock_mhz", self.clock_mhz, "must be in (0, 1000] MHz")
        for name in (
            "sram_addr_bits",
            "dram_addr_bits",
            "mem_size_bits",
            "mem_stride_bits",
            "mem_pad_bits",
            "loop_iter_bits",
        ):
            value = getattr(self, name)
            if not 1 <= value <= 64:
                raise ConfigError(name, value, "must be from 1 to 64 bits")
        if not 2 <= self.alu_imm_bits <= self.acc_width:
            raise ConfigError(
                "alu_imm_bits", self.alu_imm_bits, f"must be from 2 to acc_width={self.acc_width}"
            )
        widest = max(
            self.log_uop_buff_depth,
            self.log_inp_buff_depth,
            self.log_wgt_buff_depth,
            self.log_acc_buff_depth,
        )
        if self.sram_addr_bits < widest:
            raise ConfigError(
                "sram_addr_bits",
                self.sram_addr_bits,
                f"cannot address every buffer row: the deepest buffer needs {widest} bits",
            )
        # The instruction and micro-op layouts must fit their words; isa.fields checks that.
        from isa.fields import instruction_set  # local: fields derives from this class

        instruction_set(self)

    @classmethod
    def isa_parameters(cls) -> tuple[str, ...]:
        """The primary parameters that change the ISA or the memory map: every one but those
        declared otherwise above (the bus width, the clock, the command-queue depth). Two
        configurations equal on these run the same programs (:func:`isa.check_config`)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.metadata.get("isa", True))

    def replace(self, **changes: Any) -> AccelConfig:
        """Return a validated copy with ``changes`` applied (unknown names raise ConfigError)."""
        return AccelConfig.from_dict({**self.to_dict(), **changes})

    # ------------------------------------------------------------------ derived values
    @property
    def out_width(self) -> int:
        """Width of an output element: the input width (VTA's LOG_OUT_WIDTH)."""
        return self.inp_width

    @property
    def uop_elem_bytes(self) -> int:
        return UOP_WIDTH // 8

    @property
    def inp_elem_bytes(self) -> int:
        """Bytes of one INP element: a BATCH x BLOCK_IN input block."""
        return self.batch * self.block_in * self.inp_width // 8

    @property
    def wgt_elem_bytes(self) -> int:
        """Bytes of one WGT element: a BLOCK_OUT x BLOCK_IN weight block (stored transposed)."""
        return self.block_out * self.block_in * self.wgt_width // 8

    @property
    def acc_elem_bytes(self) -> int:
        """Bytes of one ACC element: a BATCH x BLOCK_OUT accumulator block."""
        return self.batch * self.block_out * self.acc_width // 8

    @property
    def out_elem_bytes(self) -> int:
        """Bytes of one OUT element: a BATCH x BLOCK_OUT output block."""
        return self.batch * self.block_out * self.out_width // 8

    @property
    def acc8_elem_bytes(self) -> int:
        """Bytes of one ACC_8BIT DRAM element: BATCH x BLOCK_OUT 8-bit integers."""
        return self.batch * self.block_out * ACC_8BIT_WIDTH // 8

    @property
    def out_buff_size(self) -> int:
        """Bytes of the OUT buffer, which shares the accumulator's depth."""
        return self.acc_buff_size * self.out_width // self.acc_width

    @property
    def uop_buff_depth(self) -> int:
        return self.uop_buff_size // self.uop_elem_bytes

    @property
    def inp_buff_depth(self) -> int:
        return self.inp_buff_size // self.inp_elem_bytes

    @property
    def wgt_buff_depth(self) -> int:
        return self.wgt_buff_size // self.wgt_elem_bytes

    @property
    def acc_buff_depth(self) -> int:
        return self.acc_buff_size // self.acc_elem_bytes

    @property
    def out_buff_depth(self) -> int:
        return self.acc_buff_depth

    @property
    def log_uop_buff_depth(self) -> int:
        """Index width of the micro-op buffer."""
        return _log2(self.uop_buff_depth)

    @property
    def log_inp_buff_depth(self) -> int:
        """Index width of the input buffer."""
        return _log2(self.inp_buff_depth)

    @property
    def log_wgt_buff_depth(self) -> int:
        """Index width of the weight buffer."""
        return _log2(self.wgt_buff_depth)

    @property
    def log_acc_buff_depth(self) -> int:
        """Index width of the accumulator (and OUT) buffer."""
        return _log2(self.acc_buff_depth)

    @property
    def shr_arg_bits(self) -> int:
        """Low bits of the ALU operand that SHR reads, as a signed shift amount.

        ``log2(acc_width) + 1`` bits reach every right shift 0..acc_width-1 and every left shift
        1..acc_width. (VTA's HLS used ``log2(acc_width)`` signed bits, which stop at ``>> 15``.)
        """
        return _log2(self.acc_width) + 1

    @property
    def mul_arg_bits(self) -> int:
        """Low bits of the ALU operand that MUL reads, as a signed factor."""
        return MUL_ARG_BITS

    @property
    def gemm_pack_shift(self) -> int:
        """Bits between the two weights of a packed GEMM operand: a product's width,
        ``inp_width + wgt_width`` (16 for int8), so that the low product fills the bits below."""
        return self.inp_width + self.wgt_width

    @property
    def gemm_packed_pairs(self) -> int:
        """Pairs of GEMM output lanes ``(2k, 2k + 1)`` whose two products with the same input
        share one DSP multiplier, per input element and batch row; 0 without packing.

        Packing ``(w1 << gemm_pack_shift) + w0`` takes ``wgt_width + gemm_pack_shift + 1``
        signed bits (the sum of the shifted weight and the sign-extended low one: 25 for int8),
        which must fit the DSP's A operand, and the shared input its B operand
        (:data:`DSP_A_BITS`, :data:`DSP_B_BITS`); then the low product is the result's low
        ``gemm_pack_shift`` bits and the high one the next ``gemm_pack_shift`` bits plus the low
        product's sign bit. With ``gemm_dsp_packing`` off, or wider operands, every product has
        its own multiplier; an odd ``block_out`` leaves its last lane unpacked.
        """
        return self.gemm_pairs_packed_by(DSP_A_BITS, DSP_B_BITS)

    def gemm_pairs_packed_by(self, a_bits: int, b_bits: int) -> int:
        """:attr:`gemm_packed_pairs` on a multiplier of ``a_bits`` x ``b_bits`` signed operands
        (another part's than the DSP48E1 of :data:`DSP_A_BITS`, :data:`DSP_B_BITS`): 0 where
        packing is off or a packed operand or the input does not fit it."""
        packed_bits = self.wgt_width + self.gemm_pack_shift + 1
        if not self.gemm_dsp_packing or packed_bits > a_bits or self.inp_width > b_bits:
            return 0
        return self.block_out // 2

    @property
    def alu_ops(self) -> tuple[AluOp, ...]:
        """The ALU opcodes this configuration implements, in opcode order."""
        return tuple(op for op in AluOp if self.missing_alu_op(op) is None)

    def missing_alu_op(self, op: AluOp) -> str | None:
        """Why this configuration has no ALU opcode ``op``; None when it has it."""
        if op is AluOp.MUL and not self.alu_mul:
            return "this configuration has no ALU multiplier (alu_mul=False)"
        return None

    @property
    def acc_raw_window(self) -> int:
        """Steps of one GEMM/ALU instruction whose accumulator writes a step may not read."""
        return ACC_RAW_WINDOW

    @property
    def token_counter_bits(self) -> int:
        """Width of each dependency-token counter."""
        return TOKEN_COUNTER_BITS

    @property
    def bus_bytes(self) -> int:
        """Bytes per AXI data beat."""
        return self.axi_width // 8

    @property
    def macs_per_cycle(self) -> int:
        """Multiply-accumulates the GEMM core performs per cycle at II=1."""
        return self.batch * self.block_in * self.block_out

    @property
    def peak_gops(self) -> float:
        """Peak GEMM throughput in giga-operations per second (a MAC counts as two ops)."""
        return 2 * self.macs_per_cycle * self.clock_mhz / 1000.0

    def elem_bytes(self, mem: MemId) -> int:
        """Bytes of one DRAM element of memory type ``mem`` (the unit of ``dram_base``)."""
        return self._elem_bytes_by_mem[MemId(mem)]

    def buffer_depth(self, mem: MemId) -> int:
        """Rows of the on-chip buffer that memory type ``mem`` reads or writes."""
        return self._depth_by_mem[MemId(mem)]

    @cached_property
    def _elem_bytes_by_mem(self) -> dict[MemId, int]:
        return {
            MemId.UOP: self.uop_elem_bytes,
            MemId.WGT: self.wgt_elem_bytes,
            MemId.INP: self.inp_elem_bytes,
            MemId.ACC: self.acc_elem_bytes,
            MemId.OUT: self.out_elem_bytes,
            MemId.ACC_8BIT: self.acc8_elem_bytes,
        }

    @cached_property
    def _depth_by_mem(self) -> dict[MemId, int]:
        return {
            MemId.UOP: self.uop_buff_depth,
            MemId.WGT: self.wgt_buff_depth,
            MemId.INP: self.inp_buff_depth,
            MemId.ACC: self.acc_buff_depth,
            MemId.OUT: self.out_buff_depth,
            MemId.ACC_8BIT: self.acc_buff_depth,
        }

    @property
    def fingerprint(self) -> str:
        """A name for artefacts built for this configuration.

        VTA's bitstream name (``1x16_i8w8a32_15_15_18_17`` for the default), extended only where
        this configuration leaves VTA's parameter space: unequal block sizes, a bus width or clock
        other than PYNQ's, another command-queue depth, changed instruction-field widths, an
        ALU without MUL (``_nomul``), or a GEMM core without DSP packing (``_nopack``).
        """
        block = (
            f"{self.block_in}"
            if self.block_in == self.block_out
            else f"{self.block_in}x{self.block_out}"
        )
        name = (
            f"{self.batch}x{block}_i{self.inp_width}w{self.wgt_width}a{self.acc_width}"
            f"_{_log2(self.uop_buff_size)}_{_log2(self.inp_buff_size)}"
            f"_{_log2(self.wgt_buff_size)}_{_log2(self.acc_buff_size)}"
        )
        if self.axi_width != 64:
            name += f"_bus{self.axi_width}"
        if self.clock_mhz != 100.0:
            name += f"_{self.clock_mhz:g}mhz"
        if self.cmd_queue_depth != 512:
            name += f"_q{self.cmd_queue_depth}"
        isa_widths = {f: getattr(self, f) for f in _ISA_WIDTH_FIELDS}
        if isa_widths != _VTA_ISA_WIDTHS:
            digest = hashlib.sha256(json.dumps(isa_widths, sort_keys=True).encode()).hexdigest()
            name += f"_isa{digest[:8]}"
        if not self.alu_mul:
            name += "_nomul"
        if not self.gemm_dsp_packing:
            name += "_nopack"
        return name

    # ------------------------------------------------------------------ presets and files
    @classmethod
    def preset(cls, name: str) -> AccelConfig:
        """Return the named preset; :meth:`preset_names` lists them."""
        try:
            params = _PRESETS[name]
        except KeyError:
            raise ConfigError(
                "preset",
                name,
                f"unknown preset{did_you_mean(name, _PRESETS)}; choose one of "
                f"{', '.join(_PRESETS)}",
            ) from None
        return cls(**params)

    @staticmethod
    def preset_names() -> tuple[str, ...]:
        return tuple(_PRESETS)

    def to_dict(self) -> dict[str, Any]:
        """All primary parameters, by name."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, params: dict[str, Any]) -> AccelConfig:
        """Build from primary parameters; missing ones take the defaults, unknown ones raise."""
        known = {f.name for f in dataclasses.fields(cls)}
        for key in params:
            if key not in known:
                raise ConfigError(str(key), params[key], "not a configuration parameter")
        return cls(**params)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str, *, source: str = "<json>") -> AccelConfig:
        """Parse our JSON format, or VTA's ``vta_config.json`` format (recognised by its keys)."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ConfigError("file", source, f"not valid JSON ({err})") from None
        except ValueError as err:  # an integer too long to convert (sys.int_info limit)
            raise ConfigError("file", source, f"not a usable JSON document ({err})") from None
        except RecursionError:
            raise ConfigError(
                "file", source, "not a usable JSON document (nested too deeply)"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError("file", source, "must hold a JSON object of parameters")
        if any(str(key).startswith("LOG_") for key in data):
            return cls._from_vta_dict(data)
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> AccelConfig:
        """Read a configuration file in our JSON format or in VTA's: a regular file within
        :data:`isa.files.CONFIGURATION`'s limit (else :class:`~isa.files.UserFileError`)."""
        try:
            text = read_file(path, CONFIGURATION).decode("utf-8")
        except UnicodeDecodeError as err:
            raise ConfigError(
                "file", str(path), f"is not UTF-8 text (byte {err.start}: {err.reason})"
            ) from None
        return cls.from_json(text, source=str(path))

    @classmethod
    def from_vta_json(cls, path: str | Path) -> AccelConfig:
        """Read one of VTA's own ``vta_config.json`` files, unchanged."""
        return cls.load(path)

    @classmethod
    def resolve(cls, spec: str | Path | AccelConfig) -> AccelConfig:
        """A configuration from a preset name, a file path, or an existing configuration."""
        if isinstance(spec, AccelConfig):
            return spec
        if str(spec) in _PRESETS:
            return cls.preset(str(spec))
        if Path(spec).exists():
            return cls.load(spec)
        raise ConfigError(
            "config",
            str(spec),
            f"neither a preset ({', '.join(_PRESETS)}) nor an existing file"
            f"{did_you_mean(str(spec), _PRESETS)}",
        )

    @classmethod
    def _from_vta_dict(cls, data: dict[str, Any]) -> AccelConfig:
        def log_value(key: str) -> int:
            value = data[key]
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 40:
                raise ConfigError(key, value, "must be a small non-negative integer (a log2)")
            return value

        required = [
            "LOG_INP_WIDTH",
            "LOG_WGT_WIDTH",
            "LOG_ACC_WIDTH",
            "LOG_BATCH",
            "LOG_UOP_BUFF_SIZE",
            "LOG_INP_BUFF_SIZE",
            "LOG_WGT_BUFF_SIZE",
            "LOG_ACC_BUFF_SIZE",
        ]
        if "LOG_BLOCK" in data:
            required.append("LOG_BLOCK")
        else:
            required += ["LOG_BLOCK_IN", "LOG_BLOCK_OUT"]
        for key in required:
            if key not in data:
                raise ConfigError(key, None, "missing from the VTA configuration file")
        optional = {"LOG_OUT_WIDTH", "LOG_OUT_BUFF_SIZE", "HW_FREQ", "LOG_BLOCK"}
        for key in data:
            if key not in required and key not in optional and key not in _VTA_IGNORED_KEYS:
                raise ConfigError(key, data[key], "not a key of VTA's vta_config.json")
        block_in = 1 << log_value("LOG_BLOCK" if "LOG_BLOCK" in data else "LOG_BLOCK_IN")
        block_out = 1 << log_value("LOG_BLOCK" if "LOG_BLOCK" in data else "LOG_BLOCK_OUT")
        target = data.get("TARGET", _VTA_FALLBACK_TARGET)
        if not isinstance(target, str):
            raise ConfigError(
                "TARGET", target, f"must be a string naming the target ({', '.join(_VTA_TARGETS)})"
            )
        axi_width, clock = _VTA_TARGETS.get(target, _VTA_TARGETS[_VTA_FALLBACK_TARGET])
        if "HW_FREQ" in data:
            clock = data["HW_FREQ"]
        cfg = cls(
            inp_width=1 << log_value("LOG_INP_WIDTH"),
            wgt_width=1 << log_value("LOG_WGT_WIDTH"),
            acc_width=1 << log_value("LOG_ACC_WIDTH"),
            batch=1 << log_value("LOG_BATCH"),
            block_in=block_in,
            block_out=block_out,
            uop_buff_size=1 << log_value("LOG_UOP_BUFF_SIZE"),
            inp_buff_size=1 << log_value("LOG_INP_BUFF_SIZE"),
            wgt_buff_size=1 << log_value("LOG_WGT_BUFF_SIZE"),
            acc_buff_size=1 << log_value("LOG_ACC_BUFF_SIZE"),
            axi_width=axi_width,
            clock_mhz=clock,
        )
        if "LOG_OUT_WIDTH" in data and log_value("LOG_OUT_WIDTH") != _log2(cfg.out_width):
            raise ConfigError(
                "LOG_OUT_WIDTH", data["LOG_OUT_WIDTH"], "must equal LOG_INP_WIDTH (as in VTA)"
            )
        if "LOG_OUT_BUFF_SIZE" in data and log_value("LOG_OUT_BUFF_SIZE") != _log2(
            cfg.out_buff_size
        ):
            raise ConfigError(
                "LOG_OUT_BUFF_SIZE",
                data["LOG_OUT_BUFF_SIZE"],
                "must equal LOG_ACC_BUFF_SIZE + LOG_OUT_WIDTH - LOG_ACC_WIDTH",
            )
        return cfg


_ISA_WIDTH_FIELDS = (
    "sram_addr_bits",
    "dram_addr_bits",
    "mem_size_bits",
    "mem_stride_bits",
    "mem_pad_bits",
    "loop_iter_bits",
    "alu_imm_bits",
)
_VTA_ISA_WIDTHS = {
    f.name: f.default for f in dataclasses.fields(AccelConfig) if f.name in _ISA_WIDTH_FIELDS
}

_PRESETS: dict[str, dict[str, Any]] = {
    # VTA's PYNQ configuration (vta-facts 1.1).
    "default": {},
    # A 1x4x4 core with small buffers: fast to simulate as RTL, still exercises every feature.
    "tiny": {
        "block_in": 4,
        "block_out": 4,
        "uop_buff_size": 4 * 1024,
        "inp_buff_size": 1024,
        "wgt_buff_size": 4 * 1024,
        "acc_buff_size": 4 * 1024,
        "cmd_queue_depth": 16,
    },
    # VTA's Ultra96 / ZCU104 samples: the default core on a 128-bit bus at 333 MHz.
    "ultra96": {"axi_width": 128, "clock_mhz": 333.0},
    # A 1x32x32 core (4x the MACs of the default) with doubled buffers and a 128-bit bus.
    "large": {
        "block_in": 32,
        "block_out": 32,
        "inp_buff_size": 64 * 1024,
        "wgt_buff_size": 512 * 1024,
        "acc_buff_size": 256 * 1024,
        "axi_width": 128,
        "clock_mhz": 200.0,
    },
}


def fetch_buffer_beats(cfg: AccelConfig, insns: int = FETCH_BUFFER_INSNS) -> int:
    """Bus beats of a fetch buffer that holds ``insns`` instructions (at least two beats)."""
    return max(2, insns * (INSN_WIDTH // 8) // cfg.bus_bytes)


@dataclass(frozen=True)
class TimingConfig:
    """The cycle-level model's timing parameters: the memory the accelerator talks to, and the
    pipeline depths and initiation intervals of its modules.

    The defaults reproduce the Amaranth RTL (``hw/``) with an ideal memory: a read burst's first
    beat one cycle after its request, then one beat per cycle, every channel always ready
    (``hw.MemoryTiming()``). Values that follow from an :class:`AccelConfig` (beats per element
    from the bus width, the GEMM core's adder-tree depth from ``block_in``) are derived by the
    model, never given here. Frozen and validated like :class:`AccelConfig`.
    """

    # --- memory
    # Cycles from a read burst's acceptance to its first data beat; then one beat per cycle.
    # Data returns in request order (one AXI ID), so a burst waits for those before it.
    read_latency: int = 1
    # Cycles from a write burst's last data beat to its response (AXI's B channel).
    write_response_latency: int = 1
    # Longest burst the port issues; bursts also never cross a 4 KiB page (AXI4).
    max_burst_beats: int = AXI_MAX_BEATS
    # Read bursts in flight on a read port: the read arbiter's route FIFO (hw/arbiter.py).
    outstanding_reads: int = READ_OUTSTANDING
    # Write bursts awaiting data or response: the store module's burst FIFO (hw/store.py).
    outstanding_writes: int = WRITE_OUTSTANDING
    # One read port that fetch, load and compute share through a round-robin arbiter
    # (hw/top.py); False gives each of the three a port of its own (same latency and limits).
    shared_read_port: bool = True
    # --- fetch
    # Instructions fetch's beat buffer holds; fetch asks for a burst only when the buffer has
    # room for all of its beats (hw/fetch.py), so its bursts are at most this long.
    fetch_buffer_insns: int = FETCH_BUFFER_INSNS
    # --- compute: GEMM and ALU steps (hw/sequencer.py, hw/compute.py, hw/gemm.py)
    # Cycles from an instruction's start to its first step: the loop sequencer takes the loop.
    sequencer_latency: int = 1
    # Registered stages of the step pipeline outside the GEMM core (hw/compute.py): micro-op
    # read, index addition, operand read (INP/WGT), the rows read registered before the core,
    # a second computing stage (the accumulate's sum, the ALU's second stage) and the write
    # stage that registers a step's result before ACC/OUT are written. Every step (ALU too)
    # runs through these and the core's stages.
    step_stages: int = 6
    # The GEMM core's product register; its adder tree adds log2(block_in) registered levels.
    # The pipeline drains through the core after every GEMM or ALU instruction, because the
    # instruction completes only once no stage holds a step.
    gemm_product_stages: int = 1
    # Cycles between steps: GEMM one per cycle, the ALU with an immediate too; the ALU without
    # one reads two accumulator rows through one read port, so one step every two cycles.
    gemm_ii: int = 1
    alu_ii_imm: int = 1
    alu_ii_vector: int = 2

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "shared_read_port":
                if not isinstance(value, bool):
                    raise ConfigError(f.name, value, "must be true or false")
                continue
            low = 0 if f.name in ("step_stages", "gemm_product_stages") else 1
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 1 << 20:
                raise ConfigError(f.name, value, f"must be an integer from {low} to {1 << 20}")
        if self.max_burst_beats > AXI_MAX_BEATS:
            raise ConfigError(
                "max_burst_beats", self.max_burst_beats, f"AXI4 bursts are at most {AXI_MAX_BEATS}"
            )

    def replace(self, **changes: Any) -> TimingConfig:
        """A validated copy with ``changes`` applied (unknown names raise ConfigError)."""
        known = {f.name for f in dataclasses.fields(self)}
        for key in changes:
            if key not in known:
                raise ConfigError(str(key), changes[key], "not a timing parameter")
        return dataclasses.replace(self, **changes)

    def fetch_burst_beats(self, cfg: AccelConfig) -> int:
        """Beats of fetch's beat buffer, the longest burst fetch requests."""
        return fetch_buffer_beats(cfg, self.fetch_buffer_insns)

    def gemm_latency(self, cfg: AccelConfig) -> int:
        """Cycles from operands entering the GEMM core to their dot products leaving it."""
        return self.gemm_product_stages + _log2(cfg.block_in)

    def step_ii(self, gemm: bool, use_imm: bool) -> int:
        """Cycles between the steps of a GEMM (``gemm``) or of an ALU instruction."""
        if gemm:
            return self.gemm_ii
        return self.alu_ii_imm if use_imm else self.alu_ii_vector

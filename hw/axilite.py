"""The AXI4-Lite control slave: the register map of :mod:`isa.registers` in hardware.

The slave accepts a write when its address and data are both valid (AXI allows a slave to wait
for both), applies the byte strobes, and answers on ``b``; it accepts a read when no read
response is pending and answers on ``r`` the next cycle. Offsets are decoded on bits
``[2:CONTROL_ADDR_BITS]`` (the low two bits address bytes within a register); an unlisted
offset, or a write to a read-only register, is answered with SLVERR and changes nothing.

On the accelerator's side it drives :class:`~hw.control.ControlSignature` (``start`` is a one
cycle pulse after a write of ``CONTROL.START``), watches the debug ``status`` of
:func:`hw.top.status_layout` and the bus ``events`` of :class:`~hw.axi.AxiMaster`, counts data beats
from the launch on, keeps the bus-error flags sticky until reset, and raises ``irq`` while
``DONE`` and ``IRQ_ENABLE``.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.axi import AXI_RESP_OKAY, AXI_RESP_SLVERR, AxiLiteSignature, BusEventSignature
from hw.control import ControlSignature
from hw.top import status_layout
from isa import (
    CONTROL_ADDR_BITS,
    MAGIC,
    REGISTER_BITS,
    REGISTER_MAP_VERSION,
    TOKEN_REGISTERS,
    AccelConfig,
    Control,
    ErrorFlag,
    ModuleFlag,
    Register,
    Status,
    config_id,
)

__all__ = ["ControlSlave"]

_WORD_BYTES = REGISTER_BITS // 8
_OFFSET_SHIFT = (_WORD_BYTES - 1).bit_length()


class ControlSlave(wiring.Component):
    """The control registers of the accelerator for ``cfg`` behind an AXI4-Lite slave."""

    def __init__(self, cfg: AccelConfig):
        self._cfg = cfg
        super().__init__(
            {
                "s_axi": In(AxiLiteSignature(CONTROL_ADDR_BITS)),
                "control": Out(ControlSignature(cfg)),
                "status": In(status_layout(cfg)),
                "events": In(BusEventSignature),
                "irq": Out(1),
            }
        )

    def elaborate(self, platform) -> Module:
        m = Module()
        bus, control, status, events = self.s_axi, self.control, self.status, self.events
        irq_enable = Signal()
        bus_errors = Signal(2)  # READ_RESPONSE, WRITE_RESPONSE, sticky until reset
        read_beats = Signal(REGISTER_BITS)
        write_beats = Signal(REGISTER_BITS)

        # The beats are counted a cycle after they pass: a handshake's ready comes through the
        # accelerator's data paths, and registering it keeps the counters' adders off them. (No
        # beat passes in the cycle of a launch or in the one before it, so none is lost.)
        read_beat, write_beat = Signal(), Signal()
        m.d.sync += [read_beat.eq(events.read_beat), write_beat.eq(events.write_beat)]
        launch = control.start & ~control.busy
        with m.If(launch):
            m.d.sync += [read_beats.eq(0), write_beats.eq(0)]
        with m.Else():
            m.d.sync += [
                read_beats.eq(read_beats + read_beat),
                write_beats.eq(write_beats + write_beat),
            ]
        with m.If(events.read_error):
            m.d.sync += bus_errors[0].eq(1)
        with m.If(events.write_error):
            m.d.sync += bus_errors[1].eq(1)
        errors = Signal(REGISTER_BITS)
        m.d.comb += [
            errors.eq(
                _bit(control.error, ErrorFlag.TOKEN_OVERFLOW)
                | _bit(bus_errors[0], ErrorFlag.READ_RESPONSE)
                | _bit(bus_errors[1], ErrorFlag.WRITE_RESPONSE)
            ),
            self.irq.eq(control.done & irq_enable),
        ]

        readable: dict[Register, Value] = {
            Register.CONTROL: _bit(irq_enable, Control.IRQ_ENABLE),
            Register.STATUS: _bit(control.busy, Status.BUSY)
            | _bit(control.done, Status.DONE)
            | _bit(errors.any(), Status.ERROR),
            Register.ERROR: errors,
            Register.INSN_COUNT: control.insn_count,
            Register.INSN_ADDR_LO: _word(control.insn_addr, 0),
            Register.INSN_ADDR_HI: _word(control.insn_addr, 1),
            Register.CYCLES: control.cycles,
            Register.READ_BEATS: read_beats,
            Register.WRITE_BEATS: write_beats,
            Register.MODULES: _bit(status.fetch_busy, ModuleFlag.FETCH_BUSY)
            | _bit(status.load_idle, ModuleFlag.LOAD_IDLE)
            | _bit(status.compute_idle, ModuleFlag.COMPUTE_IDLE)
            | _bit(status.store_idle, ModuleFlag.STORE_IDLE),
            **{register: status[token.value] for token, register in TOKEN_REGISTERS.items()},
            Register.MAGIC: Const(MAGIC, REGISTER_BITS),
            Register.VERSION: Const(REGISTER_MAP_VERSION, REGISTER_BITS),
            Register.CONFIG_ID: Const(config_id(self._cfg), REGISTER_BITS),
        }
        assert set(readable) == set(Register)

        # ------------------------------------------------------------------ writes
        m.d.sync += control.start.eq(0)
        accept_write = bus.awvalid & bus.wvalid & ~bus.bvalid
        m.d.comb += [bus.awready.eq(accept_write), bus.wready.eq(accept_write)]
        with m.If(bus.bvalid & bus.bready):
            m.d.sync += bus.bvalid.eq(0)
        with m.If(accept_write):
            m.d.sync += [bus.bvalid.eq(1), bus.bresp.eq(AXI_RESP_SLVERR)]
            with m.Switch(bus.awaddr[_OFFSET_SHIFT:]):
                for register in Register:
                    if not register.writable:
                        continue
                    with m.Case(register >> _OFFSET_SHIFT):
                        m.d.sync += bus.bresp.eq(AXI_RESP_OKAY)
                        if register is Register.CONTROL:
                            with m.If(bus.wstrb[0]):
                                m.d.sync += [
                                    control.start.eq(bus.wdata[_index(Control.START)]),
                                    irq_enable.eq(bus.wdata[_index(Control.IRQ_ENABLE)]),
                                ]
                        else:
                            target = {
                                Register.INSN_COUNT: (control.insn_count, 0),
                                Register.INSN_ADDR_LO: (control.insn_addr, 0),
                                Register.INSN_ADDR_HI: (control.insn_addr, 1),
                            }[register]
                            _write_word(m, *target, bus.wdata, bus.wstrb)

        # ------------------------------------------------------------------ reads
        m.d.comb += bus.arready.eq(~bus.rvalid)
        with m.If(bus.rvalid & bus.rready):
            m.d.sync += bus.rvalid.eq(0)
        with m.If(bus.arvalid & bus.arready):
            m.d.sync += [bus.rvalid.eq(1), bus.rdata.eq(0), bus.rresp.eq(AXI_RESP_SLVERR)]
            with m.Switch(bus.araddr[_OFFSET_SHIFT:]):
                for register, value in readable.items():
                    with m.Case(register >> _OFFSET_SHIFT):
                        m.d.sync += [bus.rdata.eq(value), bus.rresp.eq(AXI_RESP_OKAY)]
        return m


def _index(flag: int) -> int:
    """The bit position of a one-bit ``flag``."""
    return flag.bit_length() - 1


def _bit(value: Value, flag: int) -> Value:
    """``value`` (one bit) at the position of the one-bit ``flag``."""
    return value.as_unsigned() << _index(flag)


def _word(value: Value, index: int) -> Value:
    """Register word ``index`` of a wider ``value`` (zero beyond its width)."""
    low = index * REGISTER_BITS
    return value[low : low + REGISTER_BITS] if low < len(value) else Const(0, REGISTER_BITS)


def _write_word(m: Module, target: Value, index: int, data: Value, strobes: Value) -> None:
    """Write register word ``index`` of ``target`` from ``data`` where ``strobes`` enable its
    bytes; bits beyond ``target``'s width are dropped."""
    for lane in range(_WORD_BYTES):
        low = index * REGISTER_BITS + 8 * lane
        if low >= len(target):
            break
        high = min(low + 8, len(target))
        with m.If(strobes[lane]):
            m.d.sync += target[low:high].eq(data[8 * lane : 8 * lane + high - low])

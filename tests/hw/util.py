"""Helpers of the hardware tests: lane packing, running a simulation, and the references of
SEMANTICS that the tests compare the RTL against (written independently of ``hw``)."""

from __future__ import annotations

from collections.abc import Sequence

from amaranth.sim import Simulator

from isa import AccelConfig, AluOp

TINY = AccelConfig.preset("tiny")


def wrap(value: int, width: int) -> int:
    """``value`` reduced to a ``width``-bit two's-complement integer."""
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def pack(values: Sequence[int], width: int) -> int:
    """Lanes of ``width`` bits, lane 0 in the least significant bits."""
    word = 0
    for lane, value in enumerate(values):
        word |= (value & ((1 << width) - 1)) << (lane * width)
    return word


def unpack(word: int, width: int, count: int) -> list[int]:
    """Signed lanes of ``width`` bits."""
    return [wrap(word >> (lane * width), width) for lane in range(count)]


def run(dut, *testbenches, processes=(), clock: bool = True) -> None:
    """Simulate ``dut`` (with a 100 MHz clock unless it is combinational) until every
    testbench returns."""
    sim = Simulator(dut)
    if clock:
        sim.add_clock(1e-8)
    for bench in testbenches:
        sim.add_testbench(bench)
    for process in processes:
        sim.add_process(process)
    sim.run()


def alu_reference(cfg: AccelConfig, op: AluOp, a: int, x: int) -> int:
    """SEMANTICS 6 for one lane (without reset_reg)."""
    acc = cfg.acc_width
    if op is AluOp.MIN:
        return min(a, x)
    if op is AluOp.MAX:
        return max(a, x)
    if op is AluOp.ADD:
        return wrap(a + x, acc)
    if op is AluOp.SHR:
        shift = wrap(x, cfg.shr_arg_bits)
        return a >> shift if shift >= 0 else wrap(a << -shift, acc)
    if op is AluOp.MUL:
        return wrap(a * wrap(x, cfg.mul_arg_bits), acc)
    raise AssertionError(op)


def load_reference(insn, rows: Sequence[bytes]) -> list[bytes | None]:
    """SEMANTICS 3: the SRAM rows a LOAD writes, from ``sram_base`` on, in order; ``rows[i]`` is
    DRAM element ``i``'s bytes and ``None`` stands for a zero row."""
    width = insn.x_pad_0 + insn.x_size + insn.x_pad_1
    written: list[bytes | None] = [None] * (insn.y_pad_0 * width)
    for y in range(insn.y_size):
        written += [None] * insn.x_pad_0
        start = insn.dram_base + y * insn.x_stride
        written += [rows[start + x] for x in range(insn.x_size)]
        written += [None] * insn.x_pad_1
    return written + [None] * (insn.y_pad_1 * width)


async def send(ctx, port, payloads, rng, *, stall: float = 0.3) -> None:
    """Drive ``payloads`` into the valid/ready stream ``port``, idling at random between them."""
    for payload in payloads:
        while rng.random() < stall:
            await ctx.tick()
        ctx.set(port.payload, payload)
        ctx.set(port.valid, 1)
        await ctx.tick().until(port.ready)
        ctx.set(port.valid, 0)


async def receive(ctx, port, count: int, rng, *, ready: float = 0.7) -> list:
    """Take ``count`` payloads from the stream ``port``, ready at random."""
    taken = []
    while len(taken) < count:
        accept = rng.random() < ready
        ctx.set(port.ready, accept)
        *_, valid, payload = await ctx.tick().sample(port.valid, port.payload)
        if valid and accept:
            taken.append(payload)
    ctx.set(port.ready, 0)
    return taken

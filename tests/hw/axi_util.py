"""Test-side AXI for Amaranth simulations: an AXI4-Lite master (register reads and writes with
random timing) and an AXI4 slave memory that checks the master's protocol every cycle.

Both check the other side's handshake rules as they go: once a VALID is high it must stay high,
with the same payload, until READY. The memory also checks AXI4's burst rules (INCR bursts of
full-width beats, aligned, within one 4 KiB page, ID 0, WLAST exactly on each burst's final
beat) and records which bytes the write strobes enabled.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from hw.axi import AXI_BURST_INCR, AXI_CACHE, AXI_PROT, AXI_RESP_OKAY, AXI_RESP_SLVERR
from isa import AXI_PAGE_BYTES, AccelConfig, Register

_LIMIT = 200  # cycles one register access may take before the test fails


class _Stable:
    """Checks that a VALID, once high, stays high with the same payload until READY."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pending: tuple | None = None

    def step(self, valid: int, ready: int, payload: tuple) -> bool:
        """Feed one sampled cycle; return whether a transfer happened."""
        if self.pending is not None:
            assert valid, f"{self.name}: VALID dropped before READY"
            assert payload == self.pending, f"{self.name}: payload changed before READY"
        self.pending = payload if valid and not ready else None
        return bool(valid and ready)


async def _response(ctx, valid, ready, payload: list, rng) -> tuple:
    """As the receiver of a response channel, ready at random: the payload of the response,
    checking that VALID and the payload hold until READY."""
    check = _Stable("response")
    for _ in range(_LIMIT):
        accept = rng.random() < 0.6
        ctx.set(ready, accept)
        _, _, got_valid, *values = await ctx.tick().sample(valid, *payload)
        if check.step(got_valid, accept, tuple(values)):
            ctx.set(ready, 0)
            return tuple(values)
    raise AssertionError("no response")


async def lite_write(ctx, bus, address: int, value: int, rng, strobes: int = 0xF) -> int:
    """Write ``value`` at ``address``, the address and data channels starting after independent
    random delays (either may come first); return BRESP."""
    ctx.set(bus.awaddr, address)
    ctx.set(bus.wdata, value)
    ctx.set(bus.wstrb, strobes)
    starts = {"aw": rng.randint(0, 3), "w": rng.randint(0, 3)}
    done = {"aw": False, "w": False}
    for cycle in range(_LIMIT):
        ctx.set(bus.awvalid, not done["aw"] and cycle >= starts["aw"])
        ctx.set(bus.wvalid, not done["w"] and cycle >= starts["w"])
        *_, aw_valid, aw_ready, w_valid, w_ready = await ctx.tick().sample(
            bus.awvalid, bus.awready, bus.wvalid, bus.wready
        )
        done["aw"] |= bool(aw_valid and aw_ready)
        done["w"] |= bool(w_valid and w_ready)
        if all(done.values()):
            break
    else:
        raise AssertionError(f"write to {address:#x} not accepted")
    ctx.set(bus.awvalid, 0)
    ctx.set(bus.wvalid, 0)
    (resp,) = await _response(ctx, bus.bvalid, bus.bready, [bus.bresp], rng)
    return resp


async def lite_read(ctx, bus, address: int, rng) -> tuple[int, int]:
    """Read ``address`` after a random delay; return (RDATA, RRESP)."""
    for _ in range(rng.randint(0, 2)):
        await ctx.tick()
    ctx.set(bus.araddr, address)
    ctx.set(bus.arvalid, 1)
    await ctx.tick().until(bus.arready)
    ctx.set(bus.arvalid, 0)
    data, resp = await _response(ctx, bus.rvalid, bus.rready, [bus.rdata, bus.rresp], rng)
    return data, resp


async def read_register(ctx, bus, register: Register, rng) -> int:
    data, resp = await lite_read(ctx, bus, register, rng)
    assert resp == AXI_RESP_OKAY, f"reading {register.name}: RRESP {resp}"
    return data


async def write_register(ctx, bus, register: Register, value: int, rng) -> None:
    resp = await lite_write(ctx, bus, register, value, rng)
    assert resp == AXI_RESP_OKAY, f"writing {register.name}: BRESP {resp}"


@dataclass
class AxiMemory:
    """An AXI4 slave holding ``dram`` and, from the next 4 KiB page on, ``insns`` (read-only).

    Each cycle each channel is ready (or has its next beat valid) with ``ready_probability``;
    reads of ``faulty`` byte ranges answer SLVERR with zero data, writes there answer SLVERR and
    write nothing. ``strobed`` counts, per DRAM byte, the write beats that enabled it.
    """

    cfg: AccelConfig
    dram: np.ndarray
    insns: bytes
    rng: random.Random
    ready_probability: float = 0.7
    faulty: tuple[range, ...] = ()
    strobed: np.ndarray = field(init=False)
    bursts: list[tuple[str, int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.insn_addr = -(-len(self.dram) // AXI_PAGE_BYTES) * AXI_PAGE_BYTES
        self.strobed = np.zeros(len(self.dram), dtype=np.int64)

    def _ready(self) -> bool:
        return self.rng.random() < self.ready_probability

    def _fault(self, address: int) -> bool:
        return any(address in r for r in self.faulty)

    def _read(self, address: int) -> int:
        bus = self.cfg.bus_bytes
        offset = address - self.insn_addr
        if 0 <= address < len(self.dram):
            data = self.dram[address : address + bus].tobytes()
        elif 0 <= offset < len(self.insns):
            data = self.insns[offset : offset + bus]
        else:
            raise AssertionError(f"read beat at {address:#x} outside DRAM and instructions")
        return int.from_bytes(data.ljust(bus, b"\0"), "little")

    def _burst(self, channel: str, values: tuple) -> list[int]:
        burst_id, address, length, size, burst, cache, prot = values
        bus = self.cfg.bus_bytes
        beats = length + 1
        assert burst_id == 0, f"{channel}: ID {burst_id}"
        assert size == (bus - 1).bit_length(), f"{channel}: SIZE {size} for {bus}-byte beats"
        assert burst == AXI_BURST_INCR, f"{channel}: BURST {burst}"
        assert (cache, prot) == (AXI_CACHE, AXI_PROT), f"{channel}: CACHE/PROT {cache}/{prot}"
        assert address % bus == 0, f"{channel}: unaligned address {address:#x}"
        last = address + beats * bus - 1
        page = AXI_PAGE_BYTES
        assert last // page == address // page, f"{channel}: {address:#x}+{beats} crosses 4 KiB"
        self.bursts.append((channel, address, beats))
        return [address, beats]

    async def serve(self, ctx, axi, *, until, max_cycles: int = 100_000) -> int:
        """Serve ``axi`` (an ``AxiSignature`` interface, master side) until ``until`` is
        sampled high; return the cycles served."""
        cfg = self.cfg
        bus = cfg.bus_bytes
        reads: deque[list[int]] = deque()  # [address, beats left, first cycle]
        writes: deque[list[int]] = deque()  # [address, beats left, fault]
        responses: deque[int] = deque()
        checks = {name: _Stable(name) for name in ("ar", "aw", "w")}
        request = ("id", "addr", "len", "size", "burst", "cache", "prot")
        sampled = [until, axi.rready, axi.bready]
        for channel in ("ar", "aw"):
            sampled += [getattr(axi, f"{channel}{name}") for name in ("valid", *request)]
        sampled += [axi.wvalid, axi.wdata, axi.wstrb, axi.wlast]
        r_held = b_held = False  # a response presented and not yet taken stays as it is
        for cycle in range(1, max_cycles + 1):
            ready = {name: self._ready() for name in ("ar", "aw", "w")}
            ready["w"] = ready["w"] and bool(writes)
            r_valid = r_held or (bool(reads) and reads[0][2] <= cycle and self._ready())
            b_valid = b_held or (bool(responses) and self._ready())
            if r_valid and not r_held:
                address, beats_left, _ = reads[0]
                fault = self._fault(address)
                ctx.set(axi.rdata, 0 if fault else self._read(address))
                ctx.set(axi.rresp, AXI_RESP_SLVERR if fault else AXI_RESP_OKAY)
                ctx.set(axi.rlast, beats_left == 1)
            if b_valid and not b_held:
                ctx.set(axi.bresp, responses[0])
            ctx.set(axi.rvalid, r_valid)
            ctx.set(axi.bvalid, b_valid)
            for name in ("ar", "aw", "w"):
                ctx.set(getattr(axi, f"{name}ready"), ready[name])
            _, _, done, r_ready, b_ready, *rest = await ctx.tick().sample(*sampled)
            if done:
                return cycle
            ar, aw, w = rest[:8], rest[8:16], rest[16:]
            if checks["ar"].step(ar[0], ready["ar"], tuple(ar[1:])):
                address, beats = self._burst("ar", tuple(ar[1:]))
                reads.append([address, beats, cycle + self.rng.randint(1, 4)])
            if checks["aw"].step(aw[0], ready["aw"], tuple(aw[1:])):
                address, beats = self._burst("aw", tuple(aw[1:]))
                writes.append([address, beats, 0])
            if checks["w"].step(w[0], ready["w"], tuple(w[1:])):
                self._write_beat(writes, *w[1:])
                if writes[0][1] == 0:
                    responses.append(AXI_RESP_SLVERR if writes[0][2] else AXI_RESP_OKAY)
                    writes.popleft()
            r_held, b_held = r_valid and not r_ready, b_valid and not b_ready
            if r_valid and r_ready:
                reads[0][0] += bus
                reads[0][1] -= 1
                if reads[0][1] == 0:
                    reads.popleft()
            if b_valid and b_ready:
                responses.popleft()
        raise AssertionError(f"not finished within {max_cycles} cycles")

    def _write_beat(self, writes: deque[list[int]], data: int, strobes: int, last: int) -> None:
        head = writes[0]
        address = head[0]
        assert bool(last) == (head[1] == 1), f"WLAST={last} with {head[1]} beats left"
        for lane in range(self.cfg.bus_bytes):
            if strobes >> lane & 1:
                where = address + lane
                assert 0 <= where < len(self.dram), f"strobe on byte {where:#x} outside DRAM"
                if self._fault(where):
                    head[2] = 1
                    continue
                self.strobed[where] += 1
                self.dram[where] = data >> (8 * lane) & 0xFF
        head[0] += self.cfg.bus_bytes
        head[1] -= 1

"""The units of the cycle-level model that hold instructions: fetch and the three modules.

:class:`Fetch` mirrors ``hw/fetch.py``: it walks the instruction stream in read bursts that its
beat buffer has room for (``timing.fetch_buffer_insns`` instructions), unpacks instructions from
the beats and sends each, in program order, to its module's command queue, stalling while that
queue is full. :class:`Module` mirrors ``hw/slot.py``: it takes an instruction from its queue
(one cycle), waits until every counter it pops is non-zero and starts it (the pops take effect),
runs it on one of its engines until the engine is done, and retires it (the pushes take effect).

Both record what they do each cycle (:class:`~simulator.engines.Activity`) and, per
instruction, the cycles it entered its queue, was taken, started and retired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from isa import INSN_WIDTH, AccelConfig, Stage, TimingConfig
from simulator.engines import (
    BUSY,
    IDLE,
    MEMORY,
    QUEUE_FULL,
    TOKEN,
    Activity,
    Engine,
    IdleEngine,
    LoadEngine,
    LoopEngine,
    StoreEngine,
)
from simulator.events import AluEvent, Event, GemmEvent, LoadEvent, StoreEvent
from simulator.ports import NEVER, ReadPort, RowCursor, RowWalker, TransferRows
from simulator.queues import BufferedFifo, TokenCounters
from simulator.transfer_plans import PlannedStoreEngine

__all__ = ["Fetch", "Module", "Timeline", "build_ports", "module_engines"]

_INSN_BYTES = INSN_WIDTH // 8
#: The instruction slot's states (hw/slot.py): take from the queue, pop, run.
_TAKE, _POP, _RUN = 0, 1, 2


class Timeline:
    """Per-instruction cycles (``-1``: not yet) and per-unit activity counts."""

    def __init__(self, count: int) -> None:
        self.dispatched = [-1] * count  # entered its command queue
        self.taken = [-1] * count  # its module took it
        self.started = [-1] * count  # its pops succeeded: it began executing
        self.retired = [-1] * count  # it completed and pushed its tokens
        self.activity: dict[str, list[int]] = {}

    def unit(self, name: str) -> list[int]:
        """The activity counts of unit ``name`` (cycles per :class:`Activity`)."""
        return self.activity.setdefault(name, [0] * len(Activity))

    def restart_activity(self) -> None:
        """Forget the activity counted so far (the launch cycle, which the RTL's cycle
        counter does not count either)."""
        for counts in self.activity.values():
            counts[:] = [0] * len(counts)


class Fetch:
    """Fetch: instruction bursts, the beat buffer, the unpacker and the router."""

    port: ReadPort  # set when the ports are wired

    def __init__(
        self,
        cfg: AccelConfig,
        timing: TimingConfig,
        queues: Sequence[BufferedFifo[int]],
        timeline: Timeline,
    ) -> None:
        self.unit = "fetch"
        self.queues = queues  # each instruction's command queue, in program order
        self.count = len(queues)
        self.timeline = timeline
        self.activity = timeline.unit(self.unit)
        self.buffer_beats = timing.fetch_burst_beats(cfg)
        self.walker = RowWalker(cfg, self.buffer_beats)
        self.rows = TransferRows(cfg, 0, _INSN_BYTES, 1, self.count, 0)
        self.buffer: BufferedFifo[bool] = BufferedFifo(self.buffer_beats)
        self.reserved = 0  # beats requested and not yet taken out of the buffer
        self.insn_beats = max(1, _INSN_BYTES // cfg.bus_bytes)
        lanes = cfg.bus_bytes // _INSN_BYTES
        self.cursor = RowCursor(lanes) if lanes > 1 else None
        self.gather = 0
        self.next = 0  # the next instruction to dispatch
        self.starting = True
        self.granted = self.beat = self.offered = False

    # ------------------------------------------------------------------ read client
    def burst_request(self) -> int:
        size = self.walker.burst
        return size if size and self.reserved + size <= self.buffer_beats else 0

    def r_ready(self) -> bool:
        return self.buffer.w_rdy()

    def takes_data(self) -> bool:
        """It moves data this cycle if a beat is offered."""
        return self.buffer.w_rdy()

    def stream_cycles(self, burst_left: int) -> int:
        """Cycles from now it takes the offered beats in bulk, before the burst's last beat:
        while the unpacker holds a complete instruction whose queue is full, the beats only
        fill the buffer (as many as it has room for); otherwise while it streams steadily
        (:meth:`_steady`)."""
        complete, dispatch = self._unpack()
        if complete and not dispatch:
            return min(burst_left - 1, self.buffer.room())
        return self._steady(burst_left - 1)

    def _steady(self, most: int) -> int:
        """Cycles from now, at most ``most``, in which fetch, offered a beat every cycle, streams
        steadily: each cycle a beat enters the buffer and the unpacker takes one out (the
        buffer stays as it is: its output register and its memory hold beats), every
        ``insn_beats``-th cycle completing an instruction that it dispatches into a queue
        whose output register holds an instruction already and which has room, so no queue,
        module or burst request changes but by the count of its entries. 0: it does not."""
        buffer, walker = self.buffer, self.walker
        if (
            self.cursor is not None
            or buffer.out is None
            or not buffer.inner  # (always so in a one-deep buffer)
            or not buffer.w_rdy()
            or walker.quiet(True) < NEVER
        ):
            return 0
        if walker.burst:  # it presents a burst once enough beats have left the buffer
            most = min(most, self.reserved + walker.burst - self.buffer_beats)
        beats = self.insn_beats
        cycles = beats - 1 - self.gather  # those before the next dispatch
        room: dict[BufferedFifo[int], int] = {}
        index, end = self.next, self.count
        while cycles < most and index < end:  # the dispatch of `index` at cycle `cycles`
            queue = self.queues[index]
            if queue not in room:
                room[queue] = queue.room() if queue.out is not None else 0
            if not room[queue]:
                break
            room[queue] -= 1
            index += 1
            if index == end:  # after the last dispatch the unpacker goes idle
                return min(most, cycles + 1)
            cycles += beats
        return max(0, min(most, cycles))

    def stream(self, t: int, cycles: int) -> tuple[int, int]:
        """Take the beats of ``cycles`` cycles from ``t`` (:meth:`stream_cycles`) at once."""
        complete, dispatch = self._unpack()
        if complete and not dispatch:
            self.buffer.write_many(True, cycles)
            return cycles, 0
        beats = self.insn_beats
        for offset in range(beats - 1 - self.gather, cycles, beats):
            self.queues[self.next].write_many(self.next, 1)
            self.timeline.dispatched[self.next] = t + offset
            self.next += 1
        self.gather = (self.gather + cycles) % beats
        self.reserved -= cycles
        return cycles, 0

    # ------------------------------------------------------------------ one cycle
    def _unpack(self) -> tuple[bool, bool]:
        """(an instruction is complete in the unpacker, its queue has room) this cycle."""
        if self.next == self.count or not self.buffer.r_rdy():
            return False, False
        cursor = self.cursor
        complete = cursor.active if cursor is not None else self.gather == self.insn_beats - 1
        return complete, complete and self.queues[self.next].w_rdy()

    @property
    def finished(self) -> bool:
        """Every instruction is in its queue and nothing is left in flight."""
        return self.next == self.count and not self.walker.busy and not self.reserved

    def tick(self, t: int) -> None:
        if self.finished:
            self.activity[IDLE] += 1
            return
        granted_beats = self.walker.burst if self.granted else 0
        complete, dispatch = self._unpack()
        taken = False
        if dispatch:
            self.queues[self.next].write(self.next)
            self.timeline.dispatched[self.next] = t
            self.next += 1
        if self.cursor is None:
            if self.buffer.r_rdy() and (dispatch or not complete):
                taken = True
                self.gather = 0 if dispatch else self.gather + 1
            row_taken = self.walker.describing
        else:
            row_taken = self.walker.describing and not self.cursor.active
            if dispatch:
                taken = self.cursor.end_of_beat
                self.cursor.consume()
            if row_taken:
                self.cursor.load(*self.walker.row_lane())
        self.walker.tick(self.granted, row_taken)
        self.reserved += granted_beats - taken
        if self.beat:
            self.buffer.write(True)
        if taken:
            self.buffer.read()
        self.buffer.end_cycle()
        moved = self.granted or self.beat or taken or self.starting
        if self.starting:
            self.walker.start(self.rows)
            self.starting = False
        self.granted = self.beat = self.offered = False
        self.activity[self._activity(complete, dispatch, moved)] += 1

    def _activity(self, complete: bool, dispatch: bool, moved: bool) -> int:
        if self.next == self.count and not dispatch:
            return IDLE
        if complete and not dispatch:
            return QUEUE_FULL
        return BUSY if moved else MEMORY

    # ------------------------------------------------------------------ event-driven shortcuts
    def quiet(self, t: int) -> int:
        if self.finished:
            return NEVER
        if self.starting or self.buffer.quiet(t) == 0:
            return 0
        complete, dispatch = self._unpack()
        if dispatch or (self.buffer.r_rdy() and not complete and self.next < self.count):
            port = self.port
            return self._steady(port.inflight[0].left - 1) if port.offering(self, t) else 0
        return self.walker.quiet(self.cursor is None or not self.cursor.active)

    def skip(self, t: int, cycles: int) -> None:
        complete, dispatch = self._unpack()
        steady = self.buffer.r_rdy() and (dispatch or not complete) and self.port.offering(self, t)
        self.activity[BUSY if steady else self._activity(complete, False, False)] += cycles


class Module:
    """One of load, compute and store: its instruction slot and engines (module docstring)."""

    def __init__(
        self,
        stage: Stage,
        queue: BufferedFifo[int],
        tokens: TokenCounters,
        events: Sequence[Event],
        engines: Mapping[type, Engine],
        timeline: Timeline,
    ) -> None:
        self.stage = stage
        self.queue = queue
        self.tokens = tokens
        self.events = events
        self.pops = [tokens.indices(e.pops) if e.module is stage else () for e in events]
        self.pushes = [tokens.indices(e.pushes) if e.module is stage else () for e in events]
        self.engines = engines
        self.timeline = timeline
        self.activity = timeline.unit(stage.name.lower())
        self.state = _TAKE
        self.current = -1
        self.engine: Engine = _IDLE
        self.finished_at: int | None = None

    def _engine_for(self, event: Event) -> Engine:
        moves = (isinstance(event, LoadEvent | StoreEvent) and event.x_size) or (
            isinstance(event, GemmEvent | AluEvent) and event.steps
        )
        return self.engines[type(event)] if moves else _IDLE

    def tick(self, t: int) -> None:
        state = self.state
        if state == _RUN:
            engine = self.engine
            if not engine.done():
                self.activity[engine.tick(t)] += 1
                return
            self.tokens.push(self.pushes[self.current])
            self.timeline.retired[self.current] = t
            self.state = _TAKE
            if self.current == len(self.events) - 1:
                self.finished_at = t
            activity = BUSY
        elif state == _TAKE:
            if self.queue.r_rdy():
                self.current = self.queue.read()
                self.timeline.taken[self.current] = t
                self.state = _POP
                activity = BUSY
            else:
                activity = IDLE
        elif self.tokens.available(self.pops[self.current]):
            self.tokens.pop(self.pops[self.current])
            self.timeline.started[self.current] = t
            self.state = _RUN
            event = self.events[self.current]
            self.engine = self._engine_for(event)
            self.engine.start(t, event)  # after this cycle: the engine was idle during it
            activity = BUSY
        else:
            activity = TOKEN
        self.activity[activity] += 1

    def running(self, engine: Engine) -> bool:
        """It runs an instruction on ``engine``."""
        return self.state == _RUN and self.engine is engine

    def quiet(self, t: int) -> int:
        state = self.state
        if state == _RUN:
            return 0 if self.engine.done() else self.engine.quiet(t)
        if state == _TAKE:
            return 0 if self.queue.r_rdy() else NEVER
        return 0 if self.tokens.available(self.pops[self.current]) else NEVER

    def skip(self, t: int, cycles: int) -> None:
        if self.state == _RUN:
            self.engine.skip(t, cycles, self.activity)
        else:
            self.activity[IDLE if self.state == _TAKE else TOKEN] += cycles


_IDLE = IdleEngine()


def module_engines(
    cfg: AccelConfig, timing: TimingConfig, stepped: bool
) -> tuple[
    dict[Stage, dict[type, Engine]], dict[Stage, LoadEngine], StoreEngine | PlannedStoreEngine
]:
    """Each module's engines by event type, the engines that read memory (load's, and
    compute's for micro-ops and accumulators) and the store engine. The event-driven
    scheduler (not ``stepped``) plans each STORE when it starts
    (:mod:`simulator.transfer_plans`)."""
    load = LoadEngine(cfg, timing, "load")
    compute_load = LoadEngine(cfg, timing, "compute")
    loop = LoopEngine(cfg, timing)
    store = StoreEngine(cfg, timing) if stepped else PlannedStoreEngine(cfg, timing)
    engines: dict[Stage, dict[type, Engine]] = {
        Stage.LOAD: {LoadEvent: load},
        Stage.COMPUTE: {LoadEvent: compute_load, GemmEvent: loop, AluEvent: loop},
        Stage.STORE: {StoreEvent: store},
    }
    return engines, {Stage.LOAD: load, Stage.COMPUTE: compute_load}, store


def build_ports(
    timing: TimingConfig, fetch: Fetch, readers: Mapping[Stage, LoadEngine]
) -> list[ReadPort]:
    """The read ports: one shared by fetch, load and compute (round-robin in that order, as
    ``hw/top.py`` wires the arbiter), or one each."""
    clients = [fetch, readers[Stage.LOAD], readers[Stage.COMPUTE]]
    if timing.shared_read_port:
        ports = [ReadPort(timing, clients)]
    else:
        ports = [ReadPort(timing, [client]) for client in clients]
    for port in ports:
        for client in port.clients:
            client.port = port
    return ports

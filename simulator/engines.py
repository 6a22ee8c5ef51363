"""What the modules of the cycle-level model execute: LOADs, STOREs and GEMM/ALU loops.

Each engine runs one instruction at a time and mirrors its RTL counterpart cycle by cycle:

- :class:`LoadEngine` (``hw/loader.py``): a :class:`~simulator.ports.RowWalker` reads the rows;
  elements at least a beat wide are gathered beat by beat, narrower ones picked from their
  beat's lanes by a :class:`~simulator.ports.RowCursor`; the writer fills one SRAM row per cycle,
  writing pad rows without data and body rows when their element arrives (a beat that would
  complete an element waits while the writer is still padding).
- :class:`StoreEngine` (``hw/store.py``): write bursts on ``aw`` (at most
  ``outstanding_writes`` awaiting data or response), the OUT reader one row ahead of the beat
  packer, one data beat per cycle, a response ``write_response_latency`` after each burst's
  last beat; the instruction completes when every response is back.
- :class:`LoopEngine` (``hw/sequencer.py``, ``hw/compute.py``): steps issue every ``ii`` cycles
  after the sequencer's latency and flow down ``step_stages`` plus the GEMM core's stages; the
  instruction completes the cycle after the last stage empties.

``tick(t)`` runs cycle ``t`` and returns its :class:`Activity`; ``quiet(t)``/``advance(t, k)`` are
the event-driven shortcuts (cycles of bulk progress only, all of one activity, and that progress
applied at once); ``skip(t, k, counts)`` applies them and counts them by activity.
"""

from __future__ import annotations

from collections import deque
from enum import IntEnum
from typing import Final

from isa import AccelConfig, TimingConfig
from simulator.events import AluEvent, Event, GemmEvent, LoadEvent, StoreEvent
from simulator.ports import Burst, ReadPort, RowCursor, RowWalker, TransferRows

__all__ = ["Activity", "IdleEngine", "LoadEngine", "LoopEngine", "StoreEngine"]


class Activity(IntEnum):
    """What a unit does in a cycle (one per cycle, so they add up to the total)."""

    BUSY = 0  # working on an instruction
    MEMORY = 1  # executing, but waiting for the memory (data beats, write responses)
    TOKEN = 2  # an instruction waits to pop a dependency token
    QUEUE_FULL = 3  # fetch holds an instruction whose command queue is full
    IDLE = 4  # nothing to do


# The activities as plain ints, which the per-cycle code passes around: compiled (setup.py),
# a module-level Final is a C constant, an enum member a Python object looked up by name.
BUSY: Final = int(Activity.BUSY)
MEMORY: Final = int(Activity.MEMORY)
TOKEN: Final = int(Activity.TOKEN)
QUEUE_FULL: Final = int(Activity.QUEUE_FULL)
IDLE: Final = int(Activity.IDLE)


class Engine:
    """What a module asks of the engine running its instruction: start it, run a cycle of it,
    whether it is done, and the event-driven shortcuts."""

    def start(self, t: int, event: Event) -> None:
        """Begin ``event``'s instruction after cycle ``t``."""
        raise NotImplementedError

    def done(self) -> bool:
        """The instruction is complete (the state at the start of the cycle)."""
        raise NotImplementedError

    def tick(self, t: int) -> int:
        """Run cycle ``t``; its activity."""
        raise NotImplementedError

    def quiet(self, t: int) -> int:
        """Cycles from ``t`` of bulk progress only (0: the next cycle needs a tick)."""
        raise NotImplementedError

    def advance(self, t: int, cycles: int) -> int:
        """Apply ``cycles`` quiet cycles from ``t``; their activity (one for them all)."""
        raise NotImplementedError

    def skip(self, t: int, cycles: int, counts: list[int]) -> None:
        """Apply ``cycles`` quiet cycles from ``t`` and add them to ``counts`` by activity."""
        counts[self.advance(t, cycles)] += cycles


class IdleEngine(Engine):
    """Instructions that move nothing (no-op LOAD/STORE, FINISH, empty loops): done the cycle
    after they start."""

    def start(self, t: int, event: Event) -> None:
        pass

    def done(self) -> bool:
        return True

    def tick(self, t: int) -> int:
        return BUSY

    def quiet(self, t: int) -> int:
        return 0


class LoopEngine(Engine):
    """The loop sequencer and step pipeline of compute (module docstring)."""

    def __init__(self, cfg: AccelConfig, timing: TimingConfig) -> None:
        self.timing = timing
        self.stages = timing.step_stages + timing.gemm_latency(cfg)
        self.mask = (1 << self.stages) - 1
        self.left = 0  # steps not yet issued
        self.next_issue = 0  # cycle of the next step
        self.ii = 1
        self.pipe = 0  # bit i: a step issued i + 1 cycles ago is in the pipeline

    def start(self, t: int, event: Event) -> None:
        assert isinstance(event, GemmEvent | AluEvent)
        self.left = event.steps
        self.ii = self.timing.step_ii(isinstance(event, GemmEvent), getattr(event, "use_imm", True))
        self.next_issue = t + self.timing.sequencer_latency

    def done(self) -> bool:
        return self.left == 0 and self.pipe == 0

    def tick(self, t: int) -> int:
        issue = self.left > 0 and t == self.next_issue
        if issue:
            self.left -= 1
            self.next_issue = t + self.ii
        self.pipe = ((self.pipe << 1) | issue) & self.mask
        return BUSY

    def _completion(self, t: int) -> int:
        """The cycle at which the pipeline is empty after the last step."""
        if self.left:
            last = self.next_issue + self.ii * (self.left - 1)
        else:  # the newest step in the pipeline entered it (lowest set bit + 1) cycles ago
            last = t - (self.pipe & -self.pipe).bit_length()
        return last + self.stages + 1

    def quiet(self, t: int) -> int:
        return self._completion(t) - t

    def advance(self, t: int, cycles: int) -> int:
        end = t + cycles
        issued = 0
        if self.left and self.next_issue < end:
            issued = min(self.left, (end - 1 - self.next_issue) // self.ii + 1)
        pipe = (self.pipe << cycles) & self.mask if cycles < self.stages else 0
        # only the steps of the last `stages` cycles are still in the pipeline
        oldest = end - self.stages  # the earliest issue cycle still in it
        first = 0 if oldest <= self.next_issue else -(-(oldest - self.next_issue) // self.ii)
        for j in range(first, issued):
            pipe |= 1 << (end - 1 - (self.next_issue + j * self.ii))
        self.pipe = pipe
        self.left -= issued
        self.next_issue += issued * self.ii
        return BUSY


def _start_transfer(
    cfg: AccelConfig, walker: RowWalker, e: LoadEvent | StoreEvent
) -> tuple[int, RowCursor | None]:
    """Start ``walker`` on the rows of ``e``; (beats per element, the cursor that picks
    narrower elements from their beats, or None)."""
    walker.start(TransferRows(cfg, e.dram_address, e.elem_bytes, e.y_size, e.x_size, e.x_stride))
    bus = cfg.bus_bytes
    cursor = RowCursor(bus // e.elem_bytes) if e.elem_bytes < bus else None
    return max(1, e.elem_bytes // bus), cursor


class LoadEngine(Engine):
    """LOADs into on-chip buffers, as one read client of ``port`` (module docstring)."""

    port: ReadPort  # set when the ports are wired

    def __init__(self, cfg: AccelConfig, timing: TimingConfig, unit: str) -> None:
        self.cfg = cfg
        self.unit = unit  # the module it serves, as the stats name it
        self.walker = RowWalker(cfg, timing.max_burst_beats)
        self.granted = self.beat = self.offered = False
        self.elem_beats = 1  # beats per element (wide elements)
        self.cursor: RowCursor | None = None  # narrow elements
        self.gather = 0
        self.writing = self.body = False
        self.pos = 0  # writer position: line * width + column
        self.end = 0
        self.width = 1
        self.body_lines = range(0)
        self.body_columns = range(0)
        self.event: LoadEvent | None = None  # the current LOAD
        self.started = -1  # and its start cycle
        self._shape: tuple[object, ...] | None = None  # the current LOAD's, once asked for

    def start(self, t: int, event: Event) -> None:
        assert isinstance(event, LoadEvent)
        e = event
        self.event, self.started, self._shape = e, t, None
        self.elem_beats, self.cursor = _start_transfer(self.cfg, self.walker, e)
        self.gather = 0
        self.width = e.x_pad_0 + e.x_size + e.x_pad_1
        self.end = (e.y_pad_0 + e.y_size + e.y_pad_1) * self.width
        self.body_lines = range(e.y_pad_0, e.y_pad_0 + e.y_size)
        self.body_columns = range(e.x_pad_0, e.x_pad_0 + e.x_size)
        self.pos = 0
        self._advance(0)

    def _advance(self, rows: int) -> None:
        """The writer moves ``rows`` SRAM rows on: is it still writing, and on a body row?"""
        self.pos += rows
        self.writing = self.pos < self.end
        line, column = divmod(self.pos, self.width)
        self.body = self.writing and line in self.body_lines and column in self.body_columns

    # ------------------------------------------------------------------ state at the cycle start
    def done(self) -> bool:
        return not self.writing and not self.walker.busy

    def shape(self) -> tuple[object, ...]:
        """What decides how the current LOAD runs from its start, on a port of its own: its
        rows as the bus sees them and its padding. LOADs of equal shape run alike."""
        if self._shape is None:
            pads = (self.width, self.end, self.body_lines.start, self.body_columns.start)
            self._shape = (self.walker.rows.shape(), pads)
        return self._shape

    def progress(self) -> tuple[object, ...]:
        """Where the current LOAD is, which with its :meth:`shape` decides the rest of its
        run (given the bursts in flight): the writer's position, the data side's and the
        walker's."""
        c = self.cursor
        data = (c.active, c.lane, c.left) if c is not None else self.gather
        return (self.pos, data, self.walker.progress())

    def conclude(self) -> None:
        """Jump to the end of the current LOAD (the rest of its run is known: that of a LOAD
        of the same :meth:`shape` run alone)."""
        self.pos = self.end
        self.writing = self.body = False
        self.walker.conclude()

    def burst_request(self) -> int:
        return self.walker.burst

    def r_ready(self) -> bool:
        if self.cursor is None:
            return self.gather < self.elem_beats - 1 or self.body
        c = self.cursor
        return c.active and c.end_of_beat and self.body

    # ------------------------------------------------------------------ one cycle
    def tick(self, t: int) -> int:
        body = self.body  # the writer is on a body row (so it is writing)
        waiting = body and not self.offered
        element = False
        cursor = self.cursor
        if cursor is None:
            if self.beat:
                element = self.gather == self.elem_beats - 1
                self.gather = 0 if element else self.gather + 1
            row_taken = self.walker.describing
        else:
            row_taken = self.walker.describing and not cursor.active
            if self.offered and cursor.active and body:
                element = True
                cursor.consume()
            if row_taken:
                cursor.load(*self.walker.row_lane())
        self.walker.tick(self.granted, row_taken)
        if self.writing and (not body or element):
            self._advance(1)
        self.granted = self.beat = self.offered = False
        return MEMORY if waiting else BUSY

    # ------------------------------------------------------------------ event-driven shortcuts
    def quiet(self, t: int) -> int:
        cursor = self.cursor
        quiet = self.walker.quiet(cursor is None or not cursor.active)
        if not self.writing:
            return quiet
        if not self.body:
            return min(quiet, self._pad_run())
        return quiet  # body rows wait for data, which the port streams

    def advance(self, t: int, cycles: int) -> int:
        if not self.writing:
            return BUSY
        if not self.body:
            self._advance(cycles)
            return BUSY
        return BUSY if self.port.offering(self, t) else MEMORY

    def _pad_run(self) -> int:
        """Pad rows the writer writes from its position before the next body row."""
        pos = self.pos
        while pos < self.end:
            line, column = divmod(pos, self.width)
            if line in self.body_lines and column < self.body_columns.stop:
                return pos - self.pos + max(0, self.body_columns.start - column)
            pos = (line + 1) * self.width  # the rest of this line is padding
        return pos - self.pos

    def takes_data(self) -> bool:
        if self.cursor is None:
            return self.r_ready()
        return self.cursor.active and self.body

    def stream_cycles(self, burst_left: int) -> int:
        """Cycles from now it takes data one element or beat per cycle, in bulk, while the
        writer stays on body rows and before the burst's last beat."""
        if not self.body:
            return 0
        if self.cursor is not None:
            return self.cursor.cycles_before(burst_left)
        line, column = divmod(self.pos, self.width)
        run = self.body_columns.stop - column
        if self.width == len(self.body_columns):  # no column pads: the body rows adjoin
            run += (self.body_lines.stop - 1 - line) * self.width
        return min(run * self.elem_beats - self.gather, burst_left - 1)

    def stream(self, t: int, cycles: int) -> tuple[int, int]:
        if self.cursor is not None:
            beats, first = self.cursor.advance(cycles)
            self._advance(cycles)
            return beats, first
        elements, self.gather = divmod(self.gather + cycles, self.elem_beats)
        self._advance(elements)
        return cycles, 0


class StoreEngine(Engine):
    """STOREs from the OUT buffer over the write port (module docstring)."""

    def __init__(self, cfg: AccelConfig, timing: TimingConfig) -> None:
        self.cfg = cfg
        self.walker = RowWalker(cfg, timing.max_burst_beats)
        self.outstanding = timing.outstanding_writes
        self.response_latency = timing.write_response_latency
        self.elem_beats = 1
        self.cursor: RowCursor | None = None
        self.gather = 0
        self.bursts: deque[Burst] = deque()  # issued on aw, awaiting data
        self.completed: list[Burst] = []
        self.responses: deque[int] = deque()  # cycle each owed response arrives
        self.owed = 0
        self.reading = self.pending = False
        self.to_read = 0  # OUT rows not yet read
        self.beats = 0

    def start(self, t: int, event: Event) -> None:
        assert isinstance(event, StoreEvent)
        self.elem_beats, self.cursor = _start_transfer(self.cfg, self.walker, event)
        self.gather = 0
        self.to_read = event.y_size * event.x_size
        self.reading = self.to_read != 0
        self.pending = False

    def done(self) -> bool:
        return (
            not self.walker.busy
            and not self.reading
            and not self.pending
            and not self.bursts
            and self.owed == 0
        )

    def _aw(self) -> int:
        """Beats of the write burst issued this cycle (0: none)."""
        if len(self.bursts) < self.outstanding and self.owed < self.outstanding:
            return self.walker.burst
        return 0

    # ------------------------------------------------------------------ one cycle
    def tick(self, t: int) -> int:
        cursor = self.cursor
        room = bool(self.bursts)  # a burst awaits data: the memory takes a beat
        if cursor is None:
            w = self.pending and room
            taken = w and self.gather == self.elem_beats - 1
            moved = w
            if w:
                self.gather = 0 if taken else self.gather + 1
            row_taken = self.walker.describing
        else:
            emit = cursor.end_of_beat
            w = cursor.active and self.pending and emit and room
            taken = cursor.active and self.pending and (not emit or w)
            moved = taken
            row_taken = self.walker.describing and not cursor.active
            if taken:
                cursor.consume()
            if row_taken:
                cursor.load(*self.walker.row_lane())
        responded = bool(self.responses) and self.responses[0] <= t
        aw = self._aw()
        if w:
            self.beats += 1
            if self.bursts[0].moved(t, 1):
                self.completed.append(self.bursts.popleft())
                self.responses.append(t + self.response_latency)
        self.walker.tick(aw != 0, row_taken)
        if aw:
            self.bursts.append(Burst(0, t, t + 1, aw))
        self.owed += (aw != 0) - responded
        if responded:
            self.responses.popleft()
        if not self.pending or taken:
            self._read_next()
        return BUSY if moved else MEMORY

    def _read_next(self) -> None:
        """The OUT reader advances: the row it read is now pending, and it reads the next."""
        self.pending = self.reading
        if self.reading:
            self.to_read -= 1
            self.reading = self.to_read != 0

    # ------------------------------------------------------------------ event-driven shortcuts
    def quiet(self, t: int) -> int:
        cursor = self.cursor
        quiet = self.walker.quiet(cursor is None or not cursor.active)
        if self._aw() or (self.reading and not self.pending):
            return 0
        if self.responses:
            quiet = min(quiet, max(0, self.responses[0] - t))
        if self._streaming():
            left = self.bursts[0].left
            if cursor is not None:
                return min(quiet, cursor.cycles_before(left))
            data = self.elem_beats - self.gather + self.to_read * self.elem_beats
            return min(quiet, left - 1, data)
        if cursor is not None and cursor.active and self.pending and not cursor.end_of_beat:
            return 0  # an element joins its beat; the beat waits for a burst
        return quiet

    def _streaming(self) -> bool:
        """Rows flow from the reader to the write port one beat (or element) per cycle."""
        return self.pending and bool(self.bursts) and (self.cursor is None or self.cursor.active)

    def advance(self, t: int, cycles: int) -> int:
        if not self._streaming():
            return MEMORY
        if self.cursor is not None:
            taken = cycles
            beats, first = self.cursor.advance(cycles)
        else:
            beats, first = cycles, 0
            taken, self.gather = divmod(self.gather + cycles, self.elem_beats)
        if beats:
            self.beats += beats
            self.bursts[0].moved(t + first, beats)
        reads = min(taken, self.to_read)  # each row taken lets the reader read the next
        self.to_read -= reads
        self.reading = self.to_read != 0
        self.pending = taken == reads  # a row taken after the last read leaves none pending
        return BUSY

"""The memory side of the cycle-level model: 2-D transfers walked row by row into AXI bursts,
and the read port that fetch, load and compute share.

:class:`RowWalker` mirrors the RTL's row requester and burst splitter (``hw/rows.py``,
``hw/dma.py``): each row of a transfer is handed to the splitter (one cycle, once the splitter is
free), then described to the data side (one cycle, once the data side takes it); the splitter
presents one burst at a time, at most ``max_beats`` long and never across a 4 KiB page.

:class:`ReadPort` mirrors the read arbiter (``hw/arbiter.py``) and the memory behind it: bursts
are granted round-robin among the clients presenting one, while fewer than
``timing.outstanding_reads`` are in flight; the memory returns a burst's first beat
``timing.read_latency`` cycles after its grant, then one beat per cycle, in grant order (one AXI
ID), each beat waiting until its client accepts it.

Every per-cycle method reads the state at the start of the cycle; what a cycle changes is
applied by the owner's ``tick``, so all units see the same cycle. ``quiet``/``skip`` are the
event-driven shortcuts: how many cycles from now nothing but bulk progress happens, and that
progress applied at once.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from isa import AXI_PAGE_BYTES, AccelConfig, TimingConfig

__all__ = [
    "NEVER",
    "Burst",
    "ReadClient",
    "ReadPort",
    "RowCursor",
    "RowWalker",
    "TransferRows",
]

#: "No event ahead": the quiet time of a unit that waits for another one.
NEVER = 1 << 62

_IDLE, _BURSTS, _ROW = 0, 1, 2


class TransferRows:
    """The rows of one 2-D transfer as the bus sees them: row ``y`` is ``x_size`` elements of
    ``elem_bytes`` at element address ``first_elem + y * x_stride``."""

    __slots__ = ("bus_bytes", "elem_bytes", "first_elem", "lanes", "x_size", "x_stride", "y_size")

    def __init__(
        self,
        cfg: AccelConfig,
        byte_address: int,
        elem_bytes: int,
        y_size: int,
        x_size: int,
        x_stride: int,
    ) -> None:
        self.bus_bytes = cfg.bus_bytes
        self.elem_bytes = elem_bytes
        self.first_elem = byte_address // elem_bytes
        self.y_size, self.x_size, self.x_stride = y_size, x_size, x_stride
        #: elements per beat (1 when an element spans one or more beats)
        self.lanes = max(1, cfg.bus_bytes // elem_bytes)

    def beats(self, y: int) -> tuple[int, int]:
        """(first beat index, number of beats) of row ``y``."""
        start = (self.first_elem + y * self.x_stride) * self.elem_bytes
        first = start // self.bus_bytes
        last = (start + self.x_size * self.elem_bytes - 1) // self.bus_bytes
        return first, last - first + 1

    def lane(self, y: int) -> int:
        """Position of row ``y``'s first element in its beat (narrow elements)."""
        return (self.first_elem + y * self.x_stride) % self.lanes

    def shape(self) -> tuple[object, ...]:
        """What the row walker and the data side see of these rows, wherever they are: the
        element size, the elements per row and, per row, its first element's lane, its beats
        and the beats before its first 4 KiB page boundary (capped at its beats). Transfers of
        equal shape move alike."""
        bus, elem, lanes = self.bus_bytes, self.elem_bytes, self.lanes
        page_beats = AXI_PAGE_BYTES // bus
        end = self.x_size * elem - 1  # a row's last byte, from its first
        rows = []
        for y in range(self.y_size):  # as beats() and lane(), inlined: once per transfer
            element = self.first_elem + y * self.x_stride
            first = element * elem // bus
            count = (element * elem + end) // bus - first + 1
            rows.append((element % lanes, count, min(count, page_beats - first % page_beats)))
        return (elem, self.x_size, tuple(rows))


class RowWalker:
    """The row requester and burst splitter of one transfer at a time (module docstring).

    ``tick(granted, row_taken)`` applies one cycle: ``granted``, the presented burst was
    accepted; ``row_taken``, the data side took the row descriptor presented this cycle.
    """

    __slots__ = (
        "_page_beats",
        "burst",
        "cur",
        "left",
        "limit",
        "row",
        "rows",
        "splitting",
        "state",
    )

    def __init__(self, cfg: AccelConfig, max_beats: int) -> None:
        self._page_beats = AXI_PAGE_BYTES // cfg.bus_bytes
        self.limit = min(max_beats, self._page_beats)
        self.state = _IDLE
        self.rows = TransferRows(cfg, 0, 1, 0, 0, 0)  # none yet: an empty transfer
        self.row = 0
        self.splitting = False  # the splitter holds a run of beats
        self.cur = 0  # its next beat index
        self.left = 0  # and the beats left
        #: beats of the burst presented this cycle (0: none)
        self.burst = 0

    def start(self, rows: TransferRows) -> None:
        """Begin ``rows`` (the start pulse; the first row is handed over next cycle)."""
        self.rows = rows
        self.row = 0
        self.state = _BURSTS if rows.y_size and rows.x_size else _IDLE

    def conclude(self) -> None:
        """Jump to the end of the transfer (its owner knows how the rest of it runs)."""
        self.state = _IDLE
        self.splitting = False
        self.burst = 0

    @property
    def busy(self) -> bool:
        return self.state != _IDLE or self.splitting

    def progress(self) -> tuple[int, ...]:
        """Where it is in its transfer, which with the transfer's :meth:`TransferRows.shape`
        decides the rest of its walk (the beat index matters only through the page room,
        which the row, the beats left and the shape fix)."""
        return (self.state, self.row, self.splitting, self.left, self.burst)

    @property
    def describing(self) -> bool:
        """A row descriptor is presented to the data side this cycle."""
        return self.state == _ROW

    def row_lane(self) -> tuple[int, int]:
        """(first lane, elements) of the row described this cycle."""
        return self.rows.lane(self.row), self.rows.x_size

    def quiet(self, row_ready: bool) -> int:
        """0 if the walker changes state this cycle by itself; a presented burst waits for
        its grant, which the port's quiet time covers."""
        if self.state == _BURSTS:
            return NEVER if self.splitting else 0
        if self.state == _ROW:
            return 0 if row_ready else NEVER
        return NEVER

    def tick(self, granted: bool, row_taken: bool) -> None:
        was_splitting = self.splitting
        split = was_splitting and granted
        if split:
            self.cur += self.burst
            self.left -= self.burst
            self.splitting = self.left > 0
        if self.state == _BURSTS:
            if not was_splitting:
                self.cur, self.left = self.rows.beats(self.row)
                self.splitting = split = True
                self.state = _ROW
        elif self.state == _ROW and row_taken:
            self.row += 1
            self.state = _IDLE if self.row == self.rows.y_size else _BURSTS
        if split:  # the splitter's run changed: the burst it presents next
            room = self._page_beats - self.cur % self._page_beats
            self.burst = min(self.left, self.limit, room) if self.splitting else 0


class RowCursor:
    """The data side of narrow elements (several per beat, ``hw/dma.py``): it takes a row
    descriptor while idle (becoming active the next cycle), then moves one element per cycle;
    a beat is consumed with its last lane or the row's last element."""

    __slots__ = ("active", "lane", "lanes", "left")

    def __init__(self, lanes: int) -> None:
        self.lanes = lanes
        self.active = False
        self.lane = 0
        self.left = 0

    def load(self, lane: int, count: int) -> None:
        self.lane, self.left, self.active = lane, count, count != 0

    @property
    def end_of_beat(self) -> bool:
        return self.lane == self.lanes - 1 or self.left == 1

    def consume(self) -> None:
        """One element moves (this cycle's state was ``active``)."""
        self.lane = (self.lane + 1) % self.lanes
        self.left -= 1
        self.active = self.left != 0

    def cycles_before(self, beats: int) -> int:
        """Elements it can move, one per cycle from now, before it consumes the ``beats``-th
        beat from now (the row's last element consumes the row's last beat)."""
        return min(self.lanes - self.lane + (beats - 1) * self.lanes, self.left) - 1

    def advance(self, elements: int) -> tuple[int, int]:
        """Move ``elements`` elements at once (fewer than :attr:`left`): (beats consumed, the
        cycle offset of the first of them)."""
        first = min(self.lanes - self.lane, self.left) - 1
        beats = 0 if elements <= first else 1 + (elements - first - 1) // self.lanes
        self.lane = (self.lane + elements) % self.lanes
        self.left -= elements
        return beats, first


class ReadClient(Protocol):
    """What the read port needs from a client (the state at the start of the cycle); the port
    sets its ``granted``, ``offered`` and ``beat`` flags for the client's tick."""

    def burst_request(self) -> int: ...  # beats of the burst it presents, 0: none

    def r_ready(self) -> bool: ...  # it takes the beat offered this cycle

    def takes_data(self) -> bool: ...  # it moves data this cycle if a beat is offered

    def stream_cycles(self, burst_left: int) -> int: ...  # bulk cycles before the last beat

    def stream(self, t: int, cycles: int) -> tuple[int, int]: ...  # (beats, first's offset) from t


class Burst:
    """A memory burst: its client, the cycle it was accepted, the first cycle its data may
    move, and as it moves, the beats left and the cycles of its first and last beats."""

    __slots__ = ("accepted", "beats", "client", "first", "last", "left", "ready")

    def __init__(self, client: int, accepted: int, ready: int, beats: int) -> None:
        self.client, self.accepted, self.ready = client, accepted, ready
        self.beats = self.left = beats
        self.first = self.last = -1

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in self.__slots__)
        return f"Burst({fields})"

    def moved(self, t: int, beats: int = 1) -> bool:
        """``beats`` beats moved, the first at cycle ``t`` (only a single beat can be the
        last); whether the burst is complete."""
        if self.left == self.beats:
            self.first = t
        self.left -= beats
        if self.left == 0:
            self.last = t
        return self.left == 0


class ReadPort:
    """One read port: arbiter, in-flight bursts and the memory's data beats.

    Per cycle, :meth:`arbitrate` then :meth:`deliver`; the clients apply what they were given
    in their own ``tick`` (``granted``/``beat`` flags set here).
    """

    def __init__(self, timing: TimingConfig, clients: list) -> None:
        self.clients = clients
        self.latency = timing.read_latency
        self.depth = timing.outstanding_reads
        self.inflight: deque[Burst] = deque()
        self.completed: list[Burst] = []
        self.previous = 0
        self.beats = 0
        #: per client, the last cycle one of its bursts was granted or completed
        self.last_used = [-1] * len(clients)
        #: after each client's grant, the clients in the order the arbiter asks them next
        n = len(clients)
        self._round_robin = [
            [((last + step) % n, clients[(last + step) % n]) for step in range(1, n + 1)]
            for last in range(n)
        ]
        self._requests = [client.burst_request for client in clients]

    # ------------------------------------------------------------------ one cycle
    def arbitrate(self, t: int) -> None:
        """Grant one presented burst, round-robin after the last grant, if there is room."""
        if len(self.inflight) >= self.depth:
            return
        for index, client in self._round_robin[self.previous]:
            beats = client.burst_request()
            if beats:
                client.granted = True
                self.previous = index
                self.last_used[index] = t
                self.inflight.append(Burst(index, t, t + self.latency, beats))
                return

    def offering(self, client: object, t: int) -> bool:
        """Whether the beat on the bus this cycle is ``client``'s."""
        if not self.inflight:
            return False
        head = self.inflight[0]
        return head.ready <= t and self.clients[head.client] is client

    def deliver(self, t: int) -> None:
        """Hand the head burst's next beat to its client if it is ready and taken."""
        if not self.inflight:
            return
        head = self.inflight[0]
        if head.ready > t:
            return
        client = self.clients[head.client]
        client.offered = True
        if client.r_ready():
            client.beat = True
            self.beats += 1
            if head.moved(t):
                self.completed.append(self.inflight.popleft())
                self.last_used[head.client] = t

    # ------------------------------------------------------------------ event-driven shortcuts
    def serves_only(self, client: object) -> bool:
        """No client but ``client`` has a burst presented or in flight."""
        clients = self.clients
        for burst in self.inflight:
            if clients[burst.client] is not client:
                return False
        return all(other is client or not other.burst_request() for other in clients)

    def alone_since(self, client: object, cycle: int) -> bool:
        """No client but ``client`` has had a burst granted or in flight after ``cycle``."""
        index = self.clients.index(client)
        if any(burst.client != index for burst in self.inflight):
            return False
        return all(last <= cycle for other, last in enumerate(self.last_used) if other != index)

    def inflight_state(self, t: int) -> tuple[tuple[int, int, int], ...]:
        """The bursts in flight at cycle ``t`` as they decide the port's next cycles: the
        cycles until each may move (0: now), its beats and the beats it has left."""
        return tuple([(max(b.ready - t, 0), b.beats, b.left) for b in self.inflight])

    def used(self, client: int, last: int) -> None:
        """Client ``client`` had the port's last grant and completed a burst at cycle ``last``
        (applied at once when its bursts were replayed from a plan)."""
        self.previous = client
        self.last_used[client] = last

    def quiet(self, t: int) -> int:
        """Cycles from ``t`` in which the port only streams beats in bulk (or waits)."""
        if len(self.inflight) < self.depth:
            for request in self._requests:
                if request():
                    return 0
        if not self.inflight:
            return NEVER
        head = self.inflight[0]
        if head.ready > t:
            return head.ready - t
        client = self.clients[head.client]
        if not client.takes_data():
            return NEVER  # the client's own state changes first
        return client.stream_cycles(head.left)  # the burst's last beat is left to a tick

    def streaming(self, t: int) -> bool:
        """Whether the head burst streams to its client over quiet cycles from ``t`` (asked
        before any unit skips them)."""
        if not self.inflight:
            return False
        head = self.inflight[0]
        return head.ready <= t and self.clients[head.client].takes_data()

    def stream(self, t: int, cycles: int) -> None:
        """Apply ``cycles`` quiet cycles of :meth:`streaming` from ``t``."""
        head = self.inflight[0]
        beats, first = self.clients[head.client].stream(t, cycles)
        if beats:
            head.moved(t + first, beats)
            self.beats += beats

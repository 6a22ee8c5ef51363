"""Instructions timed once and replayed: STOREs planned when they start, and LOADs run alone.

Once a STORE has started, nothing it does depends on another unit: the write port is the store
module's own, the memory takes a beat whenever a burst awaits one and answers each burst a fixed
latency after its last beat. So :class:`PlannedStoreEngine` runs each STORE from its start to its
end at once, on a :class:`~simulator.engines.StoreEngine` of its own (with that engine's own
event-driven shortcuts), and then answers the module from that *plan*: the cycle the STORE ends
at, and the activity of every cycle before it. The module's quiet time is then the whole rest of
the STORE, so the other units skip over it too, however many rows and bursts it has.

A LOAD shares its read port with fetch and the other module's LOADs, so it is not planned ahead;
but while it is the only client with bursts presented or in flight, its port and its engine
depend on no other unit until the next event of one of those (which the port's other clients
reach before they present a burst). :class:`LoadsAlone` then runs the port and the engine on
their own, through their grants, row hand-overs and bursts' last beats, up to that event.
A LOAD run so from its start to its end on an empty port is remembered, and a later LOAD of the
same shape, again alone from its start, jumps to its end.

Either way a run depends only on how the transfer's rows sit in the bus's beats and the 4 KiB
pages (:meth:`~simulator.ports.TransferRows.shape`), so each shape is simulated once per run.
The cycle-stepped scheduler uses neither, and the tests hold the two schedulers to the same
cycles, activities and bursts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from isa import AccelConfig, TimingConfig
from simulator.engines import Activity, Engine, StoreEngine
from simulator.errors import SimulationError
from simulator.events import Event, StoreEvent
from simulator.ports import NEVER, Burst, ReadPort, TransferRows

if TYPE_CHECKING:
    from simulator.units import Module

__all__ = ["LoadsAlone", "PlannedStoreEngine"]

_ACTIVITIES = tuple(Activity)


@dataclass(frozen=True)
class _Plan:
    """One STORE from its start (cycle 0): it is done at cycle ``duration``; ``activity[c]`` is
    the engine's activity in cycle ``c`` (0 < c < duration); its bursts, completed."""

    duration: int
    activity: bytes
    kinds: tuple[Activity, ...]  # the activities that occur
    bursts: tuple[Burst, ...]

    @property
    def beats(self) -> int:
        return sum(b.beats for b in self.bursts)


def _run(engine: StoreEngine, event: StoreEvent, cycles: int = NEVER) -> bytearray:
    """Run ``engine`` alone on ``event``, started at cycle 0, until it is done or for
    ``cycles`` cycles; the activity of each cycle (cycle 0, the start, is the module's)."""
    engine.start(0, event)
    activity = bytearray(1)
    t = 1
    while t < cycles and not engine.done():
        quiet = min(engine.quiet(t), cycles - t)
        if quiet >= NEVER:
            raise SimulationError(
                f"the timing model's store engine stalled {t} cycles into instruction "
                f"{event.index} (a model error)"
            )
        if quiet:
            activity += bytes((engine.advance(t, quiet),)) * quiet
            t += quiet
        else:
            activity.append(engine.tick(t))
            t += 1
    return activity


def _shifted(burst: Burst, origin: int, client: int = 0) -> Burst:
    """``burst`` ``origin`` cycles later (for ``client``)."""
    moved = Burst(client, burst.accepted + origin, burst.ready + origin, burst.beats)
    moved.left = burst.left
    moved.first, moved.last = burst.first + origin, burst.last + origin
    return moved


class PlannedStoreEngine(Engine):
    """The store engine, one plan per STORE (module docstring); :attr:`completed` and
    :attr:`beats` are the :class:`~simulator.engines.StoreEngine`'s, up to the cycle the
    module has reached."""

    def __init__(self, cfg: AccelConfig, timing: TimingConfig) -> None:
        self.cfg = cfg
        self.timing = timing
        self.plans: dict[tuple[object, ...], _Plan] = {}
        self.plan = _Plan(0, b"", (), ())
        self.event: StoreEvent | None = None
        self.origin = 0  # the current STORE's start cycle
        self.now = 0  # the next cycle the module accounts
        self.finished_bursts: list[Burst] = []  # of the STOREs before the current one
        self.finished_beats = 0

    def _plan(self, event: StoreEvent) -> _Plan:
        rows = TransferRows(
            self.cfg,
            event.dram_address,
            event.elem_bytes,
            event.y_size,
            event.x_size,
            event.x_stride,
        )
        key = rows.shape()
        plan = self.plans.get(key)
        if plan is None:
            engine = StoreEngine(self.cfg, self.timing)
            activity = bytes(_run(engine, event))
            kinds = tuple(a for a in Activity if a in activity[1:])
            plan = self.plans[key] = _Plan(len(activity), activity, kinds, tuple(engine.completed))
        return plan

    def start(self, t: int, event: Event) -> None:
        assert isinstance(event, StoreEvent)
        if self.event is not None:  # the previous STORE is done: its bursts are final
            self.finished_bursts += (_shifted(b, self.origin) for b in self.plan.bursts)
            self.finished_beats += self.plan.beats
        self.plan = self._plan(event)
        self.event, self.origin, self.now = event, t, t + 1

    def done(self) -> bool:
        return self.now >= self.origin + self.plan.duration

    def tick(self, t: int) -> Activity:
        self.now = t + 1
        return _ACTIVITIES[self.plan.activity[t - self.origin]]

    def quiet(self, t: int) -> int:
        return self.origin + self.plan.duration - t

    def skip(self, t: int, cycles: int, counts: list[int]) -> None:
        self.now = t + cycles
        low, high = t - self.origin, t - self.origin + cycles
        for kind in self.plan.kinds:
            counts[kind] += self.plan.activity.count(kind, low, high)

    # ------------------------------------------------------------------ what the stats read
    def _current(self) -> tuple[list[Burst], int]:
        """The current STORE's completed bursts and beats, up to :attr:`now`."""
        if self.event is None:
            return [], 0
        if self.done():
            return [_shifted(b, self.origin) for b in self.plan.bursts], self.plan.beats
        engine = StoreEngine(self.cfg, self.timing)  # the run ended during this STORE
        _run(engine, self.event, self.now - self.origin)
        return [_shifted(b, self.origin) for b in engine.completed], engine.beats

    @property
    def completed(self) -> list[Burst]:
        return self.finished_bursts + self._current()[0]

    @property
    def beats(self) -> int:
        return self.finished_beats + self._current()[1]


@dataclass(frozen=True)
class _LoadPlan:
    """One LOAD run alone from its first cycle after its start (cycle 0): it is done at cycle
    ``cycles``; its module's activity over them, its bursts."""

    cycles: int
    counts: tuple[int, ...]
    bursts: tuple[Burst, ...]


class LoadsAlone:
    """Runs a read port and the one LOAD engine it serves on their own (module docstring)."""

    def __init__(self) -> None:
        self.plans: dict[tuple[object, ...], _LoadPlan] = {}

    def run(self, t: int, limit: int, port: ReadPort, module: Module) -> int:
        """Run ``port`` and ``module``'s LOAD engine, its only client with bursts presented
        or in flight, for at most ``limit`` cycles from ``t`` and until the LOAD is done (the
        module then retires it, with the other units); the cycles run."""
        engine = module.engine
        fresh = engine.started == t - 1 and not port.inflight
        key = (port.clients.index(engine), engine.shape()) if fresh else None
        plan = self.plans.get(key)
        if plan is not None and plan.cycles <= limit:
            self._replay(plan, t, port, module)
            return plan.cycles
        counts, completed = list(module.activity), len(port.completed)
        cycles = _run_alone(t, limit, port, module)
        if key is not None and plan is None and engine.done():
            self.plans[key] = _LoadPlan(
                cycles,
                tuple(now - before for now, before in zip(module.activity, counts, strict=True)),
                tuple(_shifted(b, -t) for b in port.completed[completed:]),
            )
        return cycles

    @staticmethod
    def _replay(plan: _LoadPlan, t: int, port: ReadPort, module: Module) -> None:
        engine = module.engine
        client = port.clients.index(engine)
        port.completed += (_shifted(b, t, client) for b in plan.bursts)
        beats = sum(b.beats for b in plan.bursts)
        port.beats += beats
        if beats:
            port.previous = client
        engine.conclude()
        for activity, cycles in enumerate(plan.counts):
            module.activity[activity] += cycles


def _run_alone(t: int, limit: int, port: ReadPort, module: Module) -> int:
    """The machine's tick and skip, of ``port`` and ``module`` alone, for at most ``limit``
    cycles and until the module's engine is done; the cycles run."""
    engine, counts = module.engine, module.activity
    end = t + limit
    while t < end and not engine.done():
        quiet = min(port.quiet(t), engine.quiet(t), end - t)
        if quiet:
            streaming = port.streaming(t)
            engine.skip(t, quiet, counts)
            if streaming:
                port.stream(t, quiet)
            t += quiet
        else:
            port.arbitrate(t)
            port.deliver(t)
            counts[engine.tick(t)] += 1
            t += 1
    return limit - (end - t)

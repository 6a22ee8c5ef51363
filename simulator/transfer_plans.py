"""LOADs and STOREs simulated once per shape, on engines of their own, and replayed.

Once a STORE has started, nothing it does depends on another unit: the write port is the store
module's own, the memory takes a beat whenever a burst awaits one and answers each burst a fixed
latency after its last beat. So :class:`PlannedStoreEngine` runs each STORE from its start to its
end at once, on a :class:`~simulator.engines.StoreEngine` of its own (with that engine's own
event-driven shortcuts), and then answers the module from that *plan*: the cycle the STORE ends
at, and the activity of every cycle before it. The module's quiet time is then the whole rest of
the STORE, so the other units skip over it too, however many rows and bursts it has.

A LOAD shares its read port with fetch and the other module's LOADs. But while it is the only
client with bursts presented or in flight, its port and its engine depend on no other unit until
the next event of one of those (which the port's other clients reach before they present a
burst). :class:`LoadsAlone` then runs the port and the engine on their own, through their
grants, row hand-overs and bursts' last beats, up to that event. And if no other client has used
the port since the LOAD started, the LOAD is exactly where a LOAD of its shape running alone on a
port of its own would be; if that run (planned once per shape, like a STORE) ends before the
other units' next event, the LOAD jumps to its end. If another client has used the port, the
LOAD falls behind that run, but it catches up with it as soon as it reaches a state the run
passed through (its position in the transfer and the bursts in flight: they decide the rest),
and jumps from there.

A plan depends only on how the transfer's rows sit in the bus's beats and the 4 KiB pages
(:meth:`~simulator.ports.TransferRows.shape`) and, for a LOAD, its padding (with the
configuration and the timing parameters). A run keeps its plans by shape; :data:`TRANSFER_PLANS`
keeps them for every run in the process (at most about 32 MiB, the least recently used going
first). The cycle-stepped scheduler uses none of this, and the tests hold the two schedulers to
the same cycles, activities and bursts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from isa import AccelConfig, TimingConfig
from simulator.engines import Activity, Engine, LoadEngine, StoreEngine
from simulator.errors import SimulationError
from simulator.events import Event, StoreEvent
from simulator.memo import Memo
from simulator.ports import NEVER, Burst, ReadPort, TransferRows

if TYPE_CHECKING:
    from simulator.units import Module

__all__ = ["TRANSFER_PLANS", "LoadsAlone", "PlannedStoreEngine"]

#: Estimated bytes of a burst and of a LOAD state a plan holds (for :data:`TRANSFER_PLANS`)
_BURST_BYTES, _STATE_BYTES = 128, 512


@dataclass(frozen=True)
class _Plan:
    """One LOAD or STORE run alone from its start (cycle 0): it is done at cycle
    ``duration``; ``activity[c]`` is the engine's activity in cycle ``c`` (0 < c < duration);
    its bursts, in the order they completed; for a LOAD, the first cycle it was in each state
    it passed through (:func:`_state`)."""

    duration: int
    activity: bytes
    kinds: tuple[Activity, ...]  # the activities that occur
    bursts: tuple[Burst, ...]
    cycles: dict[tuple[object, ...], int] = field(default_factory=dict)

    @property
    def beats(self) -> int:
        return sum(b.beats for b in self.bursts)

    @property
    def nbytes(self) -> int:
        """About the bytes the plan holds."""
        states = _STATE_BYTES * len(self.cycles)
        return len(self.activity) + _BURST_BYTES * len(self.bursts) + states

    def count(self, counts: list[int], low: int, high: int) -> None:
        """Add the activity of cycles ``low`` to ``high`` (excluded) to ``counts``."""
        for kind in self.kinds:
            counts[kind] += self.activity.count(kind, low, high)


#: LOAD and STORE plans by kind, configuration, timing parameters, unit (LOADs) and shape,
#: shared by every run in the process (module docstring)
TRANSFER_PLANS: Memo[_Plan] = Memo(32 << 20)


def _shared(key: tuple[object, ...], make: Callable[[], _Plan]) -> _Plan:
    """The shared plan of ``key``, made by ``make`` (and shared) when there is none."""
    plan = TRANSFER_PLANS.get(key)
    if plan is None:
        plan = make()
        TRANSFER_PLANS.put(key, plan, plan.nbytes)
    return plan


def _state(t: int, port: ReadPort, engine: LoadEngine) -> tuple[object, ...]:
    """What decides the rest of a LOAD alone on ``port`` from cycle ``t`` (with its shape)."""
    return (engine.progress(), port.inflight_state(t))


def _simulate(
    engine: Engine,
    event: Event,
    port: ReadPort | None = None,
    cycles: dict[tuple[object, ...], int] | None = None,
) -> bytearray:
    """Run ``engine`` alone on ``event`` (with ``port``, of which it is the only client, if it
    reads memory), started at cycle 0, until it is done, as the event-driven scheduler would;
    the activity of each cycle (cycle 0 is the module's). A LOAD's states go into ``cycles``
    (the first cycle of each)."""
    engine.start(0, event)
    activity = bytearray(1)
    t = 1
    while not engine.done():
        if cycles is not None and port is not None and isinstance(engine, LoadEngine):
            cycles.setdefault(_state(t, port, engine), t)
        quiet = min(engine.quiet(t), port.quiet(t) if port is not None else NEVER)
        if quiet >= NEVER:
            raise SimulationError(
                f"the timing model stalled {t} cycles into instruction {event.index}, run "
                f"alone (a model error)"
            )
        if quiet:
            streaming = port is not None and port.streaming(t)
            activity += bytes((engine.advance(t, quiet),)) * quiet
            if streaming and port is not None:
                port.stream(t, quiet)
            t += quiet
        else:
            if port is not None:
                port.arbitrate(t)
                port.deliver(t)
            activity.append(engine.tick(t))
            t += 1
    return activity


def _load_plan(engine: LoadEngine, event: Event) -> _Plan:
    """The plan of ``event``, a LOAD, on ``engine`` and a read port of its own."""
    cycles: dict[tuple[object, ...], int] = {}
    activity = bytes(_simulate(engine, event, engine.port, cycles))
    return _Plan(len(activity), activity, _kinds(activity), tuple(engine.port.completed), cycles)


def _store_plan(engine: StoreEngine, event: Event) -> _Plan:
    """The plan of ``event``, a STORE, on ``engine``."""
    activity = bytes(_simulate(engine, event))
    return _Plan(len(activity), activity, _kinds(activity), tuple(engine.completed))


def _kinds(activity: bytes) -> tuple[Activity, ...]:
    """The activities that occur in ``activity`` after its first cycle (the module's)."""
    return tuple(a for a in Activity if activity.find(a, 1) >= 0)


def _shifted(burst: Burst, origin: int, client: int = 0) -> Burst:
    """``burst`` ``origin`` cycles later (for ``client``)."""
    moved = Burst(client, burst.accepted + origin, burst.ready + origin, burst.beats)
    moved.left = burst.left
    moved.first, moved.last = burst.first + origin, burst.last + origin
    return moved


def _complete(burst: Burst, planned: Burst, origin: int) -> Burst:
    """``burst``, in flight, completed as ``planned`` (``origin`` cycles later) completes."""
    if burst.first < 0:
        burst.first = planned.first + origin
    burst.last = planned.last + origin
    burst.left = 0
    return burst


class PlannedStoreEngine(Engine):
    """The store engine, one plan per STORE (module docstring); at the end of a run,
    :attr:`completed` and :attr:`beats` are the :class:`~simulator.engines.StoreEngine`'s."""

    def __init__(self, cfg: AccelConfig, timing: TimingConfig) -> None:
        self.cfg = cfg
        self.timing = timing
        self.plans: dict[tuple[object, ...], _Plan] = {}
        self.plan = _Plan(0, b"", (), ())
        self.event: StoreEvent | None = None
        self.origin = 0  # the current STORE's start cycle
        self.now = 0  # the next cycle the module accounts
        self.finished: list[tuple[int, _Plan]] = []  # the STOREs before the current one

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
            shared = ("STORE", self.cfg, self.timing, key)
            plan = self.plans[key] = _shared(shared, lambda: _store_plan(engine, event))
        return plan

    def start(self, t: int, event: Event) -> None:
        assert isinstance(event, StoreEvent)
        if self.event is not None:  # the previous STORE is done
            self.finished.append((self.origin, self.plan))
        self.plan = self._plan(event)
        self.event, self.origin, self.now = event, t, t + 1

    def done(self) -> bool:
        return self.now >= self.origin + self.plan.duration

    def tick(self, t: int) -> int:
        self.now = t + 1
        return self.plan.activity[t - self.origin]

    def quiet(self, t: int) -> int:
        return self.origin + self.plan.duration - t

    def skip(self, t: int, cycles: int, counts: list[int]) -> None:
        self.now = t + cycles
        self.plan.count(counts, t - self.origin, t - self.origin + cycles)

    # ------------------------------------------------------------------ what the stats read
    def _all(self) -> list[tuple[int, _Plan]]:
        """Every STORE run, with its start cycle (once the run is over: the functional
        simulator orders every STORE before FINISH, so the last one is done too)."""
        if self.event is None:
            return self.finished
        assert self.done(), "a STORE outlived FINISH"
        return [*self.finished, (self.origin, self.plan)]

    @property
    def completed(self) -> list[Burst]:
        return [_shifted(b, origin) for origin, plan in self._all() for b in plan.bursts]

    @property
    def beats(self) -> int:
        return sum(plan.beats for _, plan in self._all())


class LoadsAlone:
    """Runs a read port and the one LOAD engine it serves on their own (module docstring)."""

    def __init__(self, cfg: AccelConfig, timing: TimingConfig) -> None:
        self.cfg = cfg
        self.timing = timing
        self.plans: dict[tuple[object, ...], _Plan] = {}

    def run(self, t: int, limit: int, engine: LoadEngine, module: Module) -> int:
        """Run ``engine``, ``module``'s LOAD engine, and its read port, of which it is the
        only client with bursts presented or in flight, for at most ``limit`` cycles from
        ``t`` and until the LOAD is done (the module then retires it, with the other units);
        the cycles run."""
        port = engine.port
        plan = self._plan(engine)
        end = t + limit
        now = t - engine.started if port.alone_since(engine, engine.started) else None
        while now is None and t < end and not engine.done():
            now = plan.cycles.get(_state(t, port, engine))
            if now is None:
                t = _step(t, end, engine, module)
        if now is not None and plan.duration - now <= end - t:
            self._conclude(plan, now, t, engine, module)
            t += plan.duration - now
        while t < end and not engine.done():  # it follows the plan, whose end is too far
            t = _step(t, end, engine, module)
        return limit - (end - t)

    def _plan(self, engine: LoadEngine) -> _Plan:
        key = engine.shape()
        plan = self.plans.get(key)
        if plan is None:
            event = engine.event
            assert event is not None, "a LOAD engine is planned while it runs a LOAD"
            alone = LoadEngine(self.cfg, self.timing, engine.unit)
            alone.port = ReadPort(self.timing, [alone])
            shared = ("LOAD", self.cfg, self.timing, engine.unit, key)
            plan = self.plans[key] = _shared(shared, lambda: _load_plan(alone, event))
        return plan

    @staticmethod
    def _conclude(plan: _Plan, now: int, t: int, engine: LoadEngine, module: Module) -> None:
        """Take ``engine``'s LOAD from cycle ``t``, where it is in the state ``plan`` was in
        at cycle ``now``, to its end, as ``plan`` runs it."""
        port = engine.port
        origin = t - now
        plan.count(module.activity, now, plan.duration)
        client = port.clients.index(engine)
        left = [b for b in plan.bursts if b.last >= now]  # those not completed yet
        inflight = list(port.inflight)  # all the LOAD's: the first of those left
        port.inflight.clear()
        port.beats += sum(b.left for b in inflight) + sum(b.beats for b in left[len(inflight) :])
        port.completed += map(_complete, inflight, left, [origin] * len(inflight))
        port.completed += (_shifted(b, origin, client) for b in left[len(inflight) :])
        if left:
            port.used(client, origin + left[-1].last)
        engine.conclude()


def _step(t: int, end: int, engine: LoadEngine, module: Module) -> int:
    """The machine's tick or skip, of ``engine`` and its port alone, from ``t`` (a skip stops
    at ``end``); the next cycle."""
    port = engine.port
    quiet = min(port.quiet(t), engine.quiet(t), end - t)
    if quiet:
        streaming = port.streaming(t)
        engine.skip(t, quiet, module.activity)
        if streaming:
            port.stream(t, quiet)
        return t + quiet
    port.arbitrate(t)
    port.deliver(t)
    module.activity[engine.tick(t)] += 1
    return t + 1

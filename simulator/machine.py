"""The cycle-level model's machine: the units of one run, wired together, and the schedulers
that run them. setup.py compiles it (and the units) with mypyc.

The model is made of the units of ``hw/``, each a small state machine that mirrors its RTL
counterpart's registers and handshakes (:mod:`simulator.units`, :mod:`simulator.engines`,
:mod:`simulator.ports`, :mod:`simulator.queues`): fetch with its beat buffer, three command
queues, the load, compute and store modules with their engines, the token counters, the read
port (arbiter and memory) and the write port. It never computes values: every size it needs
comes from the functional simulator's events (DESIGN principle 4).

Two schedulers run the same units. The *stepped* one ticks every unit every cycle, as the RTL
runs. The *event-driven* one asks every unit how many cycles from now it will only make bulk
progress (a GEMM's steps, a burst's beats streaming into a waiting writer or into fetch while
it dispatches to queues that are not empty, pad rows, waiting) and skips them all at once; the
cycle counts, per-instruction cycles and activity counts are exactly those of the stepped
scheduler (the tests compare them on every conformance program).

Within a cycle every unit sees the state at the cycle's start: the read ports arbitrate and
offer a beat, fetch unpacks and dispatches, each module takes, starts or retires an
instruction and its engine runs; queue and token changes apply at the cycle's end.
"""

from __future__ import annotations

from isa import AccelConfig, Stage, TimingConfig
from simulator.errors import SimulationError
from simulator.events import Event
from simulator.ports import NEVER, ReadPort
from simulator.queues import BufferedFifo, TokenCounters
from simulator.stats import BurstTiming
from simulator.transfer_plans import LoadsAlone
from simulator.units import Fetch, Module, Timeline, build_ports, module_engines

__all__ = ["Machine"]

#: How often the stepped scheduler checks that some unit can still make progress.
_STALL_CHECK = 4096


class Machine:
    """The units of one run, wired as ``hw/top.py`` wires them."""

    def __init__(
        self, cfg: AccelConfig, timing: TimingConfig, events: list[Event], stepped: bool
    ) -> None:
        self.stepped = stepped
        self.timeline = Timeline(len(events))
        self.queues: dict[Stage, BufferedFifo[int]] = {
            stage: BufferedFifo(cfg.cmd_queue_depth) for stage in Stage
        }
        self.tokens = TokenCounters()
        targets = [self.queues[event.module] for event in events]
        self.fetch = Fetch(cfg, timing, targets, self.timeline)
        engines, readers, self.store_engine = module_engines(cfg, timing, stepped)
        self.modules = [
            Module(stage, self.queues[stage], self.tokens, events, engines[stage], self.timeline)
            for stage in Stage
        ]
        self.ports = build_ports(timing, self.fetch, readers)
        self.reader_modules = {readers[stage]: self.modules[stage - 1] for stage in readers}
        self.loads_alone = LoadsAlone(cfg, timing)
        self.finisher = self.modules[Stage.COMPUTE - 1]
        self.queue_list = list(self.queues.values())

    def run(self) -> int:
        """Run to FINISH; return its retirement cycle (the RTL's cycle counter)."""
        self.tick(0)  # the launch cycle: fetch starts
        self.timeline.restart_activity()
        t = 1
        while self.finisher.finished_at is None:
            if self.stepped:
                if t % _STALL_CHECK == 0:
                    self._check(t, self.quiet(t))
                self.tick(t)
                t += 1
                continue
            cycles = self._check(t, self.quiet(t))
            if cycles:
                self.skip(t, cycles)
            else:
                cycles = self.alone(t)
                if not cycles:
                    self.tick(t)
                    cycles = 1
            t += cycles
        return self.finisher.finished_at

    def bursts(self) -> list[BurstTiming]:
        """Every burst of the run, in the order their first beats moved (read before write
        within a cycle)."""
        bursts = [
            BurstTiming("read", port.clients[b.client].unit, b.beats, b.accepted, b.first, b.last)
            for port in self.ports
            for b in port.completed
        ]
        bursts += [
            BurstTiming("write", "store", b.beats, b.accepted, b.first, b.last)
            for b in self.store_engine.completed
        ]
        bursts.sort(key=lambda b: (b.first, b.port))
        return bursts

    @staticmethod
    def _check(t: int, quiet: int) -> int:
        if quiet >= NEVER:
            raise SimulationError(
                f"the timing model stalled at cycle {t} with no unit able to move "
                f"(a model error: the functional simulator ran this program)"
            )
        return quiet

    def tick(self, t: int) -> None:
        for port in self.ports:
            port.arbitrate(t)
        for port in self.ports:
            port.deliver(t)
        self.fetch.tick(t)
        for module in self.modules:
            module.tick(t)
        self.tokens.end_cycle()
        for queue in self.queue_list:
            queue.end_cycle()

    def quiet(
        self, t: int, port_alone: ReadPort | None = None, module_alone: Module | None = None
    ) -> int:
        """The cycles every unit (but ``port_alone`` and ``module_alone``, which run on their
        own) can skip from ``t`` (0 as soon as one of them cannot)."""
        quiet = NEVER
        for port in self.ports:
            if quiet and port is not port_alone:
                quiet = min(quiet, port.quiet(t))
        for module in self.modules:
            if quiet and module is not module_alone:
                quiet = min(quiet, module.quiet(t))
        if quiet:
            quiet = min(quiet, self.fetch.quiet(t))
        for queue in self.queue_list:
            if quiet:
                quiet = min(quiet, queue.quiet(t))
        return quiet

    def skip(
        self,
        t: int,
        cycles: int,
        port_alone: ReadPort | None = None,
        module_alone: Module | None = None,
    ) -> None:
        """Apply ``cycles`` quiet cycles from ``t`` to every unit but ``port_alone`` and
        ``module_alone``."""
        streams = [port for port in self.ports if port is not port_alone and port.streaming(t)]
        self.fetch.skip(t, cycles)
        for module in self.modules:
            if module is not module_alone:
                module.skip(t, cycles)
        for port in streams:  # last: the units above account the cycles from their state at t
            port.stream(t, cycles)

    # ------------------------------------------------------------------ a reader alone
    def alone(self, t: int) -> int:
        """Run a read port and the one LOAD it serves on their own, through as many of their
        events as the other units stay quiet for (they cannot see the port's grants and beats,
        and nothing they do reaches the port before their own next event); the cycles run (0:
        no port can)."""
        for engine, module in self.reader_modules.items():
            port = engine.port
            if not module.running(engine) or engine.done() or not port.serves_only(engine):
                continue
            limit = self.quiet(t, port, module)
            if not limit:
                return 0
            cycles = self.loads_alone.run(t, limit, engine, module)
            if cycles:
                self.skip(t, cycles, port, module)
            return cycles
        return 0

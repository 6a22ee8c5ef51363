"""What the LLVM backend compiles for: :class:`Target`, an LLVM triple, CPU name and feature
string (the host's by default), and the machine model the schedules derive from it. Tuning,
``build`` and the code generators import it from here, apart from the emitter."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite.binding as llvm

from compiler.codegen.machine import X86_CPUS, MachineModel, machine_model
from compiler.errors import CompileError

__all__ = ["Target", "initialise"]


def initialise() -> None:
    """Load LLVM's targets and printers (idempotent)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


@dataclass(frozen=True)
class Target:
    """What to compile for: an LLVM triple, CPU name and feature string (host by default).

    ``Target.parse("llvm -mtriple=armv7a-linux-gnueabihf -mcpu=cortex-a9")`` targets the
    PYNQ's ARM core; ``"llvm -mcpu=haswell"`` an AVX2 x86 CPU; ``"llvm -mattr=-avx512f"`` this
    host without AVX-512. The schedules' machine choices (:attr:`model`: vector lanes,
    registers, FMA) derive from these three fields alone. Each feature is ``+name`` or ``-name``.
    """

    triple: str = ""
    cpu: str = ""
    features: str = ""

    def __post_init__(self) -> None:
        unsigned = [f for f in self.features.split(",") if f and f[0] not in "+-"]
        if unsigned:
            raise CompileError(
                f"target features {unsigned} need a '+' (enable) or '-' (disable) sign"
            )

    @classmethod
    def host(cls) -> Target:
        """This machine's triple, CPU name and every feature (asked once per process)."""
        return _host_target()

    @classmethod
    def parse(cls, spec: str | Target) -> Target:
        """``"llvm"`` (the host) or ``"llvm -mtriple=... -mcpu=... -mattr=..."``.

        Without ``-mcpu``, a target of the host's triple is the host's CPU with the host's
        features, ``-mattr`` edits applied after them; with ``-mcpu``, it is that CPU with its
        own features plus ``-mattr`` (the host's features never leak into a named CPU).
        """
        if isinstance(spec, Target):
            return spec
        words = spec.split()
        if not words or words[0] != "llvm":
            raise CompileError(f"unknown target {spec!r} (this backend compiles 'llvm')")
        options = {}
        for word in words[1:]:
            key, _, value = word.partition("=")
            if key not in ("-mtriple", "-mcpu", "-mattr") or not value:
                raise CompileError(f"unknown target option {word!r} in {spec!r}")
            options[key] = value
        host = cls.host()
        if not options:
            return host
        triple = options.get("-mtriple", host.triple)
        attrs = options.get("-mattr", "")
        cpu = options.get("-mcpu")
        if cpu is not None and triple.startswith("x86_64") and cpu not in X86_CPUS:
            raise CompileError(
                f"unknown x86-64 CPU {cpu!r} in {spec!r} (LLVM's names, e.g. x86-64, haswell, "
                "znver3, skylake-avx512: compiler.codegen.machine.X86_CPUS lists them)"
            )
        if cpu is not None or triple != host.triple:
            return cls(triple, cpu or "generic", attrs)
        return cls(triple, host.cpu, ",".join(f for f in (host.features, attrs) if f))

    @property
    def is_host(self) -> bool:
        return self.triple == llvm.get_process_triple()

    @property
    def model(self) -> MachineModel:
        """The vector resources the schedules size their tiles by (lanes, registers, FMA)."""
        return machine_model(self.triple, self.cpu, self.features)

    def machine(self) -> llvm.TargetMachine:
        initialise()
        try:
            target = llvm.Target.from_triple(self.triple)
        except RuntimeError as error:
            raise CompileError(f"LLVM has no target for triple {self.triple!r}: {error}") from None
        return target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=3, reloc="pic", codemodel="default"
        )


@functools.cache
def _host_target() -> Target:
    initialise()
    return Target(
        llvm.get_process_triple(),
        llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(),
    )

"""What a CPU offers the schedules: float32 vector lanes, vector registers, FMA.

:func:`machine_model` derives a :class:`MachineModel` from an LLVM target's ``(triple, cpu,
features)`` alone, never from the machine the code runs on, so code and schedules for an AVX2
host can be produced on an AVX-512 one. The CPU name gives a baseline (:data:`X86_CPUS`, a table
of LLVM's x86 processor names and their widest vector extension, because a name says nothing
by itself); the feature string's ``+f`` / ``-f`` edits then apply in order, as LLVM applies them:
enabling an extension enables the ones it builds on (``+avx2`` enables ``avx``), disabling one
disables those built on it (``-avx512f`` leaves AVX2, ``-avx`` drops AVX2, AVX-512 and FMA).
A host's feature string (llvmlite's ``get_host_cpu_features``) lists every extension, so the
table matters only for a CPU named without ``-mattr`` (a host name missing from it counts as
the ``x86-64`` baseline before the host's features apply).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = ["X86_CPUS", "MachineModel", "machine_model"]

#: x86 vector extensions, each building on the previous one.
_LEVELS = ("sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "avx512f")
_AVX, _AVX512 = _LEVELS.index("avx"), _LEVELS.index("avx512f")
#: Features that imply AVX-512F when enabled (AVX10 includes the 512-bit AVX-512 set).
_AVX512_ALIASES = frozenset({"avx10.1", "avx10.1-512", "avx10.2", "avx10.2-512"})


def _names(level: str, *cpus: str) -> dict[str, str]:
    return dict.fromkeys(cpus, level)


#: LLVM's 64-bit x86 processor names -> their widest vector extension (a level of
#: ``_LEVELS``), checked against LLVM 22's code for each. LLVM aborts the process on a 64-bit
#: triple with a name it does not know, so :meth:`Target.parse` refuses names not listed.
X86_CPUS: dict[str, str] = {
    **_names("sse2", "generic", "x86-64", "k8", "opteron", "athlon64", "athlon-fx"),
    **_names("sse3", "nocona", "k8-sse3", "opteron-sse3", "athlon64-sse3"),
    **_names("ssse3", "core2", "bonnell", "atom", "btver1"),
    **_names("sse4.1", "penryn"),
    **_names("sse4.2", "x86-64-v2", "nehalem", "corei7", "westmere", "silvermont", "slm"),
    **_names("sse4.2", "goldmont", "goldmont-plus", "tremont", "amdfam10", "barcelona"),
    **_names("avx", "sandybridge", "corei7-avx", "ivybridge", "core-avx-i", "btver2"),
    **_names("avx", "bdver1", "bdver2", "bdver3"),
    **_names("avx2", "x86-64-v3", "haswell", "core-avx2", "broadwell", "skylake", "bdver4"),
    **_names("avx2", "alderlake", "raptorlake", "meteorlake", "arrowlake", "arrowlake-s"),
    **_names("avx2", "lunarlake", "pantherlake", "gracemont", "sierraforest", "grandridge"),
    **_names("avx2", "clearwaterforest", "wildcatlake", "znver1", "znver2", "znver3"),
    **_names("avx512f", "x86-64-v4", "skylake-avx512", "skx", "cascadelake", "cooperlake"),
    **_names("avx512f", "cannonlake", "icelake-client", "icelake-server", "rocketlake"),
    **_names("avx512f", "tigerlake", "sapphirerapids", "emeraldrapids", "graniterapids"),
    **_names("avx512f", "graniterapids-d", "diamondrapids", "novalake", "knl", "knm"),
    **_names("avx512f", "znver4", "znver5"),
}
#: CPUs with FMA below AVX2 (every AVX2 and AVX-512 CPU above has it).
_FMA_WITHOUT_AVX2 = frozenset({"bdver2", "bdver3"})


@dataclass(frozen=True)
class MachineModel:
    """The vector resources of one target, as the schedules see them.

    ``lanes``: float32 lanes of the widest vector register (16 AVX-512, 8 AVX, 4 SSE or NEON);
    ``registers``: how many such registers there are (32 with AVX-512 or on AArch64, 16 on
    x86-64, 8 on 32-bit x86); ``fma``: whether a fused multiply-add instruction exists.
    """

    lanes: int
    registers: int
    fma: bool

    @property
    def accumulators(self) -> int:
        """How many vector registers a register tile's accumulators may take: half the file.
        The other half holds the operands LLVM loads ahead of their use (an unrolled window
        row, the next step's vectors): on znver (16 ymm), NCHWc conv tiles of 12 accumulators
        ran at 0.55-0.72x the speed of tiles of 8, though 12 + 2 operands + 1 broadcast fit."""
        return self.registers // 2


@lru_cache(maxsize=64)
def machine_model(triple: str, cpu: str, features: str) -> MachineModel:
    """The :class:`MachineModel` of an LLVM target (see the module docstring)."""
    arch = triple.split("-", 1)[0]
    edits = [f.strip() for f in features.split(",") if f.strip()]
    if arch in ("x86_64", "i386", "i486", "i586", "i686"):
        return _x86(arch == "x86_64", cpu, edits)
    if arch in ("aarch64", "arm64"):
        return MachineModel(lanes=4, registers=32, fma=True)
    if arch.startswith(("arm", "thumb")):  # NEON only where the features say so
        neon = "+neon" in edits and "-neon" not in edits
        return MachineModel(lanes=4 if neon else 1, registers=16, fma="+vfp4" in edits)
    return MachineModel(lanes=4, registers=16, fma=False)  # unknown: a conservative guess


def _x86(is_64bit: bool, cpu: str, edits: list[str]) -> MachineModel:
    level = _LEVELS.index(X86_CPUS.get(cpu, "sse2"))
    fma = level >= _LEVELS.index("avx2") or cpu in _FMA_WITHOUT_AVX2
    for edit in edits:
        enable, name = edit[0] == "+", edit[1:]
        if enable and name in _AVX512_ALIASES:
            name = "avx512f"
        if name in _LEVELS:
            at = _LEVELS.index(name)
            level = max(level, at) if enable else min(level, at - 1)
            fma = (fma or at == _AVX512) if enable else fma and level >= _AVX
        elif name == "fma":
            fma = enable
            level = max(level, _AVX) if enable else level
    if level < _AVX:
        fma = False
    lanes = 16 if level >= _AVX512 else 8 if level >= _AVX else 4 if level >= 0 else 1
    registers = (32 if level >= _AVX512 else 16) if is_64bit else 8
    return MachineModel(lanes=lanes, registers=registers, fma=fma)

"""The TVM-style compiler: frontends, graph passes, tensor expressions and schedules,
lowering passes (tensorize, DMA, latency hiding) and code generators (accelerator, LLVM, CUDA).

The core API follows TVM's: ``te.placeholder`` / ``te.compute`` declare what to compute,
``create_schedule`` and the stage primitives say how, ``lower`` returns the printable loop IR and
``build`` a function callable on numpy arrays. Whole models: ``compile_model`` (ONNX, PyTorch or
a graph, for an accelerator configuration), ``reference`` (any graph run in numpy: for a
quantized one, the bit-exact oracle of the accelerator) and ``compare_model`` (a compiled model
against its float original, layer by layer: a ``Comparison``).
"""

from __future__ import annotations

from isa.lazy import keep_names, lazy_names

#: Each public name and the module that defines it (``te`` is the module itself).
_SOURCES = {
    "PIPELINE": "compiler.lower",
    "CompileError": "compiler.errors",
    "CompiledModel": "compiler.model",
    "Comparison": "compiler.model.compare",
    "ScheduleError": "compiler.errors",
    "build": "compiler.build",
    "compare_model": "compiler.model.compare",
    "compile_model": "compiler.model",
    "create_schedule": "compiler.schedule",
    "lower": "compiler.lower",
    "reference": "compiler.model",
    "te": "compiler.te",
}

__all__ = sorted(_SOURCES)


__getattr__, __dir__ = lazy_names(__name__, _SOURCES, modules=("te",))


# ``lower`` and ``build`` are public functions that share their names with submodules
keep_names(__name__, ("lower", "build"))

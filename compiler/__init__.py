"""The TVM-style compiler: frontends, graph passes, tensor expressions and schedules,
lowering passes (tensorize, DMA, latency hiding) and code generators (accelerator, LLVM, CUDA)."""

__all__: list[str] = []

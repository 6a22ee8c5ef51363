"""The accelerator in Amaranth HDL: fetch, load, compute, store, queues, SRAMs and the memory
and control interfaces, every width derived from an ``isa.AccelConfig``."""

__all__: list[str] = []

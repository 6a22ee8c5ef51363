"""The ``tensorize`` pass (stub while the backend is built)."""

from compiler.ir import LoweredFunc

__all__ = ["tensorize"]


def tensorize(func: LoweredFunc) -> LoweredFunc:
    return func

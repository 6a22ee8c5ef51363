"""Tensor expressions, TVM's ``te``: the namespace a kernel is written in.

``te.placeholder`` / ``te.compute`` (and the reductions, selects, casts and math functions beside
them) declare what to compute: they are every public name of :mod:`compiler.tensor`.
``te.create_schedule`` starts saying how: it is :func:`compiler.schedule.create_schedule`. This
module only gathers the two, so that the tensor-expression layer itself needs no schedule.
"""

from compiler import tensor
from compiler.schedule import create_schedule
from compiler.tensor import *  # noqa: F403  (the tensor layer's public names)

__all__ = ["create_schedule"]
__all__ += tensor.__all__

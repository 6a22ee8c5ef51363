"""Exact integer matrix products through float BLAS.

numpy has no BLAS for integers: an int32 product of ResNet-18's shapes runs at about 1 G MAC/s,
a float32 one at 50. A product of integer matrices is exact in floating point when every partial
sum is an integer the format represents exactly: with ``a_bits``- and ``b_bits``-bit signed
operands and a reduction of ``k`` terms, no partial sum exceeds ``k * 2**(a_bits + b_bits - 2)``
in magnitude, so float32 (24-bit significand) is exact up to ``2**24`` and float64 up to
``2**53``; beyond that the product stays in int64.

The simulator's products are small (one instruction's steps at a time), so it runs them on one
BLAS thread (:func:`one_blas_thread`): threads there buy nothing on an idle machine and cost
several times the run on a busy one (a sweep's worker processes, other jobs), where BLAS's
spinning threads compete for the cores.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
from threadpoolctl import ThreadpoolController

__all__ = ["exact_dtype", "exact_matmul", "one_blas_thread"]


def exact_dtype(k: int, a_bits: int, b_bits: int) -> type:
    """The cheapest dtype whose matrix product of ``k``-term reductions of signed
    ``a_bits`` x ``b_bits``-bit operands is exact: float32, float64 or int64."""
    bound = max(k, 1) << (a_bits + b_bits - 2)
    if bound <= 1 << 24:
        return np.float32
    if bound <= 1 << 53:
        return np.float64
    return np.int64


def exact_matmul(a: np.ndarray, b: np.ndarray, a_bits: int, b_bits: int) -> np.ndarray:
    """``a @ b`` (numpy's broadcasting matmul) of integer arrays holding signed ``a_bits``- and
    ``b_bits``-bit values, exactly, as int64."""
    dtype = exact_dtype(a.shape[-1], a_bits, b_bits)
    product: np.ndarray = a.astype(dtype, copy=False) @ b.astype(dtype, copy=False)
    return product.astype(np.int64, copy=False)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with numpy's BLAS limited to one thread (restored after)."""
    with _blas_libraries().limit(limits=1, user_api="blas"):
        yield


@functools.cache
def _blas_libraries() -> ThreadpoolController:
    """The thread pools loaded in this process (found once: the search takes milliseconds, a
    limit through it microseconds)."""
    return ThreadpoolController()

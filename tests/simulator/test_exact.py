"""Integer products through float BLAS (the functional simulator's GEMM, the quantized graph's
kernels) are exact up to the bound each format guarantees: held at the edge with
maximum-magnitude operands over the longest reduction, and on random products."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from threadpoolctl import threadpool_info

from simulator.exact import exact_dtype, exact_matmul, one_blas_thread


def test_the_cheapest_exact_format_is_chosen_at_its_edge():
    assert exact_dtype(1024, 8, 8) is np.float32  # 1024 * 2**14 = 2**24: still exact
    assert exact_dtype(1025, 8, 8) is np.float64
    assert exact_dtype(2**23, 16, 16) is np.float64  # 2**53
    assert exact_dtype(2**23 + 1, 16, 16) is np.int64
    assert exact_dtype(16, 32, 32) is np.int64


@pytest.mark.parametrize(("k", "bits"), [(1024, 8), (1025, 8), (64, 16), (2, 31)])
def test_extreme_operands_at_the_longest_reduction(k, bits):
    low = -(1 << (bits - 1))
    a = np.full((2, k), low, dtype=np.int64)
    b = np.full((k, 3), low, dtype=np.int64)
    b[:, 1] = (1 << (bits - 1)) - 1
    expected = np.array([[k * low * low, k * low * ((1 << (bits - 1)) - 1), k * low * low]] * 2)
    np.testing.assert_array_equal(exact_matmul(a, b, bits, bits), expected)


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 2048),
    bits=st.sampled_from([8, 16]),
    seed=st.integers(0, 2**16),
)
def test_random_products_equal_numpys_integer_product(k, bits, seed):
    rng = np.random.default_rng(seed)
    low, high = -(1 << (bits - 1)), 1 << (bits - 1)
    a = rng.integers(low, high, (3, k))
    b = rng.integers(low, high, (k, 4))
    np.testing.assert_array_equal(exact_matmul(a, b, bits, bits), a @ b)


def test_one_blas_thread_limits_numpys_blas_and_restores_it():
    def blas_threads() -> list[int]:
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    before = blas_threads()
    assert before, "numpy's BLAS is not visible to threadpoolctl"
    with one_blas_thread():
        assert blas_threads() == [1] * len(before)
    assert blas_threads() == before

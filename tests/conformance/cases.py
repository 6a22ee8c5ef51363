"""Every conformance case, in one tuple: what each level of vtaforge must run bit-exactly."""

from __future__ import annotations

from tests.conformance.common import ConformanceCase
from tests.conformance.compiled_cases import COMPILED_CASES
from tests.conformance.conv_cases import CONV_CASES
from tests.conformance.gemm_cases import GEMM_CASES
from tests.conformance.unit_cases import UNIT_CASES

__all__ = ["CASES"]

CASES: tuple[ConformanceCase, ...] = (*UNIT_CASES, *GEMM_CASES, *CONV_CASES, *COMPILED_CASES)

"""Every GPU template: lowered, assembled by ptxas for sm_80 and sm_90, emulated on the CPU and
equal to its numpy/PyTorch reference; its knob space is the tuner's."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import CompileError, build, te
from compiler.templates import KnobSpace
from compiler.templates.gpu import GPU_MATMUL
from tests.compiler.gpu.cases import CASES
from tests.compiler.gpu.helpers import assemble


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_template_emulated_equals_reference(case):
    s, args = case.declare()
    f = build(s, args, target="cuda")
    assemble(f.ptx, "sm_80")
    assemble(build(s, args, target="cuda -arch=sm_90").ptx, "sm_90")
    inputs = case.arrays()
    out = np.full(args[-1].shape, np.nan, np.float32)
    f.emulate(*inputs, out)
    np.testing.assert_allclose(out, case.reference(*inputs), rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_knob_spaces(case):
    inputs = [te.placeholder(shape, name=f"in{i}") for i, shape in enumerate(case.shapes)]
    space = case.template.space(*inputs, **case.params)
    assert isinstance(space, KnobSpace) and len(space) >= 1
    assert space.default() == next(iter(space))


def test_thin_operands_skip_shared_memory():
    by_name = {c.name: c for c in CASES}
    for name in ("matmul k=1", "conv2d one channel"):
        s, args = by_name[name].declare()
        assert build(s, args, target="cuda").launch.shared_bytes == 0
    s, args = by_name["matmul"].declare()
    assert build(s, args, target="cuda").launch.shared_bytes > 0


def test_matmul_knobs_change_the_kernel():
    a = te.placeholder((128, 64), name="A")
    b = te.placeholder((64, 128), name="B")
    small = build(
        *_args(GPU_MATMUL(a, b, config={"tile_m": 32, "tile_n": 32}), a, b), target="cuda"
    )
    large = build(*_args(GPU_MATMUL(a, b), a, b), target="cuda")
    assert small.launch.grid == (4, 4, 1) and small.launch.block == (8, 8, 1)
    assert large.launch.grid == (2, 2, 1) and large.launch.block == (16, 16, 1)


def _args(declared, *inputs):
    s, out = declared
    return s, [*inputs, out]


def test_bad_knob_value():
    a = te.placeholder((64, 64), name="A")
    with pytest.raises(CompileError, match="knob 'tile_m' = 48"):
        GPU_MATMUL(a, a, config={"tile_m": 48})


def test_matmul_shape_mismatch():
    a = te.placeholder((64, 32), name="A")
    with pytest.raises(CompileError, match="inner extents differ"):
        GPU_MATMUL(a, a)

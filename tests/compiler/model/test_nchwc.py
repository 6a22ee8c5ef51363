"""The CPU target's layouts (:mod:`compiler.model.nchwc`, :mod:`compiler.model.panels`) on
every architecture of the zoo: the laid-out graph computes what the float graph computes in
numpy, bit for bit where only NCHWc operators were introduced (each is its plain operator on
the unblocked values; a product by packed weights may be summed in another order by BLAS), each
value changes layout at most once per block, and the model runs on this host's LLVM kernels to
within 1e-4 of PyTorch."""

from __future__ import annotations

import collections

import numpy as np
import pytest

from compiler.model import compile_model, reference
from compiler.zoo import run_torch
from runtime.model import Model
from tests.compiler.model.zoo_models import MODELS, random_like

#: An AVX2 CPU: blocks of 16 channels whatever this host has.
TARGET = "llvm -mcpu=haswell"


@pytest.mark.parametrize("name", list(MODELS))
def test_every_zoo_model_runs_blocked_as_its_float_graph(name, tmp_path):
    module, example = MODELS[name]()
    inputs = random_like(example, 1)
    compiled = compile_model(module, calibration=[inputs], target=TARGET)
    ops = collections.Counter(node.op.value for node in compiled.graph.nodes)
    blocked = reference(compiled.graph, inputs)
    for got, want in zip(blocked, reference(compiled.float_graph, inputs), strict=True):
        if ops["PackedMatMul"]:
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())
        else:
            np.testing.assert_array_equal(got, want)
    assert ops["Conv"] == 0 or ops["ConvNCHWc"] + ops["DepthwiseNCHWc"] > 0
    changes = [(n.op, n.inputs[0], n.attrs) for n in compiled.graph.nodes]
    changes = [c for c in changes if c[0].value in ("ToNCHWc", "FromNCHWc")]
    assert len(changes) == len(set(changes))  # once per value and block
    run = Model(compiled.image, kernel_cache=tmp_path).run(inputs, device="cpu")
    want = run_torch(module, *inputs)
    assert np.abs(run.output - want).max() <= 1e-4 * np.abs(want).max()

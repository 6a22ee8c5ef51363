"""The CPU target's NCHWc layout (:mod:`compiler.model.nchwc`) on every architecture of the
zoo: the blocked graph computes what the float graph computes, bit for bit in numpy (each
blocked operator is its plain one on the unblocked values), each value changes layout at most
once per block, and the model runs on this host's LLVM kernels to within 1e-4 of PyTorch."""

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
    blocked = reference(compiled.graph, inputs)
    for got, want in zip(blocked, reference(compiled.float_graph, inputs), strict=True):
        np.testing.assert_array_equal(got, want)
    ops = collections.Counter(node.op.value for node in compiled.graph.nodes)
    assert ops["Conv"] == 0 or ops["ConvNCHWc"] + ops["DepthwiseNCHWc"] > 0
    changes = [(n.op, n.inputs[0], n.attrs) for n in compiled.graph.nodes]
    changes = [c for c in changes if c[0].value in ("ToNCHWc", "FromNCHWc")]
    assert len(changes) == len(set(changes))  # once per value and block
    run = Model(compiled.image, kernel_cache=tmp_path).run(inputs, device="cpu")
    want = run_torch(module, *inputs)
    assert np.abs(run.output - want).max() <= 1e-4 * np.abs(want).max()

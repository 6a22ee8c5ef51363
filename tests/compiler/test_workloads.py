"""``compiler.workloads``: conv layers and small models as sweep workloads, and a sweep of them
in worker processes against running the compiled code directly."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from compiler import CompileError
from compiler.accel import Env
from compiler.accel.templates import ConvLayer
from compiler.workloads import (
    ConvWorkload,
    ModelWorkload,
    compile_conv_layer,
    resnet18_layers,
    small_cnn,
)
from isa import AccelConfig, Program
from runtime.model import Model, ModelImage
from runtime.sweep import sweep

TINY = AccelConfig.preset("tiny")
TINY_BUS128 = TINY.replace(axi_width=128)
LAYER = ConvLayer("S8", size=8, cin=8, cout=8, kernel=3, stride=1, padding=1, in_resnet18=0)


def _conv_cycles(cfg: AccelConfig, layer: ConvLayer) -> int:
    """The layer compiled and called directly (cycles do not depend on the data)."""
    function = compile_conv_layer(layer, Env(cfg))
    arrays = [np.zeros(a.shape, a.dtype) for a in function.arguments]
    return function(*arrays, device="sim").cycles


def _model_cycles(cfg: AccelConfig, workload: ModelWorkload) -> int:
    model = Model(workload.build(cfg))
    inputs = [np.zeros(shape, dtype) for shape, dtype in model.inputs.values()]
    return model.run(inputs, "sim").report.cycles


def test_a_conv_workload_is_a_picklable_program_with_seeded_inputs():
    workload = ConvWorkload(LAYER, seed=3)
    assert workload.key == "conv:S8"
    assert pickle.loads(pickle.dumps(workload)) == workload
    program = workload.build(TINY)
    assert isinstance(program, Program)
    assert program == workload.build(TINY)  # deterministic
    segments = {s.name: s.data for s in program.segments}
    assert any(segments["data"]) and any(segments["kernel"])
    assert program != ConvWorkload(LAYER, seed=4).build(TINY)


def test_a_conv_workload_that_does_not_suit_the_configuration_raises_compile_error():
    with pytest.raises(CompileError, match="whole blocks of 8"):
        ConvWorkload(ConvLayer("odd", 8, 8, 12, 3, 1, 1, 0)).build(TINY.replace(block_out=8))


def test_resnet18_layers_are_c2_to_c12():
    keys = [w.key for w in resnet18_layers()]
    assert keys == [f"conv:C{i}" for i in range(2, 13)]


def test_a_model_workload_compiles_a_small_model():
    workload = ModelWorkload("small_cnn")
    assert workload.key == "model:small_cnn"
    assert ModelWorkload("small_cnn", seed=2).key == "model:small_cnn:s2"
    image = workload.build(TINY)
    assert isinstance(image, ModelImage)
    assert any(step.program is not None for step in image.steps)
    with pytest.raises(CompileError, match="unknown model 'resnet'"):
        ModelWorkload("resnet")


def test_a_2x2_sweep_in_worker_processes_matches_direct_runs_and_caches(tmp_path):
    model = ModelWorkload("small_cnn")
    workloads = [ConvWorkload(LAYER), model]
    table = sweep([TINY, TINY_BUS128], workloads, cache=tmp_path, processes=2, progress=False)
    assert list(zip(table["fingerprint"], table["workload"], strict=True)) == [
        (cfg.fingerprint, w.key) for cfg in (TINY, TINY_BUS128) for w in workloads
    ]
    assert table["error"].isna().all()
    for (cfg, workload), cycles in zip(
        [(c, w) for c in (TINY, TINY_BUS128) for w in workloads], table["cycles"], strict=True
    ):
        if isinstance(workload, ConvWorkload):
            assert cycles == _conv_cycles(cfg, workload.layer)
        else:
            assert cycles == _model_cycles(cfg, workload)
    again = sweep([TINY, TINY_BUS128], workloads, cache=tmp_path, processes=2, progress=False)
    pd.testing.assert_frame_equal(again, table)


def test_small_cnns_weights_are_scaled_by_their_fan_in():
    """LeCun's initialisation, which keeps the activations' scale from layer to layer: each
    weight tensor's standard deviation is ``1 / sqrt(fan-in)``, the products one output sums
    (9 per input channel for a 3x3 convolution, the features for the dense layer). The layers
    are wide enough that the sample deviation is within 3 % (more than 4 standard errors)."""
    graph = small_cnn(0, channels=64, in_channels=16, classes=100)
    fan_in = {"w1": 9 * 16, "w2": 9 * 64, "fc_w": 2 * 64}
    for name, fan in fan_in.items():
        assert np.std(graph.params[name]) == pytest.approx(fan**-0.5, rel=0.03), name

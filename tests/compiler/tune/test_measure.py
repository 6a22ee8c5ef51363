"""Measurement: results checked against the reference, faults isolated in the worker, and
accelerator candidates measured on the RTL at the cycles the cycle-level model predicts."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from compiler import build, te
from compiler.accel import Env
from compiler.accel.templates import ConvLayer
from compiler.expr import DType
from compiler.templates import CONV2D_NCHW, CONV2D_NCHWC, MATMUL
from compiler.tune import (
    MeasureOptions,
    Space,
    Task,
    TuneError,
    conv_layer_task,
    measure_candidate,
    tune,
)
from compiler.tune.measure import random_inputs
from compiler.tune.reference import REFERENCES
from isa import AccelConfig
from runtime import open_device
from runtime.devices.rtl import AXI_RAM_TIMING
from tests.compiler.tune.helpers import (
    MATMUL_SLICE,
    accel_conv_task,
    faulty_task,
    matmul_task,
    sabotage,
)


def test_crash_hang_and_wrong_answer_are_recorded_and_the_run_goes_on(tmp_path):
    task = faulty_task()
    records = tmp_path / "faults.jsonl"
    # the hang costs the whole timeout; generous, so a loaded machine does not time out the rest
    options = MeasureOptions(timeout=5.0, prepare=sabotage, repeat=1, min_repeat_ms=1)
    result = tune(
        task,
        trials=10,
        tuner="grid",
        records=records,
        options=options,
        restrict={"vectorize": (True,)},
    )
    outcome = {knobs["fault"]: r for knobs, r in result.trials}
    assert list(outcome) == ["exit", "segv", "hang", "wrong", "none"]  # grid order, each once
    assert outcome["exit"].error == "crash" and "exit status 3" in outcome["exit"].message
    assert outcome["segv"].error == "crash" and "SIGSEGV" in outcome["segv"].message
    assert outcome["hang"].error == "timeout"
    assert outcome["wrong"].error == "wrong_answer"
    assert outcome["none"].ok and outcome["none"].cost > 0  # measured after all the faults
    assert result.best[0] == {"fault": "none", "vectorize": True}
    assert result.errors == 4
    assert len(records.read_text().splitlines()) == 5


def test_wrong_answer_is_caught_by_the_reference_not_by_the_template():
    task = faulty_task()
    ok = measure_candidate(task, {"fault": "none", "vectorize": False}, MeasureOptions(repeat=1))
    wrong = measure_candidate(task, {"fault": "wrong", "vectorize": True}, MeasureOptions())
    assert ok.ok and wrong.error == "wrong_answer"
    assert "64 of 64" in wrong.message


def test_cpu_candidates_match_numpy_and_report_positive_times():
    task = matmul_task(32)
    space = Space(task, MATMUL_SLICE)
    for index in (0, len(space) - 1):
        result = measure_candidate(task, space.config(index), MeasureOptions(repeat=2))
        assert result.ok, result.message
        assert len(result.costs) == 2 and min(result.costs) > 0


def test_the_reference_runs_on_one_blas_thread_so_none_spins_beside_the_timed_calls():
    """A multi-threaded BLAS call leaves its threads spinning; a candidate timed on two threads
    right after it measured no faster than on one. The reference must see one BLAS thread."""
    seen: list[list[int]] = []

    def reference(a, b):
        seen.append([pool["num_threads"] for pool in threadpool_info()])
        return a @ b

    a, b = te.placeholder((32, 32), name="A"), te.placeholder((32, 32), name="B")
    task = Task.of(MATMUL, a, b, reference=reference)
    result = measure_candidate(task, Space(task).config(0), MeasureOptions(repeat=1, threads=2))
    assert result.ok, result.message
    assert seen and seen[0] and all(threads == 1 for threads in seen[0])
    with threadpool_limits(limits=2):  # the check means something: BLAS has threads to limit
        assert any(pool["num_threads"] > 1 for pool in threadpool_info())


def test_accelerator_candidates_are_checked_and_give_cycles():
    task = accel_conv_task()
    space = Space(task)
    first = next(i for i in space if space.valid(i))
    result = measure_candidate(task, space.config(first), MeasureOptions())
    again = measure_candidate(task, space.config(first), MeasureOptions(seed=5))
    assert result.ok, result.message
    assert result.costs == again.costs  # cycles do not depend on the data
    assert result.cost == int(result.cost) > 0


def test_a_candidate_that_cannot_compile_is_a_compile_error():
    task = accel_conv_task()
    space = Space(task)
    refused = next(i for i in space if not space.valid(i))
    result = measure_candidate(task, space.config(refused), MeasureOptions())
    assert result.error == "compile" and "conv2d" in result.message


def test_accelerator_candidates_measure_on_the_rtl_as_the_cycle_model_predicts():
    # The rtl device runs the Verilated accelerator against cocotbext-axi's AxiRam, whose
    # timing the cycle-level model takes as AXI_RAM_TIMING: the measured cycles must be the
    # model's under it (and the output is checked against the reference by the measurement).
    cfg = AccelConfig.preset("tiny")
    task = conv_layer_task(ConvLayer("t", 4, 8, 8, 3, 1, 1, 0), Env(cfg))
    space = Space(task)
    config = space.config(next(i for i in space if space.valid(i)))
    measured = measure_candidate(task, config, MeasureOptions(device="rtl", timeout=600))
    assert measured.ok, measured.message
    schedule, args = task.declare(config)
    function = build(schedule, args, Env(cfg).target)
    output = np.zeros(tuple(args[-1].shape), DType.of(args[-1].dtype).numpy)
    model = open_device("sim", cfg, timing=AXI_RAM_TIMING)
    predicted = function(*random_inputs(task, 0), output, device=model).cycles
    assert measured.cost == predicted


@pytest.mark.parametrize(
    ("name", "value", "wanted"),
    [
        ("number", 0, "a positive integer"),
        ("repeat", 0, "a positive integer"),
        ("threads", 0, "a positive integer"),
        ("repeat", True, "a positive integer"),
        ("number", 2.0, "a positive integer"),
        ("timeout", 0.0, "a finite positive number"),
        ("timeout", float("inf"), "a finite positive number"),
        ("min_repeat_ms", -0.5, "a finite number >= 0"),
        ("min_repeat_ms", float("nan"), "a finite number >= 0"),
    ],
)
def test_measurement_options_outside_their_contract_are_refused(name, value, wanted):
    """Counts are positive integers (not booleans or floats), the timeout a finite positive
    number of seconds, the minimum repeat time finite and not negative; the least valid values
    are accepted."""
    with pytest.raises(TuneError, match=rf"^measurement options: {name} .* is not {wanted}$"):
        MeasureOptions(**{name: value})
    least = MeasureOptions(number=1, repeat=1, threads=1, timeout=1e-3, min_repeat_ms=0.0)
    assert (least.number, least.repeat, least.threads) == (1, 1, 1)


def test_the_packed_convolutions_reference_is_the_plain_one_repacked():
    """CONV2D_NCHWC's reference, on data packed ``[N, C/ic, H, W, ic]`` and weights packed
    ``[O/oc, C/ic, KH, KW, ic, oc]``, is the NCHW convolution of the unpacked arrays, packed
    ``[N, O/oc, OH, OW, oc]``."""
    rng = np.random.default_rng(0)
    data = rng.standard_normal((1, 8, 6, 5)).astype(np.float32)
    kernel = rng.standard_normal((12, 8, 3, 2)).astype(np.float32)
    packed_data = data.reshape(1, 2, 4, 6, 5).transpose(0, 1, 3, 4, 2)
    packed_kernel = kernel.reshape(3, 4, 2, 4, 3, 2).transpose(0, 2, 4, 5, 3, 1)
    plain = REFERENCES[CONV2D_NCHW](data, kernel, stride=1, padding=1)
    expected = plain.reshape(1, 3, 4, *plain.shape[2:]).transpose(0, 1, 3, 4, 2)
    got = REFERENCES[CONV2D_NCHWC](packed_data, packed_kernel, stride=1, padding=1)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)

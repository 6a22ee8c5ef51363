"""Tasks, spaces and features: identity, numbering, validity, loop-IR features."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler import te
from compiler.errors import CompileError
from compiler.lower import schedule_to_ir
from compiler.templates import MATMUL
from compiler.tune import FEATURE_COUNT, Space, Task, TuneError, features
from compiler.tune.task import TensorSpec
from tests.compiler.tune.helpers import accel_conv_task, matmul_task

MATMUL_SPACE = Space(matmul_task())
ACCEL_SPACE = Space(accel_conv_task())


@given(index=st.integers(0, len(MATMUL_SPACE) - 1))
def test_indices_and_configurations_correspond(index):
    config = MATMUL_SPACE.config(index)
    assert MATMUL_SPACE.index(config) == index
    assert config in list(MATMUL.space(*MATMUL_SPACE.task.placeholders()))


@given(index=st.integers(0, len(ACCEL_SPACE) - 1), seed=st.integers(0, 100))
def test_a_neighbour_differs_in_exactly_one_knob(index, seed):
    other = ACCEL_SPACE.neighbour(index, random.Random(seed))
    a, b = ACCEL_SPACE.config(index), ACCEL_SPACE.config(other)
    assert sum(a[k] != b[k] for k in a) == 1


def test_the_space_enumerates_the_templates_knob_space_in_order():
    assert [MATMUL_SPACE.config(i) for i in MATMUL_SPACE] == list(MATMUL_SPACE.task.space())


def test_invalid_candidates_are_those_the_template_refuses():
    task = ACCEL_SPACE.task
    for index in range(0, len(ACCEL_SPACE), 11):
        try:
            task.template(
                *task.placeholders(), config=ACCEL_SPACE.config(index), **task.call_params()
            )
            accepted = True
        except CompileError:
            accepted = False
        assert ACCEL_SPACE.valid(index) == accepted
        assert (ACCEL_SPACE.features(index) is None) == (not accepted)


def test_features_have_one_length_and_tell_candidates_apart():
    vectors = [MATMUL_SPACE.features(i) for i in range(0, len(MATMUL_SPACE), 40)]
    valid = [i for i in range(0, len(ACCEL_SPACE), 5) if ACCEL_SPACE.valid(i)]
    vectors += [ACCEL_SPACE.features(i) for i in valid[:5]]
    assert all(v.shape == (FEATURE_COUNT,) and np.isfinite(v).all() for v in vectors)
    assert len({v.tobytes() for v in vectors}) == len(vectors)


def test_features_read_the_loop_kinds_and_extents():
    a, b = te.placeholder((64, 64), name="A"), te.placeholder((64, 64), name="B")
    base = {"tile_n": 32, "tile_m": 4, "unroll": False, "parallel": False}
    vectorized = features(schedule_to_ir(*_declared(a, b, base | {"vectorize": True})))
    scalar = features(schedule_to_ir(*_declared(a, b, base | {"vectorize": False})))
    # level 0 is the innermost loop around the heaviest store: the 32-wide j loop
    assert vectorized[0] == scalar[0] == pytest.approx(np.log2(33))
    assert vectorized[3] == 1.0 and scalar[3] == 0.0  # its kind: vectorized or not
    assert scalar[1] == 1.0  # serial


def _declared(a, b, config):
    schedule, out = MATMUL.declare(a, b, cfg=config)
    return schedule, [a, b, out]


def test_task_keys_name_the_target_and_the_shapes():
    cpu = matmul_task()
    assert cpu.key.startswith("matmul(float32[64,64], float32[64,64]) @ llvm -mcpu=")
    assert matmul_task(32).key != cpu.key
    accel = accel_conv_task()
    assert accel.key.endswith(f"accel -config={accel.cfg.fingerprint}")


def test_bad_tasks_raise_tune_errors():
    a = te.placeholder((4, 4), name="A")
    with pytest.raises(TuneError, match="cannot be recorded"):
        Task(MATMUL, (TensorSpec((4, 4), "float32", "A"),) * 2, (("weird", object()),))
    with pytest.raises(TuneError, match="not a task description"):
        Task.from_dict({"op": "no_such_op"})
    with pytest.raises(TuneError, match="outside"):
        MATMUL_SPACE.config(len(MATMUL_SPACE))
    with pytest.raises(TuneError, match="tile_n"):
        MATMUL_SPACE.index({"tile_n": 3})
    assert Task.of(MATMUL, a, a).inputs[0].shape == (4, 4)


def test_a_cpu_tasks_target_is_its_cpu_for_defaults_build_and_key():
    """``target=`` names the task's CPU (not an operator parameter): the key says it, the
    template's defaults follow its vector width, and a candidate built for it computes the
    reference's answer."""
    from compiler.tune import MeasureOptions, measure_candidate

    a, b = te.placeholder((64, 64), name="A"), te.placeholder((64, 64), name="B")
    sse = Task.of(MATMUL, a, b, target="llvm -mcpu=x86-64")  # SSE2: 4-float vectors
    avx2 = Task.of(MATMUL, a, b, target="llvm -mcpu=haswell")  # 8-float vectors
    assert sse.key.endswith("@ llvm -mcpu=x86-64") and not dict(sse.params)
    assert sse.space().default() != avx2.space().default()
    result = measure_candidate(sse, sse.space().default(), MeasureOptions(repeat=1))
    assert result.ok, result.message
    with pytest.raises(TuneError, match="target"):
        Task.of(MATMUL, a, b, target=object())

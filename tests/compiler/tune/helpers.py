"""Small tasks for the tuner's tests, and a template with deliberate faults.

:data:`FAULTY` computes ``2 * a`` (``2 * a + 1``, a wrong answer, when its knob ``fault`` is
``"wrong"``); :func:`sabotage`, a measurement ``prepare`` hook, makes the worker process exit
(``"exit"``), segfault (``"segv"``) or hang (``"hang"``) for the candidates whose ``fault``
says so. Both run only in the measurement worker's process.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from compiler import te
from compiler.accel import Env
from compiler.accel.templates import ConvLayer
from compiler.schedule import create_schedule
from compiler.te import Tensor
from compiler.templates import MATMUL
from compiler.templates.knobs import Config, Knob, KnobSpace, Template
from compiler.tune import Task, conv_layer_task
from isa import AccelConfig

FAULTS = ("exit", "segv", "hang", "wrong", "none")


def _faulty_space(a: Tensor) -> KnobSpace:
    return KnobSpace((Knob("fault", FAULTS), Knob("vectorize", (True, False))))


def _faulty_declare(a: Tensor, cfg: Config):
    extra = 1.0 if cfg["fault"] == "wrong" else 0.0
    out = te.compute(a.shape, lambda i: a[i] * 2.0 + extra, name="out")
    s = create_schedule(out)
    if cfg["vectorize"]:
        _, inner = s[out].split(out.op.axis[0], 8)
        s[out].vectorize(inner)
    return s, out


FAULTY = Template("faulty_scale", _faulty_space, _faulty_declare)


def double(a: np.ndarray) -> np.ndarray:
    return 2.0 * a


def faulty_task() -> Task:
    return Task.of(FAULTY, te.placeholder((64,), name="a"), reference=double)


def sabotage(config: Mapping[str, Any]) -> None:
    if config["fault"] == "exit":
        os._exit(3)
    if config["fault"] == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if config["fault"] == "hang":
        time.sleep(3600)


def matmul_task(n: int = 64) -> Task:
    return Task.of(MATMUL, te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B"))


#: A 24-candidate slice of the 64x64 matmul's space.
MATMUL_SLICE = {
    "tile_n": (32, 16, 8),
    "tile_m": (8, 4, 2, 1),
    "unroll": (True,),
    "parallel": (False,),
}


def accel_conv_task(size: int = 4, cout: int = 64, shift: int = 8) -> Task:
    """A 3x3 convolution of 16 channels on the default configuration."""
    layer = ConvLayer("t", size, 16, cout, 3, 1, 1, 0)
    return conv_layer_task(layer, Env(AccelConfig.preset("default")), shift=shift)


#: A slice of :func:`accel_conv_task`'s space with about two dozen valid candidates.
ACCEL_SLICE = {"tile_w": (4,), "weights_resident": (False,)}

"""How fast the functional simulator runs a ResNet-18 conv layer.

The workload is the conformance suite's ResNet-18 C2 layer (56x56, 64 -> 64 channels, 3x3,
pad 1, requantised), built with ProgramBuilder at the default configuration: a whole run,
program loading, race detection and all, in multiply-accumulates per second. The peer is numpy's
int32 matmul of the same size (M = 56*56, K = 64*9, N = 64), the floor for "compute this layer
in numpy"; the simulator also runs with race detection off.
"""

from __future__ import annotations

import numpy as np
from _harness import best_of, report

from isa import AccelConfig
from runtime.programs import RESNET18_C2
from simulator import FunctionalSimulator
from tests.conformance.conv_cases import build_conv2d


def main() -> None:
    cfg = AccelConfig()
    shape = RESNET18_C2
    built = build_conv2d(cfg, 0, shape)
    macs = shape.macs(cfg)

    def simulate(detect_races: bool) -> None:
        dram = built.dram.copy()
        FunctionalSimulator(cfg, detect_races=detect_races).run(built.program, dram)
        built.check(dram)

    rng = np.random.default_rng(0)
    m, k, n = shape.height * shape.width, shape.in_channels * 9, shape.out_channels
    a = rng.integers(-128, 128, size=(m, k), dtype=np.int32)
    w = rng.integers(-128, 128, size=(k, n), dtype=np.int32)
    assert (m * k * n) == macs // cfg.batch

    peer = best_of(lambda: a @ w, repeat=3, min_time=0.5)
    rows = []
    for what, seconds in [
        ("functional simulator, races on", best_of(lambda: simulate(True), 3, 0.5)),
        ("functional simulator, races off", best_of(lambda: simulate(False), 3, 0.5)),
        ("peer: numpy int32 matmul", peer),
    ]:
        rows.append([what, seconds, macs / seconds, seconds / peer])
    report(
        "functional_sim",
        ["run (ResNet-18 C2, default config)", "seconds", "MAC/s", "x numpy int32 matmul time"],
        rows,
        macs=macs,
        instructions=len(built.program.instructions),
    )


if __name__ == "__main__":
    main()

"""ResNet-18's conv layers compiled for the accelerator: cycles, GEMM utilisation and GOPS.

Every layer of VTA's benchmark table (C1..C12, vta-facts 7.1) is compiled with the conv2d
template's default knobs and run on the cycle-level simulator (calibrated to the RTL) at the
default configuration, under two memories: the RTL's ideal AXI RAM (``AXI_RAM_TIMING``, the
assumption of VTA's tsim) and a DDR-like one (``DDR_TIMING``: 20-cycle read latency and write
response, roughly a Zynq HP port at 100 MHz). Per layer it also measures one virtual thread
(no latency hiding), and the best of a small knob sweep (the default's neighbours and a seeded
sample of the valid space) under the ideal memory, and the compile time (default knobs).

Peers in the same run: the hand-built C2 kernel (``runtime.programs``; the compiled layer must
not be slower) and VTA's published 7,729,601 tsim cycles for the whole ResNet-18, against which
the layers are summed as they occur in the network (C2 x4, C6/C9/C12 x3, the others once; C3 is
not a layer of ResNet-18). Cycle counts do not depend on the host; compile times do (the CPU is
named in the output).

Run: ``python benchmarks/accel_layers.py [--sweep N]``.
"""

from __future__ import annotations

import argparse
import random
import time

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
from _harness import cpu_name, report

from compiler.accel import Env
from compiler.accel.templates import RESNET18_LAYERS, VTA_RESNET18_CYCLES, ConvLayer
from compiler.workloads import compile_conv_layer, conv_layer_space
from isa import AccelConfig, TimingConfig
from runtime import open_device
from runtime.devices import AXI_RAM_TIMING
from runtime.programs import RESNET18_C2, conv2d_program

DDR_TIMING = TimingConfig(read_latency=20, write_response_latency=20)


COLUMNS = [
    "layer",
    "knobs",
    "GEMM steps",
    "ideal cycles",
    "util",
    "GOPS",
    "1 thread",
    "util 1t",
    "best of sweep",
    "util best",
    "DDR cycles",
    "util DDR",
    "compile s",
]


class Bench:
    """Compiles and times layers on one ideal and one DDR-like device."""

    def __init__(self, cfg: AccelConfig) -> None:
        self.env = Env(cfg)
        self.ideal = open_device("sim", cfg, timing=AXI_RAM_TIMING, detect_races=False)
        self.ddr = open_device("sim", cfg, timing=DDR_TIMING, detect_races=False)

    def space(self, layer: ConvLayer):
        return conv_layer_space(layer, self.env)

    def compile(self, layer: ConvLayer, config: dict | None):
        return compile_conv_layer(layer, self.env, config)

    def cycles(self, function, device) -> int:
        arrays = [np.zeros(a.shape, a.dtype) for a in function.arguments]
        return function(*arrays, device=device).cycles


def gemm_steps(env: Env, layer: ConvLayer) -> int:
    ci = -(-layer.cin // env.BLOCK_IN)
    co = layer.cout // env.BLOCK_OUT
    return layer.out_size**2 * ci * co * layer.kernel**2


def sweep(bench: Bench, layer: ConvLayer, default: dict, count: int, seed: int) -> int:
    """The fewest ideal-memory cycles among the default's neighbours and ``count`` seeded
    valid samples of the space."""
    space = list(bench.space(layer))
    rng = random.Random(seed)
    candidates = [c for c in space if sum(c[k] != default[k] for k in c) == 1]
    candidates += rng.sample(space, min(len(space), 4 * count))
    best, tried = None, 0
    for config in candidates:
        if tried >= count + 8:
            break
        try:
            function = bench.compile(layer, config)
        except Exception:
            continue
        tried += 1
        cycles = bench.cycles(function, bench.ideal)
        best = cycles if best is None else min(best, cycles)
    return best


def one_thread(config: dict) -> dict:
    return config | {"h_threads": 1, "oc_threads": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", type=int, default=8, help="sampled configurations per layer")
    args = parser.parse_args()
    cfg = AccelConfig.preset("default")
    bench = Bench(cfg)
    env = bench.env
    rows, totals = [], {"ideal": 0, "one": 0, "best": 0, "ddr": 0, "steps": 0, "network": 0}
    network_steps = 0
    utils = {"one": [], "two": []}
    for layer in RESNET18_LAYERS:
        default = bench.space(layer).default()
        started = time.perf_counter()
        function = bench.compile(layer, default)
        seconds = time.perf_counter() - started
        ideal = bench.cycles(function, bench.ideal)
        ddr = bench.cycles(function, bench.ddr)
        single = bench.cycles(bench.compile(layer, one_thread(default)), bench.ideal)
        best = min(ideal, sweep(bench, layer, default, args.sweep, seed=len(rows)))
        steps = gemm_steps(env, layer)
        gops = 2 * steps * cfg.block_in * cfg.block_out * cfg.batch / ideal * cfg.clock_mhz / 1e3
        knobs = "{}x{}x{} ci{} t{}{}".format(
            default["tile_co"],
            default["tile_h"],
            default["tile_w"],
            default["tile_ci"],
            default["h_threads"] * default["oc_threads"],
            " wr" if default["weights_resident"] else "",
        )
        rows.append(
            [
                layer.name,
                knobs,
                steps,
                ideal,
                steps / ideal,
                gops,
                single,
                steps / single,
                best,
                steps / best,
                ddr,
                steps / ddr,
                seconds,
            ]
        )
        if layer.name != "C1":
            totals["ideal"] += ideal
            totals["one"] += single
            totals["best"] += best
            totals["ddr"] += ddr
            totals["steps"] += steps
            utils["one"].append(steps / single)
            utils["two"].append(steps / ideal)
        totals["network"] += layer.in_resnet18 * (ideal if layer.name != "C1" else 0)
        network_steps += layer.in_resnet18 * (steps if layer.name != "C1" else 0)
    s = totals["steps"]
    rows.append(
        [
            "C2..C12",
            "",
            s,
            totals["ideal"],
            s / totals["ideal"],
            "",
            totals["one"],
            s / totals["one"],
            totals["best"],
            s / totals["best"],
            totals["ddr"],
            s / totals["ddr"],
            "",
        ]
    )
    rows.append(
        [
            "ResNet-18",
            "as in the network",
            network_steps,
            totals["network"],
            network_steps / totals["network"],
            "",
            "",
            "",
            "",
            "",
            "",
            "",
            "",
        ]
    )
    peer = conv2d_program(cfg, RESNET18_C2)
    dram = np.zeros(peer.program.dram_extent, dtype=np.uint8)
    hand = bench.ideal.run(peer.program, dram).cycles
    hand_ddr = bench.ddr.run(peer.program, dram.copy()).cycles
    c2 = rows[1]
    rows.append(
        [
            "C2 hand-built",
            "2x56 rows, t2",
            c2[2],
            hand,
            c2[2] / hand,
            "",
            "",
            "",
            "",
            "",
            hand_ddr,
            c2[2] / hand_ddr,
            "",
        ]
    )
    mean_one = sum(utils["one"]) / len(utils["one"])
    mean_two = sum(utils["two"]) / len(utils["two"])
    report(
        "accel_layers",
        COLUMNS,
        rows,
        cpu=cpu_name(),
        config=cfg.fingerprint,
        ddr_timing=str(DDR_TIMING),
        vta_tsim_resnet18=VTA_RESNET18_CYCLES,
    )
    print(f"CPU (compile times): {cpu_name()}")
    print(
        f"latency hiding, mean GEMM utilisation of C2..C12: 1 thread {mean_one:.1%} -> "
        f"default (2 threads where they fit) {mean_two:.1%}"
    )
    print(
        f"ResNet-18 as in the network (C2..C12): {totals['network']:,} cycles vs VTA tsim "
        f"{VTA_RESNET18_CYCLES:,} ({totals['network'] / VTA_RESNET18_CYCLES:.3f}x); GEMM work "
        f"{network_steps:,}"
    )
    print(f"C2 compiled {c2[3]:,} vs hand-built {hand:,} cycles ({c2[3] / hand:.3f}x)")


if __name__ == "__main__":
    main()

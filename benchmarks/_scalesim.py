"""SCALE-Sim, the Python peer of the cycle-level simulator, on one conv layer.

``peer(layer, cap_seconds)`` runs SCALE-Sim (``pip install scalesim``, the ``bench`` extra) in a
child process, so that a wall-time cap can stop it, and returns what it simulated and how long
that took; run as a script, this file is that child (it prints one JSON line).

SCALE-Sim models a systolic array, not VTA's GEMM core, so the two simulate different machines:
the comparison is of speed. Its configuration is as close to the default VTA configuration as
its parameters allow:

- a 16 x 16 array (VTA: BLOCK_IN x BLOCK_OUT = 16 x 16 multiply-accumulates per cycle);
- SRAMs of 32 KiB for the input feature map (VTA's INP buffer), 256 KiB for the filters (WGT)
  and 32 KiB for the output feature map (OUT; VTA's 128 KiB accumulator has no counterpart:
  SCALE-Sim accumulates inside the array);
- output-stationary dataflow: VTA keeps each output's partial sums in place (the accumulator)
  while inputs and weights stream past; SCALE-Sim's choices are output, weight or input
  stationary;
- 1-byte words and 8 words per cycle from DRAM (``USER`` bandwidth, one bank): VTA's 64-bit bus;
- no padding parameter: the layer's input is given already padded (58 x 58 for ResNet-18's C2).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["ConvLayer", "PeerRun", "peer"]


@dataclass(frozen=True)
class ConvLayer:
    """A convolution as SCALE-Sim's topology gives it (input already padded, stride 1)."""

    name: str
    ifmap_height: int
    ifmap_width: int
    channels: int
    filters: int
    kernel: int


@dataclass(frozen=True)
class PeerRun:
    """SCALE-Sim's simulated cycles of ``layer`` (its total, stalls included) and the wall
    seconds of its simulation (configuration and imports excluded)."""

    layer: ConvLayer
    cycles: int
    compute_cycles: int
    stall_cycles: int
    seconds: float
    version: str

    @property
    def cycles_per_second(self) -> float:
        return self.cycles / self.seconds


def peer(layer: ConvLayer, cap_seconds: float, python: str = sys.executable) -> PeerRun | None:
    """SCALE-Sim on ``layer`` in a child process of ``python`` (an interpreter that has
    SCALE-Sim); None if it ran past ``cap_seconds``.

    Raises RuntimeError with SCALE-Sim's error output if it fails.
    """
    command = [python, str(Path(__file__).resolve()), json.dumps(asdict(layer))]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=cap_seconds)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode:
        raise RuntimeError(f"SCALE-Sim failed on {layer.name}:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return PeerRun(layer=layer, **result)


def _simulate(layer: ConvLayer) -> dict[str, object]:
    """Run SCALE-Sim on ``layer`` in this process (the child's side of :func:`peer`)."""
    from importlib.metadata import version

    from scalesim.layout_utils import layouts
    from scalesim.scale_config import scale_config
    from scalesim.single_layer_sim import single_layer_sim
    from scalesim.topology_utils import topologies

    config = scale_config()
    config.array_rows = config.array_cols = 16
    config.ifmap_sz_kb, config.filter_sz_kb, config.ofmap_sz_kb = 32, 256, 32
    config.df = "os"
    config.use_user_bandwidth = True
    config.bandwidths = [8]
    config.ifmap_sram_bank_num = config.filter_sram_bank_num = 1
    config.ifmap_sram_bank_bandwidth = config.filter_sram_bank_bandwidth = 8
    config.using_ifmap_custom_layout = config.using_filter_custom_layout = False
    config.valid_conf_flag = True
    topology = topologies()
    k = layer.kernel
    row = [layer.name, layer.ifmap_height, layer.ifmap_width, k, k, layer.channels]
    topology.load_layer_params_from_list(layer.name, [*row, layer.filters, 1, 1, 1, 1])
    sim = single_layer_sim()
    sim.set_params(
        layer_id=0, config_obj=config, topology_obj=topology, layout_obj=layouts(), verbose=False
    )
    started = time.perf_counter()
    sim.run()
    seconds = time.perf_counter() - started
    cycles, compute_cycles, stall_cycles = sim.get_compute_report_items()[:3]
    return {
        "cycles": int(cycles),
        "compute_cycles": int(compute_cycles),
        "stall_cycles": int(stall_cycles),
        "seconds": seconds,
        "version": version("scalesim"),
    }


if __name__ == "__main__":
    print(json.dumps(_simulate(ConvLayer(**json.loads(sys.argv[1])))))

"""FPGA resources of the accelerator: yosys ``synth_xilinx`` estimates of the tiny and default
configurations on the PYNQ part (xc7z020), beside the part's capacity, and synthesis time.

Run: ``python benchmarks/hw_estimate.py [PRESET ...]`` (default: tiny default; the default
configuration takes several minutes).
"""

from __future__ import annotations

import sys

import _harness  # noqa: F401  (puts the repository on sys.path)
from _harness import report

from hw.resources import estimate
from isa import AccelConfig

PART = "xc7z020"


def main(presets: list[str]) -> None:
    rows = []
    for preset in presets:
        cfg = AccelConfig.preset(preset)
        result = estimate(cfg, PART)
        for name, used, available, percent in result.rows():
            rows.append([preset, name, used, available, round(percent, 1)])
        rows.append([preset, "synthesis s", round(result.seconds), "-", "-"])
    report("hw_estimate", ["config", "resource", "used", PART, "%"], rows, part=PART)


if __name__ == "__main__":
    main(sys.argv[1:] or ["tiny", "default"])

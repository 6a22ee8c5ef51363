"""The emulated PYNQ board's programmable logic as a process of its own: ``python -m
runtime.devices.pynq_emulation_logic BUILD_DIR FOLDER PLUSARG...`` runs the board's testbench
(:mod:`runtime.devices.pynq_emulation_bench`) on the Verilated model in ``BUILD_DIR`` until the
host closes its connection.

:class:`runtime.devices.pynq_emulation.EmulatedBoard` starts it with the Python that built the
emulated bitstream (the ``.bit`` names it: that Python has Verilator and cocotb), so the
board's software side can run on another Python, without them: the board runtime of a deploy
bundle on the PYNQ images' Python (:mod:`fpga.package`). A failure is one line on stderr and
exit status 1.
"""

from __future__ import annotations

import sys
from pathlib import Path

from runtime.devices.base import DeviceError
from runtime.devices.rtl_build import run_testbench

__all__ = ["BENCH", "main"]

#: The testbench module the logic runs.
BENCH = "runtime.devices.pynq_emulation_bench"


def main(argv: list[str] | None = None) -> int:
    """Run the testbench with ``argv`` = build folder, working folder, plusargs."""
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) < 2:
        print("usage: python -m runtime.devices.pynq_emulation_logic BUILD_DIR FOLDER "
              "[PLUSARG...]", file=sys.stderr)  # fmt: skip
        return 2
    build_dir, folder, *plusargs = arguments
    try:
        run_testbench(Path(build_dir), BENCH, Path(folder), plusargs)
    except DeviceError as err:
        print(err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

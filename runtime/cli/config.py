"""``vtaforge config show``: a configuration's parameters and derived values, or its JSON."""

from __future__ import annotations

import argparse

from isa import AccelConfig
from runtime.cli.command import Command

__all__ = ["CONFIG"]


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    show = sub.add_parser("show", help="print a configuration's parameters and derived values")
    show.add_argument("spec", nargs="?", default="default", metavar="PRESET|FILE")
    show.add_argument("--json", action="store_true", help="print our JSON format instead")


def _run(args: argparse.Namespace) -> int:
    cfg = AccelConfig.resolve(args.spec)
    if args.json:
        print(cfg.to_json(), end="")
        return 0
    print(f"configuration {cfg.fingerprint}")
    print("primary parameters:")
    for key, value in cfg.to_dict().items():
        print(f"  {key:<18} {value}")
    derived = {
        "out_width": cfg.out_width,
        "inp_elem_bytes": cfg.inp_elem_bytes,
        "wgt_elem_bytes": cfg.wgt_elem_bytes,
        "acc_elem_bytes": cfg.acc_elem_bytes,
        "out_elem_bytes": cfg.out_elem_bytes,
        "uop_buff_depth": cfg.uop_buff_depth,
        "inp_buff_depth": cfg.inp_buff_depth,
        "wgt_buff_depth": cfg.wgt_buff_depth,
        "acc_buff_depth": cfg.acc_buff_depth,
        "out_buff_size": cfg.out_buff_size,
        "index bits uop/inp/wgt/acc": (
            f"{cfg.log_uop_buff_depth}/{cfg.log_inp_buff_depth}/"
            f"{cfg.log_wgt_buff_depth}/{cfg.log_acc_buff_depth}"
        ),
        "bus_bytes": cfg.bus_bytes,
        "macs_per_cycle": cfg.macs_per_cycle,
        "peak_gops": f"{cfg.peak_gops:g}",
    }
    print("derived values:")
    for key, value in derived.items():
        print(f"  {key:<26} {value}")
    return 0


CONFIG = Command("config", "show configurations", _configure, _run)

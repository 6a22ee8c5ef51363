"""The fast resource model (:mod:`hw.cost`) against yosys: fit, held-out error and speed.

Synthesizes a set of fitting configurations and a set of held-out ones with
:func:`hw.resources.estimate` (``synth_xilinx`` for the xc7z020; a minute or more each), caching
each estimate as ``build/estimates/<fingerprint>.json`` so reruns are instant; fits the LUT and FF
coefficients of :mod:`hw.cost` to the fitting set by least squares and writes them to
``hw/cost_fit.json``, with the yosys counts of both sets in ``hw/cost_data.json`` (what
``tests/hw/test_cost.py`` checks the model against, without yosys); then prints per resource the
model's mean and largest relative error on the held-out set, and how many configurations per
second the model evaluates.

Run: ``python benchmarks/resource_model.py`` (``--collect-only`` synthesizes what is missing
and stops; ``--jobs N`` runs N syntheses at a time; ``--skip-missing`` fits with what is cached).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import _harness  # noqa: F401  (puts the repository on sys.path)
import numpy as np
from _harness import ROOT, cpu_name, report

from isa import AccelConfig

PART = "xc7z020"
CACHE = ROOT / "build" / "estimates"
#: The reported resources and their ResourceCounts / record fields.
RESOURCES = {"LUT": "lut", "FF": "ff", "DSP": "dsp", "BRAM36": "bram36"}

#: Configurations the LUT/FF coefficients are fitted to: ``tiny`` varied one or two parameters
#: at a time (small GEMM shapes and buffers synthesize in a minute or two), and the default.
FIT: tuple[tuple[str, dict[str, int | bool]], ...] = (
    ("tiny", {}),
    ("tiny", {"block_out": 8}),
    ("tiny", {"block_in": 8}),
    ("tiny", {"batch": 2}),
    ("tiny", {"axi_width": 128}),
    ("tiny", {"axi_width": 32}),
    ("tiny", {"cmd_queue_depth": 64}),
    ("tiny", {"cmd_queue_depth": 512}),
    (
        "tiny",
        {
            "uop_buff_size": 8192,
            "inp_buff_size": 4096,
            "wgt_buff_size": 16384,
            "acc_buff_size": 16384,
        },
    ),
    ("tiny", {"block_in": 8, "block_out": 8}),
    ("tiny", {"acc_width": 64}),
    ("tiny", {"block_in": 16}),
    ("tiny", {"batch": 2, "block_out": 8, "axi_width": 128}),
    ("tiny", {"gemm_dsp_packing": False}),
    ("default", {}),
)
#: Configurations the fit never sees: its error is measured on these.
HELD_OUT: tuple[tuple[str, dict[str, int | bool]], ...] = (
    ("tiny", {"block_in": 8, "axi_width": 128}),
    ("tiny", {"batch": 2, "block_in": 8}),
    (
        "tiny",
        {
            "block_in": 8,
            "block_out": 8,
            "inp_buff_size": 2048,
            "wgt_buff_size": 8192,
            "acc_buff_size": 8192,
            "cmd_queue_depth": 32,
        },
    ),
    ("tiny", {"axi_width": 256}),
    ("tiny", {"block_out": 16}),
    ("tiny", {"block_out": 8, "acc_width": 64}),
    ("tiny", {"batch": 4, "cmd_queue_depth": 128}),
    ("tiny", {"alu_mul": False}),
    ("tiny", {"block_out": 8, "gemm_dsp_packing": False}),
)


def configs(specs: Iterable[tuple[str, dict[str, int | bool]]]) -> list[AccelConfig]:
    """The configurations of ``(preset, changes)`` specs."""
    return [AccelConfig.preset(preset).replace(**changes) for preset, changes in specs]


def cached_estimate(cfg: AccelConfig, *, synthesize: bool = True) -> dict[str, Any] | None:
    """The yosys counts of ``cfg`` as a record (``config``, ``fingerprint``, ``lut``,
    ``lut_memory``, ``ff``, ``dsp``, ``bram36``, ``seconds``, ``tool``), cached in
    ``build/estimates``; None when not cached and not ``synthesize``."""
    from hw.resources import estimate_cached

    if not synthesize and not (CACHE / f"{cfg.fingerprint}.json").exists():
        return None
    started = time.perf_counter()
    result = estimate_cached(cfg, CACHE, PART)
    if time.perf_counter() - started > 10:
        print(f"  synthesized {cfg.fingerprint} in {result.seconds:.0f} s", flush=True)
    return {"config": cfg.to_dict(), "fingerprint": cfg.fingerprint, **result.to_dict()}


def collect(cfgs: list[AccelConfig], jobs: int) -> None:
    """Synthesize every configuration of ``cfgs`` not cached yet, ``jobs`` at a time, the
    smallest first (a minute or two each; the default several)."""
    missing = [c for c in cfgs if cached_estimate(c, synthesize=False) is None]
    missing.sort(key=lambda c: (c.macs_per_cycle, c.wgt_buff_size + c.acc_buff_size))
    print(f"{len(cfgs) - len(missing)} estimates cached, {len(missing)} to synthesize", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for _ in pool.map(cached_estimate, missing):
            pass


def nnls(a: np.ndarray, b: np.ndarray, iterations: int = 500) -> np.ndarray:
    """The non-negative least-squares solution of ``a @ x = b`` (Lawson and Hanson's active
    set method): every structural feature adds resources, none subtracts."""
    cols = a.shape[1]
    x = np.zeros(cols)
    passive = np.zeros(cols, dtype=bool)
    for _ in range(iterations):
        gradient = a.T @ (b - a @ x)
        candidates = ~passive & (gradient > 1e-10 * max(1.0, np.abs(gradient).max()))
        if not candidates.any():
            break
        passive[np.argmax(np.where(candidates, gradient, -np.inf))] = True
        while True:
            z = np.zeros(cols)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            blocking = passive & (z <= 0)
            alpha = np.min(x[blocking] / (x[blocking] - z[blocking]))
            x = x + alpha * (z - x)
            passive &= x > 1e-12
            x[~passive] = 0.0
    return x


def fit(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The LUT and FF coefficients of :mod:`hw.cost`'s features, by non-negative least squares
    on the relative error (each configuration's row scaled by its count, so small and large
    designs weigh alike), net of what the model counts from the memory mapping."""
    from hw.cost import counted_resources, features

    names = list(features(AccelConfig()))
    coefficients = {}
    for resource in ("lut", "ff"):
        a, b = [], []
        for record in records:
            cfg = AccelConfig.from_dict(record["config"])
            values = features(cfg)
            target = record[resource] - counted_resources(cfg)[resource]
            scale = 1.0 / record[resource]
            a.append([values[n] * scale for n in names])
            b.append(target * scale)
        a_matrix = np.array(a)
        norms = np.linalg.norm(a_matrix, axis=0)
        norms[norms == 0] = 1.0  # a feature no fitting configuration has: coefficient 0
        solution = nnls(a_matrix / norms, np.array(b)) / norms
        coefficients[resource] = {
            name: float(value) for name, value in zip(names, solution, strict=True) if value
        }
    return coefficients


def errors(records: list[dict[str, Any]], fit_path: Path) -> dict[str, list[float]]:
    """Per resource, the model's relative error on each record."""
    from hw.cost import resource_model

    out: dict[str, list[float]] = {name: [] for name in RESOURCES}
    for record in records:
        model = resource_model(AccelConfig.from_dict(record["config"]), PART, fit=fit_path)
        for name, field in RESOURCES.items():
            out[name].append(abs(getattr(model, field) - record[field]) / record[field])
    return out


def model_speed() -> tuple[int, float]:
    """How many distinct valid configurations a grid holds, and how many per second the model
    prices (memory mappings memoised within the pass, as in a sweep)."""
    from hw.cost import map_memory, resource_model
    from runtime.sweep import grid

    space = grid(
        batch=[1, 2, 4],
        block_in=[4, 8, 16, 32],
        block_out=[4, 8, 16, 32],
        axi_width=[32, 64, 128, 256],
        cmd_queue_depth=[16, 64, 512],
        wgt_buff_size=[65536, 262144],
        acc_buff_size=[32768, 131072],
    )
    map_memory.cache_clear()
    started = time.perf_counter()
    for cfg in space:
        resource_model(cfg, PART)
    return len(space), len(space) / (time.perf_counter() - started)


def _percent(values: list[float]) -> tuple[float, float]:
    """The mean and largest of relative errors, in percent (NaN for none)."""
    if not values:
        return math.nan, math.nan
    return 100 * float(np.mean(values)), 100 * float(np.max(values))


def _record_row(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("config", "fingerprint", "lut", "lut_memory", "ff", "dsp", "bram36", "tool")
    return {key: record[key] for key in keys}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collect-only", action="store_true", help="synthesize, then stop")
    parser.add_argument("--jobs", type=int, default=1, help="syntheses at a time (default 1)")
    parser.add_argument(
        "--skip-missing", action="store_true", help="fit with the cached estimates only"
    )
    args = parser.parse_args(argv)
    fit_cfgs, held_cfgs = configs(FIT), configs(HELD_OUT)
    if not args.skip_missing:
        collect(fit_cfgs + held_cfgs, args.jobs)
    if args.collect_only:
        return
    from hw.cost import DATA_PATH, FIT_PATH

    fit_records = [r for c in fit_cfgs if (r := cached_estimate(c, synthesize=False))]
    held_records = [r for c in held_cfgs if (r := cached_estimate(c, synthesize=False))]
    tools = {r["tool"] for r in fit_records + held_records}
    if len(tools) > 1:
        raise SystemExit(f"the estimates come from several yosys versions: {sorted(tools)}")
    (tool,) = tools
    coefficients = fit(fit_records)
    FIT_PATH.write_text(
        json.dumps(
            {
                "tool": tool,
                "part": PART,
                "method": "non-negative least squares on relative errors "
                "(benchmarks/resource_model.py), net of hw.cost.counted_resources",
                "fitted_on": [r["fingerprint"] for r in fit_records],
                "coefficients": coefficients,
            },
            indent=2,
        )
        + "\n"
    )
    DATA_PATH.write_text(
        json.dumps(
            {
                "tool": tool,
                "part": PART,
                "fit": [_record_row(r) for r in fit_records],
                "held_out": [_record_row(r) for r in held_records],
            },
            indent=1,
        )
        + "\n"
    )
    held, fitted = errors(held_records, FIT_PATH), errors(fit_records, FIT_PATH)
    count, speed = model_speed()
    rows = [[name, *_percent(held[name]), *_percent(fitted[name])] for name in RESOURCES]
    print(f"coefficients: {json.dumps(coefficients)}")
    for record, *errs in zip(held_records, *(held[n] for n in RESOURCES), strict=True):
        cells = ", ".join(f"{n} {100 * e:.1f}%" for n, e in zip(RESOURCES, errs, strict=True))
        print(f"held out {record['fingerprint']}: {cells}")
    report(
        "resource_model",
        [
            "resource",
            f"held-out mean % ({len(held_records)})",
            "held-out max %",
            f"fit mean % ({len(fit_records)})",
            "fit max %",
        ],
        rows,
        cpu=cpu_name(),
        tool=tool,
        part=PART,
        configs_per_second=speed,
        fitted_on=[r["fingerprint"] for r in fit_records],
        held_out=[r["fingerprint"] for r in held_records],
        coefficients=coefficients,
    )
    print(f"model speed: {speed:,.0f} configurations per second ({count} configurations)")


if __name__ == "__main__":
    main()

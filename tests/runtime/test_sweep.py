"""``runtime.sweep``: the table of a sweep, its cache, its error rows, its worker processes, the
yosys columns, and ``grid``. The workloads here are hand-built programs (``runtime.programs``), so
the tests need no compiler (``tests/compiler/test_workloads.py`` sweeps compiled ones)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hw.cost import resource_model
from isa import AccelConfig, ConfigError, Program
from runtime import open_device
from runtime.programs import ConvShape, conv2d_program
from runtime.sweep import MEASURES, PARAMETERS, SweepError, grid, measure, sweep

TINY = AccelConfig.preset("tiny")
TINY_BUS128 = TINY.replace(axi_width=128)
SMALL = ConvShape(height=4, width=4, in_channels=8, out_channels=12, tile_h=2)
OTHER = ConvShape(height=6, width=4, in_channels=4, out_channels=16, tile_h=3, threads=1)


@dataclass(frozen=True)
class HandConv:
    """A hand-built conv2d program; ``log`` (a file) gets a line per build."""

    key: str
    shape: ConvShape
    log: Path | None = None

    def build(self, cfg: AccelConfig) -> Program:
        if self.log is not None:
            with self.log.open("a") as log:
                log.write(f"{cfg.fingerprint}\n")
        return conv2d_program(cfg, self.shape).program


@dataclass(frozen=True)
class Broken:
    """A workload with a bug: its build raises something other than a VtaforgeError."""

    key: str
    log: Path

    def build(self, cfg: AccelConfig) -> Program:
        with self.log.open("a") as log:
            log.write("built\n")
        raise RuntimeError("a bug")


def _direct_cycles(cfg: AccelConfig, shape: ConvShape) -> int:
    program = conv2d_program(cfg, shape).program
    device = open_device("sim", cfg)
    device.run(program, np.zeros(program.dram_extent, np.uint8))
    return device.last_stats.cycles


def _builds(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_2x2_sweep_has_one_row_per_pair_with_the_direct_cycles(tmp_path):
    workloads = [HandConv("small", SMALL), HandConv("other", OTHER)]
    table = sweep([TINY, TINY_BUS128], workloads, cache=tmp_path, processes=1, progress=False)
    assert list(table["fingerprint"]) == [TINY.fingerprint] * 2 + [TINY_BUS128.fingerprint] * 2
    assert list(table["workload"]) == ["small", "other"] * 2
    for name in ("fingerprint", *PARAMETERS, "workload", *MEASURES, "lut", "dsp", "fits"):
        assert name in table.columns
    assert table["error"].isna().all()
    for _, row in table.iterrows():
        cfg = TINY if row["fingerprint"] == TINY.fingerprint else TINY_BUS128
        shape = SMALL if row["workload"] == "small" else OTHER
        assert row["cycles"] == _direct_cycles(cfg, shape)
        assert row["ms"] == pytest.approx(row["cycles"] / (cfg.clock_mhz * 1e3))
        assert 0 < row["gemm_utilisation"] <= 1
        assert row["gops"] > 0 and row["dram_bytes"] > 0
        assert row["axi_width"] == cfg.axi_width and row["alu_mul"]
        model = resource_model(cfg)
        assert (row["lut"], row["dsp"], row["bram36"]) == (model.lut, model.dsp, model.bram36)
        # a 128-bit master does not fit the PS7's 64-bit DRAM ports, whatever its resources
        assert row["master_fits"] == (cfg.axi_width <= 64)
        assert row["fits"] == (model.fits and cfg.axi_width <= 64)
    assert table[table["fingerprint"] == TINY_BUS128.fingerprint]["fits"].eq(False).all()


def test_a_second_sweep_reads_the_cache_and_builds_nothing(tmp_path):
    log = tmp_path / "builds.txt"
    workloads = [HandConv("small", SMALL, log)]
    first = sweep([TINY, TINY_BUS128], workloads, cache=tmp_path / "c", processes=1, progress=False)
    assert _builds(log) == 2
    second = sweep(
        [TINY, TINY_BUS128], workloads, cache=tmp_path / "c", processes=1, progress=False
    )
    assert _builds(log) == 2
    assert second.equals(first)
    # No cache: built again.
    sweep([TINY], workloads, cache=None, processes=1, progress=False)
    assert _builds(log) == 3


def test_an_unbuildable_pair_is_an_error_row_and_the_others_survive(tmp_path):
    wide = TINY.replace(block_out=8)  # 12 output channels are not whole blocks of 8
    table = sweep(
        [TINY, wide], [HandConv("small", SMALL)], cache=tmp_path, processes=1, progress=False
    )
    good, bad = table.iloc[0], table.iloc[1]
    assert pd.isna(good["error"]) and good["cycles"] == _direct_cycles(TINY, SMALL)
    assert "whole blocks" in bad["error"]
    assert all(math.isnan(bad[name]) for name in ("cycles", "gops", "ms", "dram_bytes"))
    assert bad["dsp"] == resource_model(wide).dsp  # the configuration is still priced
    # The compile error is cached like a measurement.
    again = sweep([wide], [HandConv("small", SMALL)], cache=tmp_path, processes=1, progress=False)
    assert again.iloc[0]["error"] == bad["error"]


def test_an_unexpected_exception_is_named_in_its_row_and_not_cached(tmp_path):
    log = tmp_path / "builds.txt"
    for _ in range(2):
        table = sweep([TINY], [Broken("bug", log)], cache=tmp_path, processes=1, progress=False)
        assert table.iloc[0]["error"] == "RuntimeError: a bug"
    assert _builds(log) == 2


def test_worker_processes_give_the_same_table(tmp_path):
    workloads = [HandConv("small", SMALL), HandConv("other", OTHER)]
    inline = sweep([TINY, TINY_BUS128], workloads, cache=None, processes=1, progress=False)
    pooled = sweep([TINY, TINY_BUS128], workloads, cache=None, processes=2, progress=False)
    columns = [c for c in inline.columns if c != "host_s"]
    assert pooled[columns].equals(inline[columns])


def test_a_dask_client_gives_the_same_table():
    import distributed  # the notebooks extra installs it

    workloads = [HandConv("small", SMALL), HandConv("other", OTHER)]
    inline = sweep([TINY, TINY_BUS128], workloads, cache=None, processes=1, progress=False)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2) as client:
        remote = sweep([TINY, TINY_BUS128], workloads, cache=None, client=client, progress=False)
    columns = [c for c in inline.columns if c != "host_s"]
    assert remote[columns].equals(inline[columns])


def test_a_progress_bar_does_not_change_the_table(tmp_path, capsys):
    table = sweep([TINY], [HandConv("small", SMALL)], cache=None, processes=1, progress=True)
    assert table.iloc[0]["cycles"] == _direct_cycles(TINY, SMALL)
    assert "sweep" in capsys.readouterr().err


def test_yosys_columns_come_from_the_cached_estimate(tmp_path, monkeypatch):
    import hw.resources
    from hw.parts import part

    calls = []

    def fake(cfg, part_name="xc7z020", *, timeout=3600.0, yosys="yowasp"):
        calls.append(cfg.fingerprint)
        return hw.resources.ResourceEstimate(part(part_name), 5000, 300, 2000, 24, 6.0, 1.0, "y")

    monkeypatch.setattr(hw.resources, "estimate", fake)
    for _ in range(2):
        table = sweep(
            [TINY],
            [HandConv("small", SMALL)],
            cache=tmp_path,
            processes=1,
            progress=False,
            yosys=True,
        )
    row = table.iloc[0]
    assert (row["yosys_lut"], row["yosys_ff"], row["yosys_dsp"], row["yosys_bram36"]) == (
        5000,
        2000,
        24,
        6.0,
    )
    assert row["yosys_fits"] and pd.isna(row["yosys_error"])
    assert calls == [TINY.fingerprint]  # the second sweep read tmp_path/estimates
    assert (tmp_path / "estimates" / f"{TINY.fingerprint}.json").exists()


def test_an_estimate_cached_for_other_rtl_is_synthesized_again(tmp_path, monkeypatch):
    """The cache names the design it was made from: after a change to ``hw/`` (here, a file
    from another checkout) the configuration's estimate is made again, then cached anew."""
    import hw.resources
    from hw.parts import part

    calls = []

    def fake(cfg, part_name="xc7z020", *, timeout=3600.0, yosys="yowasp"):
        calls.append(cfg.fingerprint)
        return hw.resources.ResourceEstimate(part(part_name), 5000, 300, 2000, 24, 6.0, 1.0, "y")

    monkeypatch.setattr(hw.resources, "estimate", fake)
    hw.resources.estimate_cached(TINY, tmp_path)
    path = tmp_path / f"{TINY.fingerprint}.json"
    record = json.loads(path.read_text())
    assert record["design"] == hw.resources.design_digest()
    hw.resources.estimate_cached(TINY, tmp_path)
    assert calls == [TINY.fingerprint]  # the same design: read back
    path.write_text(json.dumps({**record, "design": "an earlier design"}))
    hw.resources.estimate_cached(TINY, tmp_path)
    assert calls == [TINY.fingerprint] * 2
    assert json.loads(path.read_text())["design"] == hw.resources.design_digest()


def test_measure_reports_a_model_free_program_like_the_sweep():
    result = measure(TINY, HandConv("small", SMALL))
    assert result["error"] is None and result["cycles"] == _direct_cycles(TINY, SMALL)


def test_sweep_rejects_what_is_not_a_workload_and_duplicate_keys():
    with pytest.raises(SweepError, match="not a workload"):
        sweep([TINY], [object()], cache=None, progress=False)
    with pytest.raises(SweepError, match="two workloads have the key 'a'"):
        sweep([TINY], [HandConv("a", SMALL), HandConv("a", OTHER)], cache=None, progress=False)
    with pytest.raises(SweepError, match="AccelConfig"):
        sweep(["tiny"], [HandConv("a", SMALL)], cache=None, progress=False)
    with pytest.raises(SweepError, match="at least one configuration and one workload"):
        sweep([], [HandConv("a", SMALL)], cache=None, progress=False)


def test_importing_the_sweep_needs_neither_pandas_nor_amaranth():
    code = (
        "import sys, runtime.sweep; "
        "assert not {'pandas', 'amaranth', 'compiler'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


def test_grid_is_the_product_of_the_lists_without_invalid_combinations():
    configs = grid("tiny", block_in=[4, 8], axi_width=[64, 128])
    assert [(c.block_in, c.axi_width) for c in configs] == [(4, 64), (4, 128), (8, 64), (8, 128)]
    assert configs.skipped == []
    assert grid(block_out=[16])[0] == AccelConfig.preset("default")


def test_grid_skips_and_reports_invalid_combinations():
    # acc_width=16 cannot hold an 8x8-bit dot product of 4 or 8 terms.
    configs = grid("tiny", block_in=[4, 8], acc_width=[16, 32])
    assert [(c.block_in, c.acc_width) for c in configs] == [(4, 32), (8, 32)]
    assert [changes for changes, _ in configs.skipped] == [
        {"block_in": 4, "acc_width": 16},
        {"block_in": 8, "acc_width": 16},
    ]
    assert all(isinstance(err, ConfigError) for _, err in configs.skipped)
    with pytest.raises(ConfigError, match="acc_width"):
        grid("tiny", block_in=[4, 8], acc_width=[16, 32], strict=True)


def test_grid_rejects_unknown_parameters_and_non_lists():
    with pytest.raises(ConfigError, match="not a configuration parameter"):
        grid(block=[8])
    with pytest.raises(ConfigError, match="needs a list"):
        grid(block_in=8)

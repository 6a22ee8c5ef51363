"""Pictures of timed runs, drawn with matplotlib's Agg backend (no display needed).

:func:`timeline_png` draws each module's instructions over time (token waits hatched) and the
memory ports' bursts; :func:`roofline_png` places runs by arithmetic intensity (GEMM operations
per DRAM byte) and achieved GOPS under their configuration's compute ceiling (peak GOPS) and
bandwidth ceiling (one memory channel: a bus beat per cycle). matplotlib is imported only when a
plot is drawn (``pip install vtaforge[plots]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from isa import Stage
from simulator.errors import ReportError
from simulator.stats import CycleStats

__all__ = ["roofline_png", "timeline_png"]

_ROWS = (("load", Stage.LOAD), ("compute", Stage.COMPUTE), ("store", Stage.STORE))
_COLOURS = {"LOAD": "tab:blue", "GEMM": "tab:orange", "ALU": "tab:green", "STORE": "tab:red"}
_UNIT_COLOURS = {"fetch": "tab:gray", "load": "tab:blue", "compute": "tab:purple"}


def _pyplot():
    try:
        import matplotlib
    except ModuleNotFoundError as err:  # pragma: no cover - the plots extra installs it
        raise ModuleNotFoundError(
            "plots need matplotlib: pip install 'vtaforge[plots]'", name=err.name
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def timeline_png(stats: CycleStats, path: str | Path, *, title: str = "") -> None:
    """Write a timeline of ``stats`` to ``path`` (PNG): one row per module, then the ports."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(14, 4.5))
    labels = []
    for row, (name, stage) in enumerate(_ROWS):
        labels.append(name)
        insns = [i for i in stats.instructions if i.module is stage]
        waits = [(i.taken + 1, i.token_wait) for i in insns if i.token_wait > 0]
        first = row == 0  # one legend entry per kind
        ax.broken_barh(
            waits,
            (row - 0.4, 0.8),
            facecolors="none",
            edgecolors="0.6",
            hatch="//",
            label="token wait" if first else None,
        )
        for kind, colour in _COLOURS.items():
            spans = [(i.started, i.duration) for i in insns if i.label.startswith(kind)]
            ax.broken_barh(
                spans, (row - 0.4, 0.8), facecolors=colour, label=kind if first else None
            )
    for row, port in enumerate(("read", "write"), start=len(_ROWS)):
        labels.append(f"{port} port")
        for unit, colour in {**_UNIT_COLOURS, "store": "tab:red"}.items():
            spans = [
                (b.first, b.last - b.first + 1)
                for b in stats.bursts
                if b.port == port and b.unit == unit
            ]
            if spans:
                ax.broken_barh(spans, (row - 0.3, 0.6), facecolors=colour, alpha=0.6)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(stats.cycles, 1))
    ax.set_xlabel("cycle")
    heading = title or f"{stats.config.fingerprint}"
    ax.set_title(
        f"{heading}: {stats.cycles:,} cycles, GEMM utilisation {100 * stats.gemm_utilisation:.1f} %"
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5, fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: Runs a roofline labels in full.
_LABELLED = 6


def roofline_png(runs: Sequence[tuple[str, CycleStats]], path: str | Path) -> None:
    """Write a roofline of the labelled ``runs`` to ``path`` (PNG), with the compute and
    bandwidth ceilings of each configuration among them. Up to :data:`_LABELLED` runs are
    labelled in full; more (a whole model's layers) are numbered in order, the numbers listed
    beside the plot."""
    if not runs:
        raise ReportError("a roofline needs at least one run")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    intensities = [s.arithmetic_intensity for _, s in runs if s.arithmetic_intensity > 0]
    low = min([0.1, *intensities]) / 2
    high = max([100.0, *intensities]) * 4
    ceilings = {s.config: s for _, s in runs}
    for cfg, stats in ceilings.items():
        ridge = cfg.peak_gops / stats.port_gbps
        xs = [low, ridge, high]
        ys = [stats.port_gbps * low, cfg.peak_gops, cfg.peak_gops]
        ax.plot(
            xs,
            ys,
            "-",
            label=f"{cfg.fingerprint}: {cfg.peak_gops:g} GOPS, {stats.port_gbps:g} GB/s",
        )
    numbered = len(runs) > _LABELLED
    for n, (label, stats) in enumerate(runs):
        ax.plot([stats.arithmetic_intensity], [stats.gops], "o")
        if numbered:
            ax.annotate(
                str(n + 1),
                (stats.arithmetic_intensity, stats.gops),
                textcoords="offset points",
                xytext=(3, 3),
                fontsize="x-small",
            )
            continue
        ax.annotate(  # labels stacked downwards, so runs at one intensity stay readable
            f"{label}: {stats.gops:.3g} GOPS",
            (stats.arithmetic_intensity, stats.gops),
            textcoords="offset points",
            xytext=(-10, -16 * (n + 1)),
            ha="right",
            fontsize="small",
        )
    if numbered:
        key = "\n".join(f"{n + 1} {label}: {s.gops:.3g}" for n, (label, s) in enumerate(runs))
        fig.set_size_inches(10, 6)
        fig.subplots_adjust(right=0.72)
        fig.text(0.74, 0.95, "GOPS by layer\n" + key, va="top", fontsize="x-small")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (GEMM ops per DRAM byte)")
    ax.set_ylabel("achieved GOPS")
    ax.set_title("roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    if not numbered:
        fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""Pictures of timed runs, drawn with matplotlib's Agg backend (no display needed).

:func:`timeline_png` draws fetch's instruction reads and each module's instructions over time
(token waits hatched), then the memory ports' bursts coloured by the unit they serve, every colour
in the legend; :func:`roofline_png` places runs by arithmetic intensity (GEMM operations per DRAM
byte) and achieved GOPS under their configuration's compute ceiling (peak GOPS) and bandwidth
ceiling (one memory channel: a bus beat per cycle), each run with its own marker, its key in the
legend and its label beside it; a run without GEMM operations (an ALU-only program) has no
intensity and is named in a note instead. The ``*_figure`` functions return the matplotlib
figure; the ``*_png`` ones write it. matplotlib is imported only when a plot is drawn
(``pip install vtaforge[plots]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from isa import Stage
from simulator.errors import ReportError
from simulator.stats import CycleStats

__all__ = ["pyplot", "roofline_figure", "roofline_png", "timeline_figure", "timeline_png"]

_ROWS = (("load", Stage.LOAD), ("compute", Stage.COMPUTE), ("store", Stage.STORE))
_COLOURS = {"LOAD": "tab:blue", "GEMM": "tab:orange", "ALU": "tab:green", "STORE": "tab:red"}
#: The colour of each unit's bursts on the memory ports (and of fetch's row).
_PORT_COLOURS = {
    ("read", "fetch"): "tab:gray",
    ("read", "load"): "tab:blue",
    ("read", "compute"): "tab:purple",
    ("write", "store"): "tab:red",
}
_BURST_ALPHA = 0.6
_MARKERS = "osD^vP*X"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (no display), imported now (the plots extra
    installs matplotlib; without it a ModuleNotFoundError saying so)."""
    try:
        import matplotlib
    except ModuleNotFoundError as err:  # pragma: no cover - the plots extra installs it
        raise ModuleNotFoundError(
            "plots need matplotlib: pip install 'vtaforge[plots]'", name=err.name
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def timeline_figure(stats: CycleStats, *, title: str = "") -> Any:
    """The timeline of ``stats`` (a matplotlib Figure): fetch's instruction reads, one row per
    module, then the read and write ports."""
    plt = pyplot()
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(14, 5))
    fetch = [(b.accepted, b.last - b.accepted + 1) for b in stats.bursts if b.unit == "fetch"]
    ax.broken_barh(fetch, (-0.4, 0.8), facecolors=_PORT_COLOURS["read", "fetch"])
    labels = ["fetch"]
    for row, (name, stage) in enumerate(_ROWS, start=1):
        labels.append(name)
        insns = [i for i in stats.instructions if i.module is stage]
        waits = [(i.taken + 1, i.token_wait) for i in insns if i.token_wait > 0]
        first = row == 1  # one legend entry per kind
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
    for row, port in enumerate(("read", "write"), start=len(labels)):
        labels.append(f"{port} port")
        for (on, unit), colour in _PORT_COLOURS.items():
            spans = [
                (b.first, b.last - b.first + 1)
                for b in stats.bursts
                if b.port == port == on and b.unit == unit
            ]
            if spans:
                ax.broken_barh(spans, (row - 0.3, 0.6), facecolors=colour, alpha=_BURST_ALPHA)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    ax.set_xlim(0, max(stats.cycles, 1))
    ax.set_xlabel("cycle")
    heading = title or f"{stats.config.fingerprint}"
    ax.set_title(
        f"{heading}: {stats.cycles:,} cycles, GEMM utilisation {100 * stats.gemm_utilisation:.1f} %"
    )
    handles, names = ax.get_legend_handles_labels()
    for (port, unit), colour in _PORT_COLOURS.items():
        handles.append(Patch(facecolor=colour, alpha=_BURST_ALPHA))
        names.append(f"{port} burst: {unit}" + (" (instructions)" if unit == "fetch" else ""))
    ax.legend(
        handles, names, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5, fontsize="small"
    )
    fig.tight_layout()
    return fig


def timeline_png(stats: CycleStats, path: str | Path, *, title: str = "") -> None:
    """Write :func:`timeline_figure` of ``stats`` to ``path`` (PNG)."""
    _save(timeline_figure(stats, title=title), path)


#: Runs a roofline labels in full.
_LABELLED = 6


def roofline_figure(runs: Sequence[tuple[str, CycleStats]]) -> Any:
    """The roofline of the labelled ``runs`` (a matplotlib Figure), with the compute and
    bandwidth ceilings of each configuration among them. Up to :data:`_LABELLED` runs get a
    marker of their own, a legend key and their label beside the point; more (a whole model's
    layers) are numbered in order, the numbers listed beside the plot. Runs without GEMM
    operations cannot be placed and are named in a note."""
    if not runs:
        raise ReportError("a roofline needs at least one run")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 5))
    placed = [(label, s) for label, s in runs if s.arithmetic_intensity > 0 and s.gops > 0]
    unplaced = [label for label, s in runs if not (s.arithmetic_intensity > 0 and s.gops > 0)]
    intensities = [s.arithmetic_intensity for _, s in placed]
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
    numbered = len(placed) > _LABELLED
    points: list[tuple[float, float]] = []
    for n, (label, stats) in enumerate(placed):
        point = (stats.arithmetic_intensity, stats.gops)
        if numbered:
            ax.plot(*point, "o", color="0.3")
            ax.annotate(
                str(n + 1), point, textcoords="offset points", xytext=(3, 3), fontsize="x-small"
            )
            continue
        ax.plot(
            *point,
            _MARKERS[n % len(_MARKERS)],
            markersize=8,
            label=f"{label}: {stats.gops:.3g} GOPS, {stats.arithmetic_intensity:.3g} ops/B",
        )
        # Beside the point; runs at (nearly) one place get their labels stacked above it.
        stacked = sum(1 for other in points if _near(other, point))
        points.append(point)
        ax.annotate(
            label,
            point,
            textcoords="offset points",
            # (points of label offset: a layout choice no test can call right or wrong)
            xytext=(7, -3 + 11 * stacked),  # pragma: no mutate
            fontsize="small",
        )
    if numbered:
        key = "\n".join(f"{n + 1} {label}: {s.gops:.3g}" for n, (label, s) in enumerate(placed))
        fig.set_size_inches(10, 6)
        fig.subplots_adjust(right=0.72)
        fig.text(0.74, 0.95, "GOPS by layer\n" + key, va="top", fontsize="x-small")
    if unplaced:
        ax.text(
            0.02,
            0.98,
            f"not placed (no GEMM operations, so no arithmetic intensity: ALU and memory "
            f"only): {', '.join(unplaced)}",
            transform=ax.transAxes,
            va="top",
            fontsize="small",
            wrap=True,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (GEMM ops per DRAM byte)")
    ax.set_ylabel("achieved GOPS")
    ax.set_title("roofline")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    if not numbered:
        fig.tight_layout()
    return fig


def roofline_png(runs: Sequence[tuple[str, CycleStats]], path: str | Path) -> None:
    """Write :func:`roofline_figure` of ``runs`` to ``path`` (PNG)."""
    _save(roofline_figure(runs), path)


def _near(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two points lie within a factor 1.3 of each other on both log axes (their labels
    would overlap)."""
    return all(max(x, y) <= 1.3 * min(x, y) for x, y in zip(a, b, strict=True))


def _save(fig: Any, path: str | Path) -> None:
    plt = pyplot()
    fig.savefig(path, dpi=110)
    plt.close(fig)

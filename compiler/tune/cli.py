"""``vtaforge tune``: tune one operator (``--op``, ``--shape``) or every accelerator operator of
an ONNX model, appending the trials to a records file (registered through the
``vtaforge.commands`` entry point, as ``vtaforge compile`` is)."""

from __future__ import annotations

import argparse
from pathlib import Path

from compiler import te
from compiler.accel.env import Env
from compiler.accel.ops import ConvLayer
from compiler.cli import add_calibration_option, calibration_samples
from compiler.ops import CONV2D_NCHWC, MATMUL, nchwc_block, out_size
from compiler.tune.driver import tune
from compiler.tune.errors import TuneError
from compiler.tune.task import Task, conv_layer_task, model_tasks
from compiler.tune.tuners import TUNERS
from isa import AccelConfig
from runtime.cli import Command, progress_bar

__all__ = ["TUNE", "op_task"]

_SHAPES = {
    "matmul": "M,N,K",
    "conv2d": "N,C,H,W,O,KERNEL[,STRIDE[,PADDING]] (square kernel; NCHWc on the CPU)",
}


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", nargs="?", type=Path, metavar="MODEL.onnx")
    parser.add_argument("--op", choices=sorted(_SHAPES), help="tune one operator instead")
    parser.add_argument("--shape", help="; ".join(f"{k}: {v}" for k, v in _SHAPES.items()))
    parser.add_argument(
        "--target",
        choices=("llvm", "accel"),
        default="accel",
        help="llvm: this CPU, timed; accel (default): cycles of the cycle-level simulator",
    )
    parser.add_argument("--config", default="default", metavar="PRESET|FILE", help="accel's")
    add_calibration_option(parser)  # the model's, as `vtaforge compile` takes it
    parser.add_argument("--trials", type=int, required=True, help="measured candidates per task")
    parser.add_argument("--records", type=Path, required=True, metavar="FILE.jsonl")
    parser.add_argument("--tuner", choices=sorted(TUNERS), default="xgb")
    parser.add_argument("--batch", type=int, default=8, help="candidates per tuner batch")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per candidate")
    parser.add_argument(
        "--scheduler", metavar="ADDRESS", help="measure on this dask.distributed scheduler"
    )
    parser.epilog = (
        "Runs that find their records file already holding trials of a task go on from there. "
        "Compile with the best knobs inside compiler.tune.apply_history_best(FILE)."
    )


def _ints(text: str | None, op: str) -> list[int]:
    try:
        return [int(v) for v in (text or "").split(",")]
    except ValueError:
        raise TuneError(f"--shape {text!r} is not {_SHAPES[op]}", where="--shape") from None


def op_task(op: str, shape: str | None, target: str, cfg: AccelConfig) -> Task:
    """The task of ``--op OP --shape SHAPE`` for ``target`` (``llvm`` or ``accel``)."""
    values = _ints(shape, op)
    if op == "matmul" and len(values) == 3 and target == "llvm":
        m, n, k = values
        return Task.of(MATMUL, te.placeholder((m, k), name="A"), te.placeholder((k, n), name="B"))
    if op == "conv2d" and 6 <= len(values) <= 8:
        batch, cin, height, width, cout, kernel, *rest = values
        stride = rest[0] if rest else 1
        padding = rest[1] if len(rest) > 1 else kernel // 2
        if target == "accel":
            if batch != 1 or height != width:
                raise TuneError("accel conv2d takes batch 1 and a square input", where="--shape")
            layer = ConvLayer("conv", height, cin, cout, kernel, stride, padding, 0)
            return conv_layer_task(layer, Env(cfg))
        out_width = out_size(width, kernel, stride, padding)
        ib, ob = nchwc_block(cin), nchwc_block(cout, out_width=out_width)
        data = te.placeholder((batch, cin // ib, height, width, ib), name="data")
        weights = te.placeholder((cout // ob, cin // ib, kernel, kernel, ib, ob), name="kernel")
        return Task.of(CONV2D_NCHWC, data, weights, stride=stride, padding=padding)
    raise TuneError(f"--op {op} --target {target} takes --shape {_SHAPES[op]}", where="--shape")


def _tasks(args: argparse.Namespace, cfg: AccelConfig) -> list[Task]:
    if (args.model is None) == (args.op is None):
        raise TuneError("give either MODEL.onnx or --op (with --shape)", where="vtaforge tune")
    if args.op is not None:
        return [op_task(args.op, args.shape, args.target, cfg)]
    if args.target != "accel":
        raise TuneError("a model is tuned for --target accel", where="--target")
    from compiler.frontend import from_onnx

    graph = from_onnx(args.model)
    return model_tasks(graph, cfg, calibration=calibration_samples(graph, args.calibrate))


def _run(args: argparse.Namespace) -> int:
    from compiler.tune.measure import MeasureOptions

    cfg = AccelConfig.resolve(args.config)
    tasks = _tasks(args, cfg)
    client = None
    if args.scheduler:
        from dask.distributed import Client

        client = Client(args.scheduler)
    options = MeasureOptions(timeout=args.timeout)
    for number, task in enumerate(tasks, start=1):
        unit = "cycles" if task.cfg is not None else "s"
        with progress_bar(args.trials, "trial") as advance:
            result = tune(
                task,
                trials=args.trials,
                tuner=args.tuner,
                records=args.records,
                options=options,
                batch=args.batch,
                client=client,
                progress=lambda done, total, best, u=unit: advance(f"best {best:.4g} {u}"),
            )
        knobs, cost = result.best
        print(
            f"[{number}/{len(tasks)}] {task.name}: best {cost:.4g} {unit} after "
            f"{len(result.trials)} trials ({result.errors} errors): {knobs}"
        )
    if client is not None:
        client.close()
    return 0


#: ``vtaforge tune (MODEL.onnx | --op OP --shape ...) --target llvm|accel --trials N
#: --records FILE [--scheduler ADDRESS]``.
TUNE = Command("tune", "auto-tune operator knobs (AutoTVM-style)", _configure, _run)

"""The graph executor: a :class:`ModelImage` run step by step on one DRAM image.

``load_model(path).run(inputs, device="sim")`` writes the parameters and the inputs into a
fresh DRAM image, runs every step in order (accelerator programs on the device, CPU steps on
the host: their native kernel where this host has one (:mod:`runtime.model.kernels`: built here
from the step's description, never carried by the file), their numpy kernel otherwise; all on
views of the same image) and returns the outputs with a
:class:`ModelReport`: per step where and how it ran, its cycles, GEMM utilisation, DRAM bytes
and host time, and the totals. A model without accelerator steps (compiled with
``target="llvm"``) runs with ``device="cpu"`` too (no device is opened); a model with
accelerator steps refuses it (:class:`~runtime.devices.DeviceError`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from isa import VtaforgeError
from runtime.devices import Device, DeviceError, RunStats, open_device
from runtime.model.image import ModelFormatError, ModelImage, Step
from runtime.model.kernels import HostKernels, kernel_builder
from runtime.model.report import ModelReport, StepReport
from runtime.opset import OPERATORS
from runtime.parallel import make_launcher

__all__ = ["Model", "ModelInputError", "ModelRun", "load_model"]


class ModelInputError(VtaforgeError, ValueError):
    """The inputs given to a model do not match what it was compiled for."""


@dataclass
class ModelRun:
    """A model's outputs by name, its report, and (on ``sim``) each accelerator step's full
    cycle-level statistics, for traces and plots."""

    outputs: dict[str, np.ndarray]
    report: ModelReport
    cycle_stats: list[tuple[str, Any]] = field(default_factory=list)

    @property
    def output(self) -> np.ndarray:
        """The output of a single-output model (the first of several)."""
        return next(iter(self.outputs.values()))


class Model:
    """A loaded compiled model, ready to run (see the module docstring). ``native_kernels``:
    the CPU steps this host's kernel builder knows run its kernels (built once, then cached in
    ``kernel_cache``, by default :func:`~runtime.model.kernels.kernel_cache_dir`); False runs
    every CPU step's numpy kernel. ``fallbacks`` names the steps whose native kernel could not
    be built or loaded here, and why: their numpy kernel runs."""

    def __init__(
        self, image: ModelImage, *, native_kernels: bool = True, kernel_cache: Path | None = None
    ) -> None:
        self.image = image
        self.cfg = image.config
        self.fallbacks: dict[str, str] = {}
        self._images = threading.local()  # each thread's DRAM image, reused run after run
        self._launcher = make_launcher(f"model-{image.name}")
        self._params = np.frombuffer(image.params, np.uint8)
        #: Only CPU steps, none writing a parameter: a run writes nothing but its inputs and
        #: the steps' outputs, so the parameters need no copy between runs.
        self._params_stay = all(s.program is None for s in image.steps) and not any(
            image.tensors[v].address < len(image.params) for s in image.steps for v in s.outputs
        )
        # per step with a native kernel: the kernel and its slots' byte offsets in DRAM (the
        # inputs', then the output's)
        self._libraries: dict[int, tuple[Callable[..., None], tuple[int, ...]]] = {}
        if not native_kernels:
            return
        kernels = HostKernels(kernel_builder(), kernel_cache)
        for index, step in enumerate(image.steps):
            if step.device != "cpu":
                continue
            slots = [image.tensors[name] for name in (*step.inputs, *step.outputs)]
            try:
                kernel = kernels.kernel(step, slots)
            except (OSError, AttributeError, VtaforgeError) as err:
                # no linker, a full disk, a damaged cache entry, a build the backend refused
                self.fallbacks[step.node] = f"{type(err).__name__}: {err}"
                continue
            if kernel is not None:
                self._libraries[index] = (kernel, tuple(slot.address for slot in slots))

    @property
    def inputs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """Each input's shape and dtype."""
        return {n: (self.image.tensors[n].shape, self.image.tensors[n].dtype) for n in self._in}

    @property
    def _in(self) -> tuple[str, ...]:
        return self.image.inputs

    def run(
        self,
        inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | np.ndarray,
        device: str | Device = "sim",
        *,
        progress: Callable[[Step], None] | None = None,
        after_step: Callable[[Step, np.ndarray], None] | None = None,
        threads: int = 1,
        **options: Any,
    ) -> ModelRun:
        """Run on ``device`` (a kind for ``runtime.open_device`` with ``options``, a device
        object, or ``"cpu"`` for a model without accelerator steps) and return the outputs and
        the report; ``threads`` share each native kernel's parallel loops (1: this thread
        alone); ``progress(step)`` is called as each
        step starts, ``after_step(step, dram)`` as each ends, with the DRAM image (to read
        the step's outputs through their slots' views, as ``vtaforge compare`` does; writing
        it changes the run)."""
        feeds = self.feeds(inputs)
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise ModelInputError(f"threads must be a positive integer, got {threads!r}")
        runner: Device | None
        if device == "cpu":
            self._check_cpu_only(options)
            runner = None
        elif isinstance(device, str):
            runner = open_device(device, self.cfg, **options)
        else:
            runner = device
        with self._image(keep_params=self._params_stay and after_step is None) as dram:
            for name, array in feeds.items():
                self.image.tensors[name].view(dram)[...] = array
            reports, cycle_stats = self._run_steps(dram, runner, threads, progress, after_step)
            outputs = {n: self.image.tensors[n].view(dram).copy() for n in self.image.outputs}
        kind = "cpu" if runner is None else runner.kind.value
        report = ModelReport(self.image.name, self.cfg, tuple(reports), kind)
        return ModelRun(outputs, report, cycle_stats)

    def _run_steps(
        self,
        dram: np.ndarray,
        runner: Device | None,
        threads: int,
        progress: Callable[[Step], None] | None,
        after_step: Callable[[Step, np.ndarray], None] | None,
    ) -> tuple[list[StepReport], list[tuple[str, Any]]]:
        """Run every step on ``dram`` (see :meth:`run`): each step's report, and the cycle
        statistics of the accelerator steps where ``runner`` keeps them."""
        reports: list[StepReport] = []
        cycle_stats: list[tuple[str, Any]] = []
        base = dram.ctypes.data  # the slots' offsets were checked against the size at load
        for index, step in enumerate(self.image.steps):
            if progress is not None:
                progress(step)
            started = time.perf_counter()
            library = self._libraries.get(index)
            if library is not None:
                kernel, offsets = library
                kernel(*[base + offset for offset in offsets], self._launcher.pointer(threads))
                self._launcher.raise_error()
                seconds = time.perf_counter() - started
                reports.append(
                    StepReport(step.node, step.op, "cpu", seconds, macs=step.macs, kernel="llvm")
                )
            elif step.program is not None:
                assert runner is not None  # a model with a program refuses "cpu"
                stats = runner.run(step.program, dram)
                detail = getattr(runner, "last_stats", None)
                if detail is not None:
                    cycle_stats.append((step.node, detail))
                reports.append(_accel_report(step, stats))
            else:
                self._run_cpu(step, dram)
                seconds = time.perf_counter() - started
                reports.append(
                    StepReport(step.node, step.op, "cpu", seconds, macs=step.macs, kernel="numpy")
                )
            if after_step is not None:
                after_step(step, dram)
        return reports, cycle_stats

    @contextmanager
    def _image(self, *, keep_params: bool) -> Iterator[np.ndarray]:
        """The DRAM image of one run: the parameters, then zeros. This thread's image of its
        last run is reused (allocating and faulting in a fresh one costs more than the smallest
        steps), its parameters copied again and the rest zeroed unless ``keep_params`` (only
        CPU steps, none writing a parameter: nothing of the last run could have written them,
        and each step writes the whole of its output before any step reads it, so no step can
        read what the last run left; zeroing MobileNetV2's 6 MB cost 2% of its run); a run
        inside a run (from a callback) gets an image of its own."""
        params = len(self._params)
        nested = getattr(self._images, "busy", False)
        dram = None if nested else getattr(self._images, "dram", None)
        if dram is None:
            dram = np.zeros(self.image.dram_bytes, np.uint8)
            dram[:params] = self._params
            if nested:
                yield dram
                return
            self._images.dram = dram
        else:
            if not keep_params:
                dram[:params] = self._params
                dram[params:] = 0
        self._images.busy = True
        try:
            yield dram
        finally:
            self._images.busy = False

    def _check_cpu_only(self, options: Mapping[str, Any]) -> None:
        """Check that ``device="cpu"`` can run this model: no accelerator step, no option."""
        accel = [s.node for s in self.image.steps if s.program is not None]
        if accel:
            raise DeviceError(
                f"device cpu: model {self.image.name!r} has {len(accel)} accelerator steps "
                f"(the first: {accel[0]!r}); run it on fsim, sim, rtl or pynq, or compile it "
                "with target='llvm'"
            )
        if options:
            raise DeviceError(f"device cpu takes no options, got {sorted(options)}")

    def feeds(self, inputs: Any) -> dict[str, np.ndarray]:
        """``inputs`` (one array, a sequence in the model's input order, or a mapping by name)
        as arrays by input name, each of its slot's shape and dtype; ModelInputError naming
        the input otherwise."""
        names = self.image.inputs
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        if not isinstance(inputs, Mapping):
            inputs = list(inputs)
            if len(inputs) != len(names):
                raise ModelInputError(
                    f"the model takes {len(names)} inputs ({', '.join(names)}), got {len(inputs)}"
                )
            inputs = dict(zip(names, inputs, strict=True))
        unknown = sorted(set(inputs) - set(names))
        if unknown:
            raise ModelInputError(f"the model has no input {unknown[0]!r} (inputs: {names})")
        feeds = {}
        for name in names:
            slot = self.image.tensors[name]
            array = inputs.get(name)
            if array is None:
                raise ModelInputError(f"input {name!r} is not given")
            if not isinstance(array, np.ndarray):
                raise ModelInputError(
                    f"input {name!r} needs a numpy array, got {type(array).__name__}"
                )
            if array.shape != slot.shape or str(array.dtype) != slot.dtype:
                raise ModelInputError(
                    f"input {name!r} expects {slot.dtype}{list(slot.shape)}, got "
                    f"{array.dtype}{list(array.shape)}"
                )
            feeds[name] = array
        return feeds

    def _run_cpu(self, step: Step, dram: np.ndarray) -> None:
        operator = OPERATORS.get(step.op)
        if operator is None:
            raise ModelFormatError(f"step {step.node}: no CPU kernel for operator {step.op!r}")
        slots = self.image.tensors
        result = operator.kernel(*(slots[v].view(dram) for v in step.inputs), **step.attrs)
        out = slots[step.outputs[0]]
        if result.shape != out.shape:
            raise ModelFormatError(
                f"step {step.node}: {step.op} gave shape {list(result.shape)}, the model "
                f"expects {list(out.shape)}"
            )
        out.view(dram)[...] = result


def _accel_report(step: Step, stats: RunStats) -> StepReport:
    counters = stats.counters
    gemm = counters.gemm_counter if counters is not None else None
    moved = None
    if counters is not None:
        moved = sum(
            getattr(counters, f"{n}_nbytes")
            for n in ("uop_load", "inp_load", "wgt_load", "acc_load", "out_store")
        )
    return StepReport(
        step.node,
        step.op,
        "accel",
        stats.wall_seconds,
        cycles=stats.cycles,
        gemm_steps=gemm,
        dram_bytes=moved,
        macs=step.macs,
    )


def load_model(path: str | Path, *, native_kernels: bool = True) -> Model:
    """A compiled model from its file (``CompiledModel.save`` or ``vtaforge compile``);
    ``native_kernels`` as :class:`Model` takes it."""
    return Model(ModelImage.load(path), native_kernels=native_kernels)

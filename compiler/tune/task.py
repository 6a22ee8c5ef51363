"""Tuning tasks: one operator instance (template + input shapes + parameters) on one target.

A :class:`Task` is what a tuner searches and what records are keyed by: its ``key`` names the
template, the inputs' shapes and dtypes, the operator parameters and the target (``llvm`` with
the CPU the code is generated for, or ``accel`` with the configuration's ``fingerprint``), so
knobs tuned for one configuration or CPU are never applied to another. Tasks come from a call of
a template (:meth:`Task.of`), from a compiled model's accelerator operators (:func:`model_tasks`)
or back from a record (:meth:`Task.from_dict`, through :data:`TEMPLATES`).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from compiler.accel import templates as accel_templates
from compiler.accel.env import Env
from compiler.build import build
from compiler.schedule import Schedule
from compiler.te import Tensor, placeholder
from compiler.templates import CONV2D_NCHW, CONV2D_NCHWC, DEPTHWISE_CONV2D, MATMUL, POOL2D
from compiler.templates.knobs import Config, KnobSpace, Template
from compiler.tune.errors import TuneError
from compiler.tune.reference import REFERENCES
from compiler.workloads import CONV_SHIFT, conv_layer_call
from isa import AccelConfig

__all__ = [
    "TEMPLATES",
    "Task",
    "TensorSpec",
    "check_positive",
    "check_window",
    "conv_layer_task",
    "host_target",
    "model_tasks",
]

#: The templates a task can name in a record, by name.
TEMPLATES: dict[str, Template] = {
    t.name: t
    for t in (
        MATMUL,
        CONV2D_NCHW,
        CONV2D_NCHWC,
        DEPTHWISE_CONV2D,
        POOL2D,
        accel_templates.CONV2D,
        accel_templates.DENSE,
        accel_templates.ADD,
        accel_templates.MAX_POOL,
        accel_templates.GLOBAL_AVG_POOL,
    )
}


def host_target() -> str:
    """The CPU target string of this machine's code (``llvm -mcpu=NAME``)."""
    from compiler.codegen import Target  # llvmlite, only when a CPU task is made

    return f"llvm -mcpu={Target.host().cpu}"


@dataclass(frozen=True)
class TensorSpec:
    """One input of a task: shape, dtype and the placeholder's name."""

    shape: tuple[int, ...]
    dtype: str
    name: str

    @classmethod
    def of(cls, tensor: Tensor) -> TensorSpec:
        return cls(tuple(int(d) for d in tensor.shape), str(tensor.dtype), tensor.name)


def _json_value(value: Any, where: str) -> Any:
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, tuple | list):
        return [_json_value(v, where) for v in value]
    raise TuneError(f"parameter value {value!r} cannot be recorded", where=where)


@dataclass(frozen=True)
class Task:
    """``template`` over inputs ``inputs`` with operator ``params`` (sorted, ``env`` excluded)
    for the CPU (``cfg`` None; ``cpu`` the target string) or the accelerator of ``cfg``.
    ``reference`` computes the expected output from the input arrays (default: the template's
    in :data:`~compiler.tune.reference.REFERENCES`; None: outputs are not checked)."""

    template: Template
    inputs: tuple[TensorSpec, ...]
    params: tuple[tuple[str, Any], ...] = ()
    cfg: AccelConfig | None = None
    cpu: str = ""
    reference: Callable[..., Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name, value in self.params:
            _json_value(value, f"parameter {name!r} of {self.template.name}")
        if self.cfg is None and not self.cpu:
            object.__setattr__(self, "cpu", host_target())
        if self.reference is None:
            object.__setattr__(self, "reference", REFERENCES.get(self.template))

    @classmethod
    def of(
        cls,
        template: Template,
        *inputs: Tensor,
        cfg: AccelConfig | None = None,
        reference: Callable[..., Any] | None = None,
        **params: Any,
    ) -> Task:
        """The task of ``template(*inputs, **params)`` (for the accelerator of ``cfg``, passed
        to the template as ``env=Env(cfg)``; params may carry that ``env`` instead). A CPU task's
        ``target`` param (an ``"llvm ..."`` string; the host by default) is its CPU: the template
        derives its defaults from it and candidates are compiled for it, so it must be one this
        machine (and the measuring workers') can run."""
        env = params.pop("env", None)
        target = params.pop("target", None)
        if env is not None:
            if cfg is not None and env.cfg != cfg:
                raise TuneError("env and cfg name different configurations", where="Task.of")
            cfg = env.cfg
        if target is not None and (cfg is not None or not isinstance(target, str)):
            raise TuneError(
                f"target {target!r}: a CPU task's target is an 'llvm ...' string (an "
                "accelerator task names its configuration with cfg or env)",
                where="Task.of",
            )
        specs = tuple(TensorSpec.of(t) for t in inputs)
        params_ = tuple(sorted(params.items()))
        return cls(template, specs, params_, cfg, target or "", reference=reference)

    # ------------------------------------------------------------------ identity
    @property
    def target(self) -> str:
        return self.cpu if self.cfg is None else f"accel -config={self.cfg.fingerprint}"

    @property
    def name(self) -> str:
        shapes = ", ".join("x".join(map(str, s.shape)) for s in self.inputs)
        return f"{self.template.name}({shapes})"

    @cached_property
    def key(self) -> str:
        """The task's identity in records, e.g. ``matmul(float32[64,64], float32[64,64];
        transpose_b=true) @ llvm -mcpu=znver4``."""
        inputs = ", ".join(f"{s.dtype}[{','.join(map(str, s.shape))}]" for s in self.inputs)
        params = "".join(f"; {k}={json.dumps(_json_value(v, k))}" for k, v in self.params)
        return f"{self.template.name}({inputs}{params}) @ {self.target}"

    def to_dict(self) -> dict[str, Any]:
        """What a record stores to rebuild the task (:meth:`from_dict`)."""
        return {
            "op": self.template.name,
            "inputs": [[list(s.shape), s.dtype, s.name] for s in self.inputs],
            "params": {k: _json_value(v, k) for k, v in self.params},
            "cpu": self.cpu if self.cfg is None else "",
            "config": None if self.cfg is None else self.cfg.to_dict(),
        }

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Task:
        try:
            template = TEMPLATES[spec["op"]]
            inputs = tuple(TensorSpec(tuple(s), d, n) for s, d, n in spec["inputs"])
            params = {k: tuple(v) if isinstance(v, list) else v for k, v in spec["params"].items()}
            cfg = None if spec["config"] is None else AccelConfig.from_dict(spec["config"])
            return cls(template, inputs, tuple(sorted(params.items())), cfg, spec["cpu"])
        except (KeyError, TypeError, ValueError) as err:
            raise TuneError(f"not a task description ({err!r})", where="record") from None

    # ------------------------------------------------------------------ compiling
    def placeholders(self) -> tuple[Tensor, ...]:
        return tuple(placeholder(s.shape, s.dtype, s.name) for s in self.inputs)

    def call_params(self) -> dict[str, Any]:
        """The template's keyword arguments: ``env`` added for the accelerator; for the CPU,
        ``target`` where the template takes one (its defaults then follow the task's CPU)."""
        if self.cfg is not None:
            return dict(self.params) | {"env": Env(self.cfg)}
        if "target" in inspect.signature(self.template.space).parameters:
            return dict(self.params) | {"target": self.cpu}
        return dict(self.params)

    def space(self) -> KnobSpace:
        return self.template.space(*self.placeholders(), **self.call_params())

    def declare(self, config: Config) -> tuple[Schedule, list[Tensor]]:
        """The schedule of ``config`` (complete, from :meth:`space`) and the function's
        arguments (inputs, then the output); a CompileError for a candidate that cannot be
        compiled (one that does not fit the buffers)."""
        inputs = self.placeholders()
        schedule, out = self.template.declare(*inputs, cfg=dict(config), **self.call_params())
        return schedule, [*inputs, out]

    def build(self, config: Config) -> Any:
        """The compiled function of ``config`` for the task's target."""
        schedule, args = self.declare(config)
        target = self.cpu if self.cfg is None else Env(self.cfg).target
        return build(schedule, args, target, name=self.template.name)


def check_positive(where: str, **extents: int) -> None:
    """TuneError (naming ``where``) for the first of ``extents`` that is not positive."""
    for name, value in extents.items():
        if value < 1:
            raise TuneError(f"{name} {value} is not positive", where=where)


def check_window(size: int, kernel: int, stride: int, padding: int, where: str) -> None:
    """TuneError (naming ``where``) unless ``size``, ``kernel`` and ``stride`` are positive,
    ``padding`` is not negative and the kernel fits the input padded on both sides (so the
    output has at least one element along the axis)."""
    check_positive(where, size=size, kernel=kernel, stride=stride)
    if padding < 0:
        raise TuneError(f"padding {padding} is negative", where=where)
    if kernel > size + 2 * padding:
        raise TuneError(
            f"kernel {kernel} is larger than the input ({size} + 2 x padding {padding})",
            where=where,
        )


def conv_layer_task(layer: accel_templates.ConvLayer, env: Env, shift: int = CONV_SHIFT) -> Task:
    """The accelerator CONV2D task of ``layer`` (declared as ``compiler.workloads`` compiles
    it: ``>> shift``, ``+ bias``, clip); TuneError for a layer whose window does not fit
    (:func:`check_window`)."""
    check_window(layer.size, layer.kernel, layer.stride, layer.padding, f"layer {layer.name}")
    inputs, params = conv_layer_call(layer, env, shift)
    return Task.of(accel_templates.CONV2D, *inputs, **params)


def model_tasks(
    model: Any, cfg: AccelConfig | str = "default", *, calibration: Sequence[Any]
) -> list[Task]:
    """The distinct accelerator operator instances that compiling ``model`` for ``cfg``
    builds (a ``compile_model`` argument: ONNX path or bytes, torch module or graph), in the
    order they first occur."""
    from compiler.model import compile_model

    compiled = compile_model(model, cfg, calibration=calibration)
    tasks: dict[str, Task] = {}
    for placement in compiled.partition.placements:
        op = placement.accel
        if op is not None:
            task = Task.of(op.template, *op.placeholders, cfg=compiled.cfg, **op.params)
            tasks.setdefault(task.key, task)
    return list(tasks.values())

"""Compiled models: the artefact (:class:`ModelImage`, one ``.vtaf`` file: data, no machine
code), the graph executor that runs it on any device (:func:`load_model`), the host's native
kernels of its CPU steps (:mod:`runtime.model.kernels`), and its report, trace and plots."""

from runtime.model.executor import Model, ModelInputError, ModelRun, load_model
from runtime.model.image import (
    FORMAT_VERSION,
    ModelFormatError,
    ModelImage,
    Step,
    TensorSlot,
)
from runtime.model.kernels import KERNEL_GROUP, LIBRARY_ENTRY
from runtime.model.report import ModelReport, StepReport, write_model_plots, write_model_trace

__all__ = [
    "FORMAT_VERSION",
    "KERNEL_GROUP",
    "LIBRARY_ENTRY",
    "Model",
    "ModelFormatError",
    "ModelImage",
    "ModelInputError",
    "ModelReport",
    "ModelRun",
    "Step",
    "StepReport",
    "TensorSlot",
    "load_model",
    "write_model_plots",
    "write_model_trace",
]

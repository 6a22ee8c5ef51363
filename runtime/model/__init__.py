"""Compiled models: the artefact (:class:`ModelImage`, one ``.vtaf`` file), the graph executor
that runs it on any device (:func:`load_model`), and its report, trace and plots."""

from runtime.model.executor import Model, ModelInputError, ModelRun, load_model
from runtime.model.image import (
    FORMAT_VERSION,
    LIBRARY_ENTRY,
    ModelFormatError,
    ModelImage,
    Step,
    TensorSlot,
)
from runtime.model.report import ModelReport, StepReport, write_model_plots, write_model_trace

__all__ = [
    "FORMAT_VERSION",
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

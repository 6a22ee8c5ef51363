"""Auto-tuning (AutoTVM-style) of the operator templates' knobs, for the CPU and the accelerator.

A :class:`Task` (template + shapes + parameters + target) has a :class:`Space` of knob
configurations; :func:`tune` searches it with a tuner (``grid``, ``random`` or ``xgb``: an
XGBoost ranking model over loop-IR features, simulated annealing, transfer learning from other
tasks' records), measuring candidates in isolated worker processes (CPU: timed; accelerator:
cycles on the cycle-level simulator) locally or on a dask.distributed cluster, and appends one
JSON line per trial to a records file, from which a killed run resumes (lines that are not
trials of the task's space are reported as a ``RecordWarning`` and skipped). Inside
``apply_history_best(records)`` templates take the best knobs found (``compile_model`` too).
"""

from compiler.tune.driver import TuneResult, tune
from compiler.tune.errors import RecordWarning, TuneError
from compiler.tune.features import FEATURE_COUNT, features
from compiler.tune.measure import ERRORS, MeasureOptions, Result, measure_candidate
from compiler.tune.records import (
    Record,
    RecordWriter,
    apply_history_best,
    best_records,
    in_space,
    load_records,
)
from compiler.tune.space import Space
from compiler.tune.task import TEMPLATES, Task, TensorSpec, conv_layer_task, model_tasks
from compiler.tune.tuners import TUNERS, GridTuner, RandomTuner, Tuner, XGBTuner
from compiler.tune.worker import Worker

__all__ = [
    "ERRORS",
    "FEATURE_COUNT",
    "TEMPLATES",
    "TUNERS",
    "GridTuner",
    "MeasureOptions",
    "RandomTuner",
    "Record",
    "RecordWarning",
    "RecordWriter",
    "Result",
    "Space",
    "Task",
    "TensorSpec",
    "TuneError",
    "TuneResult",
    "Tuner",
    "Worker",
    "XGBTuner",
    "apply_history_best",
    "best_records",
    "conv_layer_task",
    "features",
    "in_space",
    "load_records",
    "measure_candidate",
    "model_tasks",
    "tune",
]

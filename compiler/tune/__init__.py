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

from isa.lazy import keep_names, lazy_names

#: Each public name and the module that defines it (imported on first use: the command line
#: registers ``vtaforge tune`` without loading the tuners, the cost model and the templates).
_SOURCES = {
    "ERRORS": "compiler.tune.measure",
    "FEATURE_COUNT": "compiler.tune.features",
    "GridTuner": "compiler.tune.tuners",
    "MeasureOptions": "compiler.tune.measure",
    "RandomTuner": "compiler.tune.tuners",
    "Record": "compiler.tune.records",
    "RecordWarning": "compiler.tune.errors",
    "RecordWriter": "compiler.tune.records",
    "Result": "compiler.tune.measure",
    "Space": "compiler.tune.space",
    "TEMPLATES": "compiler.tune.task",
    "TUNERS": "compiler.tune.tuners",
    "Task": "compiler.tune.task",
    "TensorSpec": "compiler.tune.task",
    "TuneError": "compiler.tune.errors",
    "TuneResult": "compiler.tune.driver",
    "Tuner": "compiler.tune.tuners",
    "Worker": "compiler.tune.worker",
    "XGBTuner": "compiler.tune.tuners",
    "apply_history_best": "compiler.tune.records",
    "best_records": "compiler.tune.records",
    "conv_layer_task": "compiler.tune.task",
    "features": "compiler.tune.features",
    "in_space": "compiler.tune.records",
    "load_records": "compiler.tune.records",
    "measure_candidate": "compiler.tune.measure",
    "model_tasks": "compiler.tune.task",
    "tune": "compiler.tune.driver",
}

__all__ = sorted(_SOURCES)

__getattr__, __dir__ = lazy_names(__name__, _SOURCES)
# ``features`` is a public function that shares its name with a submodule
keep_names(__name__, ("features",))

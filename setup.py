"""Compiles the cycle-level simulator's timing model to native code with mypyc (the rest of the
package metadata is in pyproject.toml).

The compiled modules are the state machines of the timing model: plain, type-checked Python
that mypyc turns into C (about four times faster; ``benchmarks/sim_speed.py`` measures it).
The Python sources stay the definition: ``simulator/_native.py`` runs them interpreted whenever
one is newer than its compiled module, so an edit never runs stale code.
"""

from mypyc.build import mypycify
from setuptools import setup

#: The timing model's modules, compiled together (they call each other natively).
COMPILED = [
    "simulator/ports.py",
    "simulator/queues.py",
    "simulator/engines.py",
    "simulator/units.py",
    "simulator/plans.py",
    "simulator/machine.py",
    "simulator/stats.py",
]

_MYPY = ["--ignore-missing-imports", "--follow-imports=silent"]

setup(ext_modules=mypycify([*COMPILED, *_MYPY], opt_level="3", group_name="vtaforge_simulator"))

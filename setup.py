"""Compiles the cycle-level simulator's timing model to native code with mypyc (the rest of the
package metadata is in pyproject.toml).

The compiled modules are the state machines of the timing model: plain, type-checked Python
that mypyc turns into C (several times faster; ``benchmarks/sim_speed.py`` measures it). The
Python sources stay the definition: the build records the digest of each source it compiled
(``simulator/_compiled.json``), and ``simulator/_native.py`` runs the sources interpreted
whenever one differs from what was compiled, so an edit never runs stale code.
"""

import hashlib
import json
from pathlib import Path

from mypyc.build import mypycify
from setuptools import setup
from setuptools.command.build_ext import build_ext

#: The timing model's modules and the functional simulator's core (scheduler, execution, race
#: detection), compiled together (they call each other natively).
COMPILED = [
    "simulator/ports.py",
    "simulator/queues.py",
    "simulator/engines.py",
    "simulator/units.py",
    "simulator/transfer_plans.py",
    "simulator/machine.py",
    "simulator/stats.py",
    "simulator/scheduler.py",
    "simulator/execute.py",
    "simulator/loop_plans.py",
    "simulator/races.py",
    "simulator/state.py",
    "simulator/exact.py",
]
#: Where the build records what it compiled (read by simulator/_native.py).
MANIFEST = "simulator/_compiled.json"

_MYPY = ["--ignore-missing-imports", "--follow-imports=silent"]
#: The sources' digests as mypyc reads them below.
_DIGESTS = {
    Path(path).stem: hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in COMPILED
}


class _RecordingBuild(build_ext):
    """build_ext that, once the extensions are built, records the digests of their sources."""

    def run(self) -> None:
        super().run()
        root = Path("." if self.inplace else self.build_lib)
        (root / MANIFEST).write_text(json.dumps(_DIGESTS, indent=1, sort_keys=True) + "\n")


setup(
    ext_modules=mypycify([*COMPILED, *_MYPY], opt_level="3", group_name="vtaforge_simulator"),
    cmdclass={"build_ext": _RecordingBuild},
)

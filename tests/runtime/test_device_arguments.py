"""Bad arguments at the devices' and simulators' entry points are typed errors of their layer
(issue 17 item 6): DeviceError from ``runtime.devices``, SimulationError from ``simulator``, for
the same rules (one definition: ``simulator.arguments``), and nothing runs or is written."""

import numpy as np
import pytest

from isa import AccelConfig, FinishInsn, Program, Stage, TimingConfig
from runtime import DeviceError, open_device
from simulator import CycleSimulator, FunctionalSimulator, SimulationError
from tests.conformance.random_programs import random_program

TINY = AccelConfig.preset("tiny")
FINISH = Program(TINY, [FinishInsn()])


def _bad_drams():
    """Each DRAM the rule refuses, with what the message must name."""
    read_only = np.zeros(64, np.uint8)
    read_only.flags.writeable = False
    return [
        ("list", [0] * 64, "not list"),
        ("int8", np.zeros(64, np.int8), "not an array of int8"),
        ("2-D", np.zeros((8, 8), np.uint8), r"shape \(8, 8\)"),
        ("masked", np.ma.zeros(64, np.uint8), "not a masked array"),
        ("read-only", read_only, "must be writeable"),
        ("strided", np.zeros(128, np.uint8)[::2], "must be contiguous"),
    ]


@pytest.mark.parametrize(("name", "dram", "match"), _bad_drams(), ids=[d[0] for d in _bad_drams()])
@pytest.mark.parametrize("kind", ["fsim", "sim"])
def test_devices_refuse_bad_dram_with_a_device_error(kind, name, dram, match):
    with pytest.raises(DeviceError, match=match) as info:
        open_device(kind, TINY).run(FINISH, dram)
    assert not isinstance(info.value, SimulationError)


@pytest.mark.parametrize(("name", "dram", "match"), _bad_drams(), ids=[d[0] for d in _bad_drams()])
@pytest.mark.parametrize("simulator", [FunctionalSimulator, CycleSimulator])
def test_simulators_refuse_bad_dram_with_a_simulation_error(simulator, name, dram, match):
    with pytest.raises(SimulationError, match=match):
        simulator(TINY).run(FINISH, dram)


def test_a_refused_masked_dram_is_left_untouched():
    """A masked array would have its mask ignored; it is refused before anything is written."""
    program = random_program(TINY, 3)
    dram = np.ma.masked_array(np.zeros(program.dram_extent, np.uint8), mask=False)
    with pytest.raises(DeviceError):
        open_device("fsim", TINY).run(program, dram)
    assert not dram.data.any()


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: open_device("sim", TINY, timing="x"), DeviceError, "timing must be an isa.Timing"),
        (lambda: open_device("sim", TINY, detect_races="no"), DeviceError, "detect_races must be"),
        (lambda: open_device("fsim", TINY, detect_races=1), DeviceError, "detect_races must be"),
        (lambda: CycleSimulator(TINY, 5), SimulationError, "timing must be .* not int"),
        (lambda: CycleSimulator(TINY, stepped="yes"), SimulationError, "stepped must be True"),
        (lambda: CycleSimulator(None), SimulationError, "cfg must be an isa.AccelConfig"),
        (lambda: FunctionalSimulator(None), SimulationError, "cfg must be an isa.AccelConfig"),
        (lambda: FunctionalSimulator("tiny"), SimulationError, "not str"),
        (lambda: FunctionalSimulator(TINY, module_order=3), SimulationError, "module_order 3"),
        (
            lambda: FunctionalSimulator(TINY, module_order=[Stage.LOAD] * 3),
            SimulationError,
            "each stage",
        ),
        (lambda: FunctionalSimulator(TINY, detect_races=None), SimulationError, "detect_races"),
        # The RTL device checks its options before it builds anything.
        (lambda: open_device("rtl", TINY, ready_probability="x"), DeviceError, "in \\(0, 1\\]"),
        (lambda: open_device("rtl", TINY, ready_probability=float("nan")), DeviceError, "nan"),
        (lambda: open_device("rtl", TINY, max_cycles=2.5), DeviceError, "max_cycles 2.5"),
        (lambda: open_device("rtl", TINY, seed="s"), DeviceError, "seed 's' must be"),
        (lambda: open_device("rtl", TINY, cache_dir=3), DeviceError, "cache_dir must be"),
    ],
)
def test_constructors_refuse_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_constructors_accept_what_they_document():
    timing = TimingConfig(read_latency=3)
    assert open_device("sim", TINY, timing=timing).timing == timing
    assert open_device("sim", TINY, timing=None).timing == TimingConfig()
    assert CycleSimulator(TINY, timing, stepped=np.bool_(True)).stepped
    order = (Stage.STORE, Stage.COMPUTE, Stage.LOAD)
    assert FunctionalSimulator(TINY, module_order=[3, 2, 1]).module_order == order


@pytest.mark.parametrize("kind", ["fsim", "sim"])
@pytest.mark.parametrize(
    ("program", "match"),
    [
        (None, "program must be an isa.Program, not NoneType"),
        ([FinishInsn()], "program must be an isa.Program, not list"),
        (FINISH.to_bytes(), "not bytes"),
    ],
)
def test_device_run_takes_a_program_only(kind, program, match):
    with pytest.raises(DeviceError, match=match):
        open_device(kind, TINY).run(program, np.zeros(64, np.uint8))


@pytest.mark.parametrize(
    ("program", "match"),
    [
        (None, "not NoneType"),
        (3, "not int"),
        ("FINISH", "not str"),
        (b"\0" * 16, "not bytes"),
    ],
)
def test_simulator_run_takes_a_program_or_a_sequence(program, match):
    with pytest.raises(SimulationError, match=match):
        FunctionalSimulator(TINY).run(program, np.zeros(64, np.uint8))


@pytest.mark.parametrize("kind", ["fsim", "sim"])
def test_run_many_checks_every_job_before_running_any(kind):
    program = random_program(TINY, 5)
    first = np.zeros(program.dram_extent, np.uint8)
    device = open_device(kind, TINY)
    cases = [
        (3, "jobs must be a list of .* not int"),
        ([program], "job 0 must be a .program, dram. pair, not Program"),
        ([(program, first), (program,)], "job 1 must be a .program, dram. pair, not tuple"),
        ([(program, first), (program, first.astype(np.int16))], "job 1: dram must be"),
        ([(program, first), ([FinishInsn()], first)], "job 1: program must be an isa.Program"),
    ]
    for jobs, match in cases:
        with pytest.raises(DeviceError, match=match):
            device.run_many(jobs)
        assert not first.any(), "a job ran although a later one was refused"
    # ...and good jobs still run, each on its own DRAM, with the functional simulator's bytes.
    expected = first.copy()
    FunctionalSimulator(TINY).run(program, expected)
    drams = [first, first.copy()]
    assert len(device.run_many([(program, d) for d in drams])) == 2
    for dram in drams:
        assert np.array_equal(dram, expected)

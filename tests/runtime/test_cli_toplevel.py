"""The command line's top level as a new user meets it (issue 17 items 9, 11, 15 and the CLI
top level): one-line errors, --debug, bugs said to be bugs, --version, suggestions, output
paths checked before any work, assembly sources that are not text."""

import subprocess
import sys
from importlib import metadata

import pytest

import runtime.cli
from isa import AccelConfig, FinishInsn, GemmInsn, Program, Uop
from runtime.cli import BUG_REPORT, Command, main
from runtime.demo_gemm import demo_gemm_program

TINY = AccelConfig.preset("tiny")


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _usage_error(capsys, *argv):
    with pytest.raises(SystemExit) as caught:
        main(list(argv))
    assert caught.value.code == 1  # a user's error, as every other: one line, status 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("vtaforge: error: ")
    return err


def test_version(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"vtaforge {metadata.version('vtaforge')}"


def test_misspelt_subcommand_choice_and_option_get_suggestions(capsys, tmp_path):
    assert "did you mean 'sim'?" in _usage_error(capsys, "simm", "x.bin")
    assert "did you mean 'show'?" in _usage_error(capsys, "config", "shwo")
    program = tmp_path / "p.bin"
    demo_gemm_program(TINY).save(program)
    # The misspelt option is named, not the program file that follows its value.
    err = _usage_error(capsys, "sim", "--read-latncy", "4", str(program))
    assert "unrecognized option --read-latncy (did you mean '--read-latency'?)" in err
    assert str(program) not in err.splitlines()[-1]
    err = _usage_error(capsys, "run", "m.vtaf", "--input", "x.npy", "--device", "rlt")
    assert "did you mean 'rtl'?" in err


def test_misspelt_preset_gets_a_suggestion(capsys):
    status, _, err = run(capsys, "config", "show", "tinny")
    assert status == 1
    assert "did you mean 'tiny'?" in err and len(err.strip().splitlines()) == 1


def _deadlocked(tmp_path):
    program = Program(
        TINY,
        [GemmInsn(pop_prev_dep=True, uop_bgn=0, uop_end=1, iter_out=1, iter_in=1), FinishInsn()],
        uops=[Uop(dst_idx=0, src_idx=0, wgt_idx=0)],
        uop_base=16,
    )
    path = tmp_path / "deadlock.bin"
    program.save(path)
    return path


def test_a_deadlock_is_one_line_and_debug_shows_all(capsys, tmp_path):
    path = _deadlocked(tmp_path)
    status, _, err = run(capsys, "sim", str(path))
    assert status == 1
    assert err.count("\n") == 1
    assert err.startswith("vtaforge sim: error: deadlock: compute blocked at instruction 0")
    assert "--debug" in err
    status, _, err = run(capsys, "sim", str(path), "--debug")
    assert status == 1
    assert "Traceback" in err and "DeadlockError" in err
    assert "token counters: l2g=0" in err


def test_debug_before_the_subcommand_too(capsys, tmp_path):
    status, _, err = run(capsys, "--debug", "disasm", str(tmp_path / "missing.bin"))
    assert status == 1
    assert "Traceback" in err and "cannot be read" in err


def _explode(args):
    raise ValueError("an unexpected state")


def test_an_unexpected_exception_is_a_bug_report(capsys, monkeypatch):
    crash = Command("crash", "raises", lambda parser: None, _explode)
    monkeypatch.setattr(runtime.cli, "COMMANDS", (*runtime.cli.COMMANDS, crash))
    status, _, err = run(capsys, "crash")
    assert status == 2
    assert err.splitlines() == [
        "vtaforge crash: internal error: ValueError: an unexpected state",
        f"vtaforge crash: {BUG_REPORT}",
    ]
    assert "Traceback" not in err
    status, _, err = run(capsys, "crash", "--debug")
    assert status == 2
    assert "Traceback" in err and "_explode" in err


def _no_simulation(*args, **kwargs):
    raise AssertionError("the simulation ran before the output paths were checked")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--report", "{missing}/r.json", "folder {missing} does not exist"),
        ("--trace", "{missing}/t.json", "folder {missing} does not exist"),
        ("--output", "outputs={missing}/o.npy", "folder {missing} does not exist"),
        ("--plots", "{file}", "is a file, not a folder"),
        ("--report", "{tmp}", "is a folder, not a file"),
        ("--report", "{tmp}/r.txt", "must end in .json or .csv"),
    ],
)
def test_sim_checks_output_paths_before_simulating(
    capsys, tmp_path, monkeypatch, option, value, message
):
    import runtime.cli.sim

    monkeypatch.setattr(runtime.cli.sim, "CycleSimulator", _no_simulation)
    program = tmp_path / "p.bin"
    demo_gemm_program(TINY).save(program)
    names = {"missing": tmp_path / "no" / "such", "file": program, "tmp": tmp_path}
    status, _, err = run(capsys, "sim", str(program), option, value.format(**names))
    assert status == 1
    assert message.format(**names) in err and option in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["hw", "verilog", "--config", "tiny", "-o", "{missing}/x.v"],
        ["asm", "{source}", "-o", "{missing}/x.bin"],
        ["disasm", "{binary}", "-o", "{missing}/x.s"],
        ["run", "{binary}", "--input", "x.npy", "-o", "{missing}/out.npz"],
    ],
)
def test_other_commands_check_output_paths_first(capsys, tmp_path, argv):
    binary, source = tmp_path / "p.bin", tmp_path / "p.s"
    demo_gemm_program(TINY).save(binary)
    source.write_text("this is not assembly: the check comes first\n")
    missing = tmp_path / "nowhere"
    argv = [a.format(missing=missing, source=source, binary=binary) for a in argv]
    status, _, err = run(capsys, *argv)
    assert status == 1
    assert f"folder {missing} does not exist" in err


def test_asm_on_a_binary_program_suggests_disasm(capsys, tmp_path):
    binary = tmp_path / "p.bin"
    demo_gemm_program(TINY).save(binary)
    status, _, err = run(capsys, "asm", str(binary), "-o", str(tmp_path / "q.bin"))
    assert status == 1
    assert "is a binary vtaforge program, not assembly text" in err
    assert f"vtaforge disasm {binary}" in err
    latin = tmp_path / "latin.s"
    latin.write_bytes(b"; caf\xe9\nFINISH\n")
    status, _, err = run(capsys, "asm", str(latin), "-o", str(tmp_path / "q.bin"))
    assert status == 1
    assert "byte 5 is not UTF-8" in err and "codec" not in err


def test_asm_help_documents_the_syntax(capsys):
    with pytest.raises(SystemExit):
        main(["asm", "--help"])
    out = capsys.readouterr().out
    for directive in (".config", ".uop_base", ".uop", ".segment", ".data", ".region"):
        assert f"\n  {directive} " in out
    assert "LOAD memory_type=INP" in out


def test_the_demo_listing_reassembles_into_a_runnable_program(capsys, tmp_path):
    status, out, _ = run(capsys, "demo", "--config", "tiny")
    assert status == 0
    listing = out[out.index("; vtaforge program") : out.index("\nMicro-op words:")]
    source = tmp_path / "demo.s"
    source.write_text(listing)
    binary = tmp_path / "demo.bin"
    assert run(capsys, "asm", str(source), "-o", str(binary))[0] == 0
    assert Program.load(binary) == demo_gemm_program(TINY)
    assert run(capsys, "sim", str(binary))[0] == 0


def test_the_console_script_reports_a_usage_error_with_status_1():
    result = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "simm"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "did you mean 'sim'?" in result.stderr and "Traceback" not in result.stderr


#: What building the command line must not import: the work behind the commands (the
#: compiler's model pipeline, graph IR and templates, the tuner, the devices, LLVM, Amaranth).
_HEAVY = (
    "compiler.model",
    "compiler.graph.ir",
    "compiler.te",
    "compiler.tune.tuners",
    "compiler.tune.driver",
    "runtime.devices",
    "llvmlite",
    "amaranth",
    "onnx",
    "torch",
)


def test_listing_the_commands_imports_none_of_their_work():
    """`vtaforge --help` builds every command's parser, plugins included (issue 33: under half
    a second); the parser's imports must stop short of what the commands run."""
    code = (
        "import sys, runtime.cli\n"
        "runtime.cli.build_parser()\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    loaded = set(subprocess.check_output([sys.executable, "-c", code], text=True).split())
    assert {"compiler.cli", "compiler.tune.cli", "fpga.cli"} <= loaded  # the plugins registered
    heavy = sorted(m for m in loaded if any(m == h or m.startswith(h + ".") for h in _HEAVY))
    assert heavy == []


def test_tuner_choices_are_the_tuners(capsys):
    """--tuner's choices are read from the tuners when checked and shown, not when parsed."""
    from compiler.tune.tuners import TUNERS

    err = _usage_error(
        capsys, "tune", "--op", "matmul", "--tuner", "xbg", "--trials", "1", "--records", "r.jsonl"
    )
    assert all(f"'{name}'" in err for name in TUNERS) and "did you mean 'xgb'" in err

"""Malformed binary programs, assembly sources and configuration files through the command line,
in-process (``runtime.cli.main``): every file either works (exit status 0) or is refused with
exit status 1 and a one-line message on stderr, never a traceback.

The files start from real ones (random valid programs and the examples of ``examples/``, saved
and as assembly; the presets' JSON and a VTA ``vta_config.json``) and are mutated at the byte,
line, token or JSON level; half the mutated binaries get their CRC (and header length) fixed up
so that the parser's later checks and the simulator are reached rather than the checksum.
"""

from __future__ import annotations

import io
import json
import random
import struct
import zlib
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from isa import AccelConfig, VtaforgeError, assemble, disassemble
from runtime.cli import main
from tests.conformance.random_programs import random_program
from tests.vta_configs import VTA_DEFAULT_LOGS

TINY = AccelConfig.preset("tiny")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
_PREAMBLE = struct.Struct("<8sHHI")
#: Values a mutated JSON file puts where a number or a string belongs.
HOSTILE = (
    None,
    -1,
    0,
    2**70,
    1.5,
    float("inf"),
    "x",
    "",
    True,
    [],
    {},
    [1, [2]],
    "\udcff",
)
VTA_CONFIG = {"TARGET": "sim", **VTA_DEFAULT_LOGS}


class Refused(VtaforgeError):
    """The command line refused the input as it should: exit status 1, a one-line message."""


class BrokenContract(Exception):
    """The command line answered with another status, several lines, or a traceback."""


def _cli(*argv: str) -> str:
    """Run ``vtaforge argv``: its stdout on success; Refused or BrokenContract otherwise."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stdout(out), redirect_stderr(err):
            status = main(list(argv))
    except SystemExit as exit:  # argparse: the arguments themselves are fixed and valid
        raise BrokenContract(f"exit {exit.code}: {err.getvalue()!r}") from None
    message = err.getvalue()
    if status == 0:
        return out.getvalue()
    lines = message.strip().splitlines()
    if status == 1 and len(lines) == 1 and "Traceback" not in message:
        raise Refused(lines[0])
    raise BrokenContract(f"exit {status}, stderr {message[:300]!r}")


# ---------------------------------------------------------------------- mutators
def _bytes_mutant(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        at = rng.randrange(len(data) + 1)
        if roll < 0.35 and data:
            data[min(at, len(data) - 1)] ^= 1 << rng.randrange(8)
        elif roll < 0.5:
            del data[at : at + rng.randint(1, 32)]
        elif roll < 0.65:
            data[at:at] = rng.randbytes(rng.randint(1, 32))
        elif roll < 0.75:
            del data[at:]
        elif roll < 0.85:
            data[at:at] = data[max(0, at - 64) : at]
        elif roll < 0.9:
            data = bytearray(rng.randbytes(rng.randint(0, 256)))
        else:
            data[at:at] = rng.choice([b"\xff\xfe", b"\x00", "\u00e9".encode(), b"\xc3"])
    return bytes(data)


def _fixed_up(data: bytes, header: bytes | None = None) -> bytes:
    """``data`` (a mutated program file) with ``header`` put in, its length in the preamble, and
    a CRC-32 that matches: the parser gets past its checksum."""
    if header is not None and len(data) >= _PREAMBLE.size:
        magic, version, reserved, length = _PREAMBLE.unpack_from(data)
        rest = data[_PREAMBLE.size + length :]
        data = _PREAMBLE.pack(magic, version, reserved, len(header)) + header + rest
    body = data[:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def _json_mutant(rng: random.Random, value: dict) -> bytes:
    """``value`` with keys changed, dropped, added or nested, as JSON (sometimes broken)."""
    value = json.loads(json.dumps(value))
    for _ in range(rng.randint(1, 3)):
        roll = rng.random()
        keys = list(value)
        if roll < 0.55 and keys:
            value[rng.choice(keys)] = rng.choice(HOSTILE)
        elif roll < 0.7 and keys:
            del value[rng.choice(keys)]
        elif roll < 0.8:
            value[rng.choice(["bogus", "", "TARGET", "LOG_BLOCK"])] = rng.choice(HOSTILE)
        elif roll < 0.9 and keys:
            value[rng.choice(keys)] = {"nested": value.copy()}
        else:
            value = rng.choice([[], None, "x", 3, [value]])
            break
    text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    if rng.random() < 0.15:
        text = rng.choice(["[" * 5000, '{"batch": ' + "1" * 5000 + "}", text[: len(text) // 2]])
    return text.encode("utf-8", "surrogatepass")


def _binary_mutant(rng: random.Random, data: bytes) -> bytes:
    roll = rng.random()
    if roll < 0.3:
        _, _, _, length = _PREAMBLE.unpack_from(data)
        header = json.loads(data[_PREAMBLE.size : _PREAMBLE.size + length])
        return _fixed_up(data, _json_mutant(rng, header))
    mutant = _bytes_mutant(rng, data)
    return _fixed_up(mutant) if roll < 0.65 and len(mutant) >= 4 else mutant


def _text_mutant(rng: random.Random, text: str) -> bytes:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(lines))
        words = lines[at].split(" ")
        roll = rng.random()
        if roll < 0.45:
            spot = rng.randrange(len(words))
            junk = rng.choice(["-1", "0x" + "f" * 40, "1" * 400, "=", "x=", "\x00", "é", "9e9"])
            key = words[spot].partition("=")[0]
            words[spot] = rng.choice([junk, f"{key}={junk}", ""])
            lines[at] = " ".join(words)
        elif roll < 0.6:
            del lines[at]
        elif roll < 0.7:
            lines.insert(at, lines[at])
        elif roll < 0.8:
            lines[at] = rng.choice([".config", ".segment", ".uop", ".data zz", "LOAD", ".bogus"])
        elif roll < 0.9:
            other = rng.randrange(len(lines))
            lines[at], lines[other] = lines[other], lines[at]
        else:
            lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
        if not lines:
            lines = [""]
    data = "\n".join(lines).encode()
    return _bytes_mutant(rng, data) if rng.random() < 0.2 else data


# ---------------------------------------------------------------------- the test
def test_malformed_files_through_the_command_line(budget, tmp_path: Path, tally):
    binaries = tally("files: binary programs (disasm, sim)")
    sources = tally("files: assembly (asm)")
    configs = tally("files: configurations (config show)")
    count = budget.count(60, 1_700)  # per kind of file
    rng = random.Random(17)
    programs = [random_program(TINY, seed, operations=rng.randint(2, 6)) for seed in range(8)]
    texts = [disassemble(program) for program in programs]
    examples = [path.read_text() for path in sorted(EXAMPLES.glob("*.s"))]
    programs += [assemble(text) for text in examples]
    texts += examples
    good_configs = [AccelConfig.preset(name).to_dict() for name in ("tiny", "default")]
    good_configs.append(VTA_CONFIG)
    path = tmp_path / "input"
    out = tmp_path / "out.bin"
    for number in range(count):
        path.write_bytes(_binary_mutant(rng, rng.choice(programs).to_bytes()))
        command = rng.choice([("disasm", str(path)), ("sim", str(path))])
        binaries.attempt(f"binary {number} {command[0]}", _cli, *command)

        path.write_bytes(_text_mutant(rng, rng.choice(texts)))
        sources.attempt(f"assembly {number}", _cli, "asm", str(path), "-o", str(out))

        path.write_bytes(_json_mutant(rng, rng.choice(good_configs)))
        configs.attempt(f"config {number}", _cli, "config", "show", str(path))
    for record in (binaries, sources, configs):
        record.assert_clean()
        assert record.typed, f"{record.category}: no file was refused: the mutations do nothing"

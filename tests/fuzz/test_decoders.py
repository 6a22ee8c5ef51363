"""Random words through both decoders (``isa.decode``, ``isa.decode_uop``): every word either
decodes to a record that encodes back to the same word, or is refused with an EncodingError;
nothing else (no TypeError for a non-integer, no word past the format's width accepted): a
seeded generator for the counts, and hypothesis over any value."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from isa import (
    INSN_WIDTH,
    UOP_WIDTH,
    AccelConfig,
    EncodingError,
    decode,
    decode_uop,
    encode,
    encode_uop,
)
from tests.conformance.random_programs import random_program

PRESETS = ("tiny", "default")
#: Values that are not words at all, whatever the decoder.
ODD_VALUES = (
    None,
    True,
    1.5,
    float("nan"),
    "0x1",
    b"",
    b"\x01" * 16,
    np.float64(3.0),
    np.uint8(7),
    np.int64(-1),
    -1,
    [1],
    object(),
)


def _valid_words(cfg: AccelConfig) -> tuple[list[int], list[int]]:
    """Encoded instructions and micro-ops of a few random valid programs."""
    insns, uops = [], []
    for seed in range(4):
        program = random_program(cfg, seed)
        insns += [encode(insn, cfg) for insn in program.instructions]
        uops += [encode_uop(uop, cfg) for uop in program.uops]
    return insns, uops


def _word(rng: random.Random, valid: list[int], width: int) -> object:
    """A valid word with a few bits flipped, a random integer of about ``width`` bits, a value
    at or past an edge of the range, or a value that is no word."""
    roll = rng.random()
    if roll < 0.45:
        word = rng.choice(valid)
        for _ in range(rng.randint(1, 3)):
            word ^= 1 << rng.randrange(width)
        return word
    if roll < 0.85:
        return rng.getrandbits(rng.randint(1, width + 2))
    if roll < 0.97:
        return rng.choice([-1, 0, (1 << width) - 1, 1 << width, (1 << width) + 1, 1 << 200])
    return rng.choice(ODD_VALUES)


def test_random_words_through_both_decoders(budget, tally):
    count = budget.count(3_000, 60_000)  # per configuration and decoder
    for preset in PRESETS:
        cfg = AccelConfig.preset(preset)
        insns, uops = _valid_words(cfg)
        decoders = (
            ("instruction", decode, encode, insns, INSN_WIDTH),
            ("micro-op", decode_uop, encode_uop, uops, UOP_WIDTH),
        )
        for what, decoder, encoder, valid, width in decoders:
            record = tally(f"words: {what}s ({preset})")
            rng = random.Random(f"{preset} {what}")
            for _ in range(count):
                word = _word(rng, valid, width)
                ok, decoded = record.attempt(repr(word), decoder, word, cfg)
                if ok:
                    again = encoder(decoded, cfg)
                    if again != int(word):
                        record.disagree(f"{word:#x}", f"{decoded} encodes to {again:#x}")
            record.assert_clean()


@given(
    word=st.one_of(
        st.integers(-(2**130), 2**130),
        st.integers(0, 2**INSN_WIDTH - 1),
        st.floats(),
        st.binary(max_size=20),
        st.text(max_size=10),
        st.none(),
        st.booleans(),
    ),
    preset=st.sampled_from(PRESETS),
)
def test_any_value_decodes_to_a_record_that_encodes_back_or_is_an_encoding_error(word, preset):
    cfg = AccelConfig.preset(preset)
    for decoder, encoder in ((decode, encode), (decode_uop, encode_uop)):
        try:
            record = decoder(word, cfg)
        except EncodingError:
            continue
        assert encoder(record, cfg) == word

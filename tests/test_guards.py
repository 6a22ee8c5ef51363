"""The guard-region helper catches what it is for: writes past either end, and unwritten
elements (they keep the poison)."""

import numpy as np
import pytest

from tests.guards import GuardedArray


def test_untouched_guards_pass_and_the_array_is_poisoned():
    out = GuardedArray((3, 4), np.float32, guard=8)
    out.array[...] = 1.0
    np.testing.assert_array_equal(out.checked(), np.ones((3, 4), np.float32))
    fresh = GuardedArray(5, np.int32)
    assert (fresh.array.view(np.uint8) == 0xA5).all()
    assert fresh.array.flags.c_contiguous and fresh.array.flags.writeable
    assert np.isnan(GuardedArray(3, np.float32).array).all()  # an accumulation stays NaN


@pytest.mark.parametrize("offset", [-1, 12], ids=["before", "after"])
def test_a_write_just_past_either_end_is_caught(offset):
    out = GuardedArray((3, 4), np.int16, guard=4)
    flat = out._storage  # where a kernel's stray pointer would land
    flat[out.guard + offset] = 0
    with pytest.raises(AssertionError, match="guard region"):
        out.checked()

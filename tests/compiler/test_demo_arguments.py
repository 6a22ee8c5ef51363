"""The compiler's demos check their configuration and output folder before simulating anything:
a bad one ends them at once with a usage error (exit status 2) naming it, not a traceback."""

from __future__ import annotations

import pytest

from compiler.accel import demo_layer as accel_demo
from compiler.model import demo_resnet as model_demo


@pytest.mark.parametrize("demo", [accel_demo, model_demo], ids=["accel", "model"])
@pytest.mark.parametrize(
    ("argv", "named"),
    [(["--out", "/proc/forbidden"], "--out /proc/forbidden"), (["--config", "defualt"], "defualt")],
)
def test_a_bad_argument_is_a_usage_error_before_any_work(demo, argv, named, capsys, monkeypatch):
    def no_work(*_args, **_kwargs):
        raise AssertionError("the demo started before checking its arguments")

    monkeypatch.setattr(demo, "conv_demo" if demo is accel_demo else "resnet18_demo", no_work)
    with pytest.raises(SystemExit) as info:
        demo.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err

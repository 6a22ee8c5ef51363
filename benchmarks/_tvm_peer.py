"""Apache TVM as a peer of ``model_cpu.py``, run by the Python of TVM's own environment (TVM is
not a dependency of vtaforge): ``python _tvm_peer.py MODEL.onnx INPUTS.npz ROUNDS OUT.npy``
imports the ONNX model with TVM's Relax frontend, builds it with ``tvm.compile`` for
``llvm`` (the default pipeline, untuned), runs it once (the output goes to ``OUT.npy``) and
then ``ROUNDS`` times, and prints ``{"build_s": ..., "ms": median}`` as JSON. Threads:
``TVM_NUM_THREADS``, set by the caller."""

import json
import sys
import time

import numpy as np
import onnx
import tvm
from tvm import relax
from tvm.relax.frontend.onnx import from_onnx


def main() -> None:
    path, inputs, rounds, out = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    started = time.perf_counter()
    module = from_onnx(onnx.load(path), keep_params_in_input=False)
    machine = relax.VirtualMachine(tvm.compile(module, target=tvm.target.Target("llvm")), tvm.cpu())
    build = time.perf_counter() - started
    args = [tvm.runtime.tensor(inputs[name]) for name in inputs.files]
    np.save(out, machine["main"](*args).numpy())
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        machine["main"](*args)
        times.append(time.perf_counter() - started)
    print(json.dumps({"build_s": build, "ms": float(np.median(times)) * 1e3}))


if __name__ == "__main__":
    main()

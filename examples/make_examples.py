"""Write the example programs as runnable binaries (build outputs, never committed).

For every preset, the demo's GEMM program (:func:`runtime.demo_gemm.demo_gemm_program`: inputs and
weights as DRAM segments, the output as a region) as ``demo_gemm_<preset>.bin`` and its assembly
``demo_gemm_<preset>.s``; and every hand-written ``examples/*.s``, assembled, as ``<name>.bin``.

Run: ``python examples/make_examples.py [OUT_DIR]`` (default ``build/examples``), then e.g.
``vtaforge sim build/examples/demo_gemm_tiny.bin --output outputs=out.npy``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from isa import AccelConfig, assemble, disassemble
from runtime.demo_gemm import demo_gemm_program

__all__ = ["EXAMPLES", "make_examples"]

#: The hand-written assembly examples beside this script.
EXAMPLES = Path(__file__).resolve().parent


def make_examples(out_dir: Path) -> list[Path]:
    """Write every example program into ``out_dir`` (created); return the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for preset in AccelConfig.preset_names():
        program = demo_gemm_program(AccelConfig.preset(preset))
        source = out_dir / f"demo_gemm_{preset}.s"
        source.write_text(disassemble(program))
        binary = source.with_suffix(".bin")
        program.save(binary)
        written += [source, binary]
    for source in sorted(EXAMPLES.glob("*.s")):
        binary = out_dir / f"{source.stem}.bin"
        assemble(source.read_text()).save(binary)
        written.append(binary)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=Path("build/examples"))
    for path in make_examples(parser.parse_args().out_dir):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

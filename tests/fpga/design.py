"""What a recorded Vivado script (:mod:`tests.fpga.tcl_stubs`) built, and what a generated
Verilog module declares: the block design's cells, properties, nets and address assignments,
and a module's ports with their interface attributes, for the tests to compare against the
board data and the accelerator's signature."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tests.fpga.tcl_stubs import Call

_PORT = re.compile(
    r"(?:\(\*\s*X_INTERFACE_INFO\s*=\s*\"(?P<info>[^\"]*)\"[^*]*\*\)\s*)?"
    r"\b(?P<dir>input|output)\s+(?:wire\s+)?(?:\[(?P<msb>\d+):0\]\s+)?(?P<name>\w+)"
)


@dataclass(frozen=True)
class VerilogPort:
    name: str
    width: int
    output: bool
    info: str | None  # its X_INTERFACE_INFO, if any


def module_ports(text: str, module: str) -> dict[str, VerilogPort]:
    """The ports of ``module`` in ``text``: ANSI (``input wire [7:0] a,``) or declared in the
    body (``input [7:0] a;``)."""
    start = re.search(rf"\bmodule\s+{module}\b", text)
    assert start, f"no module {module}"
    body = text[start.start() : text.index("endmodule", start.start())]
    ports = {}
    for found in _PORT.finditer(body):
        msb = found["msb"]
        ports[found["name"]] = VerilogPort(
            found["name"], int(msb) + 1 if msb else 1, found["dir"] == "output", found["info"]
        )
    return ports


@dataclass
class Design:
    """The block design a script's calls describe."""

    calls: list[Call]
    cells: dict[str, Call] = field(default_factory=dict)
    properties: dict[str, dict[str, str]] = field(default_factory=dict)
    interface_nets: list[tuple[str, str]] = field(default_factory=list)
    nets: list[tuple[str, ...]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for call in self.calls:
            if call.name == "create_bd_cell":
                self.cells[call.args[-1]] = call
            elif call.name == "set_property" and call.args[0] == "-dict":
                words = call.args[1].split()
                settings = dict(zip(words[::2], words[1::2], strict=True))
                self.properties.setdefault(call.args[2], {}).update(settings)
            elif call.name == "connect_bd_intf_net":
                self.interface_nets.append(call.args)
            elif call.name == "connect_bd_net":
                self.nets.append(call.args)

    def named(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]

    def index(self, name: str, last: bool = False) -> int:
        found = [i for i, c in enumerate(self.calls) if c.name == name]
        assert found, f"the script never calls {name}"
        return found[-1] if last else found[0]

    def cell_of(self, *, vlnv: str | None = None, reference: str | None = None) -> str:
        """The one cell of IP ``vlnv`` (any version) or module ``reference``."""
        found = [
            name
            for name, call in self.cells.items()
            if (vlnv and "-vlnv" in call.args and call.option("-vlnv").startswith(f"{vlnv}:"))
            or (reference and "-reference" in call.args and call.option("-reference") == reference)
        ]
        assert len(found) == 1, f"cells of {vlnv or reference}: {found}"
        return found[0]

    def net_of(self, pin: str) -> set[str]:
        """Every pin on the net that has ``pin``."""
        found = [set(net) for net in self.nets if pin in net]
        assert len(found) == 1, f"{pin} is on {len(found)} nets"
        return found[0]

    def connected(self, a: str, b: str) -> bool:
        return (a, b) in self.interface_nets or (b, a) in self.interface_nets

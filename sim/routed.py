"""The routed design as Verilog, and the models it simulates on.

nextpnr-ecp5 writes the routed design (``--write routed.json``) in its own cells: the packer has turned the
netlist yosys made into the device's sites (TRELLIS_COMB, TRELLIS_FF, TRELLIS_IO, IOLOGIC, DCCA, DP16KD with
its constant inputs folded into parameters). Yosys reads that JSON back and writes it as Verilog
(:func:`routed_verilog`); :func:`routed_models` lists the Verilog models of those cells (``sim/ecp5/routed/``)
and what they build on: this project's pre-synthesis models of the DP16KD (renamed ``DP16KD_BEHAVIOUR``, with
the routed DP16KD a wrapper that decodes nextpnr's encoding around it), the DDR registers, DELAYG and EHXPLLL.

Why not yosys's own ECP5 library: its ``TRELLIS_FF`` always takes ``DI`` (nextpnr feeds a flip-flop that has no
LUT in front of it through ``M``, with ``SD`` 0), its ``TRELLIS_COMB`` in CCU2 mode never drives ``FCO`` (the
carry out is declared again inside the generate block), and it has no IOLOGIC, DCCA or DP16KD.
:func:`route` places and routes a small design for the models' tests.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

__all__ = ["ECP5_MODELS", "ROUTED_MODELS", "routed_verilog", "routed_models", "route"]

#: This project's pre-synthesis models (``sim/ecp5/``).
ECP5_MODELS = Path(__file__).resolve().parent / "ecp5"
#: The models of nextpnr's packed cells (``sim/ecp5/routed/``).
ROUTED_MODELS = ECP5_MODELS / "routed"


def _yosys() -> str:
    from ..hdl.export.verilog import find_yosys
    return find_yosys()


def routed_verilog(routed_json, verilog) -> Path:
    """Write nextpnr's routed design ``routed_json`` as Verilog to ``verilog`` (yosys ``read_json``,
    ``write_verilog``: the top module, its ports as the design's, one instance per placed cell); returns its path.

    Raises
    ------
    subprocess.CalledProcessError
        If yosys fails.
    """
    # (in the JSON's folder, with relative names: YoWASP's tools cannot open absolute paths under /tmp)
    routed_json, verilog = Path(routed_json).resolve(), Path(verilog).resolve()
    written = routed_json.with_suffix(".written.v")
    subprocess.run([_yosys(), "-q", "-p", f"read_json {routed_json.name}; write_verilog -noattr {written.name}"],
                   cwd=routed_json.parent, check=True, capture_output=True, text=True)
    verilog.parent.mkdir(parents=True, exist_ok=True)
    written.replace(verilog)
    return verilog


def routed_models(build_dir) -> list[Path]:
    """The Verilog a routed ECP5 design simulates on, with the renamed DP16KD model written into ``build_dir``."""
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    behaviour = build_dir / "dp16kd_behaviour.v"
    text = re.sub(r"^module DP16KD\(", "module DP16KD_BEHAVIOUR(", (ECP5_MODELS / "dp16kd.v").read_text(), count=1,
                  flags=re.MULTILINE)
    if not behaviour.exists() or behaviour.read_text() != text:
        behaviour.write_text(text)
    return [behaviour, *(ECP5_MODELS / name for name in ("ddr_io.v", "delayg.v", "ehxplll.v")),
            *sorted(ROUTED_MODELS.glob("*.v"))]


def route(verilog: str, work, *, nextpnr: str, lpf: str = "",
          device_args=("--25k", "--package", "CABGA256", "--speed", "6"), top: str = "top") -> Path:
    """Synthesize ``verilog`` (module ``top``, ECP5 primitives instantiated directly) with yosys ``synth_ecp5``,
    place and route it with nextpnr-ecp5 (``lpf``: its pin constraints; pins it does not name are placed by
    nextpnr), and write the routed design as Verilog; returns ``<work>/routed.v``. ``nextpnr`` is the nextpnr-ecp5
    command (the host's toolchain gives it: ``apbbf.toolchain.use_yowasp()["NEXTPNR_ECP5"]``; this room does not
    import the host package).

    Raises
    ------
    subprocess.CalledProcessError
        If yosys or nextpnr fails.
    """
    work = Path(work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "design.v").write_text(verilog)
    (work / "design.lpf").write_text(lpf)
    subprocess.run([_yosys(), "-q", "-p", f"read_verilog -lib +/ecp5/cells_bb.v; read_verilog design.v; "
                    f"synth_ecp5 -top {top} -json synth.json"], cwd=work, check=True, capture_output=True, text=True)
    subprocess.run([nextpnr, *device_args, "--json", "synth.json", "--lpf", "design.lpf",
                    "--lpf-allow-unconstrained", "--write", "routed.json", "--quiet", "--log", "nextpnr.log"],
                   cwd=work, check=True, capture_output=True, text=True)
    return routed_verilog(work / "routed.json", work / "routed.v")

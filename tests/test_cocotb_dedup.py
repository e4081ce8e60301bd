"""The exported packet de-duplicator (``apbbf_dedup_axis``) on Icarus Verilog, driven by the cocotb benches of
:mod:`apbbf.sim.cocotb.dedup_tests` with cocotbext-axi frames and scored frame by frame against the model.

Each case is exported, compiled and run in ``build/cocotb-dedup/<name>/``, which keeps the results XML and, if a
bench failed, the waveform of the same run repeated (``apbbf_dedup_axis.fst``). Every case must run exactly
:data:`EXPECTED_TESTS` and pass them all.

The README's two commands, read from ``README.md``, on one capture (:data:`README_RUNS`): ``apbbf dedup`` as the
README runs it, then the ``apbbf export --dedup`` command it printed, run as printed; the Verilog that writes
replays the capture under :mod:`apbbf.sim.cocotb.replay_tests` and must forward exactly the frames ``apbbf dedup``
wrote, with their flags, and count what it reported (``build/cocotb-dedup/readme-*/``).
"""

import argparse
import random
import re
from pathlib import Path

import pytest

from apbbf import cli
from apbbf.model import Config
from apbbf.model.packet import KeySpec
from apbbf.sim.cocotb import runner
from apbbf.sim.cocotb.dedup_tests import COUNTERS

from .cocotb_results import results as read_results

BUILD = Path(__file__).resolve().parents[1] / "build" / "cocotb-dedup"
CONFIG = Config(2, 3, segment_blocks=16, span=300, time_width=16, seed=7)
SEED = 20261122

MULTI = "ipv4=frame:0+12,l3:0+1,l3:2+6,l3:9+1,l3:12+*;ipv6=frame:0+12,l3:0+*/f00fffffffffff00;other=frame"
CASES = {
    "w64-drop-l3l4": (KeySpec.l3l4(), dict(data_width=64, action="drop")),
    "w512-mark-frame": (KeySpec.frame(), dict(data_width=512, action="mark")),
    # five ranges: the MAC addresses and the IPv4 header without DSCP, TTL and checksum (a copy with another VLAN
    # tag, TTL or DSCP is a duplicate), the rest of the packet; IPv6 with its own recipe
    "w64-drop-multi": (KeySpec.parse(MULTI), dict(data_width=64, action="drop")),
}
#: Every case is outside ``make test`` (``make test-slow`` runs them): Icarus runs the 512-bit design at a few
#: hundred cycles/s, and the multi-range recipe's export alone takes half a minute. ``make test`` runs the exported
#: de-duplicator on Icarus through the README's commands (``l3l4``, test_readme_commands_on_icarus: a capture
#: replayed with idle gaps and backpressure), and every recipe, multi-range ones included, in Amaranth's simulator
#: (tests/test_packet_dedup.py, tests/test_key_extractor_recipes.py).
SLOW = set(CASES)

EXPECTED_TESTS = frozenset([
    "random_traffic/idle=None/backpressure=None", "random_traffic/idle=pause30x3/backpressure=pause40x3",
    "masked_copies", "every_length", "back_to_back_minimum_frames", "jumbo_frames", "reset_mid_frame",
])


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if name in SLOW else name
                                  for name in CASES])
def test_icarus(name):
    runner.check_simulator("icarus")
    case = name
    spec, options = CASES[case]
    build_dir = BUILD / name
    results = build_dir / "results.xml"
    try:
        runner.run_dedup(CONFIG, spec, build_dir, sim="icarus", seed=SEED, waves="on-failure", **options)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"cocotb dedup on Icarus, case {name} (COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed)
                    + f"; waveform {build_dir / 'apbbf_dedup_axis.fst'}", pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    expected = EXPECTED_TESTS
    assert set(ran) == expected and len(ran) == len(expected), sorted(ran)
    if case == "w64-drop-l3l4":
        _check_ports((build_dir / f"{runner.DEDUP_TOPLEVEL}.v").read_text())


@pytest.mark.slow
def test_export_ports(tmp_path):
    """The top that ``apbbf.export`` writes: :func:`_check_ports` (test_icarus checks the same on the top its 64-bit
    l3l4 bench exported; in ``make test`` the README's replay binds cocotbext-axi to the ports by their names)."""
    from apbbf.export import export_dedup_verilog
    path = export_dedup_verilog(CONFIG, KeySpec.l3l4(), tmp_path / "dedup.v", data_width=64, action="mark")
    _check_ports(path.read_text())


def _check_ports(text):
    """The exported top's ports (64-bit l3l4 de-duplicator of CONFIG) carry AXI4-Stream names and the header says
    what the design is."""
    assert text.startswith("// apbbf_dedup_axis: packet de-duplicator")
    assert "Key: l3l4" in text and "tuser[16:1] (first beat)" in text
    assert "predicted false-positive rate (worst case, just before a shift): " in text
    header = text[text.index("module apbbf_dedup_axis("):]
    header = header[:header.index(");")]
    ports = {p.strip() for p in header[header.index("(") + 1:].split(",")}
    assert ports == {"aclk", "aresetn", *(f"s_axis_t{s}" for s in ("valid", "ready", "data", "keep", "last", "user")),
                     *(f"m_axis_t{s}" for s in ("valid", "ready", "data", "keep", "last", "user")),
                     "frames", "duplicates", "dropped", "unchecked", "errored"}
    assert "input [63:0] s_axis_tdata;" in text and "input [16:0] s_axis_tuser;" in text
    assert "output [2:0] m_axis_tuser;" in text


@pytest.mark.slow
def test_export_command(tmp_path):
    """``apbbf export --dedup`` writes the de-duplicator with the options given (a key recipe of several ranges,
    in ``apbbf dedup``'s syntax); without a span it says why."""
    import subprocess
    import sys
    out = tmp_path / "d.v"
    base = [sys.executable, "-W", "error", "-m", "apbbf.export", "--dedup", "--k", "2", "--l", "3",
            "--segment-blocks", "16", "--data-width", "64", "--seed", "5", "-o", str(out)]
    result = subprocess.run(base + ["--span", "300", "--action", "mark", "--key", MULTI], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert f"Key: {KeySpec.parse(MULTI)} " in text and "Action: mark" in text and "seed=0x5" in text
    assert "key extractor: 5 range slot(s)" in text
    assert "packet de-duplicator" in result.stdout
    result = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "span" in result.stderr


# The README's two commands on one capture: apbbf dedup, then the core it prints, on Icarus -----------------------

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands():
    """The README's two commands, as it shows them: the ``apbbf dedup`` command of its console example, the
    ``export`` line that example prints, and the ``apbbf export --dedup`` command of the block after it (its lines
    joined)."""
    text = README.read_text()
    console = re.search(r"```console\n\$ (apbbf dedup [^\n]*)\n(.*?)```", text, re.S)
    assert console, f"{README}: no console example of apbbf dedup"
    printed = [line.split(None, 1)[1] for line in console.group(2).splitlines() if line.startswith("export ")]
    assert len(printed) == 1, f"{README}: the apbbf dedup example should print one export line"
    block = re.search(r"```sh\n(apbbf export --dedup .*?)```", text, re.S)
    assert block, f"{README}: no sh block with the apbbf export --dedup command"
    export = " ".join(block.group(1).replace("\\\n", " ").split())
    return console.group(1), printed[0], export


def _options(command: str) -> list:
    """The options of a command line, in order, as (name, value) pairs (a flag's value is None)."""
    import shlex
    words = shlex.split(command) + [""]
    return [(word, None if words[n + 1].startswith("-") else words[n + 1])
            for n, word in enumerate(words[:-1]) if word.startswith("-")]


#: The comment ``apbbf dedup --action mark`` gives a marked frame (pcapng).
MARK_COMMENT = b"apbbf dedup: duplicate"

#: What the README's dedup command prints that does not depend on the capture's rate: the export command must
#: give the same values (the sizing options, --k ... --extra-segments, follow the capture).
SAME_VALUES = ("--key", "--action", "--max-frame", "--span", "--time-width", "--seed", "-o")


def test_readme_commands_agree():
    """The export command the README's ``apbbf dedup`` example prints is the command the README then gives, and it
    builds the Config (seed included) that the example printed."""
    from apbbf.dedup import parse_config
    dedup, printed, export = readme_commands()
    assert printed == export
    options = dict(_options(export))
    seed = dict(_options(dedup))["--seed"]
    assert options["--seed"] == seed
    text = README.read_text()
    config = parse_config(next(line for line in text.splitlines() if line.startswith("config   "))[9:].split(":")[0])
    assert config.seed == int(seed, 0)
    assert [(name, int(options[f"--{name.replace('_', '-')}"])) for name in
            ("k", "l", "block_bits", "block_hashes", "segment_blocks", "span", "time_width", "extra_segments")] == \
        [(name, getattr(config, name)) for name in
         ("k", "l", "block_bits", "block_hashes", "segment_blocks", "span", "time_width", "extra_segments")]


def _edge_sizes(max_frame: int, data_width: int) -> tuple:
    """The longest frame the datapath checks with ``max_frame`` and the shortest it releases unchecked."""
    from apbbf.model.dedup import oversize
    lanes = data_width // 8
    longest = ((max_frame + lanes - 1) // lanes + 1) * lanes
    assert not oversize([longest], max_frame, data_width)[0] and oversize([longest + 1], max_frame, data_width)[0]
    return longest, longest + 1


#: The runs of the README's two commands: the options added to its dedup command, the frames, the traffic seed
#: and traffic options, the cocotb tests run (None: all), the least false positives the run must have. The frames
#: above ``max_frame`` are the longest the datapath checks and the shortest it releases unchecked (with copies),
#: and the jumbo frames named. The quick run keeps Icarus's cycles few (it simulates this design at about 100 to
#: 300 cycles a second): 64 bits, short frames and the least ``max_frame`` the design takes for ``l3l4``. The run
#: with a high fp target has false positives: they are where a hash seed other than the printed one would show.
#: The mark run reads and writes pcapng (under the README's file names: the format is read from the file), with
#: errored frames: the design's mark and errored flags against apbbf dedup's comments and the capture's flags.
README_RUNS = {
    "readme-w64-quick": dict(added=["--data-width", "64", "--max-frame", "288"], frames=24, seed=20,
                             traffic=dict(jumbo=0.3, sizes=((60, 6), (120, 2)), rate=4e3, duplicates=0.5),
                             tests="replay/idle=None/backpressure=None", false_positives=0),
    "readme-w64-fp": dict(added=["--data-width", "64", "--max-frame", "288", "--fp", "0.3"], frames=200, seed=3,
                          traffic=dict(jumbo=0.05, sizes=((60, 6), (120, 2)), rate=4e4, duplicates=0.3),
                          tests="replay/idle=pause30x3/backpressure=pause40x3", false_positives=3),
    "readme-w64-mark": dict(added=["--data-width", "64", "--max-frame", "288", "--action", "mark"], frames=60,
                            seed=24,
                            traffic=dict(jumbo=0.1, sizes=((60, 6), (120, 2)), rate=1e4, duplicates=0.4),
                            format="pcapng", errored=0.1, tests="replay/idle=None/backpressure=None",
                            false_positives=0),
    "readme-w512": dict(added=[], frames=40, seed=0, traffic=dict(jumbo=0.15, jumbo_sizes=(9014,)), tests=None,
                        false_positives=0),
}


def readme_traffic(name: str):
    """The capture of run ``name``: ``(time_ns, frame, copy kind)``, with frames above ``max_frame`` and copies
    within and outside the README's window."""
    import shlex

    from .dedup_traffic import traffic
    run = README_RUNS[name]
    added, count, seed, sizes = run["added"], run["frames"], run["seed"], run["traffic"]
    options = dict(_options(" ".join(shlex.split(readme_commands()[0]) + added)))
    data_width, max_frame = int(options.get("--data-width", 512)), int(options.get("--max-frame", 9600))
    checked, released = _edge_sizes(max_frame, data_width)
    sizes = dict(sizes, jumbo_sizes=(checked, released, *sizes.get("jumbo_sizes", ())))
    items = list(traffic(count, seed, window=1_000_000, **{"rate": 1e4, "duplicates": 0.4, **sizes}))
    kinds = [kind for _, _, kind in items]
    copied = {len(frame) for _, frame, kind in items if kind in ("exact", "ttl", "dscp", "late_in")}
    return items, (checked in copied and released in copied and "late_out" in kinds
                   and len({"exact", "ttl", "vlan", "dscp", "late_in"} & set(kinds)) >= 2)


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.slow) if not name.endswith("-quick") else name
                                  for name in README_RUNS])
def test_readme_commands_on_icarus(name, tmp_path, monkeypatch, capsys):
    """``apbbf dedup`` run as the README shows it, on a capture with frames above ``max_frame`` (the longest frame
    the datapath checks and the shortest it releases among them, with copies), then the ``apbbf export --dedup``
    command it printed, run as printed: the Verilog that writes, replaying the capture on Icarus with each frame's
    tick in ``tuser``, forwards exactly the frames ``apbbf dedup`` wrote, with the flags its rule gives (unchecked:
    the frames above ``max_frame``), and counts what it reported."""
    import shlex

    from apbbf.capture import read_capture
    from apbbf.dedup import parse_config
    from apbbf.export import add_parser as export_parser
    from apbbf.model.dedup import oversize, to_ticks
    from apbbf.sim.cocotb.replay_tests import write_replay

    from .dedup_traffic import write_pcap
    from .test_dedup import _read_back, write_dpkt_pcapng

    runner.check_simulator("icarus")
    run = README_RUNS[name]
    added, count, seed, testcase = run["added"], run["frames"], run["seed"], run["tests"]
    dedup, _, readme_export = readme_commands()
    argv = shlex.split(dedup)[1:] + added
    options = dict(_options(" ".join(argv)))
    data_width, max_frame = int(options.get("--data-width", 512)), int(options.get("--max-frame", 9600))
    print(f"{name}: traffic seed {seed}, COCOTB_RANDOM_SEED={SEED}")
    items, wanted = readme_traffic(name)
    assert wanted, f"traffic seed {seed}: frames at the edge of max_frame and copies within and outside the " \
                   "window are wanted"
    lengths = [len(frame) for _, frame, _ in items]

    monkeypatch.chdir(tmp_path)
    capture, kept = argv[1], options["-o"]
    rng = random.Random(seed)
    errored = [rng.random() < run.get("errored", 0) for _ in items]
    if run.get("format") == "pcapng":                   # its name is the README's: the format is read by its magic
        write_dpkt_pcapng(capture, [(t, frame, kind, bad) for (t, frame, kind), bad in zip(items, errored)])
    else:
        write_pcap(capture, items)
    status = cli.main(argv)
    report = capsys.readouterr().out
    print(report)
    assert status == 0, report
    lines = {line[:8].strip(): line[9:] for line in report.splitlines()}
    false_positives = int(lines["result"].split("false positives ")[1].split(":")[0])
    assert false_positives >= run["false_positives"], f"traffic seed {seed}: {false_positives} false positives"

    # the export command printed is the README's, but for the values the capture's sizing chose
    export = lines["export"]
    assert [n for n, _ in _options(export)] == [n for n, _ in _options(readme_export)]
    assert {n: v for n, v in _options(export) if n in SAME_VALUES} == \
        {n: v for n, v in _options(readme_export) + _options(" ".join(added)) if n in SAME_VALUES}
    assert dict(_options(export))["--data-width"] == str(data_width)

    assert cli.main(shlex.split(export)[1:]) == 0
    capsys.readouterr()
    parser = argparse.ArgumentParser()
    export_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(shlex.split(export)[1:])
    verilog = tmp_path / args.output
    config = parse_config(str(verilog))
    assert config == parse_config(lines["config"].split(":")[0])

    # the capture as apbbf dedup read it, its ticks, and what it wrote and counted
    tick = int(lines["window"].split(" ticks of ")[1].split()[0])
    source = read_capture(capture)
    frames = [source.data[a:a + n].tobytes() for a, n in zip(source.offsets.tolist(), source.caplens.tolist())]
    assert frames == [frame for _, frame, _ in items]
    ticks, _ = to_ticks(source.times, tick)
    assert source.errored.tolist() == errored
    out = read_capture(kept)
    forwarded = [out.data[a:a + n].tobytes() for a, n in zip(out.offsets.tolist(), out.caplens.tolist())]
    # the flags: marked, the comment apbbf dedup adds (read back by scapy); unchecked, a frame the datapath
    # releases for its length (drop only); errored, as the capture says
    marked = [MARK_COMMENT in comments for _, _, comments in _read_back(kept)]
    unchecked = oversize([len(f) for f in forwarded], args.max_frame, args.data_width, args.fcs) & \
        (args.action == "drop") & ~out.errored
    counters = dict(zip(COUNTERS, map(int, re.findall(r"\d+", lines["counters"].split("(")[0]))))
    assert counters["frames"] == count and counters["errored"] == sum(errored), counters
    assert counters["unchecked"] == sum(unchecked), counters
    if args.action == "drop":
        assert counters["unchecked"] == sum(oversize(lengths, max_frame, data_width)) > 0, counters
        assert counters["dropped"] > 0 and not any(marked), counters
    else:
        assert counters["duplicates"] == sum(marked) > 0 and sum(errored) > 0, counters
    replay = write_replay(tmp_path / "replay.json", zip(frames, ticks.tolist(), errored),
                          [(frame, (int(m), int(u), int(e))) for frame, m, u, e in
                           zip(forwarded, marked, unchecked, out.errored.tolist())], counters)

    build_dir = BUILD / name
    results = build_dir / "results.xml"
    try:
        runner.run_dedup_replay(verilog, replay, build_dir, config=config, spec=KeySpec.parse(args.key), sim="icarus",
                                seed=SEED, testcase=testcase, waves=False, data_width=args.data_width,
                                action=args.action, fcs=args.fcs, max_frame=args.max_frame,
                                timestamps=args.timestamps, key_queue=args.key_queue)
    except SystemExit as exit_:
        failed = read_results(results)[1] if results.exists() else [f"no results file (simulator exit {exit_.code})"]
        pytest.fail(f"{name} (traffic seed {seed}, COCOTB_RANDOM_SEED={SEED}): " + "; ".join(failed), pytrace=False)
    ran, failed = read_results(results)
    assert not failed, failed
    assert ran and (testcase is None or set(ran) == {testcase}), ran

"""cocotb benches of the exported appliance (:mod:`apbbf.sim.cocotb.appliance_runner`): cocotbext-eth's
``RgmiiSource`` and ``RgmiiSink`` at 1000 Mb/s on both ports, frames built with scapy, and every frame out of
port 1 scored against :class:`apbbf.model.dedup.Dedup` with the same Config, seed and times (the times the
de-duplicator took, read from ``now_us`` when ``frame_start`` is high): the frames, their order, their bytes, their
FCS and the counters must be exactly the model's.

Both receive clocks run 100 ppm fast and the transmit clock 100 ppm slow (the PHYs' clocks are not locked);
``sync`` runs at 50 MHz, as on the boards. The same benches run on a board's top
(:mod:`apbbf.sim.cocotb.board_runner`): there the board's oscillator, 100 ppm slow, is the only clock driven
besides the receive clocks, and ``sync`` and ``eth_tx`` come from its PLL.
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, First, ReadOnly, RisingEdge, Timer
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from ...model import Config
from ...model.dedup import Dedup
from ...model.packet import KeySpec
from ...model.protocol import (APPLIANCE_COUNTERS, REPLY_SYNC, Command, ApplianceStatus, Status, crc16)
from ...model.registers import ACTIONS, Control, register_map
from ...model.timeanalysis import window_capacity
from .appliance_runner import PARAMS_ENV
from .mac_tests import RX_PERIOD_FS, TX_PERIOD_FS, imix_length
from .testbench import _quiet

#: ``sync``, 50 MHz.
SYNC_PERIOD_FS = 20_000_000
#: Frames the de-duplicator checks (the appliance's MAX_FRAME).
MAX_FRAME = 1522


def _params():
    text = os.environ.get(PARAMS_ENV)
    if not text:
        raise ValueError(f"{PARAMS_ENV} is not set: run the benches through "
                         "apbbf.sim.cocotb.appliance_runner.run_appliance")
    return json.loads(text)


def _seed(name: str) -> int:
    return (cocotb.RANDOM_SEED * 1_000_003 + sum(map(ord, name))) & 0xFFFFFFFF


def packet(rng: random.Random, length: int, *, vlan: bool = False):
    """A scapy Ethernet/[802.1Q]/IPv4/UDP packet of ``length`` bytes without FCS (>= 46)."""
    p = Ether(dst=rng.getrandbits(48).to_bytes(6, "big"), src=rng.getrandbits(48).to_bytes(6, "big"))
    if vlan:
        p = p / Dot1Q(vlan=rng.randrange(1, 4095), prio=rng.randrange(8))
    p = (p / IP(src=f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}", dst="192.168.1.2",
                ttl=rng.randrange(2, 256), tos=rng.randrange(256))
         / UDP(sport=rng.randrange(65536), dport=rng.randrange(65536)))
    header = len(bytes(p))
    p = p / Raw(bytes(rng.getrandbits(8) for _ in range(max(0, length - header))))
    return Ether(bytes(p))


def copy_of(rng: random.Random, original):
    """A copy of ``original`` as a tap sees it one hop further or re-tagged: the same IP packet with another
    TTL, DSCP or VLAN tag, or the very same bytes (the ``l3l4`` key masks all of these)."""
    p = original.copy()
    change = rng.choice(["ttl", "dscp", "vlan", "same"])
    if change == "ttl":
        p[IP].ttl = (p[IP].ttl - rng.randrange(1, 4)) % 256
    elif change == "dscp":
        p[IP].tos = (rng.randrange(64) << 2) | (p[IP].tos & 3)
    elif change == "vlan":
        if Dot1Q in p:
            if rng.random() < 0.5:
                p[Dot1Q].vlan = rng.randrange(1, 4095)
            else:                                             # the tag removed
                ether = Ether(dst=p.dst, src=p.src, type=0x0800)
                p = ether / p[IP].copy()
        else:                                                 # a tag added
            ether = Ether(dst=p.dst, src=p.src)
            p = ether / Dot1Q(vlan=rng.randrange(1, 4095)) / p[IP].copy()
    if change in ("ttl", "dscp"):
        del p[IP].chksum
    return Ether(bytes(p)), change


class TB:
    def __init__(self, dut, name):
        self.dut = dut
        self.params = _params()
        self.config = Config(**self.params["config"])
        self.spec = getattr(KeySpec, self.params["key"])()
        self.action = self.params["action"]
        self.seed = _seed(name)
        self.rng = random.Random(self.seed)
        dut._log.info("bench %s: seed %d (COCOTB_RANDOM_SEED %d), %s", name, self.seed, cocotb.RANDOM_SEED,
                      self.config)
        self.source = [RgmiiSource(getattr(dut, f"port{p}_rgmii_rxd"), getattr(dut, f"port{p}_rgmii_rx_ctl"),
                                   getattr(dut, f"port{p}_rgmii_rx_clk")) for p in (0, 1)]
        self.sink = [RgmiiSink(getattr(dut, f"port{p}_rgmii_txd"), getattr(dut, f"port{p}_rgmii_tx_ctl"),
                               getattr(dut, f"port{p}_phy_tx_clk")) for p in (0, 1)]
        for endpoint in self.source + self.sink:
            _quiet(endpoint)
        self.times = []
        self.decided = []                                # with the DRAM: (unchecked, late) per frame

    async def reset(self):
        """Clocks on (they start low), reset, then wait while the filter clears its memories (with the DRAM: the
        SDRAM chip model on the pins from time 0, the gateware's power-up wait and initialisation, then the
        clearing of every word of the filter's region)."""
        if self.params.get("board"):
            await self._board_reset()
            return
        self.dut.rst.value = 1
        dram = self.params.get("dram")
        if dram:
            self.sdram = _sdram_chip(self.dut, dram, SYNC_PERIOD_FS / 1e6, self.params.get("power_up_us", 200.0))
            cocotb.start_soon(self.sdram.run())
        rx0, rx1, tx = _periods(self.params)
        for clock, period in ((self.dut.port0_rgmii_rx_clk, rx0), (self.dut.port1_rgmii_rx_clk, rx1),
                              (self.dut.eth_tx_clk, tx), (self.dut.clk, SYNC_PERIOD_FS)):
            Clock(clock, period, unit="fs").start(start_high=False)
        await ClockCycles(self.dut.clk, 10)
        self.dut.rst.value = 0
        if dram:
            for _ in range(30_000):
                await RisingEdge(self.dut.clk)
                if int(self.dut.dram_ready.value):
                    break
            else:
                raise AssertionError("the DRAM never came up (dram_ready low 30,000 cycles after reset)")
            await ClockCycles(self.dut.clk, 4 * self.config.memory_blocks * self.config.block_bits // 32 + 200)
            cocotb.start_soon(self._decisions())
        else:
            await ClockCycles(self.dut.clk, self.config.segment_blocks + 100)
        cocotb.start_soon(self._stamps())

    async def _board_reset(self):
        """The board top (:mod:`apbbf.sim.cocotb.board_runner`): its reference clock on ``xtal`` and the PHYs'
        receive clocks; ``sync`` and ``eth_tx`` come from the PLL, each held in reset until it locks; then the
        filter's clearing. The PHYs' reset pins (active low) must be high. After a bench before this one (whose
        clocks stopped with it) the PLL has lost its lock, and its lock's reset synchronizers reset the design as
        the rst port does on the generic export."""
        if self.dut.pll_lock.value == 1:
            await Timer(1, "us")
            assert self.dut.pll_lock.value == 0, "the PLL kept its lock with its reference clock stopped"
        for clock, period in ((self.dut.port0_rgmii_rx_clk, RX_PERIOD_FS),
                              (self.dut.port1_rgmii_rx_clk, RX_PERIOD_FS),
                              (self.dut.xtal, self.params["xtal_period_fs"])):
            Clock(clock, period, unit="fs").start(start_high=False)
        lock = RisingEdge(self.dut.pll_lock)
        if await First(lock, Timer(100, "us")) is not lock:
            raise AssertionError("the PLL did not lock within 100 us of the reference clock starting")
        # the clocks the PLL makes: sync 50 MHz and eth_tx 125 MHz, as exact as the crystal
        ppm = self.params["xtal_period_fs"] / self.params["xtal_nominal_fs"]
        for clock, nominal_fs in ((self.dut.clk, SYNC_PERIOD_FS), (self.dut.eth_tx_clk, 8_000_000)):
            await RisingEdge(clock)
            start = cocotb.utils.get_sim_time("fs")
            await ClockCycles(clock, 100)
            period = (cocotb.utils.get_sim_time("fs") - start) / 100
            assert abs(period / (nominal_fs * ppm) - 1) < 1e-6, \
                f"{clock._name} runs at {1e9 / period:.4f} MHz, not {1e9 / nominal_fs:g} (the PLL's dividers)"
        await ClockCycles(self.dut.clk, self.config.segment_blocks + 100)
        for name in ("port0_phy_rst_n", "port1_phy_rst_n"):
            if hasattr(self.dut, name):
                assert int(getattr(self.dut, name).value) == 1, f"{name} is low: the PHY is held in reset"
        cocotb.start_soon(self._stamps())

    async def _decisions(self):
        """With the DRAM: each frame's (unchecked, late) from the de-duplicator's counters, which count one
        decision per cycle at most, in frame order (a late frame was inserted; another unchecked one was not)."""
        last = (0, 0, 0)
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            now = tuple(int(getattr(self.dut, name).value) for name in ("dedup_frames", "dedup_unchecked",
                                                                           "dedup_late"))
            if now[0] != last[0]:
                self.decided.append((now[1] != last[1] and now[2] == last[2], now[2] != last[2]))
            last = now

    async def _stamps(self):
        """The time of each frame the de-duplicator takes, in order."""
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            if int(self.dut.frame_start.value):
                self.times.append(int(self.dut.now_us.value))

    def counters(self):
        """The appliance's counters (of a routed netlist: those it has under their names)."""
        return {name: int(getattr(self.dut, name).value) for name in APPLIANCE_COUNTERS if hasattr(self.dut, name)}

    async def quiet(self, cycles=600):
        """Wait until both sources are idle and no port has transmitted for ``cycles`` clocks of ``sync`` (with
        the DRAM, past the answer deadline too: a frame waits that long for its answer at most)."""
        if self.params.get("dram"):
            cycles = max(cycles, 1024 + 200)
        for source in self.source:
            await source.wait()
        idle = 0
        while idle < cycles:
            await RisingEdge(self.dut.clk)
            busy = int(self.dut.port0_rgmii_tx_ctl.value) or int(self.dut.port1_rgmii_tx_ctl.value)
            idle = 0 if busy else idle + 1

    def wire(self, port):
        """Frames sent by ``port``: (payload without FCS, FCS good)."""
        out = []
        while not self.sink[port].empty():
            frame = self.sink[port].recv_nowait()
            assert frame.get_preamble() == b"\x55" * 7 + b"\xd5", f"port {port}: preamble {frame.get_preamble()}"
            out.append((bytes(frame.get_payload()), bool(frame.check_fcs())))
        return out

    # The UART, 8N1 at sync / divisor.
    async def uart_send(self, data):
        divisor = self.params["divisor"]
        for byte in data:
            for level in [0] + [(byte >> i) & 1 for i in range(8)] + [1]:
                self.dut.uart_rx.value = level
                await ClockCycles(self.dut.clk, divisor)

    async def uart_byte(self):
        divisor = self.params["divisor"]
        await FallingEdge(self.dut.uart_tx)
        await ClockCycles(self.dut.clk, divisor // 2)
        byte = 0
        for i in range(8):
            await ClockCycles(self.dut.clk, divisor)
            byte |= int(self.dut.uart_tx.value) << i
        await ClockCycles(self.dut.clk, divisor)
        assert int(self.dut.uart_tx.value) == 1, "framing error on uart_tx"
        return byte

    async def appliance_status(self) -> ApplianceStatus:
        """APPLIANCE over the UART: the request sent, the reply read and checked."""
        body = bytes([Command.APPLIANCE, 0])
        reader = cocotb.start_soon(self._reply())
        await self.uart_send(bytes([0xA5]) + body + crc16(body).to_bytes(2, "little"))
        command, status, payload = await reader
        assert (command, status) == (Command.APPLIANCE, Status.OK), (command, status)
        return ApplianceStatus.unpack(payload)

    async def register(self, command, offset: int, value: int = 0):
        """REG_READ or REG_WRITE over the UART: (status, the value read or None)."""
        body = bytes([command, 1]) + offset.to_bytes(4, "little") + value.to_bytes(4, "little")
        reader = cocotb.start_soon(self._reply())
        await self.uart_send(bytes([0xA5]) + body + crc16(body).to_bytes(2, "little"))
        got, status, payload = await reader
        assert got == command, (got, command)
        return status, (int.from_bytes(payload, "little") if payload else None)

    async def _reply(self):
        assert await self.uart_byte() == REPLY_SYNC
        header = bytes([await self.uart_byte() for _ in range(3)])
        payload = bytes([await self.uart_byte() for _ in range(header[2])])
        crc = bytes([await self.uart_byte() for _ in range(2)])
        assert int.from_bytes(crc, "little") == crc16(header + payload), "reply CRC"
        return header[0], header[1], payload


def _periods(params: dict) -> tuple[int, int, int]:
    """The receive clocks of ports 0 and 1 and the transmit clock, fs: 125 MHz off by ``rx_ppm`` (per port) and
    ``tx_ppm`` (positive: fast) when the runner gives them; else both receive clocks 100 ppm fast and the transmit
    clock 100 ppm slow."""
    if "rx_ppm" not in params and "tx_ppm" not in params:
        return RX_PERIOD_FS, RX_PERIOD_FS, TX_PERIOD_FS
    rx = params.get("rx_ppm", [100, 100])
    return (*(round(8_000_000 / (1 + ppm * 1e-6)) for ppm in rx),
            round(8_000_000 / (1 + params.get("tx_ppm", -100) * 1e-6)))


def _sdram_chip(dut, settings: dict, tck_ns: float, power_up_us: float = 200.0):
    """The SDRAM chip model on the wrapper's pins, as the 5A-75B wires them (CS#, CKE and DQM tied), checking the
    power-up wait the gateware was given."""
    from .sdram_chip import M12L16161A_5T, Geometry, SdramChecker, SdramChip
    geometry = Geometry(banks=settings["nbanks"], rows=settings["nrows"], columns=settings["ncols"],
                        data_bits=settings["databits"])
    checker = SdramChecker(M12L16161A_5T, geometry, tck=tck_ns, power_up=power_up_us * 1000)
    pins = {name: getattr(dut, f"sdram_{name}") for name in ("a", "ba", "ras_n", "cas_n", "we_n", "dq")}
    pins.update(cs_n=dut.chip_cs_n, cke=dut.chip_cke, dm=dut.chip_dm, dq_drive=dut.dq_drive, dq_oe=dut.dq_oe)
    return SdramChip(dut.sdram_clk, pins, checker, log=dut._log)


def score(tb, sent, port1, changes=None, unchecked=(), decisions=None):
    """Every frame out of port 1 against the model: ``sent`` is (bytes without FCS, MAC marks it bad) per frame
    into port 0, in order; ``changes`` maps a frame index to the run-time changes made before it (``("action",
    name)``, ``("clear",)``, ``("window", span)``), ``unchecked`` holds the indices of the frames passed unchecked;
    returns the model's counters. ``decisions``, a list, gets each frame's (duplicate, unchecked, late) as the model
    took it."""
    assert len(tb.times) == len(sent), f"{len(tb.times)} frames into the de-duplicator, {len(sent)} sent " \
                                       f"(seed {tb.seed})"
    model = Dedup(tb.config, tb.spec, tb.action, max_frame=MAX_FRAME, data_width=64)
    expected = []
    changes = changes or {}
    dram = bool(tb.params.get("dram"))
    for index, ((data, bad), time) in enumerate(zip(sent, tb.times)):
        for change in changes.get(index, ()):
            {"action": model.set_action, "clear": model.clear, "window": model.set_window}[change[0]](*change[1:])
        passed, late = index in unchecked, False
        if dram and index < len(tb.decided):             # with the DRAM, as its counters said
            passed, late = tb.decided[index]
        duplicate, forward, _ = model.frame(data, time, errored=bad, unchecked=passed, late=late)
        if decisions is not None:
            decisions.append((duplicate, passed, late))
        if forward:
            expected.append((data + bytes(max(0, 60 - len(data))), not bad))
    for index, (got, want) in enumerate(zip(port1, expected)):
        assert got == want, f"port 1 frame {index}: got {got[0].hex()} FCS good {got[1]}, model {want[0].hex()} " \
                            f"FCS good {want[1]} (seed {tb.seed}; the de-duplicator's counters " \
                            f"{ {name: int(getattr(tb.dut, 'dedup_' + name).value) for name in COUNTED} }, " \
                            f"the model's {model.counters.as_dict()})"
    assert len(port1) == len(expected), f"port 1 sent {len(port1)} frames, the model forwards {len(expected)} " \
                                        f"(seed {tb.seed})"
    return model.counters


#: The de-duplicator's counters, as the appliance names them after ``dedup_``.
COUNTED = ("frames", "duplicates", "dropped", "unchecked", "errored")


@cocotb.test()
async def dedup_port0_to_port1(dut):
    """Frames into port 0 as a tap delivers them: IMIX with VLAN tags, copies that differ in TTL, DSCP or VLAN
    tag, exact copies, copies after a pause longer than the window, bursts of minimum-size frames at the minimum
    gap, bad FCS, runts; the UART read during the traffic (unless the runner's ``uart`` is false). Port 1's
    frames, their order, bytes and FCS, and every counter are the model's; the UART's counters are the ports'
    own."""
    tb = TB(dut, "dedup_port0_to_port1")
    await tb.reset()
    rng = tb.rng
    c = tb.config
    pause_us = c.span + c.shift_interval + 2                  # past the window and its expiry bound
    sent, originals, kinds = [], [], {}
    frames = tb.params["frames"]
    uart = tb.params.get("uart", True)

    async def read_during():
        while int(dut.port0_rx_frames.value) < frames // 3:
            await RisingEdge(dut.clk)
        return await tb.appliance_status()

    readout = cocotb.start_soon(read_during()) if uart else None
    while len(sent) < frames:
        kind = rng.choices(["new", "copy", "burst", "bad_fcs", "runt", "late_copy"],
                           weights=[40, 30, 6, 6, 6, 3])[0]
        if kind == "late_copy" and not originals:
            kind = "new"
        kinds[kind] = kinds.get(kind, 0) + 1
        batch = []
        if kind == "new":
            p = packet(rng, imix_length(rng), vlan=rng.random() < 0.3)
            originals.append(p)
            batch.append((bytes(p), False, GmiiFrame.from_payload(bytes(p))))
        elif kind == "copy" and originals:
            p, _ = copy_of(rng, rng.choice(originals[-20:]))
            batch.append((bytes(p), False, GmiiFrame.from_payload(bytes(p))))
        elif kind == "burst" or kind == "copy":
            for _ in range(8):
                p = packet(rng, 60) if not originals or rng.random() < 0.6 else copy_of(rng, originals[-1])[0]
                originals.append(p)
                batch.append((bytes(p), False, GmiiFrame.from_payload(bytes(p))))
        elif kind == "bad_fcs":
            p = packet(rng, imix_length(rng))
            raw = bytearray(GmiiFrame.from_payload(bytes(p)).data)
            raw[-1 - rng.randrange(4)] ^= 1 << rng.randrange(8)
            batch.append((bytes(p), True, GmiiFrame(raw)))
        elif kind == "runt":
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(20, 60)))
            batch.append((data, True, GmiiFrame.from_payload(data, min_len=0)))
        else:                                                 # late_copy
            await tb.source[0].wait()
            await Timer(pause_us, "us")
            p, _ = copy_of(rng, rng.choice(originals))
            batch.append((bytes(p), False, GmiiFrame.from_payload(bytes(p))))
        for data, bad, frame in batch:
            tb.source[0].ifg = 12 if kind == "burst" or rng.random() < 0.7 else rng.randrange(13, 40)
            await tb.source[0].send(frame)
            sent.append((data, bad))
    during = await readout if uart else None
    await tb.quiet()
    counters = score(tb, sent, tb.wire(1))
    hw = tb.counters()
    for name in ("frames", "duplicates", "dropped", "unchecked", "errored"):
        assert hw[f"dedup_{name}"] == getattr(counters, name), (name, hw, counters, tb.seed)
    bad_fcs, runts = kinds.get("bad_fcs", 0), kinds.get("runt", 0)
    assert (hw["port0_rx_frames"], hw["port0_rx_bad_fcs"], hw["port0_rx_runts"], hw["port0_rx_overflows"]) == (
        len(sent), bad_fcs, runts, 0), hw
    assert (hw["port1_tx_frames"], hw["port1_tx_underflows"]) == (counters.frames - counters.dropped, 0), hw
    assert counters.duplicates > 0 and counters.errored == bad_fcs + runts
    if uart:
        # the UART's counters during the traffic: none past the end, taken while frames came in; after it, the
        # ports' own
        assert all(during.counters[name] <= hw[name] for name in APPLIANCE_COUNTERS), (during, hw)
        assert frames // 3 <= during.counters["port0_rx_frames"] < len(sent), (during, len(sent))
        after = await tb.appliance_status()
        assert after.counters == hw and (after.action, after.key, after.max_frame) == (
            tb.action, tb.params["key"], MAX_FRAME)
    dut._log.info("%d frames in (%s), %d out of port 1; model counters %s", len(sent), kinds,
                  counters.frames - counters.dropped, counters.as_dict())


@cocotb.test()
async def few_frames_port0_to_port1(dut):
    """The short form, for the routed netlist (gate level is slow): four fresh frames into port 0 and a copy of two
    of them (one with another TTL, one the same bytes), at the minimum gap. Port 1's frames are the model's (the
    fresh ones forwarded, the copies dropped), and so is every counter the design has under its name."""
    tb = TB(dut, "few_frames_port0_to_port1")
    await tb.reset()
    rng = tb.rng
    fresh = [packet(rng, rng.choice([60, 64, 100])) for _ in range(4)]
    frames = [fresh[0], fresh[1], copy_of(rng, fresh[0])[0], fresh[2], Ether(bytes(fresh[1])), fresh[3]]
    sent = []
    for p in frames:
        await tb.source[0].send(GmiiFrame.from_payload(bytes(p)))
        sent.append((bytes(p), False))
    await tb.quiet()
    counters = score(tb, sent, tb.wire(1))
    assert (counters.frames, counters.duplicates, counters.dropped) == (6, 2, 2), counters.as_dict()
    hw = tb.counters()
    for name in COUNTED:
        if f"dedup_{name}" in hw:
            assert hw[f"dedup_{name}"] == getattr(counters, name), (name, hw, counters.as_dict(), tb.seed)
    for name, want in (("port0_rx_frames", 6), ("port1_tx_frames", 4), ("port0_rx_bad_fcs", 0),
                       ("port0_rx_overflows", 0), ("port1_tx_underflows", 0)):
        if name in hw:
            assert hw[name] == want, (name, hw)
    dut._log.info("counters %s; the model's %s", hw, counters.as_dict())


@cocotb.test()
async def reverse_port1_to_port0(dut):
    """Frames into port 1 (IMIX, VLAN tags, copies, bad FCS, runts) go out of port 0 unchanged, every one, in
    order; the copies are not filtered in this direction; a bad frame leaves with a bad FCS, a runt padded."""
    tb = TB(dut, "reverse_port1_to_port0")
    await tb.reset()
    rng = tb.rng
    sent, previous = [], None
    for _ in range(tb.params["reverse_frames"]):
        kind = rng.choices(["new", "copy", "bad_fcs", "runt"], weights=[60, 20, 10, 10])[0]
        if kind == "runt":
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(20, 60)))
            frame, bad = GmiiFrame.from_payload(data, min_len=0), True
        else:
            p = copy_of(rng, previous)[0] if kind == "copy" and previous is not None else \
                packet(rng, imix_length(rng), vlan=rng.random() < 0.3)
            previous = p
            data = bytes(p)
            frame, bad = GmiiFrame.from_payload(data), kind == "bad_fcs"
            if bad:
                raw = bytearray(frame.data)
                raw[-1] ^= 0x80
                frame = GmiiFrame(raw)
        tb.source[1].ifg = 12 if rng.random() < 0.7 else rng.randrange(13, 40)
        await tb.source[1].send(frame)
        sent.append((data + bytes(max(0, 60 - len(data))), not bad))
    await tb.quiet()
    got = tb.wire(0)
    assert got == sent, f"port 0 sent {len(got)} frames, {len(sent)} went into port 1 (seed {tb.seed})"
    hw = tb.counters()
    assert (hw["port1_rx_frames"], hw["port1_rx_overflows"], hw["port0_tx_frames"], hw["port0_tx_underflows"],
            hw["dedup_frames"]) == (len(sent), 0, len(sent), 0, 0), hw
    assert not tb.wire(1)


@cocotb.test()
async def line_rate_both_ways(dut):
    """Minimum-size frames back to back at the minimum gap into both ports at once, receive clocks 100 ppm fast,
    transmit clock 100 ppm slow: port 1's frames are the model's (one in four a copy), port 0's are all of
    port 1's; nothing overflows, nothing underflows."""
    tb = TB(dut, "line_rate_both_ways")
    await tb.reset()
    rng = tb.rng
    count = tb.params["line_rate_frames"]
    forward_sent, reverse_sent, recent = [], [], []
    for _ in range(count):
        p = copy_of(rng, rng.choice(recent))[0] if recent and rng.random() < 0.25 else packet(rng, 60)
        if len(bytes(p)) < 60:
            p = Ether(bytes(p) + bytes(60 - len(bytes(p))))
        recent = (recent + [p])[-8:]
        forward_sent.append((bytes(p), False))
        reverse_sent.append(bytes(packet(rng, 60)))
    for source in tb.source:
        source.ifg = 12

    async def send(port, frames):
        for data in frames:
            await tb.source[port].send(GmiiFrame.from_payload(data))

    start = cocotb.utils.get_sim_time("ns")
    reverse = cocotb.start_soon(send(1, reverse_sent))
    await send(0, [data for data, _ in forward_sent])
    await reverse
    await tb.quiet()
    counters = score(tb, forward_sent, tb.wire(1))
    assert tb.wire(0) == [(data, True) for data in reverse_sent]
    hw = tb.counters()
    assert hw["port0_rx_overflows"] == hw["port1_rx_overflows"] == 0, hw
    assert hw["port0_tx_underflows"] == hw["port1_tx_underflows"] == 0, hw
    assert hw["dedup_unchecked"] == 0 and hw["dedup_duplicates"] == counters.duplicates > 0, hw
    dut._log.info("%d + %d minimum-size frames at line rate, %.1f us simulated", count, count,
                  (cocotb.utils.get_sim_time("ns") - start) / 1e3)


@cocotb.test()
async def run_time_changes(dut):
    """During traffic (new frames and copies), over the UART: the action to count, a clear of the filter, the
    action back to drop, each followed by a read of CHANGE_FRAME; port 1's frames are the model's with the same
    changes before the frames named (and the frames the clear left unchecked, the last ones before its frame,
    as many as the counter says); a write out of range is refused (BAD_REGISTER) and changes nothing. Built with
    the run-time window, the window is halved after the clear and set to its capacity (the longest the memory
    holds at the planned rate) before the end, and a window of 0 is refused."""
    tb = TB(dut, "run_time_changes")
    await tb.reset()
    rng = tb.rng
    offsets = {name: r.offset for name, r in register_map("appliance").items()}
    frames = tb.params.get("change_frames", 60)
    steps = [("action", "count"), ("clear",), ("action", "drop")]
    if tb.params.get("runtime_window"):
        steps = [("action", "count"), ("clear",), ("window", tb.config.span // 2), ("action", "drop"),
                 ("window", window_capacity(tb.config))]
    changes, refused = {}, []

    async def control():
        for n, step in enumerate(steps):
            while int(dut.port0_rx_frames.value) < (n + 1) * frames // (len(steps) + 1):
                await RisingEdge(dut.clk)
            if step[0] == "action":
                status, _ = await tb.register(Command.REG_WRITE, offsets["ACTION"], ACTIONS.index(step[1]))
            elif step[0] == "window":
                status, _ = await tb.register(Command.REG_WRITE, offsets["WINDOW"], step[1])
            else:
                status, _ = await tb.register(Command.REG_WRITE, offsets["CONTROL"], int(Control.CLEAR))
            assert status == Status.OK, status
            status, frame = await tb.register(Command.REG_READ, offsets["CHANGE_FRAME"])
            assert status == Status.OK, status
            changes.setdefault(frame, []).append(step)
        refused.append((await tb.register(Command.REG_WRITE, offsets["ACTION"], 1))[0])     # mark: refused
        refused.append((await tb.register(Command.REG_READ, offsets["SEED_LO"]))[0])       # write only
        if tb.params.get("runtime_window"):
            refused.append((await tb.register(Command.REG_WRITE, offsets["WINDOW"], 0))[0])  # below 1

    task = cocotb.start_soon(control())
    originals, sent = [], []
    while len(sent) < frames or not task.done():            # traffic until the last change is made
        if originals and rng.random() < 0.5:
            p, _ = copy_of(rng, rng.choice(originals[-6:]))
        else:
            p = packet(rng, rng.randrange(60, 100))
            originals.append(p)
        tb.source[0].ifg = 12
        await tb.source[0].send(GmiiFrame.from_payload(bytes(p)))
        sent.append((bytes(p), False))
        await Timer(rng.randrange(1, 4), "us")               # the UART's changes land among the frames
    await task
    await tb.quiet()
    hw = tb.counters()
    (clear_at,) = [frame for frame, made in changes.items() if ("clear",) in made]
    unchecked = range(clear_at - hw["dedup_unchecked"], clear_at)
    counters = score(tb, sent, tb.wire(1), changes=changes, unchecked=unchecked)
    for name in ("frames", "duplicates", "dropped", "unchecked", "errored"):
        assert hw[f"dedup_{name}"] == getattr(counters, name), (name, hw, counters, changes, tb.seed)
    assert refused == [Status.BAD_REGISTER] * (3 if tb.params.get("runtime_window") else 2), refused
    assert (await tb.register(Command.REG_READ, offsets["ACTION"])) == (Status.OK, ACTIONS.index("drop"))
    assert len(changes) == len(steps) and 0 < counters.dropped < counters.duplicates, (changes, counters)
    dut._log.info("changes %s; model counters %s", changes, counters.as_dict())


@cocotb.test()
async def uart_read_action(dut):
    """One REG_READ of ACTION over the UART, with no traffic: the action the appliance was built with (the UART's
    pins and the host side alive; short at any baud rate)."""
    tb = TB(dut, "uart_read_action")
    await tb.reset()
    offsets = {name: r.offset for name, r in register_map("appliance").items()}
    assert (await tb.register(Command.REG_READ, offsets["ACTION"])) == (Status.OK, ACTIONS.index(tb.action))


@cocotb.test(skip=os.environ.get(PARAMS_ENV) is not None and not _params().get("window_copies"))
async def dram_window(dut):
    """The filter in the SDRAM under load (runner parameters ``window_copies`` and the rest below): bursts of
    minimum-size frames at the minimum gap into port 0, for ``windows`` windows of the filter (its span of ticks
    of ``tick_cycles`` clocks), with pauses of up to ``pause_us`` between bursts; one frame in ``copy_every`` a
    copy (another TTL, DSCP or VLAN tag, or the same bytes) of a fresh frame sent a fraction of the window earlier,
    the fractions drawn from ``copy_ages`` (from 0.5 to 0.99 of the window, and past it); port 1 sends minimum-size
    frames at line rate into port 1 meanwhile (``reverse``). The ports' clocks are off by ``rx_ppm`` and
    ``tx_ppm``; the SDRAM refreshes throughout, the chip model checking every command and the refresh deadline.

    Every frame out of port 1 is the model's (:class:`apbbf.model.dedup.Dedup`, the same Config and times, each
    frame checked, unchecked or late as the de-duplicator's counters say), and so is every counter; no frame is
    lost uncounted (port 0 took every frame, nothing overflowed); every copy younger than the window whose
    original was inserted, checked in time, is found; the copies' ages cover each band asked for."""
    tb = TB(dut, "dram_window")
    p = tb.params
    await tb.reset()
    rng, c = tb.rng, tb.config
    tick_ns = p["tick_cycles"] * SYNC_PERIOD_FS / 1e6
    window_ns = c.span * tick_ns
    ages = p["copy_ages"]
    end_ns = cocotb.utils.get_sim_time("ns") + p["windows"] * window_ns
    fresh_times, fresh = [], []                       # the fresh frames: the time each was queued, its index in sent
    sent, roots = [], []                              # roots: the index of the fresh frame a copy is of, or None
    refresh_before = tb.sdram.checker.refreshes
    start_ns = cocotb.utils.get_sim_time("ns")

    async def reverse():
        while cocotb.utils.get_sim_time("ns") < end_ns:
            while tb.source[1].count() >= 4:
                await Timer(500, "ns")
            await tb.source[1].send(GmiiFrame.from_payload(bytes(packet(rng, 60))))

    reverse_task = cocotb.start_soon(reverse()) if p.get("reverse", True) else None
    import bisect
    while cocotb.utils.get_sim_time("ns") < end_ns:
        for _ in range(rng.randrange(8, p.get("burst", 64) + 1)):
            while tb.source[0].count() >= 4:
                await Timer(200, "ns")
            # the frame goes on the wire after those queued: at 672 ns per minimum-size frame
            now = cocotb.utils.get_sim_time("ns") + tb.source[0].count() * 672
            root = None
            if fresh and rng.randrange(p["copy_every"]) == 0:
                age = rng.choice(ages)
                at = bisect.bisect_left(fresh_times, now - age * window_ns)
                if at < len(fresh_times) and (age < 1 or now - fresh_times[at] > window_ns):
                    root = fresh[at]
            if root is None:
                frame = packet(rng, 60)
                fresh_times.append(now)
                fresh.append(len(sent))
            else:
                frame = copy_of(rng, Ether(sent[root][0]))[0]
            data = bytes(frame) + bytes(max(0, 60 - len(bytes(frame))))
            tb.source[0].ifg = 12
            await tb.source[0].send(GmiiFrame.from_payload(data))
            sent.append((data, False))
            roots.append(root)
        pause = rng.randrange(0, p.get("pause_us", 4) * 1000 + 1)
        if pause:
            await Timer(pause, "ns")
    if reverse_task is not None:
        await reverse_task
    await tb.quiet()
    elapsed_ns = cocotb.utils.get_sim_time("ns") - start_ns
    decisions = []
    counters = score(tb, sent, tb.wire(1), decisions=decisions)
    hw = tb.counters()
    for name in COUNTED:
        assert hw[f"dedup_{name}"] == getattr(counters, name), (name, hw, counters.as_dict(), tb.seed)
    assert (hw["port0_rx_frames"], hw["port0_rx_overflows"], hw["port0_rx_bad_fcs"]) == (len(sent), 0, 0), hw
    assert hw["port1_rx_overflows"] == 0 and hw["port0_tx_underflows"] == hw["port1_tx_underflows"] == 0, hw
    assert hw["port1_tx_frames"] == counters.frames - counters.dropped, hw
    if reverse_task is not None:
        assert len(tb.wire(0)) == hw["port1_rx_frames"] == hw["port0_tx_frames"], hw
    # the copies by age (in the de-duplicator's own ticks), and the window's promise
    bands = {"0.5-0.75": 0, "0.75-0.9": 0, "0.9-0.99": 0, "0.99-1": 0, "past": 0}
    missed = []
    for index, root in enumerate(roots):
        if root is None:
            continue
        age = (tb.times[index] - tb.times[root]) / c.span
        band = ("past" if age > 1 else "0.99-1" if age > 0.99 else "0.9-0.99" if age >= 0.9 else
                "0.75-0.9" if age >= 0.75 else "0.5-0.75" if age >= 0.5 else None)
        if band:
            bands[band] += 1
        root_inserted = not decisions[root][1] or decisions[root][2]          # checked, or late (inserted)
        duplicate, unchecked, late = decisions[index]
        if tb.times[index] - tb.times[root] < c.span and root_inserted and not unchecked and not late \
                and not duplicate:
            missed.append((index, root, round(age, 4)))
    assert not missed, f"copies within the window not found (index, original, age in windows): {missed[:10]}"
    want = p.get("bands", {})
    assert all(bands[name] >= n for name, n in want.items()), (bands, want)
    refreshes = tb.sdram.checker.refreshes - refresh_before
    tref_ns = tb.sdram.checker.timing.tREFI
    assert refreshes >= elapsed_ns / tref_ns - 2, (refreshes, elapsed_ns)
    dut._log.info(
        "dram_window: %d frames into port 0 over %.1f us (%.2f windows of %.1f us: %d ticks of %g ns), %d copies by "
        "age %s; %d duplicates, %d dropped, %d unchecked (%d late); %d frames out of port 0; %d refreshes (the "
        "longest gap %d cycles), chip commands %s", len(sent), elapsed_ns / 1e3, elapsed_ns / window_ns,
        window_ns / 1e3, c.span, tick_ns, sum(r is not None for r in roots), bands, counters.duplicates,
        counters.dropped, hw["dedup_unchecked"], int(dut.dedup_late.value), hw["port0_tx_frames"], refreshes,
        tb.sdram.checker.max_refresh_gap, dict(tb.sdram.checker.counts))
    report = p.get("report")
    if report:
        with open(report, "w") as out:
            json.dump({"frames": len(sent), "simulated_us": round(elapsed_ns / 1e3, 1), "window_us": window_ns / 1e3,
                       "span_ticks": c.span, "tick_ns": tick_ns, "copies_by_age": bands,
                       "duplicates": counters.duplicates, "dropped": counters.dropped,
                       "unchecked": hw["dedup_unchecked"], "late": int(dut.dedup_late.value),
                       "reverse_frames": hw["port0_tx_frames"], "refreshes": refreshes,
                       "max_refresh_gap_cycles": tb.sdram.checker.max_refresh_gap,
                       "chip_commands": dict(tb.sdram.checker.counts), "seed": tb.seed}, out, indent=2)

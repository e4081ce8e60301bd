"""cocotb benches of the exported RGMII MAC (:mod:`apbbf.sim.cocotb.mac_runner`): cocotbext-eth's ``RgmiiSource``
and ``RgmiiSink`` at 1000 Mb/s on the PHY side, cocotbext-axi on the user side, frames built with scapy, and every
frame's bytes and error flag compared.

The receive clock runs 100 ppm fast and the transmit clock 100 ppm slow (the PHYs' clocks are not locked), the
user's clock at 100 MHz unless the runner says otherwise.
"""

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource
from cocotbext.eth import GmiiFrame, RgmiiSink, RgmiiSource
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw

from .mac_runner import PARAMS_ENV
from .testbench import _quiet

#: Clock periods, fs: 125 MHz +100 ppm (receive), 125 MHz -100 ppm (transmit); the user's clock is a parameter
#: (``user_period_fs``, default 10 ns: it must be at least 125 MHz * 8 / data_width).
RX_PERIOD_FS = 7_999_200
TX_PERIOD_FS = 8_000_800
COUNTERS = ("rx_frames", "rx_bad_fcs", "rx_phy_errors", "rx_runts", "rx_overflows", "tx_frames", "tx_underflows")


def _params():
    text = os.environ.get(PARAMS_ENV)
    if not text:
        raise ValueError(f"{PARAMS_ENV} is not set: run the benches through apbbf.sim.cocotb.mac_runner.run_mac")
    return json.loads(text)


def _seed(name: str) -> int:
    return (cocotb.RANDOM_SEED * 1_000_003 + sum(map(ord, name))) & 0xFFFFFFFF


def scapy_frame(rng: random.Random, length: int, *, vlan: bool = False) -> bytes:
    """An Ethernet/IPv4/UDP frame of ``length`` bytes without FCS (``length`` >= 42, 46 with a VLAN tag)."""
    packet = Ether(dst=rng.getrandbits(48).to_bytes(6, "big"), src=rng.getrandbits(48).to_bytes(6, "big"))
    if vlan:
        packet = packet / Dot1Q(vlan=rng.randrange(1, 4095), prio=rng.randrange(8))
    packet = (packet / IP(src=f"10.0.{rng.randrange(256)}.{rng.randrange(256)}", dst="192.168.1.2",
                          ttl=rng.randrange(1, 256), tos=rng.randrange(256))
              / UDP(sport=rng.randrange(65536), dport=rng.randrange(65536)))
    header = len(bytes(packet))
    data = bytes(packet / Raw(bytes(rng.getrandbits(8) for _ in range(length - header))))
    assert len(data) == length
    return data


def imix_length(rng: random.Random) -> int:
    """Simple IMIX without FCS: 7 x 60, 4 x 572, 1 x 1514 bytes, and now and then any length."""
    if rng.random() < 0.2:
        return rng.randrange(60, 1515)
    return rng.choice([60] * 7 + [572] * 4 + [1514])


class TB:
    def __init__(self, dut, name):
        self.dut = dut
        self.params = _params()
        self.seed = _seed(name)
        self.rng = random.Random(self.seed)
        dut._log.info("bench %s: seed %d (COCOTB_RANDOM_SEED %d)", name, self.seed, cocotb.RANDOM_SEED)
        self.phy_source = RgmiiSource(dut.rgmii_rxd, dut.rgmii_rx_ctl, dut.rgmii_rx_clk)
        self.phy_sink = RgmiiSink(dut.rgmii_txd, dut.rgmii_tx_ctl, dut.phy_tx_clk)
        self.user_sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), dut.aclk, dut.aresetn,
                                       reset_active_level=False)
        self.user_source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.aclk, dut.aresetn,
                                           reset_active_level=False)
        for endpoint in (self.phy_source, self.phy_sink, self.user_sink, self.user_source):
            _quiet(endpoint)

    async def reset(self):
        # The clocks start low: a rising edge at time 0 would race Icarus's first evaluation of the logic.
        self.dut.aresetn.value = 0
        for clock, period in ((self.dut.rgmii_rx_clk, RX_PERIOD_FS), (self.dut.eth_tx_clk, TX_PERIOD_FS),
                              (self.dut.aclk, self.params.get("user_period_fs", 10_000_000))):
            Clock(clock, period, unit="fs").start(start_high=False)
        await ClockCycles(self.dut.aclk, 10)
        self.dut.aresetn.value = 1
        await ClockCycles(self.dut.aclk, 10)

    def counters(self):
        return {name: int(getattr(self.dut, name).value) for name in COUNTERS}

    async def quiet(self, cycles=400):
        """Wait until the PHY source is idle and nothing has moved for ``cycles`` user clocks."""
        await self.phy_source.wait()
        await self.user_source.wait()
        idle = 0
        while idle < cycles:
            await RisingEdge(self.dut.aclk)
            busy = int(self.dut.m_axis_tvalid.value) or int(self.dut.rgmii_tx_ctl.value)
            idle = 0 if busy else idle + 1

    def received_user(self):
        """Frames out of ``m_axis``: (bytes, error on the last beat)."""
        frames = []
        width = self.params["data_width"] // 8
        while not self.user_sink.empty():
            frame = self.user_sink.recv_nowait()
            data = bytes(frame.tdata)
            user = frame.tuser if isinstance(frame.tuser, list) else [frame.tuser] * len(data)
            last_beat = (len(data) - 1) // width * width
            assert not any(user[:last_beat]), "tuser set before the last beat"
            frames.append((data, int(user[-1])))
        return frames


@cocotb.test()
async def receive(dut):
    """Frames into the PHY side (scapy, IMIX with VLAN tags, back to back at the minimum gap or with longer
    gaps), with bad FCS, PHY errors and runts among them: every frame out of m_axis has the bytes sent without
    FCS, and the error flag exactly on the bad ones; the counters agree."""
    tb = TB(dut, "receive")
    await tb.reset()
    rng = tb.rng
    expected = []
    kinds = {"good": 0, "bad_fcs": 0, "phy_error": 0, "runt": 0}
    for index in range(tb.params["frames"]):
        kind = rng.choices(list(kinds), weights=[70, 10, 10, 10])[0]
        kinds[kind] += 1
        if kind == "runt":
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 60)))
            frame = GmiiFrame.from_payload(data, min_len=0)
        else:
            data = scapy_frame(rng, imix_length(rng), vlan=rng.random() < 0.3)
            frame = GmiiFrame.from_payload(data)
            if kind == "bad_fcs":
                raw = bytearray(frame.data)
                raw[-1 - rng.randrange(4)] ^= 1 << rng.randrange(8)
                frame = GmiiFrame(raw)
            elif kind == "phy_error":
                frame.error = [0] * len(frame.data)
                frame.error[rng.randrange(8, len(frame.data))] = 1
        tb.phy_source.ifg = 12 if rng.random() < 0.7 else rng.randrange(13, 40)
        await tb.phy_source.send(frame)
        expected.append((data, int(kind != "good")))
    await tb.quiet()
    got = tb.received_user()
    assert len(got) == len(expected), f"{len(got)} frames out, {len(expected)} sent (seed {tb.seed})"
    for index, (out, want) in enumerate(zip(got, expected)):
        assert out == want, f"frame {index}: got {out[0].hex()} error {out[1]}, sent {want[0].hex()} error " \
                            f"{want[1]} (seed {tb.seed})"
    counters = tb.counters()
    assert counters["rx_frames"] == len(expected)
    assert counters["rx_runts"] == kinds["runt"] and counters["rx_phy_errors"] == kinds["phy_error"]
    # a PHY error leaves the FCS as it was sent (good): only the corrupted ones count as bad FCS
    assert counters["rx_bad_fcs"] == kinds["bad_fcs"]
    assert counters["rx_overflows"] == 0
    dut._log.info("received %d frames: %s; counters %s", len(got), kinds, counters)


@cocotb.test()
async def transmit(dut):
    """Frames into s_axis (scapy, short ones to be padded, some marked bad): every frame on the PHY side has
    the preamble, the SFD, the bytes sent padded to 60, a good FCS (inverted on the marked ones), and at least
    12 byte times before the next; frames offered back to back go out exactly 12 apart."""
    tb = TB(dut, "transmit")
    await tb.reset()
    rng = tb.rng
    sent = []
    for index in range(tb.params["frames"]):
        if rng.random() < 0.2:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 60)))
        else:
            data = scapy_frame(rng, imix_length(rng), vlan=rng.random() < 0.3)
        bad = rng.random() < 0.1
        user = [0] * len(data)
        user[-1] = int(bad)
        await tb.user_source.send(AxiStreamFrame(data, tuser=user))
        sent.append((data, bad))
    await tb.quiet()
    got = []
    while not tb.phy_sink.empty():
        got.append(tb.phy_sink.recv_nowait())
    assert len(got) == len(sent), f"{len(got)} frames on the wire, {len(sent)} sent (seed {tb.seed})"
    gaps = []
    for index, (frame, (data, bad)) in enumerate(zip(got, sent)):
        assert frame.get_preamble() == b"\x55" * 7 + b"\xd5", f"frame {index}: preamble {frame.get_preamble()}"
        padded = data + bytes(max(0, 60 - len(data)))
        assert frame.get_payload() == padded, f"frame {index}: bytes differ (seed {tb.seed})"
        assert frame.check_fcs() != bad, f"frame {index}: FCS {'good' if frame.check_fcs() else 'bad'}"
        assert any(frame.error or ()) == bad, f"frame {index}: er {frame.error}"
        if index:
            gaps.append((frame.sim_time_start - got[index - 1].sim_time_end) / TX_PERIOD_FS)
    counters = tb.counters()
    assert counters["tx_frames"] == len(sent) and counters["tx_underflows"] == 0
    dut._log.info("transmitted %d frames, gaps between frames %.2f..%.2f byte times, counters %s", len(got),
                  min(gaps), max(gaps), counters)
    # offered back to back: every gap is the minimum
    assert 12 - 0.01 <= min(gaps) and max(gaps) <= 12 + 0.01, f"inter-frame gaps {min(gaps)}..{max(gaps)}"


@cocotb.test()
async def line_rate_across_clocks(dut):
    """Minimum-size frames back to back at the minimum gap into the receive side (clock 100 ppm fast), through
    the user's domain (each frame forwarded from m_axis to s_axis as it arrives) and out of the transmit side
    (clock 100 ppm slow): every frame out, in order, with its bytes; no overflow, no underflow."""
    tb = TB(dut, "line_rate_across_clocks")
    await tb.reset()
    rng = tb.rng
    count = tb.params["line_rate_frames"]
    sent = [scapy_frame(rng, 60, vlan=rng.random() < 0.3) for _ in range(count)]

    async def forward():
        while True:
            frame = await tb.user_sink.recv()
            await tb.user_source.send(AxiStreamFrame(bytes(frame.tdata), tuser=0))

    forwarder = cocotb.start_soon(forward())
    tb.phy_source.ifg = 12
    start = cocotb.utils.get_sim_time("ns")
    for data in sent:
        await tb.phy_source.send(GmiiFrame.from_payload(data))
    await tb.quiet()
    forwarder.cancel()
    got = []
    while not tb.phy_sink.empty():
        got.append(tb.phy_sink.recv_nowait())
    assert len(got) == count, f"{len(got)} frames out of {count} (seed {tb.seed})"
    for index, (frame, data) in enumerate(zip(got, sent)):
        assert frame.get_payload() == data and frame.check_fcs(), f"frame {index} differs (seed {tb.seed})"
    counters = tb.counters()
    assert counters["rx_overflows"] == 0 and counters["tx_underflows"] == 0
    assert counters["rx_frames"] == count and counters["tx_frames"] == count
    elapsed = cocotb.utils.get_sim_time("ns") - start
    dut._log.info("%d minimum-size frames at line rate through the MAC, %.1f us simulated", count, elapsed / 1e3)


@cocotb.test()
async def receive_overflow(dut):
    """m_axis held back while frames arrive: the receive FIFO fills, and the frame that does not fit is cut
    short and marked bad, the ones after it that find no room are dropped whole; every frame that comes out
    unmarked is one sent, whole, in order, and ``rx_overflows`` counts every frame cut or dropped."""
    tb = TB(dut, "receive_overflow")
    await tb.reset()
    rng = tb.rng
    tb.user_sink.pause = True
    sent = [scapy_frame(rng, rng.choice([60, 100, 200]), vlan=rng.random() < 0.3)
            for _ in range(tb.params["frames"])]
    for data in sent:
        await tb.phy_source.send(GmiiFrame.from_payload(data))
    await tb.phy_source.wait()
    await ClockCycles(dut.aclk, 100)
    tb.user_sink.pause = False
    await ClockCycles(dut.aclk, 500)
    after = [scapy_frame(rng, 100) for _ in range(4)]             # room again: these come out whole
    for data in after:
        await tb.phy_source.send(GmiiFrame.from_payload(data))
    sent += after
    await tb.quiet()
    got = tb.received_user()
    position, cut, whole = 0, 0, 0
    for index, (data, error) in enumerate(got):
        while position < len(sent) and not (sent[position] == data if not error
                                            else sent[position].startswith(data)):
            position += 1
        assert position < len(sent), f"output frame {index} (error {error}) matches no frame sent in order " \
                                     f"(seed {tb.seed})"
        cut += error
        whole += not error
        position += 1
    assert got[-len(after):] == [(data, 0) for data in after], "frames after the overflow are not whole"
    counters = tb.counters()
    assert counters["rx_frames"] == len(sent)
    assert counters["rx_overflows"] == len(sent) - whole, (counters, whole, cut)
    assert counters["rx_overflows"] > 0, "the FIFO never filled: the bench tests nothing"
    dut._log.info("%d frames sent, %d out whole, %d cut, %d dropped whole", len(sent), whole, cut,
                  len(sent) - whole - cut)

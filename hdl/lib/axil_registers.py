# amaranth: UnusedElaboratable=no
# (this module builds components for its caller: one refused by its own checks is not a warning too)
"""An AXI4-Lite slave holding the control register map (:mod:`apbbf.model.registers`) of a de-duplicator (the
exported one's, the appliance's): the facts of the build, the run-time settings, the commands and the counters'
snapshot.

Ports (``s_axil_*`` as AXI4-Lite names them, 32-bit data, :data:`ADDR_WIDTH`-bit byte addresses; plain signals, so
that cocotbext-axi's ``AxiLiteBus.from_prefix(dut, "s_axil")`` and vendor interface inference bind to them):
``awaddr awprot awvalid awready wdata wstrb wvalid wready bresp bvalid bready araddr arprot arvalid arready rdata
rresp rvalid rready``. One access of each kind at a time: a write is taken when its address and data are both
valid, and answered once it has taken effect (a clear or a new window: once the de-duplicator has taken it); a
read is answered the
cycle after its address. ``SLVERR`` answers every access the map refuses (it changes nothing) and a write of
fewer than four bytes (``wstrb`` other than ``0xF``); ``awprot`` and ``arprot`` are ignored.
"""

from __future__ import annotations

from amaranth import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ...model.registers import (_COUNTERS, ACTIONS, Access, Capability, Control, Facts, register_map)

__all__ = ["ADDR_WIDTH", "OKAY", "SLVERR", "axil_members", "AXI4LiteRegisters"]

#: Bits of the byte address (the map ends below 0x100).
ADDR_WIDTH = 8
#: The AXI response codes the slave gives.
OKAY, SLVERR = 0b00, 0b10


def axil_members(prefix: str = "s_axil") -> dict:
    """The AXI4-Lite slave's ports, by name, as :class:`~amaranth.lib.wiring.Signature` members."""
    return {f"{prefix}_{name}": member for name, member in {
        "awaddr": In(ADDR_WIDTH), "awprot": In(3), "awvalid": In(1), "awready": Out(1),
        "wdata": In(32), "wstrb": In(4), "wvalid": In(1), "wready": Out(1),
        "bresp": Out(2), "bvalid": Out(1), "bready": In(1),
        "araddr": In(ADDR_WIDTH), "arprot": In(3), "arvalid": In(1), "arready": Out(1),
        "rdata": Out(32), "rresp": Out(2), "rvalid": Out(1), "rready": In(1),
    }.items()}


class AXI4LiteRegisters(wiring.Component):
    """The register file of :mod:`apbbf.model.registers` behind an AXI4-Lite slave (module documentation);
    :class:`~apbbf.model.registers.RegisterFile` is its specification.

    Parameters
    ----------
    facts : Facts
        The build: its facts are read-only constants, and they decide which writes are in range. Of the commands
        only those :attr:`Facts.caps <apbbf.model.registers.Facts.caps>` lists are taken (the gateware takes
        ``CLEAR``, ``WINDOW`` and, from a de-duplicator built with its run-time seed, ``REKEY``; not ``KEY``: its
        key recipe is built in). Without ``REKEY``, ``SEED_LO``, ``SEED_HI`` and ``CONTROL.REKEY`` answer
        ``SLVERR`` and change nothing.

    Attributes
    ----------
    s_axil_* : the slave's ports (:func:`axil_members`)
    counters_<name> : In(32)
        Each live counter of the map (:data:`~apbbf.model.registers.DEDUP_COUNTERS`, and the MAC counters on the
        appliance's map), wrapping.
    link : In(2)
        ``LINK``.
    action : Out(2)
        ``ACTION``'s value (reset: the built action's), for the de-duplicator's ``control_action``.
    clear : Out(1)
        A pulse for the de-duplicator's ``control_clear`` (a write of ``CONTROL.CLEAR``).
    cleared : In(1)
        The de-duplicator's ``control_cleared``: the clear took effect (the write is answered after it).
    decided : In(32)
        The de-duplicator's ``control_frames`` (the frame index of a clear, taken the cycle after ``cleared``, or
        of a new window, the cycle after ``window_done``).
    window : Out(32)
        ``WINDOW`` (reset: the built span), for the de-duplicator's ``control_window``.
    window_set : Out(1)
        A pulse for its ``control_window_set`` (an accepted write of another ``WINDOW``, with ``CAPS.WINDOW``).
    window_done : In(1)
        Its ``control_window_done``: the window took effect (the write is answered after it).
    seed : Out(64)
        (``REKEY`` in caps.) The staged seed (``SEED_HI``, ``SEED_LO``; reset 0), for the de-duplicator's
        ``control_seed``; never read back through the map. Held while a re-key is under way (no write is taken
        before its answer).
    rekey : Out(1)
        (``REKEY`` in caps.) A pulse for the de-duplicator's ``control_rekey`` (a write of ``CONTROL.REKEY``):
        a clear whose ``cleared`` answers the write, counted in ``CLEARS``.

    Raises
    ------
    TypeError
        If ``facts`` is not a :class:`~apbbf.model.registers.Facts`.
    ValueError
        If ``facts`` lists a capability the gateware does not have (``KEY``), or ``REKEY`` without ``CLEAR``.
    """

    def __init__(self, facts: Facts):
        if not isinstance(facts, Facts):
            raise TypeError(f"facts must be a Facts, not {facts!r}")
        missing = facts.caps & Capability.KEY
        if missing:
            raise ValueError(f"facts.caps must not list {missing!r}: the gateware cannot change its key recipe "
                             "at run time")
        if facts.caps & Capability.REKEY and not facts.caps & Capability.CLEAR:
            raise ValueError("facts.caps must list CLEAR with REKEY: a re-key is a clear with a new seed")
        self._rekey = bool(facts.caps & Capability.REKEY)
        self._facts = facts
        self._map = register_map(facts.target)
        self._counters = _COUNTERS[facts.target]
        super().__init__({
            **axil_members(),
            **{f"counters_{name}": In(32) for name in self._counters},
            "link": In(2),
            "action": Out(2, init=ACTIONS.index(facts.action)),
            "clear": Out(1), "cleared": In(1), "decided": In(32),
            "window": Out(32, init=facts.config.span), "window_set": Out(1), "window_done": In(1),
            **({"seed": Out(64), "rekey": Out(1)} if self._rekey else {}),
        })

    @property
    def facts(self) -> Facts:
        return self._facts

    def elaborate(self, platform):
        m = Module()
        facts = self._facts
        window = self.window
        key = Signal(5, init=facts.keys.index(facts.key))
        clears, change_frame = Signal(32), Signal(32)
        snapshot = {name: Signal(32, name=f"snapshot_{name}") for name in self._counters}
        base = {name: Signal(32, name=f"base_{name}") for name in self._counters}
        live = {name: getattr(self, f"counters_{name}") for name in self._counters}

        # Reads: one a time, answered the cycle after the address.
        values = {"LINK": self.link, "CLEARS": clears, "CHANGE_FRAME": change_frame, "WINDOW": window,
                  "ACTION": self.action, "KEY": key,
                  **{name.upper(): snapshot[name] for name in self._counters}}
        with m.If(self.s_axil_rvalid & self.s_axil_rready):
            m.d.sync += self.s_axil_rvalid.eq(0)
        m.d.comb += self.s_axil_arready.eq(~self.s_axil_rvalid)
        with m.If(self.s_axil_arvalid & self.s_axil_arready):
            m.d.sync += [self.s_axil_rvalid.eq(1), self.s_axil_rdata.eq(0), self.s_axil_rresp.eq(SLVERR)]
            with m.Switch(self.s_axil_araddr):
                for register in self._map.values():
                    if register.access == Access.WO:
                        continue
                    with m.Case(register.offset):
                        value = (Const(facts.value(register), 32) if register.fact is not None
                                 else values[register.name])
                        m.d.sync += [self.s_axil_rdata.eq(value), self.s_axil_rresp.eq(OKAY)]

        # Writes: address and data taken together; the answer once the write has taken effect.
        wdata = self.s_axil_wdata
        busy = Signal()                                     # a write taken and not yet answered
        take = Signal()
        m.d.comb += [take.eq(self.s_axil_awvalid & self.s_axil_wvalid & ~busy & ~self.s_axil_bvalid),
                     self.s_axil_awready.eq(take), self.s_axil_wready.eq(take)]
        with m.If(self.s_axil_bvalid & self.s_axil_bready):
            m.d.sync += self.s_axil_bvalid.eq(0)
        # An accepted change of the action names its frame three cycles on (``frames`` two cycles after the
        # de-duplicator sees it); a clear its frame the cycle after the de-duplicator's ``control_cleared``.
        action_change = Signal(3)
        m.d.sync += action_change.eq(action_change << 1)
        waiting_clear, cleared = Signal(), Signal()
        m.d.sync += [cleared.eq(self.cleared), self.clear.eq(0)]
        if self._rekey:
            m.d.sync += self.rekey.eq(0)
        waiting_window, window_done = Signal(), Signal()
        m.d.sync += [window_done.eq(self.window_done), self.window_set.eq(0)]

        def answer(ok):
            m.d.sync += [self.s_axil_bvalid.eq(1), self.s_axil_bresp.eq(Mux(ok, OKAY, SLVERR))]

        with m.If(action_change[2]):
            m.d.sync += change_frame.eq(live["frames"] if "frames" in live else 0)
            answer(1)
            m.d.sync += busy.eq(0)
        with m.If(waiting_clear & cleared):
            m.d.sync += [change_frame.eq(self.decided), waiting_clear.eq(0), busy.eq(0)]
            answer(1)
        with m.If(waiting_window & window_done):
            m.d.sync += [change_frame.eq(self.decided), waiting_window.eq(0), busy.eq(0)]
            answer(1)

        def mask_bit(mask, value):
            return (value < 32) & Const(mask, 32).bit_select(value[:5], 1)

        with m.If(take):
            whole = self.s_axil_wstrb == 0xF
            with m.Switch(self.s_axil_awaddr):
                for register in self._map.values():
                    if register.access == Access.RO:
                        continue
                    name = register.name
                    with m.Case(register.offset):
                        if name == "WINDOW":
                            ok = whole & (wdata >= facts.window_min) & (wdata <= facts.window_max)
                            with m.If(ok & (wdata != window)):
                                m.d.sync += [window.eq(wdata), self.window_set.eq(1), waiting_window.eq(1),
                                             busy.eq(1)]
                            with m.Else():
                                answer(ok)
                        elif name == "ACTION":
                            mask = sum(1 << ACTIONS.index(a) for a in facts.settable_actions())
                            ok = whole & mask_bit(mask, wdata)
                            with m.If(ok & (wdata[:2] != self.action)):
                                m.d.sync += [self.action.eq(wdata[:2]), action_change.eq(1), busy.eq(1)]
                            with m.Else():
                                answer(ok)
                        elif name == "KEY":
                            mask = sum(1 << facts.keys.index(k) for k in facts.settable_keys())
                            ok = whole & mask_bit(mask, wdata)
                            with m.If(ok):
                                m.d.sync += key.eq(wdata[:5])
                            answer(ok)
                        elif name in ("SEED_LO", "SEED_HI"):
                            if self._rekey:             # staged, never read back
                                half = self.seed[:32] if name == "SEED_LO" else self.seed[32:]
                                with m.If(whole):
                                    m.d.sync += half.eq(wdata)
                                answer(whole)
                            else:
                                answer(0)                   # no run-time seed
                        elif name == "CONTROL":
                            known = int(sum(Control))
                            allowed = known & ~((0 if self._rekey else int(Control.REKEY)) |
                                                (0 if facts.caps & Capability.CLEAR else int(Control.CLEAR)))
                            ok = whole & ((wdata & ~allowed & 0xFFFF_FFFF) == 0)
                            with m.If(ok & wdata[Control.SNAPSHOT.bit_length() - 1]):
                                for n in self._counters:
                                    m.d.sync += snapshot[n].eq(live[n] - base[n])
                            with m.If(ok & wdata[Control.CLEAR_COUNTERS.bit_length() - 1]):
                                for n in self._counters:
                                    m.d.sync += base[n].eq(live[n])
                            clear_bit = wdata[Control.CLEAR.bit_length() - 1]
                            rekey_bit = wdata[Control.REKEY.bit_length() - 1] if self._rekey else 0
                            with m.If(ok & (clear_bit | rekey_bit)):
                                # A re-key is a clear (one, with CLEAR in the same write) with a new seed.
                                m.d.sync += [self.clear.eq(clear_bit), waiting_clear.eq(1), busy.eq(1),
                                             clears.eq(clears + 1)]
                                if self._rekey:
                                    m.d.sync += self.rekey.eq(rekey_bit)
                            with m.Else():
                                answer(ok)
                with m.Default():
                    answer(0)
        return m

"""The de-duplicator's control registers: the one register map that every way onto it (the AXI4-Lite slave of
the exported de-duplicator, the C header for SoC firmware, the Python driver, the generated docs table) takes
from here, and :class:`RegisterFile`, the model of the register file that checks every access.

The map
-------
32-bit registers at byte offsets (:data:`REGISTERS`, each a :class:`Register`), little-endian, word aligned.
What a build holds is a :class:`Facts`: its Config, the actions and key recipes it can take at run time, its
``max_frame``, its capacity (the longest window its memory holds at the planned rate) and what it can change
without a rebuild (:class:`Capability`).

- Read only: the identification (``ID``, ``VERSION``), the build's facts (``CAPS``, ``ACTIONS``, ``KEYS``,
  ``MAX_FRAME``, ``CAPACITY``, ``TICK_NS``), the Config but its seed (``K`` .. ``EXTRA_SEGMENTS``), each port's link
  (``LINK``), the filter's clears (``CLEARS``) and the frame index at which the last change took effect
  (``CHANGE_FRAME``).
- Read and write: ``WINDOW`` (the span in ticks, 1 .. ``CAPACITY``), ``ACTION`` (an index of :data:`ACTIONS`
  whose bit is set in ``ACTIONS``: ``mark`` only where the output has ``tuser``), ``KEY`` (an index of the
  build's recipes, :data:`KEY_RECIPES` first, whose bit is set in ``KEYS``).
- Write only, never read back: ``SEED_LO`` and ``SEED_HI``, the next run-time seed of the hash
  (:mod:`apbbf.model.hashing`, "The run-time seed"), staged until a re-key (0 at reset).
- ``CONTROL`` (write only): the commands of :class:`Control`. ``CLEAR`` empties the filter; ``REKEY`` puts the
  staged seed in place as the run-time seed and empties the filter (a re-key is a clear; ``CLEARS`` counts it);
  ``SNAPSHOT`` copies every counter into the counter registers in one clock cycle; ``CLEAR_COUNTERS`` sets the
  counters to zero (with ``SNAPSHOT`` in the same write: the snapshot holds the counts up to that cycle and the
  counters go on from zero, nothing is lost between two snapshots).
- The counters (read only): the de-duplicator's (:class:`apbbf.model.dedup.Counters`) and, on the two-port
  appliance (:data:`APPLIANCE_REGISTERS`), each port's MAC counters: the values of the last ``SNAPSHOT``, each
  32 bits and wrapping.

Refused accesses
----------------
A write that is out of range (a window out of 1 .. ``CAPACITY``, or other than the built span without
``CAPS.WINDOW``; an action or recipe the build does not hold; an unknown ``CONTROL`` bit or a command the build
cannot take), to a read-only register or to no register, and a read of a write-only register or of no register,
is refused: it changes nothing, and it is an error
(:class:`RegisterError`; an AXI ``SLVERR``, an error reply on the UART).

When a change takes effect
--------------------------
A change of ``WINDOW``, of ``ACTION``, a ``CLEAR`` and a ``REKEY`` take effect between two frames: every frame decided before is
decided as before, every frame from then on with the change. ``CHANGE_FRAME`` names the point: the number of
frames decided before it (:class:`~apbbf.model.dedup.Counters`' ``frames`` since reset, modulo ``2**32``, not
reset by ``CLEAR_COUNTERS``). The model (:class:`apbbf.model.dedup.Dedup`: :meth:`~apbbf.model.dedup.Dedup.set_action`,
:meth:`~apbbf.model.dedup.Dedup.clear`, :meth:`~apbbf.model.dedup.Dedup.rekey`) takes the same change before the
frame of that index. A clear forgets every key: the frames after it find no copy of a frame before it. A longer
window holds the keys inserted from the change on; a shorter one also forgets the keys older than it, counted from
the last insert (:meth:`~apbbf.model.dedup.Dedup.set_window`). A clear keeps the window.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from .config import Config, check_config, check_integer

__all__ = ["MAP_ID", "MAP_VERSION", "ACTIONS", "KEY_RECIPES", "Access", "Capability", "Control", "Register",
           "REGISTERS", "APPLIANCE_REGISTERS", "DEDUP_COUNTERS", "PORT_COUNTERS", "register_map", "RegisterError",
           "Facts", "RegisterFile"]

#: ``ID``'s value: "APBF" in ASCII, first letter in the low byte.
MAP_ID = int.from_bytes(b"APBF", "little")
#: ``VERSION``'s value: the map's layout.
MAP_VERSION = 1
#: The actions, by their ``ACTION`` value (the APPLIANCE reply's action byte: :data:`apbbf.model.protocol.APPLIANCE_ACTIONS`).
ACTIONS = ("drop", "mark", "count")
#: The key recipes every build names the same way, by their ``KEY`` value; recipes a build adds follow.
KEY_RECIPES = ("l3l4", "frame")
#: Bits in a register.
WIDTH = 32


class Access(enum.Enum):
    """Who may do what with a register: read only, read and write, write only (a read is refused)."""
    RO = "ro"
    RW = "rw"
    WO = "wo"


class Capability(enum.IntFlag):
    """``CAPS``: what the build changes at run time, without a rebuild (a write that needs a bit not set is
    refused)."""
    WINDOW = 1 << 0         #: ``WINDOW`` up to ``CAPACITY`` (else only the built span is in range)
    ACTION = 1 << 1         #: ``ACTION`` (else only the built action is in range)
    KEY = 1 << 2            #: ``KEY`` (else only the built recipe is in range)
    CLEAR = 1 << 3          #: ``CONTROL.CLEAR``
    REKEY = 1 << 4          #: ``CONTROL.REKEY`` (and so ``SEED_LO``, ``SEED_HI``)


class Control(enum.IntFlag):
    """``CONTROL``'s command bits (module documentation); any other bit is refused."""
    CLEAR = 1 << 0
    REKEY = 1 << 1
    SNAPSHOT = 1 << 2
    CLEAR_COUNTERS = 1 << 3


@dataclass(frozen=True)
class Register:
    """One 32-bit register of the map.

    Attributes
    ----------
    name : str
        Upper case, as in the C header (``APBBF_<name>``) and the driver (lower case).
    offset : int
        Byte offset, a multiple of 4.
    access : Access
    doc : str
        What it holds, one sentence (the docs table's and the header's comment).
    fact : str or None
        For a read-only register whose value is a fact of the build: the :class:`Facts` attribute (or
        ``config.<name>``) it reads.
    """
    name: str
    offset: int
    access: Access
    doc: str
    fact: str | None = None


#: The de-duplicator's counters, in the order of :class:`apbbf.model.dedup.Counters`.
DEDUP_COUNTERS = ("frames", "duplicates", "dropped", "unchecked", "errored")
#: The two-port appliance's MAC counters (:data:`apbbf.model.protocol.APPLIANCE_COUNTERS`, port 0 first).
PORT_COUNTERS = tuple(f"port{port}_{name}" for port in (0, 1) for name in (
    "rx_frames", "rx_bad_fcs", "rx_phy_errors", "rx_runts", "rx_overflows", "tx_frames", "tx_underflows"))

_CONFIG_FIELDS = ("k", "l", "block_bits", "block_hashes", "segment_blocks", "span", "time_width", "extra_segments")


def _declare() -> tuple[tuple[Register, ...], tuple[Register, ...]]:
    RO, RW, WO = Access.RO, Access.RW, Access.WO
    regs = [
        Register("ID", 0x00, RO, '"APBF" in ASCII, low byte first', "map_id"),
        Register("VERSION", 0x04, RO, "the register map's version", "map_version"),
        Register("CAPS", 0x08, RO, "what the build changes at run time (`Capability` bits)", "caps"),
        Register("ACTIONS", 0x0C, RO, "bit i: `ACTION` may be i (0 drop, 1 mark, 2 count)", "actions_mask"),
        Register("KEYS", 0x10, RO, "bit i: `KEY` may be i (0 `l3l4`, 1 `frame`, then the build's own recipes)",
                 "keys_mask"),
        Register("MAX_FRAME", 0x14, RO, "the longest frame checked, bytes without FCS", "max_frame"),
        Register("CAPACITY", 0x18, RO, "the longest `WINDOW` the built memory holds at the planned rate, ticks",
                 "capacity"),
        Register("TICK_NS", 0x1C, RO, "nanoseconds per tick (0: ticks from `tuser`, of the MAC's unit)", "tick_ns"),
    ]
    offset = 0x20
    for name in _CONFIG_FIELDS:
        regs.append(Register(name.upper(), offset, RO, f"the Config's `{name}`" +
                             (" as built (the reset value of `WINDOW`)" if name == "span" else ""), f"config.{name}"))
        offset += 4
    regs += [
        Register("LINK", 0x40, RO, "bit i: port i's PHY reports a link (0 without ports)"),
        Register("CLEARS", 0x44, RO, "clears of the filter since reset (`CLEAR` and `REKEY`), wrapping"),
        Register("CHANGE_FRAME", 0x48, RO, "frames decided before the last change took effect, wrapping"),
        Register("WINDOW", 0x50, RW, "the window's span, ticks, 1 .. `CAPACITY`"),
        Register("ACTION", 0x54, RW, "the action: a bit of `ACTIONS`"),
        Register("KEY", 0x58, RW, "the key recipe: a bit of `KEYS`"),
        Register("SEED_LO", 0x60, WO,
                 "the next run-time hash seed's bits 31..0, staged until `REKEY`; never read back"),
        Register("SEED_HI", 0x64, WO,
                 "the next run-time hash seed's bits 63..32, staged until `REKEY`; never read back"),
        Register("CONTROL", 0x70, WO, "commands (`Control` bits): 0 clear, 1 rekey, 2 snapshot, 3 clear counters"),
    ]
    offset = 0x80
    for name in DEDUP_COUNTERS:
        regs.append(Register(name.upper(), offset, RO, f"the counter `{name}` at the last snapshot"))
        offset += 4
    ports = []
    offset = 0xC0
    for name in PORT_COUNTERS:
        ports.append(Register(name.upper(), offset, RO, f"the counter `{name}` at the last snapshot"))
        offset += 4
    return tuple(regs), tuple(ports)


#: The registers of every build (the exported de-duplicator's map), in offset order.
#: :data:`APPLIANCE_REGISTERS` adds the two-port appliance's MAC counters.
REGISTERS, _PORT_REGISTERS = _declare()
#: The two-port appliance's map: :data:`REGISTERS` and the MAC counters (:data:`PORT_COUNTERS`).
APPLIANCE_REGISTERS = REGISTERS + _PORT_REGISTERS
#: The counter registers, by map, in offset order: their names (lower case) are the counters'.
_COUNTERS = {"dedup": DEDUP_COUNTERS, "appliance": DEDUP_COUNTERS + PORT_COUNTERS}


def register_map(target: str = "dedup") -> dict[str, Register]:
    """Name -> :class:`Register` of ``target``'s map, in offset order.

    Parameters
    ----------
    target : {"dedup", "appliance"}
        The exported de-duplicator's map, or the two-port appliance's (with the MAC counters).

    Raises
    ------
    ValueError
        If ``target`` is neither.
    """
    if target not in _COUNTERS:
        raise ValueError(f"target must be 'dedup' or 'appliance', not {target!r}")
    return {r.name: r for r in (REGISTERS if target == "dedup" else APPLIANCE_REGISTERS)}


class RegisterError(Exception):
    """A refused access (module documentation, "Refused accesses"): nothing was changed.

    Attributes
    ----------
    offset : int
        The byte offset accessed.
    register : Register or None
        The register there, if any.
    """

    def __init__(self, message: str, offset: int, register: Register | None = None):
        super().__init__(message)
        self.offset, self.register = offset, register


@dataclass(frozen=True)
class Facts:
    """What a build holds and can change: the read-only facts of its map.

    Parameters
    ----------
    config : Config
        The filter, with a span (its seed is never read through the map).
    action : str
        The built action: an element of :data:`ACTIONS` (``WINDOW``, ``ACTION``, ``KEY`` reset to the built ones).
    actions : tuple of str
        The actions ``ACTION`` takes (the built one among them).
    key : str
        The built key recipe's name.
    keys : tuple of str
        The recipes compiled in, by ``KEY`` value: :data:`KEY_RECIPES` first (a build that lacks one holds
        ``None`` in its place), then the build's own.
    max_frame : int
        64..65535.
    capacity : int
        The longest window the built memory holds at the planned rate, ticks: ``config.span`` .. ``2**32 - 1``.
    tick_ns : int
        Nanoseconds per tick, 0..``2**32 - 1`` (0: ticks from ``tuser``).
    caps : Capability
    target : {"dedup", "appliance"}
        The map (:func:`register_map`).

    Raises
    ------
    TypeError, ValueError
        If a parameter is of the wrong type or out of range (the message names it).
    """
    config: Config
    action: str = "drop"
    actions: tuple = ("drop",)
    key: str = "l3l4"
    keys: tuple = ("l3l4",)
    max_frame: int = 9600
    capacity: int | None = None
    tick_ns: int = 0
    caps: Capability = Capability(0)
    target: str = "dedup"

    def __post_init__(self):
        check_config(self.config)
        if not self.config.timed:
            raise ValueError("config must have a span: the de-duplicator's window is bounded by time")
        if self.config.span >= 1 << WIDTH:
            raise ValueError(f"config.span must be below 2**32 to be read through the map, not {self.config.span}")
        actions = tuple(self.actions)
        if not actions or any(a not in ACTIONS for a in actions) or len(set(actions)) != len(actions):
            raise ValueError(f"actions must be distinct elements of {ACTIONS}, not {self.actions!r}")
        if self.action not in actions:
            raise ValueError(f"action must be one of actions {actions}, not {self.action!r}")
        keys = tuple(self.keys)
        if not 0 < len(keys) <= WIDTH or any(k is not None and not (isinstance(k, str) and k) for k in keys):
            raise ValueError(f"keys must be 1..32 recipe names (None for a standard one left out), not {self.keys!r}")
        named = [k for k in keys if k is not None]
        if len(set(named)) != len(named):
            raise ValueError(f"keys must name each recipe once, not {self.keys!r}")
        if any(i < len(KEY_RECIPES) and k is not None and k != KEY_RECIPES[i] for i, k in enumerate(keys)) or any(
                k in KEY_RECIPES for k in keys[len(KEY_RECIPES):]):
            raise ValueError(f"keys must hold {KEY_RECIPES} at their own values, not {self.keys!r}")
        if self.key not in named:
            raise ValueError(f"key must be one of keys {tuple(named)}, not {self.key!r}")
        check_integer("max_frame", self.max_frame, range(64, 65536))
        capacity = self.config.span if self.capacity is None else self.capacity
        check_integer("capacity", capacity, range(self.config.span, 1 << WIDTH))
        check_integer("tick_ns", self.tick_ns, range(0, 1 << WIDTH))
        if not isinstance(self.caps, Capability):
            raise TypeError(f"caps must be a Capability, not {self.caps!r}")
        if self.target not in _COUNTERS:
            raise ValueError(f"target must be 'dedup' or 'appliance', not {self.target!r}")
        object.__setattr__(self, "actions", actions)
        object.__setattr__(self, "keys", keys)
        object.__setattr__(self, "capacity", capacity)

    @property
    def map_id(self) -> int:
        return MAP_ID

    @property
    def map_version(self) -> int:
        return MAP_VERSION

    @property
    def actions_mask(self) -> int:
        return sum(1 << ACTIONS.index(a) for a in self.actions)

    @property
    def keys_mask(self) -> int:
        return sum(1 << i for i, k in enumerate(self.keys) if k is not None)

    @property
    def window_min(self) -> int:
        """The smallest ``WINDOW`` accepted: 1 with :attr:`Capability.WINDOW`, else the built span."""
        return 1 if self.caps & Capability.WINDOW else self.config.span

    @property
    def window_max(self) -> int:
        """The largest ``WINDOW`` accepted: ``capacity`` with :attr:`Capability.WINDOW`, else the built span."""
        return self.capacity if self.caps & Capability.WINDOW else self.config.span

    def settable_actions(self) -> tuple[str, ...]:
        """The actions a write of ``ACTION`` may name (the built one alone without :attr:`Capability.ACTION`)."""
        return self.actions if self.caps & Capability.ACTION else (self.action,)

    def settable_keys(self) -> tuple[str, ...]:
        """The recipes a write of ``KEY`` may name (the built one alone without :attr:`Capability.KEY`)."""
        return tuple(k for k in self.keys if k is not None) if self.caps & Capability.KEY else (self.key,)

    def value(self, register: Register) -> int:
        """The value of the read-only fact ``register`` holds.

        Raises
        ------
        ValueError
            If ``register`` holds no fact.
        """
        if register.fact is None:
            raise ValueError(f"register {register.name} holds no fact of the build")
        if register.fact.startswith("config."):
            return getattr(self.config, register.fact[len("config."):])
        return int(getattr(self, register.fact))


class RegisterFile:
    """The model of a build's register file: it checks every access and answers reads as the gateware must.

    The counters come from ``counters`` (a callable returning the live counts by name, e.g. a
    :class:`~apbbf.model.dedup.Dedup`'s); ``SNAPSHOT`` copies them, ``CLEAR_COUNTERS`` makes them count from
    zero (the register file keeps the counts at the clear and subtracts them, modulo ``2**32``). With ``dedup``,
    every accepted change of the action, clear and re-key is made on it at once, between frames
    (``CHANGE_FRAME`` is its ``counters.frames`` then).

    Parameters
    ----------
    facts : Facts
    dedup : apbbf.model.dedup.Dedup or None
        The model the changes go to (and the counters come from, unless ``counters`` is given).
    counters : callable or None
        Returns a mapping of every counter of the map (:data:`DEDUP_COUNTERS`, and :data:`PORT_COUNTERS` on the
        appliance) to its live count.
    link : callable or None
        Returns ``LINK``'s value (default 0).

    Attributes
    ----------
    window, action, key : int
        The registers' values.
    seed : int
        The run-time seed in use (:mod:`apbbf.model.hashing`, "The run-time seed": 0 until a re-key);
        ``staged_seed`` the one a re-key puts in place (0 at reset, as ``SEED_LO`` and ``SEED_HI`` are).
    clears, change_frame : int

    Raises
    ------
    TypeError
        If ``facts`` is not a Facts.
    """

    def __init__(self, facts: Facts, *, dedup=None, counters=None, link=None):
        if not isinstance(facts, Facts):
            raise TypeError(f"facts must be a Facts, not {facts!r}")
        self.facts, self.dedup = facts, dedup
        self.map = register_map(facts.target)
        self._by_offset = {r.offset: r for r in self.map.values()}
        self._counter_names = _COUNTERS[facts.target]
        if counters is None and dedup is not None:
            counters = lambda: dedup.counters.as_dict()     # noqa: E731
        self._counters = counters
        self._link = link or (lambda: 0)
        self.window = facts.config.span
        self.action = ACTIONS.index(facts.action)
        self.key = facts.keys.index(facts.key)
        self.seed = self.staged_seed = 0
        self.clears = self.change_frame = 0
        self._base = dict.fromkeys(self._counter_names, 0)
        self._snapshot = dict.fromkeys(self._counter_names, 0)

    def _live(self) -> dict:
        if self._counters is None:
            return dict.fromkeys(self._counter_names, 0)
        live = self._counters()
        return {name: live.get(name, 0) % (1 << WIDTH) for name in self._counter_names}

    def _register(self, offset) -> Register:
        check_integer("offset", offset, range(0, 1 << WIDTH))
        register = self._by_offset.get(offset)
        if register is None:
            raise RegisterError(f"no register at offset {offset:#x} (registers: 0x00..{max(self._by_offset):#x}, "
                                "word aligned)", offset)
        return register

    def read(self, offset: int) -> int:
        """The register at byte ``offset``.

        Raises
        ------
        TypeError
            If ``offset`` is not an integer.
        RegisterError
            If there is no register at ``offset`` or it is write only.
        """
        register = self._register(offset)
        if register.access == Access.WO:
            raise RegisterError(f"register {register.name} is write only", offset, register)
        if register.fact is not None:
            return self.facts.value(register)
        name = register.name.lower()
        if name in self._snapshot:
            return self._snapshot[name]
        return {"link": self._link, "clears": lambda: self.clears, "change_frame": lambda: self.change_frame,
                "window": lambda: self.window, "action": lambda: self.action, "key": lambda: self.key}[name]()

    def write(self, offset: int, value: int) -> None:
        """Write ``value`` to the register at byte ``offset``; a refused write changes nothing.

        Raises
        ------
        TypeError
            If ``offset`` or ``value`` is not an integer.
        RegisterError
            If there is no register at ``offset``, it is read only, or ``value`` is out of its range.
        """
        register = self._register(offset)
        check_integer("value", value, range(0, 1 << WIDTH))
        if register.access == Access.RO:
            raise RegisterError(f"register {register.name} is read only", offset, register)
        facts, name = self.facts, register.name

        def refuse(why):
            raise RegisterError(f"{name} = {value:#x} refused: {why}", offset, register)

        if name == "WINDOW":
            if not facts.window_min <= value <= facts.window_max:
                refuse(f"the window must be {facts.window_min}..{facts.window_max} ticks" +
                       ("" if facts.caps & Capability.WINDOW else " (this build cannot change its window)"))
            if value != self.window:
                self._change()
                if self.dedup is not None:
                    self.dedup.set_window(value)
            self.window = value
        elif name == "ACTION":
            settable = facts.settable_actions()
            if value >= len(ACTIONS) or ACTIONS[value] not in settable:
                refuse(f"the action must be one of {', '.join(f'{ACTIONS.index(a)} ({a})' for a in settable)}")
            if value != self.action:
                self._change()
                if self.dedup is not None:
                    self.dedup.set_action(ACTIONS[value])
            self.action = value
        elif name == "KEY":
            settable = facts.settable_keys()
            if value >= len(facts.keys) or facts.keys[value] not in settable:
                refuse(f"the key must be one of {', '.join(f'{facts.keys.index(k)} ({k})' for k in settable)}")
            if value != self.key and self.dedup is not None:
                self.dedup.set_key(facts.keys[value])
            self.key = value
        elif name in ("SEED_LO", "SEED_HI"):
            if not facts.caps & Capability.REKEY:
                refuse("this build cannot be re-keyed")
            shift = 0 if name == "SEED_LO" else WIDTH
            self.staged_seed = (self.staged_seed & ~(0xFFFF_FFFF << shift)) | (value << shift)
        elif name == "CONTROL":
            self._control(value, refuse)

    def _change(self):
        if self.dedup is not None:
            self.change_frame = self.dedup.counters.frames % (1 << WIDTH)

    def _control(self, value, refuse):
        known = sum(Control)
        if value & ~known:
            refuse(f"unknown CONTROL bits {value & ~known:#x} (known: {known:#x})")
        command = Control(value)
        for bit, cap in ((Control.CLEAR, Capability.CLEAR), (Control.REKEY, Capability.REKEY)):
            if command & bit and not self.facts.caps & cap:
                refuse(f"this build cannot take {bit.name}")
        if command & Control.SNAPSHOT:
            live = self._live()
            self._snapshot = {n: (live[n] - self._base[n]) % (1 << WIDTH) for n in self._counter_names}
        if command & Control.CLEAR_COUNTERS:
            self._base = self._live()
        if command & (Control.CLEAR | Control.REKEY):
            self._change()
            if command & Control.REKEY:
                self.seed = self.staged_seed
            if self.dedup is not None:
                if command & Control.REKEY:
                    self.dedup.rekey(self.seed)
                else:
                    self.dedup.clear()
            self.clears = (self.clears + 1) % (1 << WIDTH)

    def counters(self) -> dict[str, int]:
        """The counters as the counter registers hold them (the last snapshot)."""
        return dict(self._snapshot)

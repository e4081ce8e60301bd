"""Board tops: the filter core behind a UART on the board's USB serial port, with LEDs.

Why this design
---------------
:class:`FilterOverUART` (:mod:`apbbf.hdl.board.filter_over_uart`) is the whole design without pins (UART receiver, :class:`HostInterface`, core, UART
transmitter, LED drivers); the tests simulate exactly it, and each board top only adds I/O buffers. The boards
run the core on their oscillator clock, with no PLL, so the baud rate is the clock divided by an integer that the
USB bridge can also produce *exactly* (a rate error eats into the ±4 % an 8N1 link tolerates):

- iCEBreaker, 12 MHz, FT2232H: the FT2232H derives its baud clock from 120 MHz / 10 = 12 MHz, so 12 MHz / 4 =
  **3 Mbaud** is exact on both sides; divisor 4 is the smallest at which the receiver's mid-bit sampling still
  has a quarter-bit margin for the asynchronous start edge. (12 Mbaud would need a 48 MHz PLL clock.)
- ULX3S, 25 MHz, FT231X: the FT231X makes 3 MHz / (n + fraction/8) with n = 0, 1 or >= 2, i.e. 3 M, 2 M, then
  1.5 Mbaud and below. 25 MHz divides none of 3 M, 2 M or 1.5 M to within 2 %, but 25 MHz / 25 = **1 Mbaud** is
  exact on both sides. (3 Mbaud would need a PLL clock that is a multiple of 3 MHz, e.g. 75 MHz.)

LEDs: one shows activity (stretched to be visible), one flashes on a rejected frame, the rest show the low bits of
the core's generation (shift) count, so a running insert stream visibly ages the filter.

Default Configs fill the block RAM: the core needs ``k + l + 1`` memories of ``segment_blocks x block_bits`` and
the host interface one block RAM for its key buffer.

- iCEBreaker (30 x SB_RAM40_4K, 256 x 16 each): 14 segments of 512 x 16 bits = 28 EBR, + 1 for the key FIFO.
  k = 6, l = 7, B = 16, b = 2, 32-bit keys (the per-segment H3 trees are the LUT cost; 32-bit keys halve it).
- ULX3S-85F (208 x DP16KD, 1024 x 16 data bits each): 12 segments of 4096 x 64 bits = 192 EBR, + the key FIFO.
  k = 3, l = 8, B = 64, b = 4, 64-bit keys: a window of 117,304 keys at a worst-case fp of about 2.7e-3. Few deep
  segments rather than many shallow ones: the hash trees and match logic grow with the segment count (51
  segments of 1024 blocks filled the EBR too, but cost ~30K LUTs and tens of minutes of placement).
"""

from amaranth import Module
from amaranth.lib import io, wiring

from ...model.config import Config, check_config, check_integer
from ..lib.devices import block_ram, check_memory
from .filter_over_uart import FilterOverUART
from .host_interface import MAX_BATCH_LIMIT

__all__ = ["FilterOverUART", "ICEBreakerTop", "ULX3STop", "BOARDS", "board_info"]


class _BoardTop(wiring.Component):
    """Common part of the board tops: a :class:`FilterOverUART` with its clock and pins.

    The clock is the board platform's default clock (``make_platform().default_clk_frequency``), the block RAM
    that of its device (``make_platform().device``, :mod:`apbbf.hdl.lib.devices`); the baud rate is the board's
    choice (:attr:`uart_baud`) and must divide that clock exactly (see the module docstring).

    Parameters
    ----------
    config : Config, optional
        The filter (default :attr:`default_config`).
    max_batch : int
        Most keys per frame (see :class:`HostInterface`).

    Raises
    ------
    TypeError
        If ``config`` is not a Config or ``max_batch`` not an integer.
    ValueError
        If ``max_batch`` is out of range, or the filter and the host interface's key buffer need more block RAM
        than the board's device has (:func:`apbbf.hdl.lib.devices.check_memory`).
    """

    #: overridden per board: a function that returns the board's platform (an amaranth-boards instance)
    make_platform = None
    #: UART bit rate, bits/s; must divide the platform's clock exactly
    uart_baud = None
    default_config = None

    def __init__(self, config: Config | None = None, *, max_batch: int = 64):
        config = self.default_config if config is None else config
        check_config(config)
        check_integer("max_batch", max_batch, range(1, MAX_BATCH_LIMIT + 1))
        platform = self.make_platform()
        clock_hz = int(platform.default_clk_frequency)
        if clock_hz % self.uart_baud or clock_hz // self.uart_baud < 4:
            raise ValueError(f"{type(self).__name__}: {self.uart_baud} baud does not divide the {clock_hz} Hz clock "
                             f"into an integer of at least 4 cycles per bit")
        key_buffer_bits = max_batch * 8 * ((config.key_width + 7) // 8)      # whole bytes per key
        check_memory(config, platform.device, reserved_blocks=block_ram(platform.device).blocks_for(key_buffer_bits),
                     reserved_for=f"the host interface's key buffer ({max_batch} keys)")
        self._device = platform.device
        self._clock_hz = clock_hz
        self._config = config
        self._max_batch = max_batch
        super().__init__({})

    @property
    def config(self) -> Config:
        """The filter's Config."""
        return self._config

    @property
    def device(self) -> str:
        """The platform's device string (e.g. ``"iCE40UP5K"``)."""
        return self._device

    @property
    def clock_hz(self) -> int:
        """The board's clock, Hz: the platform's default clock."""
        return self._clock_hz

    @property
    def divisor(self) -> int:
        """Clock cycles per UART bit, :attr:`clock_hz` / :attr:`uart_baud`."""
        return self._clock_hz // self.uart_baud

    @property
    def baud(self) -> int:
        """UART bit rate, bits/s."""
        return self._clock_hz // self.divisor

    def _filter(self):
        return FilterOverUART(self._config, divisor=self.divisor, max_batch=self._max_batch,
                              timeout_cycles=self.clock_hz // 1000,      # 1 ms inter-byte timeout
                              led_cycles=self.clock_hz // 20,            # 50 ms LED pulses
                              clock_hz=self.clock_hz)

    def _uart(self, m, platform, top):
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.d.comb += [top.rx.eq(rx.i), tx.o.eq(top.tx)]

    def _led(self, m, platform, name, number, value):
        led = platform.request(name, number, dir="-")
        buffer = io.Buffer("o", led)
        m.submodules[f"{name}_{number}"] = buffer
        m.d.comb += buffer.o.eq(value)


def _icebreaker_platform():
    from amaranth_boards.icebreaker import ICEBreakerPlatform
    platform = ICEBreakerPlatform()
    platform.add_resources(platform.break_off_pmod)   # the snap-off LED/button PMOD (in PMOD2 by default)
    return platform


def _ulx3s_platform():
    from amaranth_boards.ulx3s import ULX3S_85F_Platform
    return ULX3S_85F_Platform()


class ICEBreakerTop(_BoardTop):
    """iCEBreaker (iCE40UP5K): 12 MHz, 3 Mbaud on the FT2232H's second channel; green LED activity, red LED
    errors, the four green LEDs of the snap-off PMOD the low generation bits."""

    make_platform = staticmethod(_icebreaker_platform)
    uart_baud = 3_000_000
    default_config = Config(k=6, l=7, block_bits=16, block_hashes=2, segment_blocks=512, key_width=32, seed=0)

    def elaborate(self, platform):
        m = Module()
        m.submodules.filter = top = self._filter()
        self._uart(m, platform, top)
        self._led(m, platform, "led_g", 0, top.activity)
        self._led(m, platform, "led_r", 0, top.error)
        for bit in range(4):
            self._led(m, platform, "led_g", bit + 1, top.generation[bit])
        return m


class ULX3STop(_BoardTop):
    """ULX3S-85F (ECP5-85F): 25 MHz, 1 Mbaud on the FT231X; LED 0 activity, LED 1 errors, LEDs 2-7 the low
    generation bits."""

    make_platform = staticmethod(_ulx3s_platform)
    uart_baud = 1_000_000
    default_config = Config(k=3, l=8, block_bits=64, block_hashes=4, segment_blocks=4096, key_width=64, seed=0)

    def elaborate(self, platform):
        m = Module()
        m.submodules.filter = top = self._filter()
        self._uart(m, platform, top)
        self._led(m, platform, "led", 0, top.activity)
        self._led(m, platform, "led", 1, top.error)
        for bit in range(6):
            self._led(m, platform, "led", bit + 2, top.generation[bit])
        return m


#: board name -> board top class
BOARDS = {
    "icebreaker": ICEBreakerTop,
    "ulx3s-85f": ULX3STop,
}


def board_info(board: str):
    """The top class and a platform instance of a board.

    Parameters
    ----------
    board : str
        A key of :data:`BOARDS`.

    Returns
    -------
    (type, amaranth.build.Platform)
        The board top's class and a new instance of its platform.

    Raises
    ------
    ValueError
        If ``board`` is not a key of :data:`BOARDS`.
    """
    if board not in BOARDS:
        raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {board!r}")
    top = BOARDS[board]
    return top, top.make_platform()

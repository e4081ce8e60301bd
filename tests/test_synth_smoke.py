# amaranth: UnusedElaboratable=no
"""Fast synthesis smoke test: one small Config on iCE40; every filter segment must land in an SB_RAM40_4K.

Only the memory mapping is checked (yosys ``stat``), not LUT counts or frequency: those go to the reports.
"""

import shutil
import subprocess
from pathlib import Path

from amaranth.back import rtlil

from apbbf.hdl.core.apbbf import APBBF
from apbbf.model.config import Config
from apbbf.toolchain import find_yosys, yosys_cells

ROOT = Path(__file__).resolve().parent.parent


def test_segments_map_to_block_ram():
    # The toolchain is pinned in requirements.txt: a missing yosys is a broken setup, not a reason to skip.
    yosys = find_yosys()
    assert Path(yosys).exists() or shutil.which(yosys), f"{yosys} is missing: run `make setup`"
    # 256 x 16 bits per segment: exactly one SB_RAM40_4K each
    config = Config(k=2, l=2, block_bits=16, block_hashes=2, segment_blocks=256, key_width=16)
    work = ROOT / "build" / "test_synth_smoke"   # YoWASP cannot open absolute /tmp paths: stay in the repo
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "core.il").write_text(rtlil.convert(APBBF(config), name="top"))
    subprocess.run([yosys, "-q", "-l", "synth.log", "-p", "read_rtlil core.il; synth_ice40 -top top; stat"],
                   cwd=work, check=True, timeout=300)
    cells = yosys_cells((work / "synth.log").read_text())
    assert cells.get("SB_RAM40_4K") == config.physical_segments, cells
    # no segment fell back to flip-flop or LUT memories
    assert not any(name.startswith("$mem") for name in cells), cells

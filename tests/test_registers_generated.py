"""What is generated from the register map (apbbf.registers): the C header compiled with the system C compiler and
its offsets checked against the map, the Python driver over the model of the register file, the docs table."""

import shutil
import subprocess

import pytest

from apbbf import docgen
from apbbf.model.config import Config
from apbbf.model.dedup import Dedup
from apbbf.model.packet import KeySpec
from apbbf.model.registers import (ACTIONS, MAP_ID, Access, Capability, Control, Facts, RegisterError, RegisterFile,
                                   register_map)
from apbbf.registers import Registers, c_header, main, markdown_table

CONFIG = Config(k=2, l=3, block_bits=64, block_hashes=4, segment_blocks=64, span=2000, time_width=16,
                extra_segments=2, seed=5)
FACTS = Facts(CONFIG, actions=("drop", "count"), max_frame=1522, tick_ns=1000,
              caps=Capability.ACTION | Capability.CLEAR | Capability.REKEY)


@pytest.mark.parametrize("target", ["dedup", "appliance"])
def test_c_header_compiles_and_holds_the_map(tmp_path, target):
    """The header compiles warning-free as C99 and C11; a program built on it prints every offset and constant,
    and they are the map's; ``_Static_assert``s pin a few."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no system C compiler (cc)")
    header = tmp_path / "apbbf_registers.h"
    assert main(["--target", target, "-o", str(header)]) == 0
    registers = register_map(target)
    prints = "".join(f'    printf("{name} %u\\n", (unsigned)APBBF_{name});\n' for name in registers)
    (tmp_path / "main.c").write_text(
        '#include <stdio.h>\n#include "apbbf_registers.h"\n#include "apbbf_registers.h"\n'
        "_Static_assert(APBBF_WINDOW == 0x50u, \"WINDOW\");\n_Static_assert(APBBF_CONTROL == 0x70u, \"CONTROL\");\n"
        "_Static_assert(APBBF_FRAMES == 0x80u, \"FRAMES\");\n"
        "_Static_assert(APBBF_CONTROL_SNAPSHOT == 4u, \"SNAPSHOT\");\n"
        "static uint32_t regs[256];\n"
        "int main(void)\n{\n"
        "    uintptr_t base = (uintptr_t)regs;\n"
        "    apbbf_write(base, APBBF_WINDOW, 7u);\n"
        "    if (apbbf_read(base, APBBF_WINDOW) != 7u || regs[APBBF_WINDOW / 4] != 7u) return 1;\n"
        f"{prints}"
        '    printf("MAP_ID %u\\nCOUNT %u\\nCAPS_REKEY %u\\nACTION_COUNT %u\\nKEY_FRAME %u\\n", '
        "(unsigned)APBBF_MAP_ID, (unsigned)APBBF_REGISTER_COUNT, (unsigned)APBBF_CAPS_REKEY, "
        "(unsigned)APBBF_ACTION_COUNT, (unsigned)APBBF_KEY_FRAME);\n"
        "    return 0;\n}\n")
    for std in ("c99", "c11"):
        subprocess.run([cc, f"-std={std}", "-Wall", "-Wextra", "-Werror", "-pedantic", "-o", "prog", "main.c"],
                       cwd=tmp_path, check=True, capture_output=True)
    out = subprocess.run([str(tmp_path / "prog")], check=True, capture_output=True, text=True).stdout
    values = dict(line.split() for line in out.splitlines())
    assert {name: int(values[name]) for name in registers} == {n: r.offset for n, r in registers.items()}
    assert (int(values["MAP_ID"]), int(values["COUNT"]), int(values["CAPS_REKEY"]), int(values["ACTION_COUNT"]),
            int(values["KEY_FRAME"])) == (MAP_ID, len(registers), int(Capability.REKEY), ACTIONS.index("count"), 1)


def test_c_header_prefix_is_checked():
    assert "#define SOC_DEDUP_WINDOW 0x050u" in c_header(prefix="SOC_DEDUP")
    for prefix in ("apbbf", "1X", "A-B", ""):
        with pytest.raises(ValueError, match="prefix"):
            c_header(prefix=prefix)


def test_driver_over_the_model():
    """The driver's attributes are the map's registers, with its access rules; its commands do what the map
    says, and refused writes come back as RegisterError with nothing changed."""
    dedup = Dedup(CONFIG, KeySpec.frame())
    regs = Registers(RegisterFile(FACTS, dedup=dedup))
    for name, register in register_map().items():
        attribute = name.lower()
        if register.access == Access.WO:
            with pytest.raises(AttributeError, match="write only"):
                getattr(regs, attribute)
        else:
            getattr(regs, attribute)
        if register.access == Access.RO:
            with pytest.raises(AttributeError, match="read only"):
                setattr(regs, attribute, 0)
    assert regs.facts()["span"] == 2000 and regs.id == MAP_ID and "seed_lo" not in regs.facts()
    assert regs.set_window("2ms") == 2000
    with pytest.raises(RegisterError, match="2000..2000 ticks .this build cannot change its window"):
        regs.set_window("2001us")
    frame = bytes(60)
    for t in range(3):
        dedup.frame(frame, t)
    regs.set_action("count")
    assert dedup.action.value == "count" and regs.change_frame == 3
    with pytest.raises(RegisterError, match="action must be one of"):
        regs.set_action("mark")
    with pytest.raises(ValueError, match="action must be one of"):
        regs.set_action("keep")
    assert regs.snapshot(clear=True) == {"frames": 3, "duplicates": 2, "dropped": 2, "unchecked": 0, "errored": 0}
    assert regs.snapshot()["frames"] == 0
    regs.rekey(0x1234_5678_9ABC_DEF0)
    assert dedup.run_seed == 0x1234_5678_9ABC_DEF0 and dedup.config == CONFIG and regs.clears == 1
    regs.clear()
    assert regs.clears == 2
    with pytest.raises(ValueError, match="seed"):
        regs.rekey(-1)
    with pytest.raises(RegisterError, match="key must be one of"):
        regs.set_key("frame")
    with pytest.raises(KeyError):
        regs.read("NOTHING")
    regs.clear_counters()
    assert Registers(RegisterFile(Facts(CONFIG, target="appliance")), "appliance").port1_rx_frames == 0


def test_docs_table_lists_every_register():
    table = markdown_table("dedup")
    for name, register in register_map().items():
        assert f"| `{register.offset:#04x}` | `{name}` | {register.access.value} |" in table
    assert "PORT0_RX_FRAMES" in docgen.register_map_block()
    assert int(Control.CLEAR_COUNTERS) == 8

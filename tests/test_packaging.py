"""The distribution installs only the apbbf.* namespace (model/, hdl/, sim/ mapped under it)."""

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contains_only_apbbf(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(ROOT)], check=True)
    wheel, = tmp_path.glob("apbbf-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names}
    assert top <= {"apbbf", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}, top
    for module in ("apbbf/model/filters.py", "apbbf/hdl/core.py", "apbbf/sim/harness.py", "apbbf/cli.py"):
        assert module in names, f"{module} missing from the wheel"
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "apbbf = apbbf.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()

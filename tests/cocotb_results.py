"""Reading a cocotb results XML, for the tests that run cocotb benches (``tests/test_*cocotb*.py``)."""

from pathlib import Path
from xml.etree import ElementTree

__all__ = ["results"]


def results(path: Path) -> tuple[list[str], list[str]]:
    """The names of the testcases that ran (were not skipped), and ``name: message`` of each that failed."""
    ran, failed = [], []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        if list(case.iter("skipped")):
            continue
        ran.append(case.get("name"))
        for failure in list(case.iter("failure")) + list(case.iter("error")):
            failed.append(f"{case.get('name')}: {failure.get('message') or ''}")
    return ran, failed

"""The docs' generated blocks (apbbf.docgen): every block in the README and docs/ is what its function writes
now, a stale or unknown block is found, and the Makefile's ``docs`` target rewrites them."""

import pytest

from apbbf import docgen


def test_every_block_is_fresh():
    assert docgen.stale() == {}, "run `make docs` and commit the result"


def test_a_stale_block_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("intro\n")
    fresh = docgen.restart_block()
    stale = fresh.replace("| fsm |", "| fsm, stale |")
    assert stale != fresh
    page = tmp_path / "docs" / "core.md"
    page.write_text(f"a\n<!-- generated: restart-cycles -->\n{stale}\n"
                    "<!-- end: restart-cycles -->\nb\n")
    assert docgen.stale(tmp_path) == {"docs/core.md": ["restart-cycles"]}
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1
    assert docgen.main(["--root", str(tmp_path)]) == 0
    assert page.read_text() == f"a\n<!-- generated: restart-cycles -->\n{fresh}\n<!-- end: restart-cycles -->\nb\n"
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 0


def test_an_unknown_block_is_refused():
    with pytest.raises(ValueError, match="unknown generated block 'nothing'"):
        docgen.render("<!-- generated: nothing -->\n<!-- end: nothing -->")


def test_report_block_rewritten_in_place(tmp_path):
    """A flow's report block is replaced between its markers, and nothing else in the file changes; a file
    without the block is left alone; a bad name is refused."""
    from apbbf.docgen import machine_stamp, write_report_block
    doc = tmp_path / "README.md"
    doc.write_text("a\n<!-- report: bench -->\nold\n<!-- end: bench -->\nb\n<!-- report: other -->\nx\n"
                   "<!-- end: other -->\n")
    assert write_report_block("bench", "| new |\n", doc)
    assert doc.read_text() == ("a\n<!-- report: bench -->\n| new |\n<!-- end: bench -->\nb\n<!-- report: other -->\n"
                               "x\n<!-- end: other -->\n")
    before = doc.read_text()
    assert not write_report_block("missing", "y", doc) and doc.read_text() == before
    with pytest.raises(ValueError, match="name"):
        write_report_block("a b", "y", doc)
    assert "CPUs" in machine_stamp()


def test_readme_is_a_newcomers_page():
    """The README stays under 200 lines and opens with its two commands (the rest belongs in docs/)."""
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert len(text.splitlines()) < 200, "move detail from the README to docs/"
    commands = text[text.index("```sh") + len("```sh"):text.index("```", text.index("```sh") + 5)].split()
    assert commands[0] == "make" and "make" in commands[1:] and "test" in commands

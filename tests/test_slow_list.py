"""The quick loop's list of slow tests (tests/slow.py, tests/slow.txt): made from pytest's own
report of a whole run, naming only tests that exist, and marking them ``slow``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import conftest
from tests.slow import LIST, THRESHOLD, listed, main, slow_ids

ROOT = Path(__file__).resolve().parents[1]

REPORT = """\
============================== slowest durations ===============================
12.50s call     tests/test_a.py::test_long
0.30s setup    tests/test_a.py::test_split[sqlite]
0.25s teardown tests/test_a.py::test_split[sqlite]
0.40s call     tests/test_b.py::test_short
0.45s call     tests/test_b.py::test_param[argv1-add-section added after step 1]
0.20s setup    tests/test_b.py::test_param[argv1-add-section added after step 1]
(5183 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_a_tests_setup_call_and_teardown_add_up_against_the_threshold():
    assert slow_ids(REPORT, 0.5) == [
        "tests/test_a.py::test_long",
        "tests/test_a.py::test_split[sqlite]",  # 0.30 + 0.25
        "tests/test_b.py::test_param[argv1-add-section added after step 1]",  # 0.45 + 0.20
    ]
    assert slow_ids(REPORT, 13) == []
    with pytest.raises(ValueError, match="--durations=0"):
        slow_ids("5 passed in 1.00s")


def test_every_listed_test_exists():
    """A renamed or removed test leaves the list: make it again (python -m tests.slow REPORT)."""
    ids = listed()
    assert len(ids) > 100, f"{LIST} lists {len(ids)} tests"
    stale = []
    for test in sorted(ids):
        path, name = test.split("::")[0], re.sub(r"\[.*$", "", test.split("::")[-1])
        file = ROOT / path
        if not file.exists() or not re.search(rf"^\s*(async )?def {re.escape(name)}\(", file.read_text(), re.M):
            stale.append(test)
    assert not stale, f"{len(stale)} listed tests are gone (python -m tests.slow REPORT): {stale[:5]}"


def test_listed_tests_are_marked_slow_and_others_are_not():
    class Item:
        def __init__(self, nodeid):
            self.nodeid, self.marks = nodeid, []

        def add_marker(self, mark):
            self.marks.append(mark.name)

    one = next(iter(sorted(listed())))
    items = [Item(one), Item("tests/test_slow_list.py::test_listed_tests_are_marked_slow_and_others_are_not")]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.marks for i in items] == [["slow"], []]


def test_the_threshold_is_the_one_the_marker_names():
    marker = next(line for line in (ROOT / "pyproject.toml").read_text().splitlines() if '"slow:' in line)
    assert f"{THRESHOLD:g} s or more" in marker, marker


def test_a_report_without_durations_is_one_line_naming_the_flag(tmp_path, capsys):
    report = tmp_path / "report.txt"
    report.write_text("2747 passed in 800.00s\n")
    assert main([str(report)]) == 2
    assert capsys.readouterr().err.strip() == "error: no durations in the report: run the suite with --durations=0"
    assert main([str(tmp_path / "missing.txt")]) == 2
    assert main([]) == 2

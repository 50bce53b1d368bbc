"""The tests the quick loop of README leaves out (marked ``slow`` by tests/conftest.py): those that
took ``THRESHOLD`` seconds or more (setup, call and teardown together) in a whole run of the suite.

The list (tests/slow.txt, one test id a line) is made from pytest's own report of a whole run, so
anyone can make it again after the suite changed (a test not listed runs in the quick loop):

    bash scripts/test.sh --durations=0 > report.txt; python -m tests.slow report.txt

CI runs every test, listed or not."""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from pathlib import Path

#: Seconds (setup + call + teardown) from which a test is slow, measured in a whole run of the
#: suite on 2 cores (3 workers, the browsers beside them).
THRESHOLD = 0.3
LIST = Path(__file__).with_name("slow.txt")
_LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S+::\S.*?)\s*$")


def slow_ids(report: str, threshold: float = THRESHOLD) -> list[str]:
    """The ids of the tests whose setup, call and teardown add up to ``threshold`` seconds or more
    in ``report`` (the text of a run with ``--durations=0``), sorted."""
    seconds: dict[str, float] = defaultdict(float)
    for line in report.splitlines():
        if m := _LINE.match(line):
            seconds[m.group(2)] += float(m.group(1))
    if not seconds:
        raise ValueError("no durations in the report: run the suite with --durations=0")
    return sorted(test for test, s in seconds.items() if s >= threshold)


def listed(path: Path = LIST) -> set[str]:
    """The ids in the list (none when there is no list)."""
    if not path.exists():
        return set()
    return {line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.slow REPORT (the output of a whole run with --durations=0)", file=sys.stderr)
        return 2
    try:
        ids = slow_ids(Path(argv[0]).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    LIST.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    print(f"{len(ids)} tests of {THRESHOLD:g} s or more: {LIST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

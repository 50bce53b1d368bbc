"""Smoke test of bench/run_cpu.py: a short run prints per-run CPU and wall figures that agree with
what it measured, and the runs load no certificate bundle (the app's clients share theirs,
core/tls.py); a bad option is refused naming its flag."""

from __future__ import annotations

import re
import statistics

import pytest

from bench import run_cpu


def test_the_bench_prints_what_it_measured_and_runs_load_no_certificates(capsys):
    result = run_cpu.main(["--runs", "2"])
    printed = capsys.readouterr().out
    assert len(result["cpu"]) == len(result["wall"]) == 2 and all(s > 0 for s in result["cpu"])
    for name in ("cpu", "wall"):
        shown = re.search(rf"^{name} +per run: median (\d+) ms \(min (\d+), max (\d+)\) over 2 runs of rat$",
                          printed, re.M)
        assert shown, printed
        ms = [1000 * s for s in result[name]]
        assert [int(x) for x in shown.groups()] == [round(statistics.median(ms)), round(min(ms)), round(max(ms))]
    assert result["loaded"] == [] and "certificate bundles loaded in those runs: 0" in printed


def test_the_bench_refuses_a_bad_option_naming_it(capsys):
    with pytest.raises(SystemExit):
        run_cpu.main(["--runs", "0"])
    assert "--runs" in capsys.readouterr().err

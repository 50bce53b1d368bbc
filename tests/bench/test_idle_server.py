"""bench/idle_server.py prints a row per setting of the queue's sleeps that agrees with what it
measured, and refuses a bad option naming it."""

from __future__ import annotations

import re

import pytest

from bench import idle_server
from ui.app import PROGRESS_POLL, QUEUE_POLL


def test_the_bench_prints_a_row_per_setting_that_agrees_with_what_it_measured(capsys):
    results = idle_server.main(["--seconds", "0.3", "--rounds", "1"])
    printed = capsys.readouterr().out

    assert list(results) == [name for name, *_ in idle_server.SETTINGS] == ["Gradio's", "the app's"]
    assert idle_server.SETTINGS[1][1:] == (QUEUE_POLL, PROGRESS_POLL)  # the app's own, as ui.app sets them
    for name, poll, progress in idle_server.SETTINGS:
        row = re.search(rf"^{re.escape(name)} +([\d.]+) +([\d.]+) +([\d.]+)$", printed, re.M)
        assert row, printed
        assert (float(row[1]), float(row[2])) == (poll, progress)
        assert results[name] >= 0 and float(row[3]) == round(results[name], 3)  # (0: no clock tick in 0.3 s)


@pytest.mark.parametrize(("argv", "flag"), [(["--seconds", "0"], "--seconds"), (["--rounds", "0"], "--rounds")])
def test_the_bench_refuses_a_bad_option_naming_it(argv, flag, capsys):
    with pytest.raises(SystemExit):
        idle_server.main(argv)
    assert flag in capsys.readouterr().err

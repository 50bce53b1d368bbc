"""Smoke tests of bench/arena_scale.py and scripts/arena_cluster.py: a short run of a few annotators
against one process and against two behind HAProxy (one of them killed halfway) prints a row per
setup whose numbers agree with what it measured and with the database; a setup whose workers do
not start is reported, not raised; bad options are refused naming their flag."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bench import arena_scale
from scripts import arena_cluster

needs_haproxy = pytest.mark.skipif(shutil.which("haproxy") is None,
                                   reason="HAProxy is not installed: apt-get install -y haproxy")


def rows(printed: str) -> dict[str, list[str]]:
    """The table's rows by setup: the cells after the setup's name."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["setup", "workers"]) + 1
    table = {}
    for line in lines[start:]:
        if not line.strip() or line.startswith(" "):
            break
        table[line.split()[0]] = line.split()[1:]
    return table


#: Seconds each setup of the smoke test is measured (worker 1 of sqlite2 is killed halfway). An
#: annotator on the killed worker may take two errors before it votes again (its vote on the other
#: worker finds no session there, then a login still sent to the dead one), 1 + 2 s of pauses and
#: two logins: with 8 s (4 left after the kill) a loaded machine ran out of time once (CI-like run).
DURATION = 14


@needs_haproxy
def test_bench_prints_a_row_per_setup_that_agrees_with_the_database(capsys):
    results = arena_scale.main(["--annotators", "6", "--think", "0.2-0.5", "--warmup", "3", "--duration", str(DURATION),
                                "--setups", "sqlite1,sqlite2", "--kill-one", "--clients", "2"])
    printed = capsys.readouterr().out
    table = rows(printed)

    assert list(table) == ["sqlite1", "sqlite2"]
    for name, cells in table.items():
        outcome = results[name]
        workers, annotators, per_min, *latencies, errors, cast, stored, lost, worker_cpu, pg_cpu, machine = cells
        assert (int(workers), int(annotators)) == (outcome.setup.workers, 6)
        assert int(cast) == outcome.cast >= 6, name  # every annotator voted at least once
        assert int(stored) == sum(outcome.stored.values()) >= int(cast), name
        assert int(lost) == outcome.lost == 0, name
        assert 0 < outcome.steady_cast <= outcome.cast, name  # votes/min and latencies: after the warm-up only
        assert abs(float(per_min) - 60 * outcome.steady_cast / (outcome.wall - outcome.warmup)) <= 1, name
        vote, nxt = [float(x) for x in latencies[:3]], [float(x) for x in latencies[3:]]
        assert 0 < vote[0] <= vote[1] <= vote[2] and 0 < nxt[0] <= nxt[1] <= nxt[2], name
        assert int(errors) == len(outcome.joined("errors"))
        assert 0 < float(worker_cpu.rstrip("%")) <= float(machine.rstrip("%")), name  # the window's CPU
        assert float(pg_cpu.rstrip("%")) >= 0, name
        assert DURATION - 1 < outcome.cpu.seconds <= DURATION + 1, name  # the window measured is the duration
        assert outcome.exited == [], name  # no worker ended but the one killed
    assert results["sqlite1"].joined("errors") == []  # one worker, nothing killed: no error at all
    on_killed, went_on = results["sqlite2"].continued()
    assert results["sqlite2"].killed == "w1" and on_killed >= 1
    assert went_on == on_killed, results["sqlite2"].joined("errors")
    assert f"{went_on} of its {on_killed} annotators logged in again" in printed
    assert "clients took" in printed


def test_a_setup_whose_workers_do_not_start_is_reported_with_their_words(capsys, monkeypatch):
    monkeypatch.setattr(arena_scale, "WORKER_LIMITS", ["--votes-per-minute", "0"])  # the app refuses it
    results = arena_scale.main(["--annotators", "1", "--duration", "1", "--setups", "sqlite1"])

    assert "--votes-per-minute" in results["sqlite1"] and "exited" in results["sqlite1"]
    assert "sqlite1        1 not run: ClusterError: worker 1" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "flag"), [
    (["--setups", "sqlite1,mysql2"], "--setups"),
    (["--setups", "pg0"], "--setups"),
    (["--think", "5-2"], "--think"),
    (["--think", "soon"], "--think"),
    (["--annotators", "0"], "--annotators"),
    (["--clients", "0"], "--clients"),
])
def test_the_bench_refuses_a_bad_option_naming_it(argv, flag, capsys):
    with pytest.raises(SystemExit):
        arena_scale.parse_args(argv)
    assert flag in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "flag"), [
    (["--workers", "0", "--db", "a.db"], "--workers"),
    (["--workers", "65", "--db", "a.db"], "--workers"),
    (["--port", "80", "--db", "a.db"], "--port"),
    (["--db", " "], "--db"),
    ([], "--db"),
])
def test_the_cluster_script_refuses_a_bad_option_naming_it(argv, flag, capsys):
    with pytest.raises(SystemExit):
        arena_cluster.parse_args(argv)
    assert flag in capsys.readouterr().err


@needs_haproxy
def test_the_haproxy_config_has_a_sticky_checked_server_per_worker_and_haproxy_accepts_it(tmp_path):
    config = arena_cluster.haproxy_config(8000, [8001, 8002, 8003])
    path = tmp_path / "haproxy.cfg"
    path.write_text(config)

    assert "bind 127.0.0.1:8000" in config and "cookie SERVERID insert" in config and "option forwardfor" in config
    servers = [line.split() for line in config.splitlines() if line.strip().startswith("server ")]
    assert servers == [["server", f"w{k}", f"127.0.0.1:800{k}", "check", "cookie", f"w{k}"] for k in (1, 2, 3)]
    check = subprocess.run(["haproxy", "-c", "-f", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_the_haproxy_config_needs_a_worker():
    with pytest.raises(arena_cluster.ClusterError, match="--workers"):
        arena_cluster.haproxy_config(8000, [])

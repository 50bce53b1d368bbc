"""Smoke test of bench/arena_click.py: a few rounds against one worker on SQLite print the worker's
CPU per vote and next pair and the clicks' wall times, each measured (not zero), and every vote
the bench cast is stored; a bad --rounds is refused naming the flag."""

from __future__ import annotations

import pytest

from bench import arena_click, arena_scale


def test_a_short_run_prints_what_it_measured(capsys, monkeypatch):
    seen = {}
    real = arena_click.prepare

    def remember(db, names):
        seen["db"] = db
        real(db, names)

    monkeypatch.setattr(arena_click, "prepare", remember)
    monkeypatch.setattr(arena_click, "WARM_ROUNDS", 2)
    stored = {}
    real_stop = arena_scale.Cluster.stop

    def stop(cluster):
        real_stop(cluster)
        stored["votes"] = sum(arena_scale.stored_votes(seen["db"]).values())

    monkeypatch.setattr(arena_scale.Cluster, "stop", stop)
    result = arena_click.main(["--rounds", "8"])
    printed = capsys.readouterr().out
    assert result["server"] > 0 and result["vote"] > 0 and result["next"] > 0
    assert f"server CPU {result['server']:.2f} ms per vote and next pair" in printed
    assert "on SQLite" in printed and "PostgreSQL's own" not in printed
    assert stored["votes"] == 8 + 2, "every vote cast, warm-up included, is stored"


def test_a_bad_rounds_names_the_flag(capsys):
    with pytest.raises(SystemExit):
        arena_click.main(["--rounds", "0"])
    assert "--rounds" in capsys.readouterr().err


def test_a_cluster_counting_statements_counts_each_one_run():
    """What bench.arena_click reads as statements per click on PostgreSQL (pg_stat_statements)."""
    import psycopg

    from tests.pg import PgCluster

    with PgCluster(statements=True) as cluster:
        url = cluster.new_database()
        before = cluster.statements_run()
        with psycopg.connect(url, autocommit=True) as conn:
            for k in range(5):
                conn.execute("select %s::int + 1", [k])
        assert cluster.statements_run() - before == 5

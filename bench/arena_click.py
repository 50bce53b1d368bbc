"""What one annotator's clicks cost the server: one simulated annotator (an account, logged in through
the login page) votes and asks for the next pair ``--rounds`` times in a row, with no pause,
against one ``app.py --arena-only`` worker; prints the worker's CPU per vote and next pair (from
/proc) and each click's wall time. On SQLite, or on a throwaway local PostgreSQL (--postgres);
PostgreSQL's own CPU is printed apart. Passes or fails nothing.

    python -m bench.arena_click [--rounds 300] [--postgres]

How many annotators that holds at once is bench/arena_scale.py's question; this one isolates the
cost of a click, the figure behind it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from bench.arena import QueueClient
from bench.arena_scale import (
    VOTES,
    WORKER_LIMITS,
    Cluster,
    annotator_names,
    arena_fns,
    log_in,
    postgres_cpu,
    postgres_used,
    prepare,
    served_config,
)
from scripts.pg_cluster import PgCluster
from tests.helpers import cpu_seconds, free_port
from ui import arena as arena_tab

WARM_ROUNDS = 30  # rounds before measuring: caches filled, connections open


def measure(db: str, rounds: int, statements: Callable[[], int] | None = None) -> dict[str, float]:
    """Start a worker on ``db`` (prepared here), run the rounds; returns ms per round of the
    worker's CPU ("server") and PostgreSQL's ("postgres"), the mean wall ms of a vote and of a
    next pair, and (given ``statements``, a count of the statements the database has run) the
    statements per round. Raises ClusterError, RuntimeError, httpx.HTTPError."""
    names = annotator_names(2)
    prepare(db, names)
    cluster = Cluster(db, workers=1, port=free_port(2), extra=WORKER_LIMITS, balancer=False)
    url = cluster.start()
    try:
        fns = arena_fns(served_config(url, names[0]))
        http = log_in(url, names[1])
        client = QueueClient(url + "arena/", fns, http)
        client.call("load")
        for k in range(WARM_ROUNDS):
            client.call(VOTES[k % len(VOTES)], None, "", "", *arena_tab.VOTE_EXTRAS)
            client.call("rat-next", None)
        pid = cluster.pids()[0]
        cpu, pg = cpu_seconds(pid), postgres_cpu()
        ran = statements() if statements else 0
        vote = nxt = 0.0
        for k in range(rounds):
            started = time.perf_counter()
            client.call(VOTES[k % len(VOTES)], None, "", "", *arena_tab.VOTE_EXTRAS)
            voted = time.perf_counter()
            client.call("rat-next", None)
            vote, nxt = vote + voted - started, nxt + time.perf_counter() - voted
        cpu, pg = cpu_seconds(pid) - cpu, postgres_used(pg)
        ran = statements() - ran if statements else 0
        http.close()
    finally:
        cluster.stop()
    return {"server": 1000 * cpu / rounds, "postgres": 1000 * pg / rounds, "vote": 1000 * vote / rounds,
            "next": 1000 * nxt / rounds, "statements": ran / rounds}


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=300, help="votes and next pairs measured (default 300)")
    parser.add_argument("--postgres", action="store_true", help="on a throwaway local PostgreSQL, not SQLite")
    args = parser.parse_args(argv)
    if not 1 <= args.rounds <= 100_000:
        parser.error(f"--rounds takes 1 to 100000, not {args.rounds}.")
    with tempfile.TemporaryDirectory(prefix="rat-arena-click-") as tmp, ExitStack() as stack:
        statements = None
        if args.postgres:
            cluster = stack.enter_context(PgCluster(durable=True, statements=True))
            db, statements = cluster.new_database(), cluster.statements_run
        else:
            db = str(Path(tmp) / "click.db")
        result = measure(db, args.rounds, statements)
    where = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{args.rounds} votes and next pairs, one annotator, one worker on {where}: server CPU "
          f"{result['server']:.2f} ms per vote and next pair"
          + (f" (PostgreSQL's own: {result['postgres']:.2f} ms; {result['statements']:.1f} statements)"
             if args.postgres else "")
          + f"; wall time: vote {result['vote']:.2f} ms, next pair {result['next']:.2f} ms")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])

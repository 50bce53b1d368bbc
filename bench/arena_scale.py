"""How many annotators the arena holds: simulated annotators, each with an account, log in through
the app's login page and then vote and ask for the next pair over HTTP through Gradio's queue, as
their browsers would, reading each pair for a think time drawn between two bounds; against one
process on SQLite, one on PostgreSQL, and N processes behind HAProxy (sticky sessions,
scripts/arena_cluster.py). Prints a table; passes or fails nothing.

    python -m bench.arena_scale [--annotators 200] [--think 2-5] [--duration 60]
                                [--setups sqlite1,pg1,pg2] [--kill-one] [--clients 2]

A setup is ``sqliteN`` or ``pgN``: N worker processes on one SQLite file or on one PostgreSQL
database (a throwaway local cluster, scripts/pg_cluster.py), behind HAProxy when N > 1. Each
setup starts on a fresh database with the same outputs and accounts. Votes stored are counted from
the database afterwards; a vote is "cast" when its answer came back counted, "lost" when it was
cast and is not stored. ``--kill-one`` ends worker 1 of each multi-worker setup with SIGKILL
halfway through: its annotators get errors, log in again (HAProxy sends them to another worker)
and go on; the table's notes say how many did.

Every simulated annotator comes from 127.0.0.1, so the workers run without the per-address vote
limit and with a per-annotator limit above any think time (--votes-per-address 0
--votes-per-minute 1000). Bench accounts use a light Argon2 hash (a bench seeds hundreds), so a
login here costs the server less than a real one.

Targets (issue 26): 200 annotators on one process with next-pair p95 under 300 ms and 0 lost; two
processes on PostgreSQL at least 1.6x the votes/min of one at the same p95; a kill -9 of one worker
loses no stored vote and its annotators continue on the other.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from argon2 import PasswordHasher

from annotation.accounts import Accounts
from bench.arena import QueueClient, browser_client, ms, seed_outputs
from data import arena
from data.store import Store
from scripts.arena_cluster import Cluster
from scripts.pg_cluster import PgCluster
from tests.helpers import cpu_seconds, free_port, machine_busy
from ui import arena as arena_tab

SETUP = re.compile(r"(sqlite|pg)([1-9][0-9]?)")
PASSWORD = "bench-annotator-password"
VOTES = ("rat-vote-a", "rat-vote-b", "rat-vote-tie", "rat-vote-both_bad")
WORKER_LIMITS = ["--votes-per-minute", "1000", "--votes-per-address", "0"]
RETRY_PAUSE = 1.0  # seconds an annotator waits after an error before logging in again, doubled after
MAX_PAUSE = 16.0  # each further error in a row up to this: a person would not retry every second
LIGHT_HASH = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1)


@dataclass(frozen=True)
class Setup:
    name: str
    database: str  # "sqlite" or "pg"
    workers: int


def parse_setups(text: str) -> list[Setup]:
    """``sqlite1,pg1,pg2`` as Setups. Raises ValueError naming --setups for anything else."""
    setups = []
    for name in (n.strip() for n in text.split(",")):
        match = SETUP.fullmatch(name)
        if not match:
            raise ValueError(f"--setups takes names like sqlite1, sqlite2, pg1, pg2 (database, then 1 to 99 "
                             f"workers), comma separated, not {name!r}.")
        setups.append(Setup(name, match[1], int(match[2])))
    return setups


def parse_think(text: str) -> tuple[float, float]:
    """``2-5`` as (2.0, 5.0) seconds. Raises ValueError naming --think for anything else."""
    try:
        low, high = (float(x) for x in text.split("-"))
    except ValueError:
        raise ValueError(f"--think takes two bounds in seconds, e.g. 2-5, not {text!r}.") from None
    if not 0 <= low <= high:
        raise ValueError(f"--think takes a low and a high bound, 0 <= low <= high, not {text!r}.")
    return low, high


def annotator_names(count: int) -> list[str]:
    return [f"bench{k:04d}" for k in range(count)]


def prepare(db: str, names: list[str]) -> None:
    """A fresh database with the bench's outputs and an annotator account per name (this process's
    own Store, closed after). Raises StoreError or AccountError."""
    store = Store(db)
    try:
        seed_outputs(store)
        accounts = Accounts(store, hasher=LIGHT_HASH)
        for name in names:
            accounts.add(name, PASSWORD)
    finally:
        store.close()


def stored_votes(db: str) -> Counter:
    """Votes stored, by annotator, counted from the database. Raises StoreError."""
    store = Store(db)
    try:
        return Counter(row["annotator"] for row in arena.export_votes(store))
    finally:
        store.close()


# -- one annotator, over HTTP -------------------------------------------------------------------
def log_in(base: str, name: str):
    """A browser client logged in as ``name`` through the login page. Raises RuntimeError when the
    login is refused, httpx.HTTPError when the request fails."""
    http = browser_client(base)
    answer = http.post("/login", data={"name": name, "password": PASSWORD})
    if answer.status_code != 303 or not answer.headers.get("location", "").startswith("/arena"):
        http.close()
        raise RuntimeError(f"login refused ({answer.status_code})")
    return http


def arena_fns(config: dict) -> dict[str, tuple[int, int, bool]]:
    """The Arena's events in a served Gradio config, as QueueClient wants them ((fn index, trigger
    id, off the queue) by name): "load" (the first pair, with the page), "next", and one per vote button. Raises
    RuntimeError when the page has no such events (the Arena's layout changed)."""
    elem = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    events: dict[tuple, tuple[int, int, bool]] = {}
    for dep in config["dependencies"]:
        if dep.get("backend_fn"):
            for block, event in dep["targets"]:
                events.setdefault((elem.get(block), event), (dep["id"], block, dep.get("queue") is False))
    try:
        fns = {name: events[(name, "click")] for name in ("rat-next", *VOTES)}
    except KeyError as exc:
        raise RuntimeError(f"the Arena page has no {exc.args[0][0]} button: update bench/arena_scale.py") from None
    state = next(d["inputs"][0] for d in config["dependencies"] if d["id"] == fns["rat-next"][0])
    loads = [(d["id"], d["targets"][0][0], d.get("queue") is False) for d in config["dependencies"]
             if d.get("backend_fn") and d["targets"][0][1] == "load" and state in d["outputs"]]
    if not loads:
        raise RuntimeError("the Arena page has no load event that shows a pair: update bench/arena_scale.py")
    return {**fns, "load": loads[0]}


@dataclass
class Record:
    """What one annotator saw: latencies (s), and (kind, time, worker) for each login and counted
    vote ("" as worker without a balancer)."""

    name: str
    votes: list[tuple[float, float]] = field(default_factory=list)  # (when it ended, seconds it took)
    nexts: list[tuple[float, float]] = field(default_factory=list)
    firsts: list[tuple[float, float]] = field(default_factory=list)
    logins: list[tuple[float, float]] = field(default_factory=list)
    cast: int = 0
    refused: int = 0  # answered "not counted" (a rate limit)
    errors: list[str] = field(default_factory=list)
    events: list[tuple[str, float, str]] = field(default_factory=list)


def timed(record_list: list[tuple[float, float]], call, *args):
    """``call(*args)``, with (when it ended, seconds it took) appended to ``record_list``."""
    started = time.perf_counter()
    out = call(*args)
    record_list.append((time.time(), time.perf_counter() - started))
    return out


def annotate(base: str, fns: dict, name: str, think: tuple[float, float], deadline: float,
             rng: random.Random, arrive: float) -> Record:
    """One annotator until ``deadline`` (time.time()), arriving within ``arrive`` seconds (a crowd
    arrives over a while, not in one instant): log in, take the first pair, then read,
    vote, next; after an error, wait RETRY_PAUSE (doubled for each further error in a row) and log
    in again (a new page session)."""
    rec = Record(name)
    time.sleep(rng.uniform(0, arrive))
    pause = RETRY_PAUSE
    while time.time() < deadline:
        http = None
        try:
            http = timed(rec.logins, log_in, base, name)
            worker = http.cookies.get("SERVERID") or ""
            rec.events.append(("login", time.time(), worker))
            client = QueueClient(base + "arena/", fns, http)
            timed(rec.firsts, client.call, "load")
            while True:
                time.sleep(rng.uniform(*think))
                if time.time() >= deadline:
                    return rec
                revealed = timed(rec.votes, client.call, rng.choice(VOTES), None, "", "", *arena_tab.VOTE_EXTRAS)
                if "Not counted" in json.dumps(revealed[0]):
                    rec.refused += 1
                else:
                    rec.cast += 1
                    rec.events.append(("vote", time.time(), worker))
                    pause = RETRY_PAUSE
                timed(rec.nexts, client.call, "rat-next", None)
        except Exception as exc:  # counted and shown: a bench reports, it does not stop
            rec.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            time.sleep(min(pause, max(0.0, deadline - time.time())))
            pause = min(2 * pause, MAX_PAUSE)
        finally:
            if http is not None:
                http.close()
    return rec


def client_process(base: str, fns: dict, names: list[str], think: tuple[float, float], deadline: float,
                   seed: int, results, arrive: float) -> None:
    """One client process: a thread per annotator in ``names``; puts their Records and the CPU
    time this process used in ``results``."""
    records: list[Record] = []
    lock = threading.Lock()

    def one(name: str, k: int) -> None:
        rec = annotate(base, fns, name, think, deadline, random.Random(seed * 100_003 + k), arrive)
        with lock:
            records.append(rec)

    threads = [threading.Thread(target=one, args=(n, k)) for k, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put((records, time.process_time()))


# -- one setup ----------------------------------------------------------------------------------
def served_config(url: str, name: str) -> dict:
    """The Arena's Gradio config, as a logged-in annotator's page gets it. Raises RuntimeError or
    httpx.HTTPError."""
    http = log_in(url, name)
    try:
        answer = http.get("/arena/config")
        answer.raise_for_status()
        return answer.json()
    finally:
        http.close()


@dataclass
class Outcome:
    """What one setup measured."""

    setup: Setup
    annotators: int
    wall: float
    records: list[Record]
    stored: Counter
    client_cpu: float
    cpu: WindowCpu
    started: float = 0.0
    killed: str = ""
    kill_at: float = 0.0
    exited: list[str] = field(default_factory=list)  # workers that ended by themselves, with their last words

    warmup: float = 0.0  # seconds from the start in which the crowd arrives and logs in

    def joined(self, key: str) -> list:
        return [x for r in self.records for x in getattr(r, key)]

    def steady(self, key: str) -> list[float]:
        """The seconds each "votes" or "nexts" call took, of those that ended after the warm-up."""
        return [took for at, took in self.joined(key) if at >= self.started + self.warmup]

    def took(self, key: str) -> list[float]:
        """The seconds each "logins" or "firsts" call took."""
        return [took for _, took in self.joined(key)]

    @property
    def cast(self) -> int:
        return sum(r.cast for r in self.records)

    @property
    def steady_cast(self) -> int:
        """Votes counted after the warm-up."""
        return sum(kind == "vote" and t >= self.started + self.warmup for r in self.records for kind, t, _ in r.events)

    @property
    def lost(self) -> int:
        """Votes answered as counted that the database does not hold (by annotator)."""
        return sum(max(0, r.cast - self.stored.get(r.name, 0)) for r in self.records)

    def continued(self) -> tuple[int, int]:
        """(annotators on the killed worker when it died, those of them with a vote counted after)."""
        on_killed = continued = 0
        for r in self.records:
            before = [e for e in r.events if e[0] == "login" and e[1] < self.kill_at]
            if before and before[-1][2] == self.killed:
                on_killed += 1
                continued += any(kind == "vote" and t > self.kill_at for kind, t, _ in r.events)
        return on_killed, continued


def postgres_cpu() -> dict[int, float]:
    """CPU seconds used so far by each live PostgreSQL process of this machine (the bench's
    throwaway cluster: its server and a backend per connection), by pid, from /proc."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if stat.read_text().split(" (", 1)[1].startswith("postgres)"):
                found[int(stat.parent.name)] = cpu_seconds(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def postgres_used(before: dict[int, float]) -> float:
    """PostgreSQL's CPU seconds since ``before`` (``postgres_cpu``), counted per process: one that
    ended in between (another cluster's backend, e.g. the tests') takes nothing away."""
    return sum(max(0.0, now - before.get(pid, 0.0)) for pid, now in postgres_cpu().items())


@dataclass
class WindowCpu:
    """CPU used in the measured window (after the warm-up): by the workers and HAProxy, by
    PostgreSQL, by the whole machine (busy cores), over ``seconds`` of wall time."""

    workers: float = 0.0
    postgres: float = 0.0
    machine: float = 0.0
    seconds: float = 0.0

    def share(self, what: str) -> float:
        """``what``'s CPU as a percentage of one core."""
        return 100 * getattr(self, what) / max(1e-9, self.seconds)


def run_setup(setup: Setup, args: argparse.Namespace, db: str) -> Outcome:
    """Prepare ``db``, start the setup's workers (and HAProxy), run the annotators for
    ``args.duration`` seconds from ``args.clients`` processes, stop everything, count the votes.
    Raises ClusterError (a worker that did not start, e.g. refusing the database) or StoreError."""
    names = annotator_names(args.annotators)
    prepare(db, names)
    cluster = Cluster(db, workers=setup.workers, port=free_port(setup.workers + 1), extra=WORKER_LIMITS,
                      balancer=setup.workers > 1)
    url = cluster.start()
    try:
        fns = arena_fns(served_config(url, names[0]))
        results: multiprocessing.Queue = multiprocessing.Queue()
        groups = [names[k::args.clients] for k in range(args.clients)]
        started = time.time()
        deadline = started + args.warmup + args.duration
        procs = [multiprocessing.Process(target=client_process,
                                         args=(url, fns, group, args.think, deadline, k, results, args.arrive))
                 for k, group in enumerate(groups) if group]
        for proc in procs:
            proc.start()
        # the CPU of the measured window only: the crowd's logins (a password hash each) are the warm-up's
        time.sleep(max(0.0, started + args.warmup - time.time()))
        cpu = WindowCpu(machine=-machine_busy()[0], seconds=-time.time())
        pg_before = postgres_cpu()
        cpu_before = {pid: cpu_seconds(pid) for pid in cluster.pids()}
        killed, kill_at = "", 0.0
        if args.kill_one and setup.workers > 1:
            time.sleep(max(0.0, started + args.warmup + args.duration / 2 - time.time()))
            pid = cluster.workers[0].pid
            cpu.workers += cpu_seconds(pid) - cpu_before.pop(pid)
            killed, kill_at = cluster.kill(0), time.time()
        time.sleep(max(0.0, deadline - time.time()))
        cpu.workers += sum(cpu_seconds(pid) - before for pid, before in cpu_before.items())
        cpu.postgres += postgres_used(pg_before)
        cpu.machine += machine_busy()[0]
        cpu.seconds += time.time()
        parts = [results.get(timeout=args.warmup + args.duration + 600) for _ in procs]
        wall = time.time() - started
        for proc in procs:
            proc.join()
        exited = [line for line in cluster.exited() if not (killed and line.startswith(f"{killed} exited (-9)"))]
    finally:
        cluster.stop()
    return Outcome(setup, args.annotators, wall, [r for recs, _ in parts for r in recs], stored_votes(db),
                   sum(cpu for _, cpu in parts), cpu, started, killed, kill_at, exited, args.warmup)


# -- the table ----------------------------------------------------------------------------------
HEADER = (f"{'setup':<8} {'workers':>7} {'annotators':>10} {'votes/min':>9} {'vote p50':>8} {'p95':>6} {'p99':>6} "
          f"{'next p50':>8} {'p95':>6} {'p99':>6} {'errors':>6} {'cast':>6} {'stored':>6} {'lost':>5} {'workers':>7} "
          f"{'pg':>5} {'machine':>7}")


def quantiles(values: list[float]) -> list[str]:
    """p50, p95, p99 in ms ("-" without values)."""
    return [f"{ms(values, q):.0f}" if values else "-" for q in (.5, .95, .99)]


def row(o: Outcome) -> str:
    votes, nexts = quantiles(o.steady("votes")), quantiles(o.steady("nexts"))
    stored = sum(o.stored.values())
    per_minute = 60 * o.steady_cast / max(1e-9, o.wall - o.warmup)
    return (f"{o.setup.name:<8} {o.setup.workers:>7} {o.annotators:>10} {per_minute:>9.0f} "
            f"{votes[0]:>8} {votes[1]:>6} {votes[2]:>6} {nexts[0]:>8} {nexts[1]:>6} {nexts[2]:>6} "
            f"{len(o.joined('errors')):>6} {o.cast:>6} {stored:>6} {o.lost:>5} {o.cpu.share('workers'):>6.0f}% "
            f"{o.cpu.share('postgres'):>4.0f}% {o.cpu.share('machine'):>6.0f}%")


def notes(o: Outcome, cores: int) -> list[str]:
    """The lines under a setup's row: first pair, refusals, client CPU, errors, the kill."""
    first, login = quantiles(o.took("firsts")), quantiles(o.took("logins"))
    paired, voted = sum(bool(r.firsts) for r in o.records), sum(bool(r.cast) for r in o.records)
    lines = [f"  {o.setup.name}: {paired} of {o.annotators} annotators got a first pair (p50 {first[0]} ms, "
             f"p95 {first[1]} ms; login p50 {login[0]} ms, p95 {login[1]} ms), {voted} voted; "
             f"{sum(r.refused for r in o.records)} "
             f"votes refused (rate limit); {sum(o.stored.values()) - o.cast + o.lost} stored without a counted "
             f"answer; clients took {100 * o.client_cpu / o.wall:.0f}% of one core over the whole run "
             f"({cores} cores here)"]
    kinds = Counter(re.sub(r"rat-vote-\w+", "vote", e)[:110] for e in o.joined("errors"))  # the 4 buttons as one
    lines += [f"    error x{n}: {kind}" for kind, n in kinds.most_common(4)]
    lines += [f"    worker {line}" for line in o.exited]
    if o.killed:
        on_killed, went_on = o.continued()
        lines.append(f"  kill -9 of worker {o.killed} at {o.kill_at - o.started:.0f} s: "
                     f"{went_on} of its {on_killed} annotators logged in again and voted on; {o.cast} votes "
                     f"counted, {sum(o.stored.values())} stored, {o.lost} lost")
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options; exits with a message naming the flag for a bad one."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=200, help="simulated annotators (default 200)")
    parser.add_argument("--think", default="2-5", help="seconds reading a pair before voting: low-high (default 2-5)")
    parser.add_argument("--duration", type=float, default=60,
                        help="seconds each setup is measured, after its warm-up (default 60)")
    parser.add_argument("--warmup", type=float, default=30,
                        help="seconds before the measuring starts, in which the crowd arrives and logs in "
                             "(default 30; the annotators arrive over its first two thirds)")
    parser.add_argument("--setups", default="sqlite1,pg1,pg2", help="comma separated: sqliteN, pgN (N workers; "
                        "behind HAProxy when N > 1); default sqlite1,pg1,pg2")
    parser.add_argument("--kill-one", action="store_true", help="kill -9 worker 1 of each multi-worker setup halfway")
    parser.add_argument("--clients", type=int, default=2, help="client processes (default 2)")
    args = parser.parse_args(argv)
    try:
        args.setups, args.think = parse_setups(args.setups), parse_think(args.think)
    except ValueError as exc:
        parser.error(str(exc))
    args.arrive = 2 * args.warmup / 3
    for flag, value, low, high in (("--annotators", args.annotators, 1, 5000), ("--duration", args.duration, 1, 3600),
                                   ("--warmup", args.warmup, 0, 3600),
                                   ("--clients", args.clients, 1, 32)):
        if not low <= value <= high:
            parser.error(f"{flag} takes {low} to {high}, not {value}.")
    return args


def main(argv: list[str] | None = None) -> dict[str, Outcome | str]:
    """Run every setup and print the table; returns each setup's Outcome, or why it did not run."""
    args = parse_args(argv)
    cores = os.cpu_count() or 1
    print(f"{args.annotators} annotators, reading {args.think[0]:g}-{args.think[1]:g} s a pair, "
          f"{args.warmup:g} s of arrivals and logins then {args.duration:g} s measured a setup, from "
          f"{args.clients} client processes; latencies in ms")
    print(HEADER)
    results: dict[str, Outcome | str] = {}
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rat-arena-scale-") as tmp, ExitStack() as stack:
        pg = None
        for setup in args.setups:
            try:
                if setup.database == "pg" and pg is None:
                    pg = stack.enter_context(PgCluster(durable=True))
                db = pg.new_database() if setup.database == "pg" else str(Path(tmp) / f"{setup.name}.db")
                outcome = run_setup(setup, args, db)
            except Exception as exc:  # one setup that cannot run (e.g. a database the app refuses) is reported
                results[setup.name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                print(f"{setup.name:<8} {setup.workers:>7} not run: {results[setup.name]}", flush=True)
                continue
            results[setup.name] = outcome
            print(row(outcome), flush=True)
            lines += notes(outcome, cores)
    print("\n".join(lines))
    print("(a vote's and a next pair's time run from the request to its result, the queue's wait included; "
          "votes/min and latencies: of the measured time, after the warm-up; errors, cast, stored, lost: of the "
          "whole run; workers, pg, machine: CPU of the measured time in % of one core: the workers and HAProxy, "
          "PostgreSQL's processes, and every busy core of the machine, the clients' included)")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])

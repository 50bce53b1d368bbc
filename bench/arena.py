"""How the arena holds up: choosing the next pair and recording a vote at 0, 10,000 and 200,000
stored votes, in process; and 30 annotators voting at once over HTTP through Gradio's queue, as
their browsers would. Prints numbers; passes or fails nothing.

    python -m bench.arena [--votes 0,10000,200000] [--voters 30] [--rounds 10]

Targets (issue 11): next pair < 100 ms at 200,000 votes; p95 vote < 300 ms with 30 voters; 0 lost.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import socket
import tempfile
import threading
import time
import uuid
from pathlib import Path

import gradio as gr
import httpx
import uvicorn

from annotation.results.results import Results
from annotation.voting.arena import Arena
from annotation.voting.limits import VoteLimits
from common.settings import Settings
from data import arena
from data.store import Store, now
from tests.helpers import cpu_seconds, free_port
from ui import app as app_ui
from ui import arena as arena_tab

METHODS = [f"method{k:02d}" for k in range(12)]
TASKS = 40
UNLIMITED = VoteLimits(per_annotator=10**9, per_address=10**9)


def seed_outputs(store: Store) -> None:
    """Add TASKS tasks answered by every one of METHODS to the arena (through the data layer, so
    on any database it supports). Raises StoreError."""
    arena.import_outputs(store, [{"prompt": f"Task {t}", "kind": "writing", "task_set": "", "method": m,
                                  "text": f"{m} on task {t}. " * 40} for t in range(TASKS) for m in METHODS])


def seeded_store(path: Path, votes: int, seed: int = 0) -> Store:
    """A store with TASKS tasks answered by every method, and ``votes`` votes on random pairs
    (written straight into the tables, as an import of that size would leave them)."""
    store = Store(path)
    seed_outputs(store)
    outputs = arena.arena_outputs(store)
    by_task: dict[int, list] = {}
    for o in outputs:
        by_task.setdefault(o.task_id, []).append(o)
    rng = random.Random(seed)
    stamp = now()
    battles, choices = [], []
    for _ in range(votes):
        a, b = rng.sample(by_task[rng.choice(list(by_task))], 2)
        battles.append((a.task_id, a.id, b.id, a.method, b.method, f"seed{rng.randrange(200)}", stamp))
        choices.append(rng.choice(arena.CHOICES))
    with store.db.conn:
        first = store.db.execute("select coalesce(max(id), 0) from battles").fetchone()[0] + 1
        store.db.conn.executemany(
            "insert into battles (task_id, output_a, output_b, method_a, method_b, annotator, source, created) "
            "values (?, ?, ?, ?, ?, ?, 'import', ?)", battles)
        store.db.conn.executemany(
            "insert into votes (battle_id, annotator, choice, created) values (?, ?, ?, ?)",
            [(first + k, battles[k][5], choices[k], stamp) for k in range(votes)])
    return store


def in_process(votes: int, rounds: int, tmp: Path) -> dict:
    store = seeded_store(tmp / f"arena-{votes}.db", votes)
    service = Arena(store, rng=random.Random(1), limits=UNLIMITED)
    started = time.perf_counter()
    service.next_pair("warm-up")  # the first call reads every vote and battle once
    first = time.perf_counter() - started
    nexts, casts = [], []
    for k in range(rounds):
        started = time.perf_counter()
        shown = service.next_pair(f"bench{k}")
        nexts.append(time.perf_counter() - started)
        started = time.perf_counter()
        service.vote(shown.battle_id, f"bench{k}", random.choice(arena.CHOICES))
        casts.append(time.perf_counter() - started)
    store.close()
    return {"first": first, "next": nexts, "vote": casts}


def browser_client(base: str = "", timeout: float = 60) -> httpx.Client:
    """An HTTP client that sends as a browser does: TCP_NODELAY, as browsers set it (without it the
    request's body waits for the ACK of its headers: Nagle's algorithm against the server's delayed
    ACK, 40-100 ms a call after a pause), and a cookie jar."""
    nodelay = httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
    return httpx.Client(base_url=base, timeout=timeout, transport=nodelay)


class QueueClient:
    """One browser session calling the events of the Gradio app at ``base`` (e.g.
    "http://127.0.0.1:7860/" or a mounted app's ".../arena/") as its page does: through Gradio's
    queue (join, then read the event's stream), or, for an event the app takes off the queue, one
    POST to /run (``fns``: name -> (fn index, trigger id, off the queue)), with ``http`` (a
    logged-in client's cookies; default: a new ``browser_client``)."""

    def __init__(self, base: str, fns: dict[str, tuple[int, int, bool]], http: httpx.Client | None = None):
        self.http = http or browser_client()
        self.api = base + "gradio_api"
        self.session = uuid.uuid4().hex
        self.fns = fns

    def call(self, name: str, *data):
        """The event ``name``'s output data. Raises RuntimeError when the event fails or its stream
        ends without a result, httpx.HTTPError when a request does."""
        fn, trigger, direct = self.fns[name]
        body = {"data": list(data), "fn_index": fn, "trigger_id": trigger, "session_hash": self.session,
                "event_data": None}
        if direct:
            answer = self.http.post(self.api + "/run/predict", json=body)
            if answer.status_code != 200:
                raise RuntimeError(f"{name} failed ({answer.status_code}): {answer.text[:200]}")
            return answer.json()["data"]
        self.http.post(self.api + "/queue/join", json=body).raise_for_status()
        with self.http.stream("GET", self.api + "/queue/data", params={"session_hash": self.session}) as stream:
            if stream.status_code == 404:  # the queue's answer to a session it does not hold
                raise RuntimeError(f"{name}: session not found (404 on /queue/data: not the worker it joined)")
            stream.raise_for_status()
            for line in stream.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                if msg.get("msg") == "unexpected_error":
                    raise RuntimeError(f"{name}: {msg.get('message')}")
                if msg.get("msg") == "process_completed":
                    if not msg.get("success"):
                        raise RuntimeError(f"{name} failed: {msg.get('output')}")
                    return msg["output"]["data"]
        raise RuntimeError(f"{name}: the stream ended without a result")


def _serve(path: str, votes: int, ready) -> None:
    """The arena tab on a free port, in a process of its own (the voters' threads must not share
    its interpreter lock); sends (port, fns) through ``ready`` and serves until terminated."""
    store = seeded_store(Path(path), votes)
    service = Arena(store, limits=UNLIMITED)
    Results(service).warm_up().join()  # as the app does when it starts, before annotators arrive
    with gr.Blocks() as demo:
        arena_tab.build(service)
    app_ui.queue(demo, Settings().concurrency)  # as the app serves it
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    ready.put((port, {blk.fn.__name__: (i, blk.targets[0][0], not blk.queue) for i, blk in demo.fns.items()
                      if getattr(blk.fn, "__name__", "") in ("start", "next", "on_vote")}))
    threading.Event().wait()


def over_http(voters: int, rounds: int, tmp: Path, votes: int, think: float = 0.0, clients: int = 3) -> dict:
    """``voters`` annotators over HTTP against the arena tab served in a process of its own, run by
    ``clients`` client processes (threads of one Python process share its interpreter lock: with
    30 of them a reply could wait for the client itself, and be counted as the server's time)."""
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "http.db"
    ready: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(str(path), votes, ready), daemon=True)
    server.start()
    port, fns = ready.get(timeout=300)
    store = Store(path)
    before = len(arena.vote_rows(store))
    results: multiprocessing.Queue = multiprocessing.Queue()
    groups = [list(range(voters))[k::clients] for k in range(clients)]
    procs = [multiprocessing.Process(target=_voters, args=(port, fns, group, rounds, think, results))
             for group in groups if group]
    started, cpu_before = time.perf_counter(), cpu_seconds(server.pid)
    for proc in procs:
        proc.start()
    parts = [results.get(timeout=3600) for _ in procs]
    wall = time.perf_counter() - started
    cpu = cpu_seconds(server.pid) - cpu_before
    for proc in procs:
        proc.join()
    stored = len(arena.vote_rows(store)) - before
    server.terminate()
    store.close()
    joined = {key: [x for part in parts for x in part[key]] for key in ("latencies", "nexts")}
    return {**joined, "cast": sum(p["cast"] for p in parts), "stored": stored,
            "errors": sum(p["errors"] for p in parts), "wall": wall, "cpu": cpu,
            "events": len(joined["latencies"]) + len(joined["nexts"])}


def _voters(port: int, fns: dict, names: list[int], rounds: int, think: float, results) -> None:
    """One client process: a thread per voter in ``names``; puts what they measured in ``results``."""
    latencies: list[float] = []
    nexts: list[float] = []
    cast = errors = 0
    lock = threading.Lock()

    def voter(n: int) -> None:
        nonlocal cast, errors
        client = QueueClient(f"http://127.0.0.1:{port}/", fns)
        try:
            client.call("start", f"voter{n}")
            for _ in range(rounds):
                time.sleep(think * random.uniform(0.5, 1.5))  # reading the pair (the first one too)
                started = time.perf_counter()
                client.call("on_vote", None, "", "", *arena_tab.VOTE_EXTRAS)  # state (on the server), comment, flag...
                took = time.perf_counter() - started
                with lock:
                    latencies.append(took)
                    cast += 1
                started = time.perf_counter()
                client.call("next", None)
                with lock:
                    nexts.append(time.perf_counter() - started)
        except Exception as exc:  # counted and shown: a bench reports, it does not stop
            with lock:
                errors += 1
            print(f"voter {n}: {exc}")

    threads = [threading.Thread(target=voter, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results.put({"latencies": latencies, "nexts": nexts, "cast": cast, "errors": errors})


def _echo(port: int) -> None:
    """A server that does nothing: the floor under every request of the bench."""
    from fastapi import FastAPI

    echo = FastAPI()
    echo.post("/echo")(lambda: {})
    uvicorn.run(echo, host="127.0.0.1", port=port, log_level="warning")


def pause_floor(think: float, samples: int = 20) -> list[float]:
    """How long an empty POST takes after a pause of ``think`` seconds (0.5x to 1.5x), on this
    machine: in a sandboxed VM a request after an idle second has cost 45 ms to anything,
    Gradio or not, and that is part of every latency measured after reading."""
    port = free_port()
    server = multiprocessing.Process(target=_echo, args=(port,), daemon=True)
    server.start()
    took = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
        for _ in range(300):
            try:
                http.post("/echo")
                break
            except httpx.TransportError:
                time.sleep(0.05)
        for _ in range(samples):
            time.sleep(think * random.uniform(0.5, 1.5))
            started = time.perf_counter()
            http.post("/echo").raise_for_status()
            took.append(time.perf_counter() - started)
    server.terminate()
    return took


def ms(values: list[float], q: float) -> float:
    values = sorted(values)
    return 1000 * values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--votes", default="0,10000,200000", help="stored votes, comma separated")
    parser.add_argument("--voters", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=10, help="votes per voter (and in-process samples)")
    parser.add_argument("--think", default="0,2", help="seconds each voter reads a pair before voting, "
                                                       "comma separated runs (0: all vote as fast as they can)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'votes':>8} {'first next ms':>14} {'next p50 ms':>12} {'next p95 ms':>12} "
              f"{'vote p50 ms':>12} {'vote p95 ms':>12}")
        for n in [int(v) for v in args.votes.split(",")]:
            r = in_process(n, max(args.rounds, 20), Path(tmp))
            print(f"{n:>8} {1000 * r['first']:>14.1f} {ms(r['next'], .5):>12.1f} {ms(r['next'], .95):>12.1f} "
                  f"{ms(r['vote'], .5):>12.1f} {ms(r['vote'], .95):>12.1f}")
        print()
        for think in [float(t) for t in args.think.split(",")]:
            r = over_http(args.voters, args.rounds, Path(tmp) / f"think{think}", votes=10_000, think=think)
            print(f"{args.voters} voters over HTTP (Gradio queue), {args.rounds} votes each, reading {think:g} s, "
                  f"10,000 votes stored: vote p50 {ms(r['latencies'], .5):.0f} ms, "
                  f"p95 {ms(r['latencies'], .95):.0f} ms, max {ms(r['latencies'], 1):.0f} ms; next pair p50 "
                  f"{ms(r['nexts'], .5):.0f} ms, p95 {ms(r['nexts'], .95):.0f} ms; {r['cast']} cast, "
                  f"{r['stored']} stored, {r['cast'] - r['stored']} lost, {r['errors']} voters failed; "
                  f"{r['wall']:.1f} s in all; server CPU {100 * r['cpu'] / r['wall']:.0f}% of one core, "
                  f"{1000 * r['cpu'] / max(1, r['events']):.1f} ms per vote or next pair")
            floor = pause_floor(think, samples=10 if think else 50)
            print(f"  (on this machine an empty POST after the same pause takes p50 {ms(floor, .5):.0f} ms, "
                  f"p95 {ms(floor, .95):.0f} ms: the floor under both)")
        print("(a vote's time is from the click's request to its result: the queue's wait included)")


if __name__ == "__main__":
    main()

"""Several arena processes behind HAProxy, for a try-out or a bench: N workers (`python app.py
--arena-only`) on ports P+1..P+N of 127.0.0.1, all on one database, and HAProxy on port P with
sticky sessions (the config: deploy/haproxy.cfg.template), optionally with a throwaway local
PostgreSQL. Prints the URLs; Ctrl-C or SIGTERM stops everything it started.

    python scripts/arena_cluster.py --workers 2 --port 8000 --db arena.db
    python scripts/arena_cluster.py --workers 2 --port 8000 --postgres
    python scripts/arena_cluster.py --workers 2 --port 8000 --db postgresql://rat@127.0.0.1:5432/rat

Arguments after `--` go to every worker, e.g. `-- --votes-per-minute 20`. Annotator accounts are
added as for one process (`python app.py --db ... annotators add NAME`).

Library use (bench/arena_scale.py): ``Cluster(db, workers=2, port=8000).start()`` returns the
balancer's URL; ``kill(0)`` ends worker 1 with SIGKILL; ``stop()`` ends the rest.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from string import Template

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script, scripts/ is on the path, not the project
    sys.path.insert(0, str(ROOT))

from scripts.pg_cluster import PgCluster  # noqa: E402

TEMPLATE = ROOT / "deploy" / "haproxy.cfg.template"
HOST = "127.0.0.1"
MAX_WORKERS = 64
START_SECONDS = 120.0  # for a worker to answer, on a busy 2-core machine
INSTALL = "apt-get update && apt-get install -y haproxy"


class ClusterError(Exception):
    """Something the cluster could not do; the message names the fix."""


def haproxy_config(front_port: int, worker_ports: list[int], template: Path = TEMPLATE) -> str:
    """The HAProxy config for workers on ``worker_ports``, with the balancer on ``front_port``.
    Raises ClusterError without workers."""
    if not worker_ports:
        raise ClusterError("HAProxy needs at least one worker: pass --workers 1 or more.")
    servers = "\n".join(f"    server {server_name(k)} {HOST}:{p} check cookie {server_name(k)}"
                        for k, p in enumerate(worker_ports))
    return Template(template.read_text()).substitute(front_port=front_port, servers=servers)


def server_name(index: int) -> str:
    """A worker's name in HAProxy's config and in its SERVERID cookie: w1, w2, ..."""
    return f"w{index + 1}"


def haproxy_binary(install: bool = True) -> str:
    """The haproxy executable; as root, with ``install``, Debian's package is installed when it is
    missing. Raises ClusterError naming the command to install it otherwise."""
    found = shutil.which("haproxy")
    if found:
        return found
    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        print("Installing HAProxy (Debian's package)...", file=sys.stderr)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "haproxy"], check=False, env=env)
        found = shutil.which("haproxy")
        if found:
            return found
    raise ClusterError(f"HAProxy is not installed: run `{INSTALL}` (as root), then try again.")


def worker_command(db: str, port: int, extra: list[str] = ()) -> list[str]:
    """The command line of one arena worker on ``port`` over ``db`` (a SQLite path or a URL),
    trusting HAProxy's X-Forwarded-For."""
    return [sys.executable, str(ROOT / "app.py"), "--arena-only", "--db", db, "--host", HOST, "--port", str(port),
            "--trusted-proxies", HOST, *extra]


def last_line(path: Path) -> str:
    """The last non-empty line of a log file ("" when there is none)."""
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def wait_until_up(url: str, proc: subprocess.Popen, log: Path, what: str, timeout: float = START_SECONDS) -> None:
    """Wait until GET ``url`` answers (any status). Raises ClusterError when ``proc`` exits first
    (with the last line it wrote: e.g. the app's refusal of a --db it cannot use) or after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    with httpx.Client(timeout=2, follow_redirects=False) as http:  # (one TLS context, not one per poll)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ClusterError(f"{what} exited ({proc.returncode}): {last_line(log) or 'no message'}")
            try:
                http.get(url)
                return
            except httpx.TransportError:
                time.sleep(0.2)
    raise ClusterError(f"{what} did not answer within {timeout:.0f} s (its log: {log})")


class Cluster:
    """N arena workers over ``db`` and HAProxy in front of them (with ``balancer=False`` and one
    worker, the worker alone, on ``port``). Logs go to a temp folder, removed by ``stop()``."""

    def __init__(self, db: str, *, workers: int, port: int, extra: list[str] = (), balancer: bool = True):
        self.db, self.count, self.port, self.extra = db, workers, port, list(extra)
        self.balancer = balancer or workers > 1
        self.folder = Path(tempfile.mkdtemp(prefix="rat-arena-cluster-"))
        self.workers: list[subprocess.Popen] = []
        self.haproxy: subprocess.Popen | None = None

    @property
    def worker_ports(self) -> list[int]:
        if not self.balancer:
            return [self.port]
        return [self.port + 1 + k for k in range(self.count)]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def start(self) -> str:
        """Start the workers (at once, then wait for each), then HAProxy; returns the URL to open.
        Raises ClusterError (what failed, and its last words) after stopping what had started."""
        try:
            binary = haproxy_binary() if self.balancer else ""
            for k, port in enumerate(self.worker_ports):
                log = self.folder / f"worker{k + 1}.log"
                with log.open("wb") as out:
                    self.workers.append(subprocess.Popen(worker_command(self.db, port, self.extra), stdout=out,
                                                         stderr=subprocess.STDOUT, cwd=ROOT))
            for k, (proc, port) in enumerate(zip(self.workers, self.worker_ports, strict=True)):
                wait_until_up(f"http://{HOST}:{port}/login", proc, self.folder / f"worker{k + 1}.log",
                              f"worker {k + 1} (port {port})")
            if self.balancer:
                self._start_haproxy(binary)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _start_haproxy(self, binary: str) -> None:
        config = self.folder / "haproxy.cfg"
        config.write_text(haproxy_config(self.port, self.worker_ports))
        check = subprocess.run([binary, "-c", "-q", "-f", str(config)], capture_output=True, text=True)
        if check.returncode:
            raise ClusterError(f"HAProxy refused its config {config}: {(check.stderr or check.stdout).strip()}")
        log = self.folder / "haproxy.log"
        with log.open("wb") as out:
            self.haproxy = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=out, stderr=subprocess.STDOUT)
        wait_until_up(self.url + "login", self.haproxy, log, f"HAProxy (port {self.port})")
        deadline = time.monotonic() + 10  # its first health checks, before the first client
        with httpx.Client(timeout=2) as http:
            while time.monotonic() < deadline and http.get(self.url + "login").status_code == 503:
                time.sleep(0.2)

    def pids(self) -> list[int]:
        """The process ids of the workers (and HAProxy, last) still running."""
        procs = [*self.workers, *([self.haproxy] if self.haproxy else [])]
        return [p.pid for p in procs if p.poll() is None]

    def exited(self) -> list[str]:
        """Each worker that has exited: its name, exit status and the last line of its log."""
        return [f"{server_name(k)} exited ({p.returncode}): {last_line(self.folder / f'worker{k + 1}.log')}"
                for k, p in enumerate(self.workers) if p.poll() is not None]

    def kill(self, index: int) -> str:
        """End worker ``index`` (from 0) with SIGKILL, as a crash would; returns its name (w1, ...)."""
        self.workers[index].send_signal(signal.SIGKILL)
        self.workers[index].wait()
        return server_name(index)

    def stop(self) -> None:
        """Stop HAProxy, then the workers (SIGTERM, then SIGKILL after 10 s), and remove the logs."""
        for proc in [*([self.haproxy] if self.haproxy else []), *self.workers]:
            if proc.poll() is None:
                proc.terminate()
        for proc in [*([self.haproxy] if self.haproxy else []), *self.workers]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


# -- the command line ---------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options; exits with argparse's message (naming the flag) for a bad one."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help=f"arena processes, 1 to {MAX_WORKERS} (default 2)")
    parser.add_argument("--port", type=int, default=8000,
                        help="HAProxy's port; the workers take the next N ports (default 8000)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--db", help="a SQLite file or a postgresql:// URL, shared by every worker")
    where.add_argument("--postgres", action="store_true", help="start a throwaway local PostgreSQL (Debian's "
                       "server, in a temp folder, removed on exit) and use a fresh database in it")
    parser.add_argument("extra", nargs="*", help="after --: arguments for every worker")
    args = parser.parse_args(argv)
    if not 1 <= args.workers <= MAX_WORKERS:
        parser.error(f"--workers takes 1 to {MAX_WORKERS} processes, not {args.workers}.")
    if not 1024 <= args.port <= 65535 - args.workers:
        parser.error(f"--port takes a port from 1024 to {65535 - args.workers} (the workers use the next "
                     f"{args.workers}), not {args.port}.")
    if args.db is not None and not args.db.strip():
        parser.error("--db takes a SQLite file or a postgresql:// URL, not an empty string.")
    return args


def serve(db: str, args: argparse.Namespace) -> None:
    """Start the cluster over ``db``, print its URLs, and wait for Ctrl-C or SIGTERM."""
    cluster = Cluster(db, workers=args.workers, port=args.port, extra=args.extra)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    try:
        url = cluster.start()
        print(f"Arena on {url} (HAProxy, sticky sessions) over {db}")
        for k, port in enumerate(cluster.worker_ports):
            print(f"  worker {server_name(k)}: http://{HOST}:{port}/ (pid {cluster.workers[k].pid})")
        print(f"  logs: {cluster.folder} (removed on exit)")
        print(f"Add annotators with `python app.py --db {db} annotators add NAME`. Ctrl-C stops everything.",
              flush=True)
        while not stopping.is_set() and all(p.poll() is None for p in cluster.workers):
            stopping.wait(0.5)
        dead = [server_name(k) for k, p in enumerate(cluster.workers) if p.poll() is not None]
        if dead and not stopping.is_set():
            print(f"Worker {', '.join(dead)} exited; stopping the rest.", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.postgres:
            with PgCluster(durable=True) as pg:
                serve(pg.new_database(), args)
        else:
            serve(args.db, args)
    except (ClusterError, RuntimeError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

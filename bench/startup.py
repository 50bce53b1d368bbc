"""How soon ``python app.py`` answers its first page (issue 42, item 8).

Starts the app as a new user does (``python app.py --db NEW --port P``, a fresh database in a
temporary folder, no model server needed to serve the page), and times from the process's start
until ``GET /`` answers 200, --runs times; also the time to import ``app`` alone (what every
command pays, ``python -c "import app"``) and a command's whole run on a new database
(``python app.py history``: what a CLI user waits for). Prints each and the median, after how many of the
project's modules have their bytecode (a start without it compiles them: import app took 1.69 s
against 0.92 s with it). Numbers, not pass/fail; README quotes them.

    python -m bench.startup [--runs 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.helpers import free_port

ROOT = Path(__file__).resolve().parents[1]


def first_page(timeout: float = 120.0) -> float:
    """Seconds from starting ``python app.py`` on a new database to its first page."""
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "app.py", "--db", str(Path(tmp) / "rat.db"), "--port", str(port)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            while time.perf_counter() - started < timeout:
                if proc.poll() is not None:
                    raise RuntimeError(f"app.py exited with {proc.returncode}: {proc.stderr.read()[-2000:]}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                        if answer.status == 200:
                            return time.perf_counter() - started
                except OSError:
                    time.sleep(0.05)
            raise RuntimeError(f"no page within {timeout:g} s")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def import_time() -> float:
    """Seconds for ``python -c "import app"`` (the interpreter's own start included)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import app"], cwd=ROOT, check=True)
    return time.perf_counter() - started


def command_time() -> float:
    """Seconds for ``python app.py history`` on a new database (it says there are no runs yet)."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        subprocess.run([sys.executable, "app.py", "--db", str(Path(tmp) / "rat.db"), "history"], cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.perf_counter() - started


#: The project's own packages (what ``import app`` compiles when it finds no bytecode).
PACKAGES = ("app.py", "ui", "core", "annotation", "data", "common")


def without_bytecode(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> tuple[int, int]:
    """(modules whose bytecode is missing or older than their source, modules) under ``root``'s
    ``packages``: a start compiles the first kind, and writes their bytecode unless
    PYTHONDONTWRITEBYTECODE is set."""
    sources = [path for name in packages for path in
               ([root / name] if name.endswith(".py") else sorted((root / name).rglob("*.py")))]
    missing = 0
    for source in sources:
        cached = Path(importlib.util.cache_from_source(str(source)))
        missing += not cached.exists() or cached.stat().st_mtime < source.stat().st_mtime
    return missing, len(sources)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    missing, modules = without_bytecode()
    print(f"bytecode:               {modules - missing} of the project's {modules} modules compiled"
          + (" (PYTHONDONTWRITEBYTECODE is set: every start below compiles the rest; "
             "python -m compileall writes it as a first start would)"
             if missing and sys.flags.dont_write_bytecode else ""))
    imports = [import_time() for _ in range(args.runs)]
    commands = [command_time() for _ in range(args.runs)]
    pages = [first_page() for _ in range(args.runs)]
    print(f"import app:             {', '.join(f'{t:.2f}' for t in imports)} s; "
          f"median {statistics.median(imports):.2f} s")
    print(f"python app.py history:  {', '.join(f'{t:.2f}' for t in commands)} s; "
          f"median {statistics.median(commands):.2f} s")
    print(f"python app.py -> page:  {', '.join(f'{t:.2f}' for t in pages)} s; median {statistics.median(pages):.2f} s "
          "(target < 4 s)")


if __name__ == "__main__":
    main()

"""What importing the data package costs a command: sqlite_utils without pandas (data/__init__.py).
Imports are a process's own, so each case is a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_data_package_holds_pandas_back_from_sqlite_utils_and_pandas_still_imports():
    out = python("import sys, data.store, sqlite_utils.db as db\n"
                 "print('pandas' in sys.modules, db.pd is None, db.np is not None)\n"
                 "import pandas\n"
                 "print(pandas.Timestamp('2026-01-01').year)")
    assert out.splitlines() == ["False True True", "2026"]


def test_a_process_that_has_pandas_already_keeps_it():
    out = python("import pandas, data.store, sqlite_utils.db as db\nprint(db.pd is pandas)")
    assert out == "True"

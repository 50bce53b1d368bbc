"""Persistence: the database, SQLite by default or PostgreSQL by URL (``sql``: one connection
type for both; ``store``: runs and events; ``schema``: the tables, their checks and append-only
triggers, written once; ``dialect``: what they become on each database; ``migrations``: applying
them), the queries of each table by subject (``arena`` outputs, battles and votes; ``versions``
an article's versions; ``campaigns``; ``accounts``; ``procedures``; ``dataset``), the FTS5
indexes (``fts``, ``corpus``) and the bundled task sets (``tasks/``). Only this package writes SQL."""

import sys

# sqlite_utils imports pandas (0.3 s of CPU: a third of a command's start, `python app.py history`)
# only to add pandas' Timestamp to the column types it infers. This package writes its tables itself
# (``schema``) and stores no pandas value, so sqlite_utils is imported here with pandas held back, by
# its own "pandas is not installed" path; a process that has pandas already (Gradio's) keeps it, and
# pandas imports as ever afterwards.
if "pandas" not in sys.modules and "sqlite_utils" not in sys.modules:
    sys.modules["pandas"] = None  # type: ignore[assignment]  (an import of it raises ImportError)
    try:
        import sqlite_utils  # noqa: F401
    finally:
        del sys.modules["pandas"]

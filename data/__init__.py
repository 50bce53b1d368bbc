"""Persistence: the database, SQLite by default or PostgreSQL by URL (``sql``: one connection
type for both; ``store``: runs and events; ``schema``: the tables, their checks and append-only
triggers, written once; ``dialect``: what they become on each database; ``migrations``: applying
them), the queries of each table by subject (``arena`` outputs, battles and votes; ``versions``
an article's versions; ``campaigns``; ``accounts``; ``procedures``; ``dataset``), the FTS5
indexes (``fts``, ``corpus``) and the bundled task sets (``tasks/``). Only this package writes SQL."""

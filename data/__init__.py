"""Persistence: the one SQLite file (sqlite-utils; schema, migrations, queries) and the bundled
task sets. Only this package writes SQL."""

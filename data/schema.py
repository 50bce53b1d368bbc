"""Values the schema's checks allow, written once for both databases' migrations (SQLite's in
``data.migrations``, PostgreSQL's in ``data.pg_migrations``). Never change a value a shipped
migration used: a new migration adds a new tuple."""

from __future__ import annotations

ACCOUNT_ROLES = ("annotator", "admin")
#: The actions of a version as m011_versions allowed them, and as m015 allows them.
M011_ACTIONS = ("edit", "undo", "take", "draft", "restore")
VERSION_ACTIONS = (*M011_ACTIONS, "regenerate", "search", "exclude")

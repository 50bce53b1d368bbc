"""The local corpus's index: documents (a file's title and text) in SQLite FTS5, searched with
BM25. The scanning of the folder and the extraction of each file's text live in
``core.retrieval.corpus``; this module only stores what it is given and queries it.

The index lives in its own SQLite file (the caller chooses where; the app keeps one per folder
in its data directory), so it can be thrown away at any time: it is rebuilt from the folder.
An old or foreign schema is dropped and created anew, not migrated.

Documents are keyed by their absolute path and carry ``file://`` URLs, which the web fetcher
refuses by design (SSRF guard); the retrieval step takes a document's text from
:meth:`CorpusStore.read` instead of fetching it.

A ``sqlite_utils.Database`` never crosses threads here: every public method opens its own and
closes it, so a store can be used from ``asyncio.to_thread`` workers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import sqlite_utils

from common.errors import StoreError
from common.types import SearchResult
from data.fts import fts_query

__all__ = ["CorpusStore", "IndexedFile", "fts_query", "path_to_url", "url_to_path"]

SCHEMA_VERSION = 2  # 2: text of scripts without spaces is stored parted into words (core.retrieval.corpus)
TITLE_WEIGHT = 4.0  # bm25 weight of a title match relative to a body match
SNIPPET_TOKENS = 40


def path_to_url(path: Path) -> str:
    return path.resolve().as_uri()


def url_to_path(url: str) -> Path | None:
    """The local path of a ``file://`` URL, or None for any other URL."""
    parsed = urlparse(url)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parsed.path))


@dataclass(frozen=True)
class IndexedFile:
    """What the index knows of a file, to tell whether it changed: its stat and content digest."""

    path: str
    mtime_ns: int
    size: int
    sha1: str


class CorpusStore:
    """Documents in an FTS5 index stored in ``db_path`` (created on first use)."""

    def __init__(self, db_path: str | Path):
        self.db_path = Path(db_path)

    def __repr__(self) -> str:
        return f"CorpusStore({str(self.db_path)!r})"

    # -- writing ---------------------------------------------------------------------------
    def put(self, path: str | Path, *, mtime_ns: int, size: int, sha1: str, title: str, text: str) -> bool:
        """Store a file's document (replacing what was stored for that path); returns True when
        the path is new to the index.

        Raises StoreError when the index cannot be written."""
        path = Path(path)
        values = {"path": str(path), "url": path_to_url(path), "mtime_ns": mtime_ns, "size": size,
                  "sha1": sha1, "title": title}
        with self._db() as db, db.conn:
            row = db.execute("SELECT id FROM files WHERE path = ?", [str(path)]).fetchone()
            if row:
                file_id = row[0]
                db["files"].update(file_id, values)
                db.execute("DELETE FROM docs WHERE rowid = ?", [file_id])
            else:
                file_id = db["files"].insert(values).last_pk
            db.execute("INSERT INTO docs (rowid, title, body) VALUES (?, ?, ?)", [file_id, title, text])
        return row is None

    def touch(self, path: str | Path, *, mtime_ns: int, size: int) -> None:
        """Record a file's new stat when its content did not change.

        Raises StoreError when the index cannot be written."""
        with self._db() as db, db.conn:
            db.execute("UPDATE files SET mtime_ns = ?, size = ? WHERE path = ?", [mtime_ns, size, str(path)])

    def delete(self, path: str | Path) -> bool:
        """Forget a file; returns whether it was in the index.

        Raises StoreError when the index cannot be written."""
        with self._db() as db, db.conn:
            row = db.execute("SELECT id FROM files WHERE path = ?", [str(path)]).fetchone()
            if row:
                db.execute("DELETE FROM docs WHERE rowid = ?", [row[0]])
                db.execute("DELETE FROM files WHERE id = ?", [row[0]])
        return row is not None

    # -- reading ---------------------------------------------------------------------------
    def files(self) -> dict[str, IndexedFile]:
        """Every indexed file by its path, with the stat and digest it was indexed with.

        Raises StoreError when the index cannot be read."""
        with self._db() as db:
            rows = db.execute("SELECT path, mtime_ns, size, sha1 FROM files").fetchall()
        return {row[0]: IndexedFile(*row) for row in rows}

    def search(self, query: str, k: int, provider: str = "corpus") -> list[SearchResult]:
        """The ``k`` best documents for ``query`` by BM25 (a title match weighs more than a body
        match), each with a snippet of its text. Any user text is accepted: it is reduced to
        quoted words (see :func:`data.fts.fts_query`); a query without a word returns [].

        Raises StoreError when the index cannot be read."""
        match = fts_query(query)
        if not match or k < 1:
            return []
        sql = f"""
            SELECT files.url, files.title,
                   snippet(docs, 1, '', '', ' … ', {SNIPPET_TOKENS}) AS snippet
            FROM docs JOIN files ON files.id = docs.rowid
            WHERE docs MATCH ?
            ORDER BY bm25(docs, {TITLE_WEIGHT}, 1.0), files.path
            LIMIT ?
        """
        with self._db() as db:
            rows = list(db.query(sql, [match, k]))
        return [
            SearchResult(url=r["url"], title=r["title"] or "", snippet=_squash(r["snippet"]), provider=provider)
            for r in rows
        ]

    def read(self, url: str) -> tuple[str, str] | None:
        """``(title, text)`` of an indexed document, by the ``file://`` URL that :meth:`search`
        gave (a plain path is accepted too); None when the document is not in the index.

        Raises StoreError when the index cannot be read."""
        path = url_to_path(url) if "://" in url else Path(url)
        if path is None:
            return None
        with self._db() as db:
            row = next(
                db.query(
                    "SELECT docs.title, docs.body FROM files JOIN docs ON docs.rowid = files.id "
                    "WHERE files.url = ? OR files.path = ?",
                    [url, str(path)],
                ),
                None,
            )
        return (row["title"] or "", row["body"] or "") if row else None

    def stats(self) -> dict[str, int]:
        """``{"documents": n}``: how many files the index holds.

        Raises StoreError when the index cannot be read."""
        with self._db() as db:
            return {"documents": db["files"].count}

    # -- the database ----------------------------------------------------------------------
    @contextmanager
    def _db(self) -> Iterator[sqlite_utils.Database]:
        """Open the index for one call (a Database must not cross threads) and create or
        rebuild its tables when missing or from an older schema.

        Raises StoreError when the file cannot be opened or read."""
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite_utils.Database(self.db_path)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"Cannot open the corpus index {self.db_path}: {exc}. "
                "Check that its folder is writable, or delete the file to rebuild it."
            ) from exc
        try:
            _ensure_schema(db)
            yield db
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"The corpus index {self.db_path} is unreadable ({exc}). "
                "Delete the file; it is rebuilt from the folder on the next search."
            ) from exc
        finally:
            db.close()


def _ensure_schema(db: sqlite_utils.Database) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version == SCHEMA_VERSION and db["files"].exists():
        return
    with db.conn:  # an index is a cache: an old or foreign schema is rebuilt, not migrated
        db.execute("DROP TABLE IF EXISTS docs")
        db.execute("DROP TABLE IF EXISTS files")
        db["files"].create(
            {"id": int, "path": str, "url": str, "mtime_ns": int, "size": int, "sha1": str, "title": str},
            pk="id",
            not_null={"path", "url", "mtime_ns", "size", "sha1"},
        )
        db["files"].create_index(["path"], unique=True)
        db["files"].create_index(["url"], unique=True)
        # rowid = files.id; the text is stored here (read() returns it)
        db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5("
            "title, body, tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _squash(text: str | None) -> str:
    return " ".join((text or "").split())

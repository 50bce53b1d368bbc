"""The local corpus: a folder of the author's own files, indexed in SQLite FTS5 and searched
with BM25, so that a run can cite them like web pages.

Supported files: ``.md``, ``.markdown``, ``.txt``, ``.html``/``.htm`` (main text extracted with
trafilatura, as Markdown; the title from the page's metadata, else the file name) and ``.pdf``
when ``pypdf`` is installed (without it PDFs are skipped and counted in ``skipped``; install
``pypdf`` to index them). Hidden files and folders (names starting with ".") are ignored and
symbolic links to folders are not followed.

The index lives in its own SQLite file (the caller chooses where; the app keeps one per folder
in its data directory), so it can be thrown away at any time: it is rebuilt from the folder.

Results carry ``file://`` URLs, which the web fetcher refuses by design (SSRF guard). The
retrieval step therefore takes a corpus document's text from :meth:`CorpusIndex.read` instead
of fetching it.

A ``sqlite_utils.Database`` never crosses threads here: every public method opens its own and
closes it, so an index can be used from ``asyncio.to_thread`` workers.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import sqlite3
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

import sqlite_utils

from common.errors import ConfigError, StoreError
from common.types import SearchResult

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
TEXT_SUFFIXES = (".md", ".markdown", ".txt")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES
MAX_FILE_BYTES = 50_000_000  # bigger files are skipped
MAX_QUERY_TOKENS = 32
TITLE_WEIGHT = 4.0  # bm25 weight of a title match relative to a body match
SNIPPET_TOKENS = 40

_TOKEN = re.compile(r"\w+", re.UNICODE)
_MD_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FRONT_MATTER_TITLE = re.compile(r"\A---\s*\n(?:.*\n)*?title:\s*[\"']?(.+?)[\"']?\s*\n(?:.*\n)*?---", re.MULTILINE)


def pdf_supported() -> bool:
    """True when ``pypdf`` can be imported, i.e. PDFs will be indexed."""
    try:
        import pypdf  # noqa: F401
    except ImportError:
        return False
    return True


def fts_query(text: str) -> str:
    """Turn free user text into a safe FTS5 query: every word is quoted (so ``C++ "foo`` or
    ``NEAR(`` cannot be read as FTS syntax) and the words are OR-ed, so BM25 ranks documents by
    how many of the words they hold and how rare those are. Returns "" when there is no word."""
    tokens: list[str] = []
    for token in _TOKEN.findall(text):
        if token.lower() not in (t.lower() for t in tokens):
            tokens.append(token)
    return " OR ".join(f'"{t}"' for t in tokens[:MAX_QUERY_TOKENS])


def path_to_url(path: Path) -> str:
    return path.resolve().as_uri()


def url_to_path(url: str) -> Path | None:
    """The local path of a ``file://`` URL, or None for any other URL."""
    parsed = urlparse(url)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parsed.path))


@dataclass(frozen=True)
class _Extracted:
    title: str
    text: str


class CorpusIndex:
    """A BM25 (FTS5) index over the supported files of ``folder``, stored in ``db_path``.

    Call :meth:`refresh` to bring the index up to date with the folder, :meth:`search` to query
    it and :meth:`read` to get a document's text by its ``file://`` URL.
    """

    def __init__(self, db_path: str | Path, folder: str | Path):
        self.db_path = Path(db_path)
        self.folder = Path(folder).expanduser()
        self._refresh_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CorpusIndex(db_path={str(self.db_path)!r}, folder={str(self.folder)!r})"

    # -- database --------------------------------------------------------------------------
    @contextmanager
    def _db(self) -> Iterator[sqlite_utils.Database]:
        """Open the index for one call (a Database must not cross threads) and create or
        rebuild its tables when missing or from an older schema.

        Raises StoreError when the file cannot be opened."""
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite_utils.Database(self.db_path)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"Cannot open the corpus index {self.db_path}: {exc}. "
                "Check that its folder is writable, or delete the file to rebuild it."
            ) from exc
        try:
            self._ensure_schema(db)
            yield db
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"The corpus index {self.db_path} is unreadable ({exc}). "
                "Delete the file; it is rebuilt from the folder on the next search."
            ) from exc
        finally:
            db.close()

    @staticmethod
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

    # -- indexing --------------------------------------------------------------------------
    def _scan(self) -> dict[str, os.stat_result]:
        """Supported files under the folder: absolute path -> stat."""
        if not self.folder.is_dir():
            raise ConfigError(
                f"The corpus folder {self.folder} does not exist or is not a folder. "
                "Pass an existing folder of .md/.txt/.html files with --corpus."
            )
        found: dict[str, os.stat_result] = {}
        root = self.folder.resolve()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.startswith(".") or not name.lower().endswith(SUFFIXES):
                    continue
                path = Path(dirpath) / name
                try:
                    stat = path.stat()
                except OSError:  # vanished, or a dangling link
                    continue
                if path.is_file():
                    found[str(path)] = stat
        return found

    def refresh(self) -> dict[str, int]:
        """Bring the index up to date with the folder and say what changed.

        Only files whose modification time or size changed are read again (and only re-indexed
        when their content changed); files gone from the folder are removed. Returns counts:
        ``added``, ``updated``, ``removed``, ``unchanged``, and ``skipped`` (supported files that
        could not be read: unreadable, too big, no text, or PDF without ``pypdf``).

        Raises ConfigError when the folder is missing, StoreError when the index cannot be
        written."""
        with self._refresh_lock:
            counts = dict(added=0, updated=0, removed=0, unchanged=0, skipped=0)
            on_disk = self._scan()
            with self._db() as db:
                known = {
                    row["path"]: row
                    for row in db.query("SELECT id, path, mtime_ns, size, sha1 FROM files")
                }
                for path in sorted(on_disk):
                    stat = on_disk[path]
                    row = known.get(path)
                    if row and row["mtime_ns"] == stat.st_mtime_ns and row["size"] == stat.st_size:
                        counts["unchanged"] += 1
                        continue
                    counts[self._index_file(db, Path(path), stat, row)] += 1
                for path in set(known) - set(on_disk):
                    with db.conn:
                        self._delete(db, known[path]["id"])
                    counts["removed"] += 1
            if counts["skipped"]:
                log.info("corpus %s: %d file(s) skipped", self.folder, counts["skipped"])
            return counts

    def _index_file(self, db: sqlite_utils.Database, path: Path, stat: os.stat_result, row: dict | None) -> str:
        """Index one new or changed file; returns the counter to bump."""
        if stat.st_size > MAX_FILE_BYTES:
            log.warning("corpus: %s is larger than %d bytes; skipped", path, MAX_FILE_BYTES)
            return self._drop(db, row)
        try:
            data = path.read_bytes()
        except OSError as exc:
            log.warning("corpus: cannot read %s: %s", path, exc)
            return self._drop(db, row)
        sha1 = hashlib.sha1(data).hexdigest()
        if row and row["sha1"] == sha1:  # touched, not changed
            with db.conn:
                db["files"].update(row["id"], {"mtime_ns": stat.st_mtime_ns, "size": stat.st_size})
            return "unchanged"
        extracted = extract(path, data)
        if extracted is None:
            return self._drop(db, row)
        values = {
            "path": str(path),
            "url": path_to_url(path),
            "mtime_ns": stat.st_mtime_ns,
            "size": stat.st_size,
            "sha1": sha1,
            "title": extracted.title,
        }
        with db.conn:
            if row:
                db["files"].update(row["id"], values)
                file_id = row["id"]
                db.execute("DELETE FROM docs WHERE rowid = ?", [file_id])
            else:
                file_id = db["files"].insert(values).last_pk
            db.execute(
                "INSERT INTO docs (rowid, title, body) VALUES (?, ?, ?)",
                [file_id, extracted.title, extracted.text],
            )
        return "updated" if row else "added"

    def _drop(self, db: sqlite_utils.Database, row: dict | None) -> str:
        """A file that can no longer be indexed: forget its old entry (it is tried again on
        the next refresh)."""
        if row:
            with db.conn:
                self._delete(db, row["id"])
        return "skipped"

    @staticmethod
    def _delete(db: sqlite_utils.Database, file_id: int) -> None:
        db.execute("DELETE FROM docs WHERE rowid = ?", [file_id])
        db.execute("DELETE FROM files WHERE id = ?", [file_id])

    # -- querying --------------------------------------------------------------------------
    def search(self, query: str, k: int, provider: str = "corpus") -> list[SearchResult]:
        """The ``k`` best documents for ``query`` by BM25 (a title match weighs more than a body
        match). Any user text is accepted: it is reduced to quoted words (see
        :func:`fts_query`); a query without a word returns []. Does not refresh.

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
        gave (a plain path is accepted too); None when the document is not in the index. The
        text is what was indexed (Markdown for HTML pages), so the retrieval step can use a
        corpus document without HTTP, which the fetcher's SSRF guard would refuse anyway.

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
        """``{"documents": n}``: how many files the index holds."""
        with self._db() as db:
            return {"documents": db["files"].count}


# -- extraction ------------------------------------------------------------------------------


def extract(path: Path, data: bytes) -> _Extracted | None:
    """Title and text of one file's bytes, or None when it has no text or cannot be read
    (the reason is logged)."""
    suffix = path.suffix.lower()
    if suffix in TEXT_SUFFIXES:
        text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
        title = _markdown_title(text) if suffix != ".txt" else ""
        result = _Extracted(title or path.stem, text.strip())
    elif suffix in HTML_SUFFIXES:
        result = _extract_html(path, data)
    elif suffix in PDF_SUFFIXES:
        result = _extract_pdf(path, data)
    else:
        return None
    if result is None or not result.text.strip():
        log.info("corpus: no text in %s; skipped", path)
        return None
    return result


def _markdown_title(text: str) -> str:
    match = _FRONT_MATTER_TITLE.match(text) or _MD_HEADING.search(text)
    return match.group(1).strip() if match else ""


def _extract_html(path: Path, data: bytes) -> _Extracted | None:
    import trafilatura
    from trafilatura.metadata import extract_metadata

    text = trafilatura.extract(data, output_format="markdown", include_comments=False, include_tables=True)
    if not text:  # too little "main" text for trafilatura: keep all the visible text
        text = trafilatura.html2txt(data) or ""
    metadata = extract_metadata(data)
    title = (metadata.title if metadata else None) or path.stem
    return _Extracted(title.strip(), text.strip())


def _extract_pdf(path: Path, data: bytes) -> _Extracted | None:
    try:
        import pypdf
    except ImportError:
        log.info("corpus: %s skipped: install pypdf to index PDF files", path)
        return None
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        text = "\n\n".join((page.extract_text() or "").strip() for page in reader.pages)
        title = (reader.metadata.title if reader.metadata else None) or path.stem
    except (pypdf.errors.PyPdfError, ValueError, KeyError, OSError) as exc:
        log.warning("corpus: cannot read PDF %s: %s", path, exc)
        return None
    return _Extracted(str(title).strip(), text.strip())


def _squash(text: str | None) -> str:
    return " ".join((text or "").split())

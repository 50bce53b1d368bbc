"""The local corpus: a folder of the author's own files, kept indexed (``data.corpus``, SQLite
FTS5 with BM25) so that a run can cite them like web pages.

This module scans the folder and extracts each file's text; the index itself (storage, search,
read) is :class:`data.corpus.CorpusStore`. Text in scripts written without spaces (Chinese,
Japanese, Thai) is indexed by its words: it is stored with an invisible separator between them
(``core.text.segment.spaced``), and queries are parted the same way, so "量子计算" finds the
documents that hold 量子 and 计算 as English finds its words; what is read back has no separator.

Supported files: ``.md``, ``.markdown``, ``.txt``, ``.html``/``.htm`` (main text extracted by
:func:`core.retrieval.extract.extract_html`, as Markdown; the title from the page's metadata, else the file
name) and ``.pdf`` when ``pypdf`` is installed (without it PDFs are skipped and counted in
``skipped``; install ``pypdf`` to index them). Hidden files and folders (names starting with ".")
are ignored, symbolic links to folders are not followed, and files over ``MAX_FILE_BYTES`` are
skipped.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from dataclasses import replace
from pathlib import Path

from common.errors import ConfigError, ExtractionError
from common.types import SearchResult
from core.retrieval.extract import Extracted, extract_html, extract_pdf
from core.text.segment import spaced, unspaced
from data.corpus import CorpusStore, IndexedFile

log = logging.getLogger(__name__)

TEXT_SUFFIXES = (".md", ".markdown", ".txt")
HTML_SUFFIXES = (".html", ".htm")
PDF_SUFFIXES = (".pdf",)
SUFFIXES = TEXT_SUFFIXES + HTML_SUFFIXES + PDF_SUFFIXES
MAX_FILE_BYTES = 50_000_000  # bigger files are skipped

_MD_HEADING = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FRONT_MATTER_TITLE = re.compile(r"\A---\s*\n(?:.*\n)*?title:\s*[\"']?(.+?)[\"']?\s*\n(?:.*\n)*?---", re.MULTILINE)


class CorpusIndex:
    """The supported files of ``folder``, indexed in ``db_path``.

    Call :meth:`refresh` to bring the index up to date with the folder, :meth:`search` to query
    it and :meth:`read` to get a document's text by its ``file://`` URL. Like the store, it
    holds no database connection, so it can be used from any thread."""

    def __init__(self, db_path: str | Path, folder: str | Path):
        self.store = CorpusStore(db_path)
        self.folder = Path(folder).expanduser()
        self._refresh_lock = threading.Lock()

    @property
    def db_path(self) -> Path:
        return self.store.db_path

    def __repr__(self) -> str:
        return f"CorpusIndex(db_path={str(self.db_path)!r}, folder={str(self.folder)!r})"

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
            on_disk = scan(self.folder)
            known = self.store.files()
            for path in sorted(on_disk):
                stat = on_disk[path]
                row = known.get(path)
                if row and row.mtime_ns == stat.st_mtime_ns and row.size == stat.st_size:
                    counts["unchanged"] += 1
                    continue
                counts[self._index_file(Path(path), stat, row)] += 1
            for path in set(known) - set(on_disk):
                self.store.delete(path)
                counts["removed"] += 1
            if counts["skipped"]:
                log.info("corpus %s: %d file(s) skipped", self.folder, counts["skipped"])
            return counts

    def search(self, query: str, k: int, provider: str = "corpus") -> list[SearchResult]:
        """The ``k`` best documents for ``query`` (see :meth:`data.corpus.CorpusStore.search`).
        Does not refresh. Raises StoreError when the index cannot be read."""
        return [replace(r, title=unspaced(r.title), snippet=unspaced(r.snippet))
                for r in self.store.search(spaced(query), k, provider)]

    def read(self, url: str) -> tuple[str, str] | None:
        """``(title, text)`` of an indexed document by its ``file://`` URL or path, None when it
        is not indexed. The text is what was indexed (Markdown for HTML pages), so the retrieval
        step can use a corpus document without HTTP. Raises StoreError when the index cannot be
        read."""
        found = self.store.read(url)
        return (unspaced(found[0]), unspaced(found[1])) if found else None

    def stats(self) -> dict[str, int]:
        """``{"documents": n}``: how many files the index holds."""
        return self.store.stats()

    def _index_file(self, path: Path, stat: os.stat_result, row: IndexedFile | None) -> str:
        """Index one new or changed file; returns the counter to bump."""
        if stat.st_size > MAX_FILE_BYTES:
            log.warning("corpus: %s is larger than %d bytes; skipped", path, MAX_FILE_BYTES)
            return self._drop(row)
        try:
            data = path.read_bytes()
        except OSError as exc:
            log.warning("corpus: cannot read %s: %s", path, exc)
            return self._drop(row)
        sha1 = hashlib.sha1(data).hexdigest()
        if row and row.sha1 == sha1:  # touched, not changed
            self.store.touch(path, mtime_ns=stat.st_mtime_ns, size=stat.st_size)
            return "unchanged"
        extracted = extract(path, data)
        if extracted is None:
            return self._drop(row)
        self.store.put(path, mtime_ns=stat.st_mtime_ns, size=stat.st_size, sha1=sha1,
                       title=spaced(extracted.title), text=spaced(extracted.text))
        return "updated" if row else "added"

    def _drop(self, row: IndexedFile | None) -> str:
        """A file that can no longer be indexed: forget its old entry (it is tried again on
        the next refresh)."""
        if row:
            self.store.delete(row.path)
        return "skipped"


def scan(folder: Path) -> dict[str, os.stat_result]:
    """Supported files under ``folder``: absolute (resolved) path -> stat. Hidden files and
    folders are left out and links to folders are not followed.

    Raises ConfigError when the folder does not exist."""
    if not folder.is_dir():
        raise ConfigError(
            f"The corpus folder {folder} does not exist or is not a folder. "
            "Pass an existing folder of .md/.txt/.html files with --corpus."
        )
    found: dict[str, os.stat_result] = {}
    for dirpath, dirnames, filenames in os.walk(folder.resolve(), followlinks=False):
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


def extract(path: Path, data: bytes) -> Extracted | None:
    """Title and text of one file's bytes (the title falls back to the file's name), or None
    when it has no text or cannot be read (the reason is logged)."""
    suffix = path.suffix.lower()
    try:
        if suffix in TEXT_SUFFIXES:
            text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
            result = Extracted(_markdown_title(text) if suffix != ".txt" else "", text.strip())
        elif suffix in HTML_SUFFIXES:
            result = extract_html(data, keep_all_text=True, label=str(path))
        elif suffix in PDF_SUFFIXES:
            result = extract_pdf(data)
        else:
            return None
    except ExtractionError as exc:
        log.warning("corpus: %s skipped: %s", path, exc)
        return None
    if not result.text.strip():
        log.info("corpus: no text in %s; skipped", path)
        return None
    return Extracted(result.title or path.stem, result.text.strip(), result.metadata)


def _markdown_title(text: str) -> str:
    match = _FRONT_MATTER_TITLE.match(text) or _MD_HEADING.search(text)
    return match.group(1).strip() if match else ""

"""The local corpus's scanner: which files of a folder are indexed, change detection, titles
and text from each kind of file, and search over what was scanned."""

import os
import shutil
import sys
from pathlib import Path

import pytest

from common.errors import ConfigError, ExtractionError
from core.retrieval.corpus import CorpusIndex, scan
from core.retrieval.extract import pdf_supported
from tests.fakes.web_server import FIXTURES

HTML_PAGES = ["blog.python.org.html", "nationalgeographic.co.uk.goats.html", "stackoverflow.com.rust.html"]

SOURDOUGH = """---
author: me
---
# Sourdough basics

A sourdough starter is flour and water fermented by wild yeast and lactic acid bacteria.
Feed the starter daily; bake when it doubles within six hours.
"""

TEA = "Green tea is steeped at 80 degrees for two minutes.\nBlack tea takes boiling water.\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "kitchen").mkdir(parents=True)
    (root / "kitchen" / "sourdough.md").write_text(SOURDOUGH, encoding="utf-8")
    (root / "tea.txt").write_text(TEA, encoding="utf-8")
    for name in HTML_PAGES:
        shutil.copy(FIXTURES / name, root / name)
    (root / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # unsupported: ignored
    (root / ".hidden.md").write_text("# secret sourdough", encoding="utf-8")  # hidden: ignored
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.txt").write_text("sourdough", encoding="utf-8")
    return root


@pytest.fixture
def index(tmp_path: Path, folder: Path) -> CorpusIndex:
    return CorpusIndex(tmp_path / "index" / "corpus.db", folder)


N = 2 + len(HTML_PAGES)


def test_refresh_indexes_supported_files_once(index):
    assert index.refresh() == dict(added=N, updated=0, removed=0, unchanged=0, skipped=0)
    assert index.refresh() == dict(added=0, updated=0, removed=0, unchanged=N, skipped=0)
    assert index.stats() == {"documents": N}


def test_index_persists_between_instances(index, folder):
    index.refresh()
    again = CorpusIndex(index.db_path, folder)
    assert again.refresh()["unchanged"] == N


@pytest.mark.parametrize(
    "query, first",
    [
        ("sourdough starter yeast", "kitchen/sourdough.md"),
        ("Python 3.6 release", "blog.python.org.html"),
        ("wild goats island", "nationalgeographic.co.uk.goats.html"),
        ("Rust programming language popular", "stackoverflow.com.rust.html"),
        ("green tea steeping", "tea.txt"),
    ],
)
def test_search_ranks_the_right_file_first(index, folder, query, first):
    index.refresh()
    results = index.search(query, 3)
    assert results[0].url == (folder / first).resolve().as_uri()
    assert results[0].provider == "corpus"
    assert results[0].snippet
    assert len(results) <= 3


def test_titles_come_from_metadata_heading_or_file_name(index, folder):
    index.refresh()
    titles = {r.url: r.title for r in index.search("python sourdough tea", 10)}
    assert titles[(folder / "blog.python.org.html").resolve().as_uri()] == "Python 3.6.0 is now available!"
    assert titles[(folder / "kitchen" / "sourdough.md").resolve().as_uri()] == "Sourdough basics"
    assert titles[(folder / "tea.txt").resolve().as_uri()] == "tea"


def test_ignored_files_are_not_indexed(index):
    index.refresh()
    urls = [r.url for r in index.search("secret sourdough PNG", 10)]
    assert not any(".hidden" in u or ".git" in u or u.endswith(".png") for u in urls)


def test_modified_file_is_reindexed(index, folder):
    index.refresh()
    (folder / "tea.txt").write_text("Oolong tea is partly oxidised; rinse the leaves first.\n", encoding="utf-8")
    assert index.refresh() == dict(added=0, updated=1, removed=0, unchanged=N - 1, skipped=0)
    assert index.search("oolong", 5)[0].url.endswith("/tea.txt")
    assert index.search("boiling", 5) == []


def test_touched_but_unchanged_file_is_not_reindexed(index, folder):
    index.refresh()
    path = folder / "tea.txt"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert index.refresh()["unchanged"] == N
    assert index.refresh()["unchanged"] == N  # the new mtime was recorded


def test_deleted_file_is_removed(index, folder):
    index.refresh()
    (folder / "kitchen" / "sourdough.md").unlink()
    assert index.refresh() == dict(added=0, updated=0, removed=1, unchanged=N - 1, skipped=0)
    assert index.search("sourdough", 5) == []


def test_added_file_is_found(index, folder):
    index.refresh()
    (folder / "kitchen" / "bread.md").write_text("# Rye bread\nRye needs a sourdough.", encoding="utf-8")
    assert index.refresh()["added"] == 1
    assert {r.title for r in index.search("rye", 5)} == {"Rye bread"}


def test_read_returns_indexed_text(index, folder):
    index.refresh()
    hit = index.search("Python 3.6 release", 1)[0]
    title, text = index.read(hit.url)
    assert title == "Python 3.6.0 is now available!"
    assert "newest major release" in text
    assert index.read(str(folder / "tea.txt"))[1].startswith("Green tea")  # a plain path works too
    assert index.read((folder / "missing.md").resolve().as_uri()) is None
    assert index.read("https://example.com/tea.txt") is None


def test_missing_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        CorpusIndex(tmp_path / "i.db", tmp_path / "nope").refresh()


def test_empty_and_unreadable_files_are_skipped(index, folder):
    (folder / "empty.md").write_text("   \n", encoding="utf-8")
    counts = index.refresh()
    assert counts["added"] == N and counts["skipped"] == 1


def test_old_schema_is_rebuilt(index, folder):
    import sqlite_utils

    index.refresh()
    db = sqlite_utils.Database(index.db_path)
    db.execute("PRAGMA user_version = 0")
    db.close()
    assert index.refresh()["added"] == N


def test_pdf_is_skipped_without_pypdf(index, folder, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as where it is not installed (the tests install it)
    assert not pdf_supported()
    (folder / "paper.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    assert index.refresh()["skipped"] == 1


def test_a_pdf_is_indexed_and_found_with_pypdf(index, folder):
    """A PDF as the app exports one (fpdf2) is indexed by its text and found by a search."""
    from core.article.article import Article
    from core.article.pdf import to_pdf

    text = "Sourdough starters need flour, water and patience over several days."
    index.refresh()
    (folder / "bread.pdf").write_bytes(to_pdf(Article(task="Baking notes", text=text)))
    assert index.refresh()["added"] == 1
    (hit, *_) = index.search("sourdough starters patience", k=3)
    assert hit.url.endswith("bread.pdf") and "patience" in hit.snippet


def test_scan_leaves_out_hidden_unsupported_and_linked_folders(tmp_path, folder):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.md").write_text("# Far away", encoding="utf-8")
    (folder / "linked").symlink_to(outside, target_is_directory=True)
    names = sorted(Path(p).relative_to(folder.resolve()).as_posix() for p in scan(folder))
    assert names == sorted(["kitchen/sourdough.md", "tea.txt", *HTML_PAGES])


def test_a_file_over_the_size_cap_is_skipped(index, folder, monkeypatch):
    monkeypatch.setattr("core.retrieval.corpus.MAX_FILE_BYTES", 100)
    counts = index.refresh()
    assert counts["skipped"] == N - 1 and counts["added"] == 1  # only tea.txt is small enough


def test_a_file_that_fails_extraction_is_skipped_and_tried_again(index, folder, monkeypatch):
    def broken(*args, **kwargs):
        raise ExtractionError("Could not extract the text: boom")

    monkeypatch.setattr("core.retrieval.corpus.extract_html", broken)
    assert index.refresh() == dict(added=2, updated=0, removed=0, unchanged=0, skipped=len(HTML_PAGES))
    monkeypatch.undo()
    assert index.refresh()["added"] == len(HTML_PAGES)

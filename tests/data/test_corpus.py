"""The local corpus's FTS5 index (data.corpus.CorpusStore): storing documents, BM25 search with
snippets, reading by URL, the stat of each file for change detection, and the shared FTS query
builder. Scanning a folder is tested in tests/core/test_corpus.py."""

import threading
from pathlib import Path

import pytest

from common.errors import StoreError
from data.corpus import CorpusStore, IndexedFile, url_to_path
from data.fts import fts_query

DOCS = {
    "kitchen/sourdough.md": ("Sourdough basics", "A sourdough starter is flour and water fermented by wild yeast."),
    "tea.txt": ("tea", "Green tea is steeped at 80 degrees for two minutes.\nBlack tea takes boiling water."),
    "python.html": ("Python 3.6.0 is now available!", "Python 3.6.0 is the newest major release of Python."),
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "notes"


@pytest.fixture
def store(tmp_path: Path, folder: Path) -> CorpusStore:
    store = CorpusStore(tmp_path / "index" / "corpus.db")
    for n, (name, (title, text)) in enumerate(DOCS.items()):
        assert store.put(folder / name, mtime_ns=n, size=len(text), sha1=f"h{n}", title=title, text=text)
    return store


def uri(folder: Path, name: str) -> str:
    return (folder / name).resolve().as_uri()


def test_stored_documents_are_counted_and_listed_with_their_stat(store, folder):
    assert store.stats() == {"documents": len(DOCS)}
    files = store.files()
    assert set(files) == {str(folder / name) for name in DOCS}
    assert files[str(folder / "tea.txt")] == IndexedFile(str(folder / "tea.txt"), 1, len(DOCS["tea.txt"][1]), "h1")


@pytest.mark.parametrize(
    "query, first",
    [("sourdough starter yeast", "kitchen/sourdough.md"), ("Python 3.6 release", "python.html"),
     ("green tea steeping", "tea.txt")],
)
def test_search_ranks_the_right_document_first(store, folder, query, first):
    results = store.search(query, 2)
    assert results[0].url == uri(folder, first)
    assert results[0].provider == "corpus" and results[0].snippet
    assert len(results) <= 2


def test_a_title_match_weighs_more_than_a_body_match(store, folder):
    store.put(folder / "b.md", mtime_ns=0, size=1, sha1="x", title="Other", text="Notes on basics of sourdough.")
    assert store.search("basics", 2)[0].title == "Sourdough basics"


def test_put_replaces_a_path_and_touch_records_a_new_stat(store, folder):
    path = folder / "tea.txt"
    assert store.put(path, mtime_ns=9, size=3, sha1="h9", title="tea", text="Oolong tea is partly oxidised.") is False
    assert store.search("oolong", 5)[0].url == uri(folder, "tea.txt")
    assert store.search("boiling", 5) == []
    store.touch(path, mtime_ns=10, size=4)
    assert store.files()[str(path)] == IndexedFile(str(path), 10, 4, "h9")
    assert store.stats() == {"documents": len(DOCS)}


def test_delete_forgets_a_document(store, folder):
    assert store.delete(folder / "kitchen/sourdough.md") is True
    assert store.delete(folder / "kitchen/sourdough.md") is False
    assert store.search("sourdough", 5) == []
    assert store.read(uri(folder, "kitchen/sourdough.md")) is None


@pytest.mark.parametrize(
    "query",
    ['C++ "foo', '"', "NEAR(a b", "a AND OR NOT", "*", "title:foo", "'; DROP TABLE files; --", "(((", "^x",
     "_", "-", "", "   ", "sourdough*", "日本語のテキスト", "x" * 5000, " ".join(["tea"] * 200)],
)
def test_nasty_queries_do_not_raise(store, query):
    assert isinstance(store.search(query, 5), list)


def test_fts_query_quotes_every_word():
    assert fts_query('C++ "foo') == '"C" OR "foo"'
    assert fts_query("Tea tea TEA") == '"Tea"'
    assert fts_query("!!!") == ""


def test_read_returns_stored_text(store, folder):
    title, text = store.read(store.search("Python 3.6 release", 1)[0].url)
    assert title == "Python 3.6.0 is now available!" and "newest major release" in text
    assert store.read(str(folder / "tea.txt"))[1].startswith("Green tea")  # a plain path works too
    assert store.read(uri(folder, "missing.md")) is None
    assert store.read("https://example.com/tea.txt") is None


def test_url_to_path_accepts_only_local_file_urls(tmp_path):
    uri = (tmp_path / "a b.md").as_uri()
    assert url_to_path(uri) == tmp_path / "a b.md"
    assert url_to_path("file://evil.example/etc/passwd") is None
    assert url_to_path("http://example.com/a.md") is None


def test_old_schema_is_rebuilt_empty(store):
    import sqlite_utils

    db = sqlite_utils.Database(store.db_path)
    db.execute("PRAGMA user_version = 0")
    db.close()
    assert store.stats() == {"documents": 0}
    assert store.files() == {}


def test_an_unreadable_index_is_a_store_error_that_names_the_fix(tmp_path):
    path = tmp_path / "corpus.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="Delete the file"):
        CorpusStore(path).search("tea", 3)


def test_usable_from_other_threads(store):
    found = []
    threads = [threading.Thread(target=lambda: found.append(store.search("tea", 1))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(found) == 4 and all(r and r[0].url.endswith("tea.txt") for r in found)

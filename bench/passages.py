"""How long BM25 ranking takes: rank 1,000 passages (the fixture pages' passages, repeated) for one
query, and select and format them for a prompt; then the same for Chinese (the test corpus's five
Chinese documents, repeated: words found by ICU, core.text.segment), with the time to split
its pages into passages. Prints numbers; passes or fails nothing.

    python -m bench.passages [--passages 1000] [--repeat 20]

Target: ranking 1,000 passages under 0.1 s (best of the repeats), in English and in Chinese.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import trafilatura

from common.types import Page, Passage
from core.retrieval.passages import rank_passages, select_passages, split_passages
from core.text.fencing import format_passages
from tests.fakes.web_server import FIXTURES, load_manifest

QUERY = "python release performance json parsing"
ZH_QUERY = "大熊猫 竹子 长城"
ZH_CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fakes" / "corpus_cjk"
PAGES = ["blog.python.org.html", "nationalgeographic.co.uk.goats.html", "lemire.me.json.html",
         "salon.com.emissions.html", "stackoverflow.com.rust.html"]


def corpus(n: int) -> list[Passage]:
    """``n`` passages: those of the fixture pages in PAGES, repeated."""
    entries = {entry["file"]: entry for entry in load_manifest()}
    passages = []
    for file in PAGES:
        html = (FIXTURES / file).read_text(encoding="utf-8")
        text = trafilatura.extract(html, output_format="markdown") or ""
        entry = entries[file]
        passages += split_passages(Page(url=entry["url"], status="ok", title=entry["title"], text=text))
    return (passages * (n // len(passages) + 1))[:n]


def timed(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--passages", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()

    passages = corpus(args.passages)
    rank = [timed(lambda: rank_passages(QUERY, passages)) for _ in range(args.repeat)]
    ranked = rank_passages(QUERY, passages)
    select = [timed(lambda: format_passages(select_passages(ranked, 2000))) for _ in range(args.repeat)]
    print(f"{len(passages)} passages, query {QUERY!r}, {args.repeat} repeats")
    print(f"rank (BM25):        best {1000 * min(rank):8.2f} ms   median {1000 * statistics.median(rank):8.2f} ms"
          "   (target: best < 100 ms)")
    print(f"select + format:    best {1000 * min(select):8.2f} ms   median {1000 * statistics.median(select):8.2f} ms"
          "   (2,000-token budget)")

    pages = [Page(url=f"file:///{f.name}", status="ok", title=f.stem, text=f.read_text(encoding="utf-8") * 20)
             for f in sorted(ZH_CORPUS.glob("zh_*.md"))]
    split = [timed(lambda: [split_passages(page) for page in pages]) for _ in range(args.repeat)]
    chinese = [p for page in pages for p in split_passages(page)]
    chinese = (chinese * (args.passages // len(chinese) + 1))[:args.passages]
    rank_zh = [timed(lambda: rank_passages(ZH_QUERY, chinese)) for _ in range(args.repeat)]
    chars = sum(len(page.text) for page in pages)
    print(f"Chinese: {len(pages)} pages of {chars:,} characters, then {len(chinese)} passages, query {ZH_QUERY!r}")
    print(f"split (ICU):        best {1000 * min(split):8.2f} ms   median {1000 * statistics.median(split):8.2f} ms")
    print(f"rank (BM25):        best {1000 * min(rank_zh):8.2f} ms   median {1000 * statistics.median(rank_zh):8.2f} ms"
          "   (target: best < 100 ms)")


if __name__ == "__main__":
    main()

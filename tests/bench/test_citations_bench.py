"""Smoke test of bench/citations.py: its main function on one task and two methods (RAT and the
RAG baseline) over the fake model and the local web prints a row per method with sensible
numbers, and returns the same counts."""

from __future__ import annotations

from bench import citations


def rows(printed: str) -> dict[str, list[str]]:
    """The table's rows by method: the cells after the method's name."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["method", "runs"]) + 2
    table = {}
    for line in lines[start:]:
        if not line.strip():
            break
        cells = line.split()
        table[cells[0]] = cells[1:]
    return table


def test_bench_prints_a_row_per_method_with_sensible_numbers(capsys):
    results = citations.main(["--tasks", "1", "--methods", "rat,rag-1"])
    table = rows(capsys.readouterr().out)

    assert list(table) == ["rat", "rag-1"]
    for method, cells in table.items():
        runs, sent, supp, marks, model, removed, prec, prec_m, read, snippet = cells
        assert int(runs) == 1, method
        assert int(sent) >= 1 and int(read) + int(snippet) >= 1, method
        for cell in (supp, prec, prec_m):
            assert cell == "-" or 0 <= float(cell) <= 1, (method, cell)
        assert 0 <= int(model) <= int(marks), method
        # the first task is the one in three where the model invents a mark: it is removed
        assert int(removed) >= 1, method
        c = results[method]
        assert (c["sent"], c["marks"], c["model"], c["removed"]) == (int(sent), int(marks), int(model), int(removed))
        assert c["precise"] <= c["marks"] and c["supported"] <= c["sent"]
    assert int(table["rat"][3]) >= 1  # marks
    assert int(table["rat"][4]) >= 1  # the model's copied labels were kept

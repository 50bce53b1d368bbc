"""The file the tiny model's server reads (scripts/tiny_model.py ``served_model``): a Q4_0 copy of the
shipped Q4_1 made once by llama.cpp's quantizer and kept; a file the quantizer cannot read is a
TinyModelError in its words, with nothing half-written left behind. And the bench that compares the
two (bench/tiny_model.py) prints what it measured."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from scripts.tiny_model import SERVED, TinyModelError, gguf_path, served_model

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(300)]

#: The file type in a GGUF file's metadata, read by llama.cpp (general.file_type: 2 is Q4_0, 3 Q4_1).
_FILE_TYPE = """
import sys, llama_cpp
model = llama_cpp.Llama(sys.argv[1], vocab_only=True, verbose=False)
print(model.metadata.get("general.file_type"))
"""


def file_type(path) -> str:
    done = subprocess.run([sys.executable, "-c", _FILE_TYPE, str(path)], capture_output=True, text=True,
                          timeout=60, check=True)
    return done.stdout.strip()


def test_the_served_copy_is_q4_0_made_once_and_kept(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    served = served_model(folder=folder)

    assert served.parent == folder and served.name.endswith(SERVED)
    assert [p.name for p in folder.iterdir()] == [served.name]  # no temp file left
    assert (file_type(gguf_path()), file_type(served)) == ("3", "2")  # Q4_1 shipped, Q4_0 served

    def no_second_quantizing(*args, **kwargs):
        raise AssertionError(f"quantized again: {args}")

    monkeypatch.setattr(subprocess, "run", no_second_quantizing)
    made = served.stat().st_mtime_ns
    assert served_model(folder=folder) == served and served.stat().st_mtime_ns == made


def test_a_file_the_quantizer_cannot_read_is_an_error_in_its_words_and_leaves_nothing(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model at all")
    folder = tmp_path / "cache"

    with pytest.raises(TinyModelError, match=r"could not make the Q4_0 copy of .*broken\.gguf") as raised:
        served_model(broken, folder)

    assert "exit 1" in str(raised.value)
    assert list(folder.iterdir()) == []  # the half-written copy is gone


def test_a_cache_folder_that_cannot_be_written_names_the_variable_that_moves_it(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")

    with pytest.raises(TinyModelError, match=r"Cannot write the tiny model's Q4_0 copy into .*a-file/rat-studio.*"
                                             r"set XDG_CACHE_HOME"):
        served_model(gguf_path(), blocked / "rat-studio")


def test_the_bench_prints_a_row_per_server_that_agrees_with_what_it_measured(capsys):
    from bench import tiny_model

    results = tiny_model.main(["--rounds", "1", "--prompt-words", "40", "--tokens", "8"])
    printed = capsys.readouterr().out

    assert list(results) == ["shipped Q4_1", "served Q4_0+FA", f"served, writes x{os.cpu_count()}"]
    for name, measured in results.items():
        row = re.search(rf"^{re.escape(name)} +([\d.]+) +(\d+) +([\d.]+) +(\d+)$", printed, re.M)
        assert row, printed
        assert all(value > 0 for value in measured.values()), measured
        assert float(row[1]) == round(measured["prompt_ms"], 1) and float(row[3]) == round(measured["write_ms"], 1)
        assert int(row[2]) == round(measured["prompt_rate"]) and int(row[4]) == round(measured["write_rate"])


def test_the_bench_refuses_a_bad_option_naming_it(capsys):
    from bench import tiny_model

    with pytest.raises(SystemExit):
        tiny_model.main(["--rounds", "0"])
    assert "--rounds" in capsys.readouterr().err

"""bench/startup.py counts the project's modules that a start would compile: those whose bytecode
is missing or older than their source."""

from __future__ import annotations

import os
import py_compile

from bench.startup import without_bytecode


def test_modules_without_current_bytecode_are_counted(tmp_path):
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/sub/mod.py"):
        (tmp_path / name).write_text("y = 2\n")
    packages = ("app.py", "pkg")
    assert without_bytecode(tmp_path, packages) == (3, 3)

    py_compile.compile(str(tmp_path / "app.py"), doraise=True)
    py_compile.compile(str(tmp_path / "pkg/sub/mod.py"), doraise=True)
    assert without_bytecode(tmp_path, packages) == (1, 3)

    later = os.stat(tmp_path / "app.py").st_mtime + 10  # the source changed after it was compiled
    os.utime(tmp_path / "app.py", (later, later))
    assert without_bytecode(tmp_path, packages) == (2, 3)

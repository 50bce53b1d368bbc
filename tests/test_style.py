"""The code is ruff-clean, with the rules of pyproject.toml ([tool.ruff])."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"ruff check found problems (fix them, or `ruff check --fix .`):\n{done.stdout}"


def test_building_the_app_writes_no_stub_files_into_the_source_tree(tmp_path):
    """Gradio writes a .pyi next to the module of every gr.Component subclass as the class is made
    (a source tree may be read-only, and ruff reads the stubs): the app defines none."""
    import app as app_module
    from common.settings import Settings
    from ui.app import build_app

    wired = app_module.build(Settings(db_path=tmp_path / "t.db"))
    build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms)
    for package in ("ui", "annotation", "core", "data", "common"):
        assert not list((ROOT / package).rglob("*.pyi")), f"a gr.Component subclass under {package}/"

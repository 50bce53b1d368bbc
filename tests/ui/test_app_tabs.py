"""Which tabs the app serves: annotators' deployments (--arena-only) have no Writer or History,
where the method of a judged output could be looked up."""

from __future__ import annotations

import pytest

import app as app_module
from common.settings import Settings
from ui.app import build_app


def tab_labels(demo) -> set[str]:
    return {block.label for block in demo.blocks.values() if type(block).__name__ == "Tab"}


@pytest.mark.parametrize("arena_only, expected", [
    (False, {"Writer", "History", "Arena", "Leaderboard"}),
    (True, {"Arena", "Leaderboard"}),
])
def test_tabs(tmp_path, arena_only, expected):
    settings = Settings(db_path=tmp_path / "t.db", arena_only=arena_only)
    wired = app_module.build(settings)
    demo = build_app(wired.settings, wired.store, wired.clients, wired.runner)
    assert tab_labels(demo) == expected


def test_arena_only_flag_reaches_the_settings(tmp_path):
    from app import settings_from
    from ui.cli import build_parser

    args = build_parser().parse_args(["--arena-only", "--db", str(tmp_path / "x.db")])
    assert settings_from(args, {}).arena_only
    assert settings_from(build_parser().parse_args([]), {"RAT_STUDIO_ARENA_ONLY": "1"}).arena_only

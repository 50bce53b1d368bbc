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
    demo = build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms)
    assert tab_labels(demo) == expected


def test_arena_only_flag_reaches_the_settings(tmp_path):
    from app import settings_from
    from ui.cli import build_parser

    args = build_parser().parse_args(["--arena-only", "--db", str(tmp_path / "x.db")])
    assert settings_from(args, {}).arena_only
    assert settings_from(build_parser().parse_args([]), {"RAT_STUDIO_ARENA_ONLY": "1"}).arena_only


@pytest.mark.parametrize("arena_only", [False, True])
def test_arena_only_serves_no_llm_judge(tmp_path, arena_only):
    """Annotators' deployments serve nothing that spends the model: no judge button in the page's
    config as Gradio serves it over HTTP, and no event behind it that the queue could be asked to run."""
    import httpx

    from tests.helpers import free_port

    settings = Settings(db_path=tmp_path / "t.db", arena_only=arena_only)
    wired = app_module.build(settings)
    demo = build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms)
    names = {getattr(block.fn, "__name__", "") for block in demo.fns.values()}
    port = free_port()
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True)
    try:
        config = httpx.get(f"http://127.0.0.1:{port}/config", timeout=30).json()
    finally:
        demo.close()
    buttons = {c["props"].get("value") for c in config["components"] if c.get("type") == "button"}
    assert ("run_judge" in names) is (not arena_only)
    assert ("Run LLM judge" in buttons) is (not arena_only)


@pytest.mark.parametrize("auth", [":", "ana:", ":correct-horse", "ana:short", "no-colon", " :12345678"])
def test_auth_needs_a_user_and_a_real_password(tmp_path, auth):
    from app import settings_from
    from common.errors import ConfigError
    from ui.cli import build_parser

    args = build_parser().parse_args(["--share", "--auth", auth, "--db", str(tmp_path / "x.db")])
    with pytest.raises(ConfigError, match="at least 8 characters"):
        settings_from(args, {})
    with pytest.raises(ConfigError, match="at least 8 characters"):
        settings_from(build_parser().parse_args([]), {"RAT_STUDIO_AUTH": auth})


def test_share_with_a_good_password_is_accepted(tmp_path):
    from app import settings_from
    from ui.cli import build_parser

    args = build_parser().parse_args(["--share", "--auth", "ana:correct-horse", "--db", str(tmp_path / "x.db")])
    assert settings_from(args, {}).auth == ("ana", "correct-horse")


@pytest.mark.parametrize("arena_only", [False, True])
def test_a_page_load_computes_no_leaderboard(tmp_path, arena_only):
    """The leaderboard is computed when its tab opens: nothing bound to the page's load event
    reads the votes (10 annotators opening the arena at once cost no leaderboard)."""
    settings = Settings(db_path=tmp_path / "t.db", arena_only=arena_only)
    wired = app_module.build(settings)
    demo = build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms)
    on_load = {getattr(block.fn, "__name__", "") for block in demo.fns.values()
               if any(event == "load" for _, event in block.targets)}
    on_select = {getattr(block.fn, "__name__", "") for block in demo.fns.values()
                 if any(event == "select" for _, event in block.targets)}
    assert not on_load & {"show", "choices"}, on_load
    assert "choices" in on_select


def test_what_runs_on_page_load_runs_on_nothing_else(tmp_path):
    """``gr.on(None, fn, inputs=...)`` runs on the page's load and on every change of its inputs:
    the Writer's reload handler, bound so, ran again whenever Run set the run it remembers, and a
    second stream followed each run in the same page (twice the server's work and the page's)."""
    settings = Settings(db_path=tmp_path / "t.db")
    wired = app_module.build(settings)
    demo = build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms)
    on_load = [block for block in demo.fns.values() if any(event == "load" for _, event in block.targets)]
    assert any(getattr(block.fn, "__name__", "") == "inputs_of" for block in on_load)  # then on_reload
    mixed = {getattr(block.fn, "__name__", ""): block.targets for block in on_load
             if any(event != "load" for _, event in block.targets)}
    assert not mixed, mixed


@pytest.mark.parametrize("arena_only", [False, True])
def test_an_annotators_app_is_the_arena_alone(tmp_path, arena_only):
    """The app an annotator's session reaches (``ui.server``: /arena/) has no tab and no event but
    the Arena's: neither the Leaderboard's (ratings, flagged voters by name) nor the Writer's."""
    from annotation.accounts import ANNOTATOR

    settings = Settings(db_path=tmp_path / "t.db", arena_only=arena_only)
    wired = app_module.build(settings)
    demo = build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms, role=ANNOTATOR)
    names = {getattr(block.fn, "__name__", "") for block in demo.fns.values()}
    owners = {type(getattr(block.fn, "__self__", None)).__name__ for block in demo.fns.values()}
    assert tab_labels(demo) == set()
    assert owners <= {"ArenaTab", "NoneType"}, owners
    assert {"on_vote", "next", "undo"} <= names and not names & {"show", "run_judge", "choices", "draw"}


def test_the_queue_rebuilds_gradios_monitoring_summary_rarely_and_sleeps_when_idle(tmp_path):
    """Gradio rebuilds a pandas summary of its recent events after every event unless told otherwise
    (tens of ms of CPU per vote on a busy server): both apps' queues keep ANALYTICS_EVENTS and rebuild
    it every ANALYTICS_EVERY events. And an idle queue looked for work every millisecond (5% of a
    core): both apps' queues sleep QUEUE_POLL and PROGRESS_POLL seconds between looks. All under
    the attribute names Gradio's queue itself reads."""
    import inspect

    import gradio.queueing

    from annotation.accounts import ANNOTATOR
    from ui.app import ANALYTICS_EVENTS, ANALYTICS_EVERY, PROGRESS_POLL, QUEUE_POLL

    source = inspect.getsource(gradio.queueing.Queue)
    assert "self.ANAYLTICS_CACHE_FREQUENCY" in source and "self.ANALYTICS_MAX_EVENTS" in source
    assert "asyncio.sleep(self.sleep_when_free)" in source
    assert "asyncio.sleep(self.progress_update_sleep_when_free)" in source
    wired = app_module.build(Settings(db_path=tmp_path / "t.db"))
    for role in ("admin", ANNOTATOR):
        demo = build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms, role=role)
        assert demo._queue.ANAYLTICS_CACHE_FREQUENCY == ANALYTICS_EVERY > 1
        assert demo._queue.ANALYTICS_MAX_EVENTS == ANALYTICS_EVENTS < 10_000
        assert demo._queue.sleep_when_free == QUEUE_POLL > 0.001
        assert demo._queue.progress_update_sleep_when_free == PROGRESS_POLL > 0.01


def test_a_database_refusal_tells_the_annotator_what_to_do_not_where_the_database_is(caplog):
    """Issue 38 (F37, F25): during a PostgreSQL restart annotators saw raw errors naming its host and
    port, and each refusal logged a full traceback. Now the page says what happened and what to do;
    the log gets the database's own words, as one warning line."""
    import logging

    import gradio as gr

    from common.errors import StoreError
    from ui.arena import ArenaTab

    raw = StoreError("The database postgresql://rat@db.lan:5432/rat could not be used (connection refused)")

    class Down:
        def vote(self, *args, **kwargs):
            raise raw

        def undo(self, *args, **kwargs):
            raise raw

        def next_pair(self, *args, **kwargs):
            raise raw

    tab = ArenaTab(Down())
    caplog.set_level(logging.WARNING, logger="ui.arena")
    for act, said in ((lambda: tab.vote("a", {"battle": 7, "annotator": "ana"}), "Your vote was not saved"),
                      (lambda: tab.undo({"annotator": "ana", "battle": 7}), "could not be taken back"),
                      (lambda: tab.next({"annotator": "ana"}), "No pair could be loaded")):
        with pytest.raises(gr.Error) as err:
            act()
        shown = str(err.value.message)
        assert said in shown and "Try again in a minute" in shown, shown
        assert "db.lan" not in shown and "5432" not in shown and "postgresql" not in shown, shown
        assert err.value.print_exception is False, "an expected refusal: no traceback"
    logged = [r for r in caplog.records if r.name == "ui.arena"]
    assert len(logged) == 3 and all("db.lan:5432" in r.getMessage() and not r.exc_info for r in logged)


@pytest.mark.parametrize("role", ["admin", "annotator"])
def test_the_arenas_load_names_only_the_outputs_it_sets(tmp_path, role):
    """The browser keeps a loading status for each output an event names and, on every message of
    every later event (each streamed frame of a run), walks its tree of components for each of
    them. The admin's Arena, which starts no pair on load, named the whole view (20 outputs) and
    set three: the Writer's frames paid for 17 outputs in a tab not even open."""
    from types import SimpleNamespace

    from annotation.accounts import ADMIN, ANNOTATOR

    settings = Settings(db_path=tmp_path / "t.db")
    wired = app_module.build(settings)
    demo = build_app(wired.settings, wired.store, wired.clients, wired.runner, wired.rooms,
                     role=ADMIN if role == "admin" else ANNOTATOR)
    load = next(block for block in demo.fns.values() if getattr(block.fn, "__name__", "") == "load"
                and type(getattr(block.fn, "__self__", None)).__name__ == "ArenaTab")
    named = {output._id for output in load.outputs}
    if role == "admin":
        assert len(named) == 3, len(named)
        for user in ("ada", None):  # logged in, and not
            set_ = load.fn(SimpleNamespace(username=user))
            assert {output._id for output in set_} <= named
    else:
        assert len(named) >= 20, "an annotator's page starts a pair on load: the whole view"

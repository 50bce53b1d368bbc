"""Schema migrations, applied in order at start. Each is a decorated function that takes a
sqlite_utils.Database; the names of applied ones are kept in ``_migrations``. Never edit a
migration that has shipped: add a new one.

On PostgreSQL (``db.dialect``), a migration's PostgreSQL form is applied instead: the script of
the same name in ``data.pg_migrations.PG``, which leaves the same tables, constraints and
append-only refusals; two processes starting at once take turns on an advisory lock.

Before applying anything, ``apply`` refuses a file it must not write to: one written by a newer
version (a migration it does not know) or one that is not ours (tables it needs are missing or
are something else), with a message that names the file and what to do."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from common.errors import StoreError
from data.pg_migrations import PG
from data.schema import ACCOUNT_ROLES, M011_ACTIONS, VERSION_ACTIONS

MIGRATIONS: list[tuple[str, Callable[[sqlite_utils.Database], None]]] = []


def migration(fn: Callable[[sqlite_utils.Database], None]):
    MIGRATIONS.append((fn.__name__, fn))
    return fn


#: The tables each migration creates, to tell a database of ours from a foreign one.
TABLES = {
    "m001_core": ("tasks", "runs", "events", "pages", "searches"),
    "m002_arena": ("outputs", "battles", "votes", "judge_votes"),
    "m003_procedures": ("procedures",),
    "m004_procedures_fts": ("procedures_fts",),
    "m008_vote_corrections": ("vote_corrections",),
    "m011_versions": ("versions",),
    "m013_accounts": ("accounts", "invites", "sessions"),
    "m016_gold_pairs": ("gold_pairs",),
    "m017_campaigns": ("campaigns",),
    "m019_login_failures": ("login_failures",),
}


def apply(db: sqlite_utils.Database, path: str | Path = "the database") -> list[str]:
    """Apply the migrations not yet applied; returns their names. Raises StoreError, naming
    ``path``, for a database of a newer version or a foreign one (see :func:`check`)."""
    server = getattr(db, "dialect", "sqlite") == "postgresql"
    if server:
        with db.conn:  # two processes may start on a new database at once: read it while none migrates
            db.execute("select pg_advisory_xact_lock(?)", [_MIGRATION_LOCK])
            check(db, path)
            db.execute("create table if not exists _migrations (name text primary key, applied text)")
    else:
        with db.conn:  # one snapshot: another process may commit a migration between two reads
            if not db.conn.in_transaction:
                db.execute("begin")
            check(db, path)
        db.execute("create table if not exists _migrations (name text primary key, applied text)")
    done = {row[0] for row in db.execute("select name from _migrations").fetchall()}
    applied = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with db.conn:  # one transaction per migration: it lands whole or not at all
            if server:
                db.execute("select pg_advisory_xact_lock(?)", [_MIGRATION_LOCK])
            elif not db.conn.in_transaction:
                db.execute("begin immediate")  # the write lock first: two processes may open a new file
            if db.execute("select 1 from _migrations where name = ?", [name]).fetchone():
                continue  # another process applied it while we waited for the lock
            if server:
                db.conn.raw.execute(PG[name])
            else:
                fn(db)
            db.execute(
                "insert into _migrations (name, applied) values (?, ?)",
                [name, datetime.now(UTC).isoformat()],
            )
        applied.append(name)
    if server and applied:
        db.refresh_tables()  # inserts into the new tables return their ids
    return applied


_MIGRATION_LOCK = 0x5241_544D  # "RATM": PostgreSQL's advisory lock for applying migrations


def check(db: sqlite_utils.Database, path: str | Path = "the database") -> None:
    """Raises StoreError when the file at ``path`` must not be migrated or written: it lists
    migrations this version does not know (a newer RAT Studio wrote it), or it is not a RAT
    Studio database (it has tables but no migration record, or a table a recorded migration
    made is missing)."""
    tables = set(db.table_names())
    known = [name for name, _ in MIGRATIONS]
    if "_migrations" not in tables:
        if tables:
            raise StoreError(f"{path} is not a RAT Studio database (it holds other tables: "
                             f"{', '.join(sorted(tables)[:5])}). Pass another file with --db or RAT_STUDIO_DB.")
        return
    done = [row[0] for row in db.execute("select name from _migrations order by name").fetchall()]
    unknown = [name for name in done if name not in known]
    if unknown:
        raise StoreError(f"{path} was written by a newer version of RAT Studio (migrations "
                         f"{', '.join(unknown)} are unknown here). Upgrade RAT Studio, or pass another "
                         "file with --db or RAT_STUDIO_DB.")
    missing = [table for name in done for table in TABLES.get(name, ()) if table not in tables]
    if missing:
        raise StoreError(f"{path} is not a RAT Studio database as this version writes it (tables "
                         f"{', '.join(missing)} are missing). Pass another file with --db or RAT_STUDIO_DB, "
                         "or restore the file from a backup.")


@migration
def m001_core(db: sqlite_utils.Database) -> None:
    db["tasks"].create(
        {"id": int, "prompt": str, "kind": str, "task_set": str, "meta": str, "created": str},
        pk="id",
    )
    db["tasks"].create_index(["prompt", "kind", "task_set"], unique=True)
    db["runs"].create(
        {
            "id": str, "task_id": int, "method": str, "settings": str, "status": str,
            "final_text": str, "sources": str, "error": str,
            "prompt_tokens": int, "completion_tokens": int, "llm_calls": int,
            "tokens_by_role": str, "llm_seconds": float, "search_seconds": float,
            "fetch_seconds": float, "wall_seconds": float, "steps_done": int, "steps_total": int,
            "created": str, "updated": str, "finished": str,
        },
        pk="id",
        foreign_keys=[("task_id", "tasks", "id")],
    )
    db["runs"].create_index(["task_id", "method"])
    db["runs"].create_index(["created"])
    db["events"].create(
        {"run_id": str, "seq": int, "type": str, "payload": str, "ts": str},
        pk=("run_id", "seq"),
        foreign_keys=[("run_id", "runs", "id")],
    )
    db["pages"].create(
        {"url": str, "final_url": str, "title": str, "text": str, "content_type": str,
         "size": int, "metadata": str, "fetched": str},
        pk="url",
    )
    db["searches"].create(
        {"provider": str, "query": str, "k": int, "results": str, "searched": str},
        pk=("provider", "query", "k"),
    )


@migration
def m002_arena(db: sqlite_utils.Database) -> None:
    """Arena: outputs of any system (finished runs and imported texts), battles shown to people,
    their votes and the LLM judge's votes. Votes are append-only: triggers refuse update and delete.
    Python's sqlite3 runs DDL outside any transaction unless one is open, so this opens one: with
    ``apply``'s ``with db.conn`` the tables and the ``_migrations`` row land together or not at all."""
    statements = (
        """create table outputs (
            id integer primary key,
            task_id integer not null references tasks(id),
            method text not null,
            text text not null,
            digest text not null,
            source text not null check (source in ('import', 'run')),
            run_id text references runs(id),
            created text not null)""",
        "create unique index outputs_run on outputs(run_id) where run_id is not null",
        "create unique index outputs_import on outputs(task_id, method, digest) where source = 'import'",
        "create index outputs_task on outputs(task_id, method)",
        """create table battles (
            id integer primary key,
            task_id integer not null references tasks(id),
            output_a integer references outputs(id),
            output_b integer references outputs(id),
            method_a text not null,
            method_b text not null,
            annotator text not null,
            source text not null default 'arena' check (source in ('arena', 'import')),
            created text not null)""",
        "create index battles_annotator on battles(annotator)",
        "create index battles_methods on battles(method_a, method_b)",
        """create table votes (
            id integer primary key,
            battle_id integer not null unique references battles(id),
            annotator text not null,
            choice text not null check (choice in ('a', 'b', 'tie', 'both_bad')),
            created text not null)""",
        """create trigger votes_append_only_update before update on votes
            begin select raise(abort, 'votes are append-only'); end""",
        """create trigger votes_append_only_delete before delete on votes
            begin select raise(abort, 'votes are append-only'); end""",
        """create table judge_votes (
            id integer primary key,
            task_id integer not null references tasks(id),
            method_a text not null,
            method_b text not null,
            output_a integer references outputs(id),
            output_b integer references outputs(id),
            choice text not null check (choice in ('a', 'b', 'tie')),
            n integer not null,
            detail text not null,
            model text not null,
            created text not null)""",
        "create index judge_votes_pair on judge_votes(output_a, output_b, model)",
        """create trigger judge_votes_append_only_update before update on judge_votes
            begin select raise(abort, 'judge votes are append-only'); end""",
        """create trigger judge_votes_append_only_delete before delete on judge_votes
            begin select raise(abort, 'judge votes are append-only'); end""",
    )
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements:
        db.execute(sql)


@migration
def m003_procedures(db: sqlite_utils.Database) -> None:
    """AAG's procedural memory (paper 002, section 3.1): procedures (input, output, steps), filled
    from finished runs, imported JSONL or by hand. ``steps`` is a JSON list of strings; ``digest``
    keeps the same procedure from being stored twice."""
    statements = (
        """create table procedures (
            id integer primary key,
            input text not null,
            output text not null,
            steps text not null,
            source text not null check (source in ('run', 'import', 'task', 'manual')),
            run_id text references runs(id),
            digest text not null unique,
            created text not null)""",
        "create index procedures_run on procedures(run_id) where run_id is not null",
    )
    for sql in statements:
        db.execute(sql)


#: A procedure's steps as the FTS index holds them: the JSON list's strings, one per line.
_STEPS_TEXT = "(select group_concat(value, char(10)) from json_each({row}.steps))"


@migration
def m004_procedures_fts(db: sqlite_utils.Database) -> None:
    """Procedure memory searched with FTS5 and BM25 (as the local corpus is): ``procedures_fts``
    holds each procedure's input, output and steps (one per line) under rowid = procedures.id,
    filled from the rows already stored and kept in step with the table by triggers."""
    index_new = ("insert into procedures_fts (rowid, input, output, steps) "
                 f"values (new.id, new.input, new.output, {_STEPS_TEXT.format(row='new')});")
    statements = (
        "create virtual table procedures_fts using fts5("
        "input, output, steps, tokenize = 'porter unicode61 remove_diacritics 2')",
        "insert into procedures_fts (rowid, input, output, steps) "
        f"select id, input, output, {_STEPS_TEXT.format(row='procedures')} from procedures",
        f"create trigger procedures_fts_insert after insert on procedures begin {index_new} end",
        """create trigger procedures_fts_delete after delete on procedures begin
            delete from procedures_fts where rowid = old.id;
            end""",
        f"""create trigger procedures_fts_update after update of input, output, steps on procedures begin
            delete from procedures_fts where rowid = old.id;
            {index_new}
            end""",
    )
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements:
        db.execute(sql)


@migration
def m005_arena_append_only(db: sqlite_utils.Database) -> None:
    """What the leaderboard is computed from is append-only, whoever writes to the file: the
    outputs annotators judged and the battles that say which method was A and which B refuse
    update and delete, as votes and judge votes already do; and an insert that reuses a stored
    row's key (``insert or replace``, which would delete that row to make room; delete triggers
    do not fire for it on a connection without recursive triggers) is refused too. An output
    whose run is already in the arena is skipped, as ``insert or ignore`` skips it."""
    refuse = "select raise(abort, '{table} are append-only: add a new row instead')"
    statements = [
        f"""create trigger {table}_append_only_{action} before {action} on {table}
            begin {refuse.format(table=table)}; end"""
        for table in ("outputs", "battles") for action in ("update", "delete")
    ]
    reused = {
        "votes": "new.id is not null and exists (select 1 from votes where id = new.id) "
                 "or exists (select 1 from votes where battle_id = new.battle_id)",
        "judge_votes": "new.id is not null and exists (select 1 from judge_votes where id = new.id)",
        "battles": "new.id is not null and exists (select 1 from battles where id = new.id)",
        "outputs": "new.id is not null and exists (select 1 from outputs where id = new.id)",
    }
    statements += [
        f"""create trigger {table}_append_only_reuse before insert on {table}
            when {condition} begin {refuse.format(table=table.replace('_', ' '))}; end"""
        for table, condition in reused.items()
    ]
    statements.append(
        """create trigger outputs_append_only_run before insert on outputs
            when new.run_id is not null and exists (select 1 from outputs where run_id = new.run_id)
            begin select raise(ignore); end""")
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements:
        db.execute(sql)


@migration
def m006_run_checks(db: sqlite_utils.Database) -> None:
    """How many of a run's steps were checked against retrieved text, and how many revisions
    the guards refused (core.text.guards), beside its other counters."""
    for column in ("steps_sourced", "steps_guarded"):
        db.execute(f"alter table runs add column {column} integer not null default 0")


@migration
def m007_run_owner(db: sqlite_utils.Database) -> None:
    """Who drives a running run: ``owner`` ("host:pid:token", one token per runner) and
    ``heartbeat`` (an ISO time the owner refreshes every few seconds). A run whose owner is gone
    is found and marked interrupted; a second runner for a live run is refused."""
    for column in ("owner", "heartbeat"):
        db.execute(f"alter table runs add column {column} text not null default ''")


@migration
def m008_vote_corrections(db: sqlite_utils.Database) -> None:
    """Votes are never changed; a correction is a new row that supersedes one: the vote it
    corrects, the choice that now counts (one of the arena's choices, or ``void`` for a vote that
    should not count at all), who made it and why. The newest correction of a vote wins.
    Corrections are append-only too."""
    statements = [
        """create table vote_corrections (
            id integer primary key,
            vote_id integer not null references votes(id),
            choice text not null check (choice in ('a', 'b', 'tie', 'both_bad', 'void')),
            corrected_by text not null check (length(trim(corrected_by)) > 0),
            why text not null check (length(trim(why)) > 0),
            created text not null
        )""",
        "create index vote_corrections_vote on vote_corrections(vote_id, id)",
        """create trigger vote_corrections_append_only_update before update on vote_corrections
            begin select raise(abort, 'vote corrections are append-only: add a new correction instead'); end""",
        """create trigger vote_corrections_append_only_delete before delete on vote_corrections
            begin select raise(abort, 'vote corrections are append-only: add a new correction instead'); end""",
        """create trigger vote_corrections_append_only_reuse before insert on vote_corrections
            when new.id is not null and exists (select 1 from vote_corrections where id = new.id)
            begin select raise(abort, 'vote corrections are append-only: add a new correction instead'); end""",
    ]
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements:
        db.execute(sql)


@migration
def m009_run_citations(db: sqlite_utils.Database) -> None:
    """A finished run's citations beside its other counters (``core.article.citations``): its article's
    sentences, how many of them a source supports, and the marks the model wrote that named no
    passage of their step and were removed. Runs stored before are 0 (not counted)."""
    for column in ("sentences", "sentences_cited", "marks_removed"):
        db.execute(f"alter table runs add column {column} integer not null default 0")


@migration
def m010_votes_annotator(db: sqlite_utils.Database) -> None:
    """People's votes by annotator: the leaderboard re-reads only the voters who voted since it
    last looked (their median time and sides), not every vote."""
    db.execute("create index votes_annotator on votes(annotator, id)")


#: What an author did to make a version of a run's article (``data.versions``): m011's five, and
#: (m015) a step's revision regenerated, a step searched again, a source excluded from a step.


@migration
def m011_versions(db: sqlite_utils.Database) -> None:
    """The author's versions of a run's article (``data.versions``): each edit of the text, undo of
    step revisions, refused revision taken, edited draft continued, or old version restored is a
    new row, numbered 1, 2, 3... per run, with the steps undone and taken (JSON lists of step
    numbers) and the time. The model's own text stays in the run's Final event. Append-only in the
    schema itself, as votes are: update, delete and an insert that reuses a stored row's id or
    number (``insert or replace`` would delete that row) are refused, and a new version must be
    the run's next number."""
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in _versions_schema(M011_ACTIONS):
        db.execute(sql)


def _versions_schema(actions: tuple[str, ...]) -> list[str]:
    """The ``versions`` table, its index and its triggers, with ``actions`` allowed."""
    actions = ", ".join(f"'{a}'" for a in actions)
    steps = "check (json_valid({c}) and json_type({c}) = 'array')"
    refuse = "select raise(abort, 'versions are append-only: add a new version instead')"
    statements = [
        f"""create table versions (
            id integer primary key,
            run_id text not null references runs(id),
            n integer not null check (n >= 1),
            text text not null,
            undone text not null default '[]' {steps.format(c='undone')},
            taken text not null default '[]' {steps.format(c='taken')},
            action text not null check (action in ({actions})),
            restored_from integer check (restored_from is null
                                         or (action = 'restore' and restored_from between 1 and n - 1)),
            created text not null)""",
        "create unique index versions_run_n on versions(run_id, n)",
        f"create trigger versions_append_only_update before update on versions begin {refuse}; end",
        f"create trigger versions_append_only_delete before delete on versions begin {refuse}; end",
        f"""create trigger versions_append_only_reuse before insert on versions
            when new.id is not null and exists (select 1 from versions where id = new.id)
            begin {refuse}; end""",
        """create trigger versions_numbered before insert on versions
            when new.n != coalesce((select max(n) from versions where run_id = new.run_id), 0) + 1
            begin select raise(abort, 'versions are numbered 1, 2, 3... per run: add the run''s next number'); end""",
    ]
    return statements


@migration
def m012_output_versions(db: sqlite_utils.Database) -> None:
    """A run's text in the arena is the author's latest version of its article (``--arena-text``):
    a run may have one output per version (``version``: the version's number, null for the
    model's own text), each still a snapshot that nothing updates or deletes. The unique index
    and the trigger that kept one output per run now keep one per run and version; the arena
    pairs a run's newest output only (``data.arena.arena_outputs``)."""
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in (
        "alter table outputs add column version integer check (version is null or version >= 1)",
        "drop index outputs_run",
        "create unique index outputs_run on outputs(run_id, coalesce(version, 0)) where run_id is not null",
        "drop trigger outputs_append_only_run",
        """create trigger outputs_append_only_run before insert on outputs
            when new.run_id is not null and exists (select 1 from outputs where run_id = new.run_id
                                                    and coalesce(version, 0) = coalesce(new.version, 0))
            begin select raise(ignore); end""",
    ):
        db.execute(sql)


#: An account's roles (``annotation.accounts``): an annotator votes, an admin also runs the study.


@migration
def m013_accounts(db: sqlite_utils.Database) -> None:
    """An account per annotator (``data.accounts``): ``accounts`` (a unique name; a role; an
    Argon2 hash of the password, null for an account that logs in by invite link only; disabled
    0/1; the votes to cast (``quota``) and the code shown once they are cast; for a crowd study's
    participant, the study and the platform's ids as a JSON object), ``invites`` (a link's secret
    token as its sha256 hash, never the token; for one account, or for a study whose every
    participant gets the invite's quota and completion code) and ``sessions`` (a login: its
    token's sha256 hash, the account, the client's address, and when it ``ended``, null while
    open).

    Votes name their annotator, so an account is never deleted or renamed (disable it instead);
    a session or an invite is never deleted either, and a session ends once: its hash, account,
    address and start never change. An insert that reuses a stored row's id (``insert or
    replace`` would delete that row) is refused."""
    roles = ", ".join(f"'{r}'" for r in ACCOUNT_ROLES)
    code = "check ({c} is null or length({c}) between 1 and 64)"
    quota = "integer check (quota is null or (typeof(quota) = 'integer' and quota >= 1))"
    statements = [
        f"""create table accounts (
            id integer primary key,
            name text not null unique check (length(name) between 1 and 200 and name = trim(name)),
            role text not null default 'annotator' check (role in ({roles})),
            password_hash text check (password_hash is null or password_hash like '$argon2%'),
            disabled integer not null default 0 check (disabled in (0, 1)),
            quota {quota},
            completion_code text {code.format(c='completion_code')},
            study text check (study is null or length(study) between 1 and 64),
            participant text check (participant is null
                                    or (json_valid(participant) and json_type(participant) = 'object')),
            created text not null)""",
        f"""create table invites (
            id integer primary key,
            token_hash text not null unique check (length(token_hash) = 64),
            account text references accounts(name),
            study text check (study is null or length(study) between 1 and 64),
            quota {quota},
            completion_code text {code.format(c='completion_code')},
            created text not null,
            disabled integer not null default 0 check (disabled in (0, 1)),
            check ((account is null) != (study is null)),
            check (study is null or (quota is not null and completion_code is not null)))""",
        "create index invites_account on invites(account) where account is not null",
        """create table sessions (
            id integer primary key,
            token_hash text not null unique check (length(token_hash) = 64),
            account text not null references accounts(name),
            address text,
            invite integer references invites(id),
            created text not null,
            ended text)""",
        "create index sessions_open on sessions(account) where ended is null",
        """create trigger accounts_never_deleted before delete on accounts
            begin select raise(abort, 'accounts are never deleted (votes name them): disable one instead'); end""",
        """create trigger accounts_never_renamed before update of name on accounts when new.name != old.name
            begin select raise(abort, 'accounts are never renamed (votes name them): add a new one instead'); end""",
        """create trigger sessions_never_deleted before delete on sessions
            begin select raise(abort, 'sessions are never deleted: end one instead'); end""",
        """create trigger sessions_end_once before update on sessions
            when old.ended is not null or new.token_hash is not old.token_hash or new.account is not old.account
                 or new.address is not old.address or new.invite is not old.invite
                 or new.created is not old.created or new.id is not old.id
            begin select raise(abort, 'a session only ends, once: open a new one instead'); end""",
        """create trigger invites_never_deleted before delete on invites
            begin select raise(abort, 'invites are never deleted: disable one instead'); end""",
        """create trigger invites_only_disabled before update on invites
            when new.token_hash is not old.token_hash or new.account is not old.account
                 or new.study is not old.study or new.quota is not old.quota
                 or new.completion_code is not old.completion_code or new.created is not old.created
                 or new.id is not old.id
            begin select raise(abort, 'an invite only gets disabled: make a new one instead'); end""",
    ]
    statements += [
        f"""create trigger {table}_no_reuse before insert on {table}
            when new.id is not null and exists (select 1 from {table} where id = new.id)
                 or exists (select 1 from {table} where {key} = new.{key})
            begin select raise(abort, '{what}'); end"""
        for table, key, what in (
            ("accounts", "name", "an account of that name exists: accounts are never replaced, pick another name"),
            ("invites", "token_hash", "invites are never replaced: make a new one"),
            ("sessions", "token_hash", "sessions are never replaced: open a new one"),
        )
    ]
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements:
        db.execute(sql)


@migration
def m014_vote_notes(db: sqlite_utils.Database) -> None:
    """An annotator's notes with a vote: an optional ``comment`` (at most 1,000 characters) and an
    optional ``flag`` on one output (``data.arena.FLAGS``: A or B broken, empty or off-task).
    SQLite cannot add a check with ``alter table``, so ``data.arena.record_vote`` checks both.
    Votes stay append-only: the triggers of m002/m005 refuse update and delete of the new
    columns as of the old."""
    if not db.conn.in_transaction:
        db.execute("begin")
    for column in ("comment", "flag"):
        db.execute(f"alter table votes add column {column} text")


@migration
def m015_version_step_actions(db: sqlite_utils.Database) -> None:
    """Three more actions make a version (``VERSION_ACTIONS``, issue 23): a step's revision
    regenerated, a step searched again with the author's own query, a source excluded from a
    step. SQLite cannot change a check, so ``versions`` is built again as m011 built it, with the
    same rows (in order, as its numbering trigger wants them), index and triggers."""
    if not db.conn.in_transaction:
        db.execute("begin")
    for trigger in ("update", "delete", "reuse"):
        db.execute(f"drop trigger versions_append_only_{trigger}")
    db.execute("drop trigger versions_numbered")
    db.execute("drop index versions_run_n")
    db.execute("alter table versions rename to versions_m011")
    for sql in _versions_schema(VERSION_ACTIONS):
        db.execute(sql)
    columns = "id, run_id, n, text, undone, taken, action, restored_from, created"
    db.execute(f"insert into versions ({columns}) select {columns} from versions_m011 order by run_id, n")
    db.execute("drop table versions_m011")


@migration
def m016_gold_pairs(db: sqlite_utils.Database) -> None:
    """Gold (attention-check) pairs: two outputs of one task whose ``better`` side (``a``: the
    first, ``b``: the second) an admin set, with who and when. The arena shows them to annotators
    now and then (``annotation.voting.pairing``), and an annotator who misses too many is flagged.
    Append-only: a newer row for the same two outputs supersedes an older one."""
    refuse = "select raise(abort, 'gold pairs are append-only: add a new row instead'); end"
    statements = [
        """create table gold_pairs (
            id integer primary key,
            output_a integer not null references outputs(id),
            output_b integer not null references outputs(id),
            better text not null check (better in ('a', 'b')),
            added_by text not null check (length(trim(added_by)) > 0),
            created text not null,
            check (output_a != output_b)
        )""",
        "create index gold_pairs_outputs on gold_pairs(min(output_a, output_b), max(output_a, output_b), id)",
        f"create trigger gold_pairs_append_only_update before update on gold_pairs begin {refuse}",
        f"create trigger gold_pairs_append_only_delete before delete on gold_pairs begin {refuse}",
        f"""create trigger gold_pairs_append_only_reuse before insert on gold_pairs
            when new.id is not null and exists (select 1 from gold_pairs where id = new.id) begin {refuse}""",
    ]
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements:
        db.execute(sql)


@migration
def m017_campaigns(db: sqlite_utils.Database) -> None:
    """Annotation campaigns (issue 24): a named task set, methods, presentation style, overlap
    (each pair of outputs voted on by this many annotators), quota of votes per annotator and
    who may vote. Append-only: each row is the campaign's settings from its ``created`` on (a
    change, a close or a reopen adds a row; the newest row of a name is what holds now), so a
    paper can say what the campaign was when each vote was cast. A battle shown in a campaign
    names it (``battles.campaign``; battles stay append-only under m005's triggers)."""
    refuse = "select raise(abort, 'campaigns are append-only: add a new row to change one'); end"
    statements = [
        """create table campaigns (
            id integer primary key,
            name text not null check (length(trim(name)) > 0 and length(name) <= 64),
            task_set text,
            methods text not null default '[]' check (json_valid(methods) and json_type(methods) = 'array'),
            style text not null check (style in ('sources', 'plain')),
            overlap integer not null check (overlap between 1 and 50),
            quota integer check (quota is null or quota >= 1),
            voters text not null default '[]' check (json_valid(voters) and json_type(voters) = 'array'),
            status text not null check (status in ('open', 'closed')),
            changed_by text not null check (length(trim(changed_by)) > 0),
            created text not null
        )""",
        "create index campaigns_name on campaigns(name, id)",
        f"create trigger campaigns_append_only_update before update on campaigns begin {refuse}",
        f"create trigger campaigns_append_only_delete before delete on campaigns begin {refuse}",
        f"""create trigger campaigns_append_only_reuse before insert on campaigns
            when new.id is not null and exists (select 1 from campaigns where id = new.id) begin {refuse}""",
        "alter table battles add column campaign text",
        "create index battles_campaign on battles(campaign, output_a, output_b) where campaign is not null",
    ]
    if not db.conn.in_transaction:
        db.execute("begin")
    for sql in statements:
        db.execute(sql)



@migration
def m018_vote_address(db: sqlite_utils.Database) -> None:
    """The client address each people's vote came from (None: not known, e.g. imported), so the
    vote limits per address hold across the processes of one database (issue 26,
    ``data.arena.vote_times``). Never exported."""
    db.execute("alter table votes add column address text")
    db.execute("create index votes_address on votes (address, created) where address is not null")
    db.execute("create index votes_annotator_created on votes (annotator, created)")


@migration
def m019_login_failures(db: sqlite_utils.Database) -> None:
    """Failed login tries by key (an account name, a client address), with when they happened on
    the throttle's clock: every process on the database throttles the same tries (issue 26,
    ``data.accounts.failure_times``). Not people's work: rows are forgotten as the throttle
    forgets them."""
    db.execute("create table login_failures (id integer primary key, kind text not null, key text not null, "
               "at real not null)")
    db.execute("create index login_failures_key on login_failures (kind, key, at)")


@migration
def m020_version_attribution(db: sqlite_utils.Database) -> None:
    """A version's citations bound to their sources (issue 36): ``attribution`` holds, as JSON,
    each mark of the version's text with the page and passage it names, and the sources it lists
    (``core.article.attribution.Attribution``), so a stored version reads the same forever,
    whatever the run does later. None for a ``draft`` version and for versions made before it
    (their citations are derived from the run's events, as before). Still append-only: the
    triggers of m011/m015 refuse changing it as they refuse the rest."""
    db.execute("alter table versions add column attribution text")


@migration
def m021_invite_expiry(db: sqlite_utils.Database) -> None:
    """An invite link's end (issue 38): ``expires``, when it stops logging anyone in (an ISO time,
    as ``created``; None: it never does, as before)."""
    db.execute("alter table invites add column expires text")

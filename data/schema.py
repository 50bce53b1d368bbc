"""The schema, written once for both databases: each migration's tables, columns, checks, indexes
and triggers, in order, as the steps of ``data.dialect`` (which makes them on SQLite or on
PostgreSQL; ``data.migrations`` applies them). Each migration is a decorated function that
returns its steps, and says why in its docstring.

Never edit a migration that has shipped, nor a value it used: add a new migration (and a new
tuple of values)."""

from __future__ import annotations

from collections.abc import Callable

from data.dialect import (
    AddColumn,
    ChangeCheck,
    FullText,
    Function,
    Index,
    PerDialect,
    Refuse,
    Skip,
    Step,
    Table,
    literal,
)

ACCOUNT_ROLES = ("annotator", "admin")
#: The actions of a version as m011_versions allowed them, as m015 and m022 allowed them, and as m025 allows them.
M011_ACTIONS = ("edit", "undo", "take", "draft", "restore")
M015_ACTIONS = (*M011_ACTIONS, "regenerate", "search", "exclude")
M022_ACTIONS = (*M015_ACTIONS, "instruct")
VERSION_ACTIONS = (*M022_ACTIONS, "add")

#: The migrations in order: each one's name (``_migrations`` keeps those applied) and its steps.
SCHEMA: list[tuple[str, tuple[Step, ...]]] = []


def migration(declare: Callable[[], tuple[Step, ...]]) -> Callable[[], tuple[Step, ...]]:
    """Add the steps ``declare`` returns to SCHEMA, under its name."""
    SCHEMA.append((declare.__name__, declare()))
    return declare


def append_only(table: str, message: str, *, reuse: str | None = None) -> tuple[Refuse, ...]:
    """The triggers ``{table}_append_only_update`` and ``_delete`` (and ``_reuse``, refusing an
    insert where ``reuse`` holds), all refusing with ``message``."""
    triggers = tuple(Refuse(f"{table}_append_only_{action}", table, f"before {action}", message)
                     for action in ("update", "delete"))
    if reuse is None:
        return triggers
    return (*triggers, Refuse(f"{table}_append_only_reuse", table, "before insert", message, reuse))


def id_reused(table: str) -> str:
    """An insert's ``id`` is a stored row's (``insert or replace`` would delete that row)."""
    return f"new.id is not null and exists (select 1 from {table} where id = new.id)"


def one_of(values: tuple[str, ...]) -> str:
    """``values`` as the list of an ``in (...)``."""
    return ", ".join(literal(v) for v in values)


@migration
def m001_core() -> tuple[Step, ...]:
    return (
        Table("tasks", ("id integer primary key", "prompt text", "kind text", "task_set text", "meta text",
                        "created text")),
        Index("idx_tasks_prompt_kind_task_set", "tasks", "prompt, kind, task_set", unique=True),
        Table("runs", (
            "id text primary key", "task_id integer references tasks(id)", "method text", "settings text",
            "status text", "final_text text", "sources text", "error text", "prompt_tokens integer",
            "completion_tokens integer", "llm_calls integer", "tokens_by_role text", "llm_seconds real",
            "search_seconds real", "fetch_seconds real", "wall_seconds real", "steps_done integer",
            "steps_total integer", "created text", "updated text", "finished text")),
        Index("idx_runs_task_id_method", "runs", "task_id, method"),
        Index("idx_runs_created", "runs", "created"),
        Table("events", ("run_id text references runs(id)", "seq integer", "type text", "payload text", "ts text"),
              key="run_id, seq"),
        Table("pages", ("url text primary key", "final_url text", "title text", "text text", "content_type text",
                        "size integer", "metadata text", "fetched text")),
        Table("searches", ("provider text", "query text", "k integer", "results text", "searched text"),
              key="provider, query, k"),
    )


@migration
def m002_arena() -> tuple[Step, ...]:
    """Arena: outputs of any system (finished runs and imported texts), battles shown to people,
    their votes and the LLM judge's votes. Votes are append-only: triggers refuse update and delete.
    The arena's queries read time stamps with SQLite's ``julianday``."""
    return (
        Function("julianday"),
        Table("outputs", (
            "id integer primary key",
            "task_id integer not null references tasks(id)",
            "method text not null",
            "text text not null",
            "digest text not null",
            "source text not null check (source in ('import', 'run'))",
            "run_id text references runs(id)",
            "created text not null")),
        Index("outputs_run", "outputs", "run_id", unique=True, where="run_id is not null"),
        Index("outputs_import", "outputs", "task_id, method, digest", unique=True, where="source = 'import'"),
        Index("outputs_task", "outputs", "task_id, method"),
        Table("battles", (
            "id integer primary key",
            "task_id integer not null references tasks(id)",
            "output_a integer references outputs(id)",
            "output_b integer references outputs(id)",
            "method_a text not null",
            "method_b text not null",
            "annotator text not null",
            "source text not null default 'arena' check (source in ('arena', 'import'))",
            "created text not null")),
        Index("battles_annotator", "battles", "annotator"),
        Index("battles_methods", "battles", "method_a, method_b"),
        Table("votes", (
            "id integer primary key",
            "battle_id integer not null unique references battles(id)",
            "annotator text not null",
            "choice text not null check (choice in ('a', 'b', 'tie', 'both_bad'))",
            "created text not null")),
        *append_only("votes", "votes are append-only"),
        Table("judge_votes", (
            "id integer primary key",
            "task_id integer not null references tasks(id)",
            "method_a text not null",
            "method_b text not null",
            "output_a integer references outputs(id)",
            "output_b integer references outputs(id)",
            "choice text not null check (choice in ('a', 'b', 'tie'))",
            "n integer not null",
            "detail text not null",
            "model text not null",
            "created text not null")),
        Index("judge_votes_pair", "judge_votes", "output_a, output_b, model"),
        *append_only("judge_votes", "judge votes are append-only"),
    )


@migration
def m003_procedures() -> tuple[Step, ...]:
    """AAG's procedural memory (paper 002, section 3.1): procedures (input, output, steps), filled
    from finished runs, imported JSONL or by hand. ``steps`` is a JSON list of strings; ``digest``
    keeps the same procedure from being stored twice."""
    return (
        Table("procedures", (
            "id integer primary key",
            "input text not null",
            "output text not null",
            "steps text not null",
            "source text not null check (source in ('run', 'import', 'task', 'manual'))",
            "run_id text references runs(id)",
            "digest text not null unique",
            "created text not null")),
        Index("procedures_run", "procedures", "run_id", where="run_id is not null"),
    )


@migration
def m004_procedures_fts() -> tuple[Step, ...]:
    """Procedure memory searched with full text and BM25 (as the local corpus is): ``procedures_fts``
    holds each procedure's input, output and steps (one per line) under rowid = procedures.id,
    filled from the rows already stored and kept in step with the table by triggers."""
    return (FullText("procedures_fts", "procedures", ("input", "output"), lines="steps"),)


_ROW = "{table} are append-only: add a new row instead"


@migration
def m005_arena_append_only() -> tuple[Step, ...]:
    """What the leaderboard is computed from is append-only, whoever writes to the file: the
    outputs annotators judged and the battles that say which method was A and which B refuse
    update and delete, as votes and judge votes already do; and an insert that reuses a stored
    row's key (``insert or replace``, which would delete that row to make room; delete triggers
    do not fire for it on a connection without recursive triggers) is refused too. An output
    whose run is already in the arena is skipped, as ``insert or ignore`` skips it."""
    reused = {
        "votes": f"{id_reused('votes')} or exists (select 1 from votes where battle_id = new.battle_id)",
        "judge_votes": id_reused("judge_votes"),
        "battles": id_reused("battles"),
        "outputs": id_reused("outputs"),
    }
    return (
        *(trigger for table in ("outputs", "battles") for trigger in append_only(table, _ROW.format(table=table))),
        *(Refuse(f"{table}_append_only_reuse", table, "before insert", _ROW.format(table=table.replace("_", " ")),
                 when) for table, when in reused.items()),
        Skip("outputs_append_only_run", "outputs", "before insert",
             "new.run_id is not null and exists (select 1 from outputs where run_id = new.run_id)"),
    )


@migration
def m006_run_checks() -> tuple[Step, ...]:
    """How many of a run's steps were checked against retrieved text, and how many revisions
    the guards refused (core.text.guards), beside its other counters."""
    return tuple(AddColumn("runs", f"{column} integer not null default 0")
                 for column in ("steps_sourced", "steps_guarded"))


@migration
def m007_run_owner() -> tuple[Step, ...]:
    """Who drives a running run: ``owner`` ("host:pid:token", one token per runner) and
    ``heartbeat`` (an ISO time the owner refreshes every few seconds). A run whose owner is gone
    is found and marked interrupted; a second runner for a live run is refused."""
    return tuple(AddColumn("runs", f"{column} text not null default ''") for column in ("owner", "heartbeat"))


@migration
def m008_vote_corrections() -> tuple[Step, ...]:
    """Votes are never changed; a correction is a new row that supersedes one: the vote it
    corrects, the choice that now counts (one of the arena's choices, or ``void`` for a vote that
    should not count at all), who made it and why. The newest correction of a vote wins.
    Corrections are append-only too."""
    return (
        Table("vote_corrections", (
            "id integer primary key",
            "vote_id integer not null references votes(id)",
            "choice text not null check (choice in ('a', 'b', 'tie', 'both_bad', 'void'))",
            "corrected_by text not null check (length(trim(corrected_by)) > 0)",
            "why text not null check (length(trim(why)) > 0)",
            "created text not null")),
        Index("vote_corrections_vote", "vote_corrections", "vote_id, id"),
        *append_only("vote_corrections", "vote corrections are append-only: add a new correction instead",
                     reuse=id_reused("vote_corrections")),
    )


@migration
def m009_run_citations() -> tuple[Step, ...]:
    """A finished run's citations beside its other counters (``core.article.citations``): its article's
    sentences, how many of them a source supports, and the marks the model wrote that named no
    passage of their step and were removed. Runs stored before are 0 (not counted)."""
    return tuple(AddColumn("runs", f"{column} integer not null default 0")
                 for column in ("sentences", "sentences_cited", "marks_removed"))


@migration
def m010_votes_annotator() -> tuple[Step, ...]:
    """People's votes by annotator: the leaderboard re-reads only the voters who voted since it
    last looked (their median time and sides), not every vote."""
    return (Index("votes_annotator", "votes", "annotator, id"),)


def versions(actions: tuple[str, ...], added: tuple[str, ...] = ()) -> tuple[Step, ...]:
    """The ``versions`` table with ``actions`` allowed (and the columns later migrations
    ``added``, last), its index and its triggers."""
    steps = "check (json_valid({c}) and json_type({c}) = 'array')"
    next_n = "coalesce((select max(n) from versions where run_id = new.run_id), 0) + 1"
    return (
        Table("versions", (
            "id integer primary key",
            "run_id text not null references runs(id)",
            "n integer not null check (n >= 1)",
            "text text not null",
            f"undone text not null default '[]' {steps.format(c='undone')}",
            f"taken text not null default '[]' {steps.format(c='taken')}",
            f"action text not null check (action in ({one_of(actions)}))",
            "restored_from integer check (restored_from is null\n"
            "                             or (action = 'restore' and restored_from between 1 and n - 1))",
            "created text not null", *added)),
        Index("versions_run_n", "versions", "run_id, n", unique=True),
        *append_only("versions", "versions are append-only: add a new version instead", reuse=id_reused("versions")),
        Refuse("versions_numbered", "versions", "before insert",
               "versions are numbered 1, 2, 3... per run: add the run's next number",
               # a null n: SQLite's != lets it on to the NOT NULL, PostgreSQL's refuses it here
               PerDialect(sqlite=f"new.n != {next_n}", postgresql=f"new.n is distinct from {next_n}")),
    )


@migration
def m011_versions() -> tuple[Step, ...]:
    """The author's versions of a run's article (``data.versions``): each edit of the text, undo of
    step revisions, refused revision taken, edited draft continued, or old version restored is a
    new row, numbered 1, 2, 3... per run, with the steps undone and taken (JSON lists of step
    numbers) and the time. The model's own text stays in the run's Final event. Append-only in the
    schema itself, as votes are: update, delete and an insert that reuses a stored row's id or
    number (``insert or replace`` would delete that row) are refused, and a new version must be
    the run's next number."""
    return (Function("json_is"), *versions(M011_ACTIONS))


@migration
def m012_output_versions() -> tuple[Step, ...]:
    """A run's text in the arena is the author's latest version of its article (``--arena-text``):
    a run may have one output per version (``version``: the version's number, null for the
    model's own text), each still a snapshot that nothing updates or deletes. The unique index
    and the trigger that kept one output per run now keep one per run and version; the arena
    pairs a run's newest output only (``data.arena.arena_outputs``)."""
    return (
        AddColumn("outputs", "version integer check (version is null or version >= 1)"),
        "drop index outputs_run",
        Index("outputs_run", "outputs", "run_id, coalesce(version, 0)", unique=True, where="run_id is not null"),
        Skip("outputs_append_only_run", "outputs", "before insert",
             "new.run_id is not null and exists (select 1 from outputs where run_id = new.run_id\n"
             "                                         and coalesce(version, 0) = coalesce(new.version, 0))",
             replaces=True),
    )


#: An account's or an invite's quota of votes, completion code and crowd study.
_QUOTA = "quota integer check (quota is null or (typeof(quota) = 'integer' and quota >= 1))"
_CODE = "completion_code text check (completion_code is null or length(completion_code) between 1 and 64)"
_STUDY = "study text check (study is null or length(study) between 1 and 64)"


@migration
def m013_accounts() -> tuple[Step, ...]:
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

    def changed(columns: str) -> str:
        return " or ".join(f"new.{c} is not old.{c}" for c in columns.split())

    return (
        Table("accounts", (
            "id integer primary key",
            "name text not null unique check (length(name) between 1 and 200 and name = trim(name))",
            f"role text not null default 'annotator' check (role in ({one_of(ACCOUNT_ROLES)}))",
            "password_hash text check (password_hash is null or password_hash like '$argon2%')",
            "disabled integer not null default 0 check (disabled in (0, 1))",
            _QUOTA,
            _CODE,
            _STUDY,
            "participant text check (participant is null\n"
            "                        or (json_valid(participant) and json_type(participant) = 'object'))",
            "created text not null")),
        Table("invites", (
            "id integer primary key",
            "token_hash text not null unique check (length(token_hash) = 64)",
            "account text references accounts(name)",
            _STUDY,
            _QUOTA,
            _CODE,
            "created text not null",
            "disabled integer not null default 0 check (disabled in (0, 1))"),
            checks=("(account is null) != (study is null)",
                    "study is null or (quota is not null and completion_code is not null)")),
        Index("invites_account", "invites", "account", where="account is not null"),
        Table("sessions", (
            "id integer primary key",
            "token_hash text not null unique check (length(token_hash) = 64)",
            "account text not null references accounts(name)",
            "address text",
            "invite integer references invites(id)",
            "created text not null",
            "ended text")),
        Index("sessions_open", "sessions", "account", where="ended is null"),
        Refuse("accounts_never_deleted", "accounts", "before delete",
               "accounts are never deleted (votes name them): disable one instead"),
        Refuse("accounts_never_renamed", "accounts", "before update of name",
               "accounts are never renamed (votes name them): add a new one instead", "new.name != old.name"),
        Refuse("sessions_never_deleted", "sessions", "before delete", "sessions are never deleted: end one instead"),
        Refuse("sessions_end_once", "sessions", "before update", "a session only ends, once: open a new one instead",
               "old.ended is not null or " + changed("token_hash account address invite created id")),
        Refuse("invites_never_deleted", "invites", "before delete", "invites are never deleted: disable one instead"),
        Refuse("invites_only_disabled", "invites", "before update",
               "an invite only gets disabled: make a new one instead",
               changed("token_hash account study quota completion_code created id")),
        *(Refuse(f"{table}_no_reuse", table, "before insert", message,
                 f"{id_reused(table)} or exists (select 1 from {table} where {key} = new.{key})")
          for table, key, message in (
              ("accounts", "name", "an account of that name exists: accounts are never replaced, pick another name"),
              ("invites", "token_hash", "invites are never replaced: make a new one"),
              ("sessions", "token_hash", "sessions are never replaced: open a new one"))),
    )


@migration
def m014_vote_notes() -> tuple[Step, ...]:
    """An annotator's notes with a vote: an optional ``comment`` (at most 1,000 characters) and an
    optional ``flag`` on one output (``data.arena.FLAGS``: A or B broken, empty or off-task).
    SQLite cannot add a check with ``alter table``, so ``data.arena.record_vote`` checks both.
    Votes stay append-only: the triggers of m002/m005 refuse update and delete of the new
    columns as of the old."""
    return tuple(AddColumn("votes", f"{column} text") for column in ("comment", "flag"))


@migration
def m015_version_step_actions() -> tuple[Step, ...]:
    """Three more actions make a version (``M015_ACTIONS``, issue 23): a step's revision
    regenerated, a step searched again with the author's own query, a source excluded from a
    step. SQLite cannot change a check, so there ``versions`` is built again as m011 built it,
    with the same rows (in order, as its numbering trigger wants them), index and triggers."""
    table, *made_on_it = versions(M015_ACTIONS)
    return (ChangeCheck(table, "action", tuple(made_on_it), order="run_id, n"),)


@migration
def m016_gold_pairs() -> tuple[Step, ...]:
    """Gold (attention-check) pairs: two outputs of one task whose ``better`` side (``a``: the
    first, ``b``: the second) an admin set, with who and when. The arena shows them to annotators
    now and then (``annotation.voting.pairing``), and an annotator who misses too many is flagged.
    Append-only: a newer row for the same two outputs supersedes an older one. ``data.arena``
    matches a pair's outputs with ``min`` and ``max`` of two ids."""
    return (
        Function("min"),
        Function("max"),
        Table("gold_pairs", (
            "id integer primary key",
            "output_a integer not null references outputs(id)",
            "output_b integer not null references outputs(id)",
            "better text not null check (better in ('a', 'b'))",
            "added_by text not null check (length(trim(added_by)) > 0)",
            "created text not null"),
            checks=("output_a != output_b",)),
        Index("gold_pairs_outputs", "gold_pairs", "min(output_a, output_b), max(output_a, output_b), id"),
        *append_only("gold_pairs", "gold pairs are append-only: add a new row instead",
                     reuse=id_reused("gold_pairs")),
    )


@migration
def m017_campaigns() -> tuple[Step, ...]:
    """Annotation campaigns (issue 24): a named task set, methods, presentation style, overlap
    (each pair of outputs voted on by this many annotators), quota of votes per annotator and
    who may vote. Append-only: each row is the campaign's settings from its ``created`` on (a
    change, a close or a reopen adds a row; the newest row of a name is what holds now), so a
    paper can say what the campaign was when each vote was cast. A battle shown in a campaign
    names it (``battles.campaign``; battles stay append-only under m005's triggers)."""
    return (
        Table("campaigns", (
            "id integer primary key",
            "name text not null check (length(trim(name)) > 0 and length(name) <= 64)",
            "task_set text",
            "methods text not null default '[]' check (json_valid(methods) and json_type(methods) = 'array')",
            "style text not null check (style in ('sources', 'plain'))",
            "overlap integer not null check (overlap between 1 and 50)",
            "quota integer check (quota is null or quota >= 1)",
            "voters text not null default '[]' check (json_valid(voters) and json_type(voters) = 'array')",
            "status text not null check (status in ('open', 'closed'))",
            "changed_by text not null check (length(trim(changed_by)) > 0)",
            "created text not null")),
        Index("campaigns_name", "campaigns", "name, id"),
        *append_only("campaigns", "campaigns are append-only: add a new row to change one",
                     reuse=id_reused("campaigns")),
        AddColumn("battles", "campaign text"),
        Index("battles_campaign", "battles", "campaign, output_a, output_b", where="campaign is not null"),
    )


@migration
def m018_vote_address() -> tuple[Step, ...]:
    """The client address each people's vote came from (None: not known, e.g. imported), so the
    vote limits per address hold across the processes of one database (issue 26,
    ``data.arena.vote_times``). Never exported."""
    return (
        AddColumn("votes", "address text"),
        Index("votes_address", "votes", "address, created", where="address is not null"),
        Index("votes_annotator_created", "votes", "annotator, created"),
    )


@migration
def m019_login_failures() -> tuple[Step, ...]:
    """Failed login tries by key (an account name, a client address), with when they happened on
    the throttle's clock: every process on the database throttles the same tries (issue 26,
    ``data.accounts.failure_times``). Not people's work: rows are forgotten as the throttle
    forgets them."""
    return (
        Table("login_failures", ("id integer primary key", "kind text not null", "key text not null",
                                 "at real not null")),
        Index("login_failures_key", "login_failures", "kind, key, at"),
    )


@migration
def m020_version_attribution() -> tuple[Step, ...]:
    """A version's citations bound to their sources (issue 36): ``attribution`` holds, as JSON,
    each mark of the version's text with the page and passage it names, and the sources it lists
    (``core.article.attribution.Attribution``), so a stored version reads the same forever,
    whatever the run does later. None for a ``draft`` version and for versions made before it
    (their citations are derived from the run's events, as before). Still append-only: the
    triggers of m011/m015 refuse changing it as they refuse the rest."""
    return (AddColumn("versions", "attribution text"),)


@migration
def m021_invite_expiry() -> tuple[Step, ...]:
    """An invite link's end (issue 38): ``expires``, when it stops logging anyone in (an ISO time,
    as ``created``; None: it never does, as before)."""
    return (AddColumn("invites", "expires text"),)


@migration
def m022_version_instruction() -> tuple[Step, ...]:
    """One more action makes a version (``VERSION_ACTIONS``, issue 39): a step revised at the
    author's instruction ("instruct"), which the version keeps in ``instruction`` (None for every
    other action and for versions made before it). SQLite cannot change a check, so there
    ``versions`` is built again as m015 built it, with m020's ``attribution`` and the same rows;
    the new column is added after."""
    table, *made_on_it = versions(M022_ACTIONS, ("attribution text",))
    return (ChangeCheck(table, "action", tuple(made_on_it), order="run_id, n"),
            AddColumn("versions", "instruction text"))


@migration
def m023_share_links() -> tuple[Step, ...]:
    """Share links (issue 39, item 4; ``data.shares``): a secret, revocable, read-only link to one
    run's article and its replay. A link is stored by its token's sha256 hash (never the token),
    with the run, the version it shows (``version``: N, or None for the model's own text; fixed
    when the link is made), who made it (``shared_by``; "" from the command line or when nobody
    logs in), when, and when it was ``revoked`` (None while it opens). A link is never deleted and
    only gets revoked, once; an insert that reuses a stored row's id or hash is refused."""
    kept = " or ".join(f"new.{c} is not old.{c}" for c in ("id", "token_hash", "run_id", "version", "shared_by",
                                                             "created"))
    return (
        Table("share_links", (
            "id integer primary key",
            "token_hash text not null unique check (length(token_hash) = 64)",
            "run_id text not null references runs(id)",
            "version integer check (version is null or version >= 1)",
            "shared_by text not null default ''",
            "created text not null",
            "revoked text")),
        Index("share_links_run", "share_links", "run_id, id"),
        Refuse("share_links_never_deleted", "share_links", "before delete",
               "share links are never deleted: revoke one instead"),
        Refuse("share_links_revoked_once", "share_links", "before update",
               "a share link only gets revoked, once: make a new one instead",
               f"old.revoked is not null or new.revoked is null or {kept}"),
        Refuse("share_links_no_reuse", "share_links", "before insert", "share links are never replaced: make a new one",
               f"{id_reused('share_links')} or exists (select 1 from share_links where token_hash = new.token_hash)"),
    )


#: What an annotator may answer on one criterion of a campaign (m024): A, B or a tie.
CRITERION_CHOICES = ("a", "b", "tie")
#: What an annotator may mark a sentence of either side as, with their vote (m024).
SENTENCE_FLAGS = ("unsupported", "wrong")


@migration
def m024_vote_criteria() -> tuple[Step, ...]:
    """Votes by criterion (issue 40, item 4): a campaign may name criteria (``campaigns.criteria``,
    a JSON list of names; empty: the overall vote only), and each vote cast in it then carries one
    A/B/tie choice per criterion (``vote_criteria``: the vote, the criterion's name, the choice,
    when), written with the vote in one transaction. Append-only, as votes are: update, delete and
    an insert that reuses a stored row's id are refused, and a vote has one choice per criterion.
    A criterion choice counts while its vote counts: an undo (a ``void`` correction of the vote)
    takes them back with it.

    Sentence flags (issue 40, item 5): with a vote, an annotator may mark sentences of either side
    as unsupported or wrong (``sentence_flags``: the vote, the side, the sentence as they marked
    it, at most 1,000 characters; the kind, when); written with the vote, append-only as it is.
    ``data.arena.record_vote`` keeps one row per side, sentence and kind of a vote."""
    return (
        AddColumn("campaigns", "criteria text not null default '[]' "
                               "check (json_valid(criteria) and json_type(criteria) = 'array')"),
        Table("vote_criteria", (
            "id integer primary key",
            "vote_id integer not null references votes(id)",
            "criterion text not null check (length(trim(criterion)) > 0 and length(criterion) <= 64)",
            f"choice text not null check (choice in ({one_of(CRITERION_CHOICES)}))",
            "created text not null")),
        Index("vote_criteria_vote", "vote_criteria", "vote_id, criterion", unique=True),
        Index("vote_criteria_criterion", "vote_criteria", "criterion, vote_id"),
        *append_only("vote_criteria", "vote criteria are append-only: they follow their vote",
                     reuse=id_reused("vote_criteria")),
        Table("sentence_flags", (
            "id integer primary key",
            "vote_id integer not null references votes(id)",
            "side text not null check (side in ('a', 'b'))",
            "sentence text not null check (length(trim(sentence)) > 0 and length(sentence) <= 1000)",
            f"kind text not null check (kind in ({one_of(SENTENCE_FLAGS)}))",
            "created text not null")),
        Index("sentence_flags_vote", "sentence_flags", "vote_id"),
        *append_only("sentence_flags", "sentence flags are append-only: they follow their vote",
                     reuse=id_reused("sentence_flags")),
    )


@migration
def m025_version_add() -> tuple[Step, ...]:
    """One more action makes a version (``VERSION_ACTIONS``, issue 39): a section the author added
    ("add"), whose ``instruction`` is the line it was written from. SQLite cannot change a check,
    so ``versions`` is built again as m022 left it, with the same rows."""
    table, *made_on_it = versions(VERSION_ACTIONS, ("attribution text", "instruction text"))
    return (ChangeCheck(table, "action", tuple(made_on_it), order="run_id, n"),)



@migration
def m026_version_numbering() -> tuple[Step, ...]:
    """The numbering a version's ``undone`` and ``taken`` steps are written in (issue 39): a section
    the author adds moves the steps after it one down, so a version keeps ``steps_added``, how many
    sections the run had been given when it was made; ``data.versions`` reads its steps in the run's
    numbering now. None for versions made before it (their numbering is told from the times of
    the run's added sections)."""
    return (AddColumn("versions", "steps_added integer"),)

"""Settings in force. Built once, in app.py, from CLI flags and the environment; everything else
receives them. Defaults are the papers' own where a paper gives one.

``SETTINGS`` is the one table of what can be set: a ``Setting`` row per flag (and environment
variable) with its type, default (read from the dataclasses below, never retyped), help and check.
``ui.cli.common_flags`` makes the argparse flags from it, ``app.settings_from`` reads the values
through it, and tests/test_settings_table.py holds README.md's "Settings" table to it."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from common.errors import ConfigError

ROLES = ("draft", "query", "revise", "judge")
DEFAULT_CONTEXT_TOKENS = 8192  # when neither --context-tokens nor the server says
SEARCH_PROVIDERS = ("ddg", "searxng", "corpus")
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})  # an environment variable that turns a switch on
MIN_PASSWORD = 8  # characters of an --auth password
MIN_CONTEXT_TOKENS = 1024  # the smallest --context-tokens that leaves room for a prompt and its answer


@dataclass(frozen=True)
class LLMSettings:
    base_url: str | None = None  # None: the openai SDK's default (api.openai.com)
    api_key: str | None = None
    model: str = "gpt-4o-mini"
    role_models: dict[str, str] = field(default_factory=dict)  # role -> model
    timeout: float = 120.0  # seconds for one call
    max_retries: int = 4  # on 429, 5xx, timeouts and connection errors
    backoff: float = 1.0  # first wait in seconds; doubles each retry
    temperature: float | None = None  # None: the server's default
    max_tokens: int | None = None  # most tokens of one answer (a method's own cap may be lower); None: the server's
    # most tokens (prompts and answers) one run may spend on model calls (core.budget); None: no cap
    budget_tokens: int | None = None

    def model_for(self, role: str) -> str:
        return self.role_models.get(role) or self.model


@dataclass(frozen=True)
class SearchSettings:
    providers: tuple[str, ...] = ("ddg",)  # tried in order
    searxng_url: str | None = None
    corpus_dir: Path | None = None
    ddg_backends: str = "duckduckgo"  # ddgs backend names, comma separated
    retries: int = 2  # per provider, on rate limit or unavailability
    backoff: float = 1.0
    timeout: float = 15.0


@dataclass(frozen=True)
class FetchSettings:
    allow_private_urls: bool = False
    timeout: float = 10.0  # one page
    step_deadline: float = 25.0  # all pages of one step
    max_bytes: int = 3_000_000
    max_redirects: int = 5
    concurrency: int = 8
    user_agent: str = "RAT-Studio/0.1 (+https://github.com/; research writing assistant)"


@dataclass(frozen=True)
class MethodSettings:
    k: int = 5  # search results fetched per retrieval (RAT: at most 5 retrievals per step)
    passage_tokens: int = 1500  # budget of retrieved text in one revision prompt
    passage_size: int = 180  # target tokens of one passage
    max_steps: int = 30  # a longer draft is cut (and the cut is shown)
    max_task_chars: int = 20_000
    # the model's context window in tokens; None: what the server reports, else DEFAULT_CONTEXT_TOKENS
    context_tokens: int | None = None
    # a revision that keeps less than this share of the characters it replaces is refused and the
    # text kept as it stood (core.text.guards); 0 turns the length check off
    min_keep: float = 0.4
    # a sentence is cited for a passage holding at least this share of its content words
    # (core.article.citations); 1 cites only sentences copied word for word
    cite_threshold: float = 0.6
    # method parameters by key, e.g. {"itrg.iterations": 3, "furepa.theta": 0.6}; an absent key
    # keeps the method's default (the paper's value). See each method module's docstring.
    params: dict[str, str] = field(default_factory=dict, hash=False)
    # the language the model writes in: "auto" (the task's, detected: core.text.language) or a
    # language code (zh, ja, fr, en, pt-BR)
    language: str = "auto"


@dataclass(frozen=True)
class Settings:
    llm: LLMSettings = field(default_factory=LLMSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    fetch: FetchSettings = field(default_factory=FetchSettings)
    method: MethodSettings = field(default_factory=MethodSettings)
    db_path: Path | str = Path("rat_studio.db")  # a str only for a postgresql:// URL
    host: str = "127.0.0.1"
    port: int = 7860
    share: bool = False
    auth: tuple[str, str] | None = None
    concurrency: int = 4  # Gradio queue: runs at once
    # Annotators' deployment: only the Arena and Leaderboard tabs, so nothing in the app (the
    # Writer, History) can show which method wrote an output being judged.
    arena_only: bool = False
    # Which text of a finished run the arena shows: the author's latest version ("latest") or the
    # method's own ("model"); data.arena.ARENA_TEXTS.
    arena_text: str = "latest"
    # How both sides of an arena pair are shown: "sources" (each output's citations and sources in
    # one house style) or "plain" (citation marks, source lists and method-peculiar format taken
    # away); annotation.present.STYLES.
    arena_style: str = "sources"
    # Votes a minute from one annotator, and from one client address (0: no limit by address; a lab
    # behind one NAT shares one address).
    votes_per_minute: int = 10
    votes_per_address: int = 60
    # Votes a day from one annotator (0: no cap).
    votes_per_day: int = 0
    # New participants' accounts a study link makes for one client address in an hour (0: no cap):
    # a made-up participant id in the link's address bar is a new account with its quota and code.
    study_accounts_per_address: int = 3
    # The addresses of reverse proxies whose X-Forwarded-For header names the client (none: the
    # header is ignored, so nobody can pick the address the per-address vote limit counts).
    trusted_proxies: tuple[str, ...] = ()
    # The host names the server answers to besides its own address and localhost (a page of another
    # site that rebinds its name to this machine gets nothing): "rat.example.org", ".example.org"
    # for its subdomains, "*" for any.
    allowed_hosts: tuple[str, ...] = ()
    # Model prices, for a run's cost: model -> (input, output) in dollars per million tokens, from
    # --prices FILE (core.budget.read_prices); empty: no cost is said.
    prices: dict[str, tuple[float, float]] = field(default_factory=dict, hash=False)

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)

    def public_dict(self) -> dict:
        """The settings as shown to a user: the API key is never included."""
        return {
            "model": self.llm.model,
            "role_models": dict(self.llm.role_models),
            "base_url": self.llm.base_url or "(openai default)",
            "api_key": "set" if self.llm.api_key else "not set",
            "search": ",".join(self.search.providers),
            "searxng_url": self.search.searxng_url,
            "corpus": str(self.search.corpus_dir) if self.search.corpus_dir else None,
            "db": str(self.db_path),
            "allow_private_urls": self.fetch.allow_private_urls,
            "host": self.host,
            "port": self.port,
            "k": self.method.k,
            "passage_tokens": self.method.passage_tokens,
        }


# -- the table of settings ----------------------------------------------------------------------
MODEL_GROUP = "model (any OpenAI-compatible server)"
SEARCH_GROUP = "search and pages"
SERVER_GROUP = "storage and server"


@dataclass(frozen=True)
class Setting:
    """One row of ``SETTINGS``: a flag and its environment variable.

    ``type``: what one value is: str, int or float (an environment value is cast with it; a bad one
    is a ConfigError), bool (a switch: ``--flag``, or the variable set to one of ``TRUE_WORDS``),
    or list (a repeatable flag, argparse's ``action="append"``; the variable holds a comma list).
    ``default``: the value when neither the flag nor the variable gives one, taken from the
    dataclasses above; None where the default is decided later (the server's, the user data folder).
    ``check``: raises ConfigError for a bad value; applied to every value that is not None.
    ``readme_default``: how README.md and --help say the default where the value alone does not
    (e.g. "the server's" for None); without it ``shown_default`` renders the value: None "none", a
    switch "off"/"on", a float without trailing zeros (120.0 -> "120"), anything else as str.
    ``flag`` is None for a setting of the environment only (OPENAI_API_KEY)."""

    flag: str | None
    env: str
    type: type
    default: object
    help: str
    check: Callable[[object], None] | None = None
    group: str = MODEL_GROUP
    readme_default: str | None = None
    metavar: str | None = None

    @property
    def name(self) -> str:
        """The attribute argparse stores the flag in (``--max-tokens`` -> ``max_tokens``)."""
        return (self.flag[2:] if self.flag else self.env.lower()).replace("-", "_")

    @property
    def shown_default(self) -> str:
        """The default as README.md's table and --help say it."""
        if self.readme_default is not None:
            return self.readme_default
        if self.default is None:
            return "none"
        if isinstance(self.default, bool):
            return "on" if self.default else "off"
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)

    @property
    def help_text(self) -> str:
        """The flag's --help line: its help, then "[ENV; default]"."""
        return f"{self.help} [{self.env}; {self.shown_default}]"


def search_providers(value: str) -> tuple[str, ...]:
    """``--search``'s comma list as a tuple of names."""
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _check_search(value) -> None:
    providers = search_providers(value)
    unknown = [p for p in providers if p not in SEARCH_PROVIDERS]
    if unknown or not providers:
        raise ConfigError(f"Unknown search provider {', '.join(unknown) or '(none)'}: use a comma list of "
                          f"{', '.join(SEARCH_PROVIDERS)}, e.g. --search ddg,searxng.")


def _check_max_tokens(value) -> None:
    if value < 1:
        raise ConfigError(f"--max-tokens must be at least 1 (e.g. 1024), not {value}; leave it out for the "
                          "server's own limit.")


def _check_budget(value) -> None:
    if value < 1:
        raise ConfigError(f"--budget-tokens must be a positive whole number of tokens (e.g. 20000), not {value}; "
                          "leave it out for no cap.")


def _check_context_tokens(value) -> None:
    if value < MIN_CONTEXT_TOKENS:
        raise ConfigError(f"--context-tokens {value} is too small for any of the prompts: give the "
                          f"model's context window, at least {MIN_CONTEXT_TOKENS} (e.g. 8192).")


def _share(flag: str) -> Callable[[object], None]:
    def check(value) -> None:
        if not 0 <= value <= 1:
            raise ConfigError(f"{flag} must be a share between 0 and 1 (e.g. 0.4 for 40%), not {value}.")

    return check


_LANGUAGE_CODE = re.compile(r"auto|[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*")


def _check_language(value) -> None:
    if not _LANGUAGE_CODE.fullmatch(value):
        raise ConfigError(f"--language {value!r} is not a language code: give auto (the task's language) or a "
                          "code such as zh, ja, fr or en.")


def _check_auth(value) -> None:
    user, sep, password = value.partition(":")
    if not sep or not user.strip() or len(password) < MIN_PASSWORD:
        raise ConfigError(f"--auth must be USER:PASSWORD with a user name and a password of at least "
                          f"{MIN_PASSWORD} characters, e.g. --auth ana:correct-horse.")
    if user != user.strip() or password != password.strip():  # "ann : pw" would log nobody in
        raise ConfigError(f"--auth {value!r} has spaces around the user name or the password, which nobody "
                          f"would type at the login: write USER:PASSWORD without them, e.g. --auth ana:correct-horse.")


_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _check_db(value) -> None:
    scheme = value.split("://")[0].lower() if _URL.match(value) else ""
    if scheme and scheme not in ("postgresql", "postgres"):
        raise ConfigError(f"--db {scheme}://... is a URL of a database server this version cannot use: give a "
                          "SQLite file path (e.g. --db rat_studio.db) or a PostgreSQL URL "
                          "(e.g. --db postgresql://rat@127.0.0.1:5432/rat).")


def _check_proxies(value) -> None:
    for address in (a.strip() for a in value.split(",")):
        try:
            ipaddress.ip_network(address, strict=False)
        except ValueError:
            raise ConfigError(f"--trusted-proxies takes the addresses of your reverse proxies, comma separated "
                              f"(e.g. --trusted-proxies 127.0.0.1,10.0.0.0/8), not {address!r}.") from None


_HOST_NAME = re.compile(r"\*|\.?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}"
                        r"[A-Za-z0-9])?)*\.?")


def _check_hosts(value) -> None:
    for name in (n.strip() for n in value.split(",")):
        if not _HOST_NAME.fullmatch(name):
            raise ConfigError(f"--allowed-hosts takes host names, comma separated (e.g. --allowed-hosts "
                              f"rat.example.org,.example.org), not {name!r}.")


def _check_arena_text(value) -> None:
    if value not in ("latest", "model"):
        raise ConfigError(f"--arena-text must be latest (the author's latest version of a run's article) or "
                          f"model (the method's own text), not {value!r}.")


def _check_arena_style(value) -> None:
    if value not in ("sources", "plain"):
        raise ConfigError(f"--arena-style must be sources (each output's citations and sources in one house style) "
                          f"or plain (citation marks and source lists taken away), not {value!r}.")


def _at_least(flag: str, least: int) -> Callable[[object], None]:
    def check(value) -> None:
        if value < least:
            raise ConfigError(f"{flag} must be at least {least}, not {value}.")

    return check


SETTINGS: tuple[Setting, ...] = (
    # model
    Setting("--base-url", "OPENAI_BASE_URL", str, LLMSettings.base_url,
            "server URL, e.g. http://localhost:11434/v1 for Ollama", readme_default="OpenAI's"),
    Setting(None, "OPENAI_API_KEY", str, LLMSettings.api_key, "the key; not needed for local servers"),
    Setting("--model", "RAT_STUDIO_MODEL", str, LLMSettings.model, "model for every role"),
    *(Setting(f"--{role}-model", f"RAT_STUDIO_{role.upper()}_MODEL", str, None, f"model for the {role} role",
              readme_default="--model") for role in ROLES),
    Setting("--llm-timeout", "RAT_STUDIO_LLM_TIMEOUT", float, LLMSettings.timeout, "seconds for one model call"),
    Setting("--max-retries", "RAT_STUDIO_MAX_RETRIES", int, LLMSettings.max_retries, "retries on 429/5xx/timeouts"),
    Setting("--max-tokens", "RAT_STUDIO_MAX_TOKENS", int, LLMSettings.max_tokens,
            "most tokens of one model answer, for models that ramble", _check_max_tokens,
            readme_default="the server's"),
    Setting("--budget-tokens", "RAT_STUDIO_BUDGET_TOKENS", int, LLMSettings.budget_tokens,
            "most tokens (prompts and answers) one run may spend: it stops before the call that would pass it, "
            "and resume with a larger --budget-tokens goes on", _check_budget, readme_default="none (no cap)",
            metavar="N"),
    Setting("--prices", "RAT_STUDIO_PRICES", str, None,
            "a JSON file of model prices in dollars per million tokens, "
            '{"MODEL": {"input": 0.15, "output": 0.6}}: runs say their cost', group=MODEL_GROUP,
            readme_default="none", metavar="FILE"),
    # search and pages
    Setting("--search", "RAT_STUDIO_SEARCH", str, ",".join(SearchSettings.providers),
            f"providers tried in order, comma separated: {', '.join(SEARCH_PROVIDERS)}", _check_search,
            group=SEARCH_GROUP),
    Setting("--searxng-url", "RAT_STUDIO_SEARXNG_URL", str, SearchSettings.searxng_url, "SearXNG base URL",
            group=SEARCH_GROUP),
    Setting("--corpus", "RAT_STUDIO_CORPUS", str, SearchSettings.corpus_dir,
            "folder of .md/.txt/.html files to search", group=SEARCH_GROUP),
    Setting("--allow-private-urls", "RAT_STUDIO_ALLOW_PRIVATE_URLS", bool, FetchSettings.allow_private_urls,
            "let the fetcher read private/loopback hosts", group=SEARCH_GROUP),
    Setting("--k", "RAT_STUDIO_K", int, MethodSettings.k, "search results read per retrieval", group=SEARCH_GROUP),
    Setting("--passage-tokens", "RAT_STUDIO_PASSAGE_TOKENS", int, MethodSettings.passage_tokens,
            "retrieved tokens per revision", group=SEARCH_GROUP),
    Setting("--max-steps", "RAT_STUDIO_MAX_STEPS", int, MethodSettings.max_steps, "most draft steps revised",
            group=SEARCH_GROUP),
    Setting("--context-tokens", "RAT_STUDIO_CONTEXT_TOKENS", int, MethodSettings.context_tokens,
            "the model's context window in tokens; prompts are fitted to it (passages shrink first)",
            _check_context_tokens, group=SEARCH_GROUP,
            readme_default=f"what the server reports, else {DEFAULT_CONTEXT_TOKENS}"),
    Setting("--min-keep", "RAT_STUDIO_MIN_KEEP", float, MethodSettings.min_keep,
            "share of a text's characters a revision must keep, else the text stays as it was",
            _share("--min-keep"), group=SEARCH_GROUP),
    Setting("--cite-threshold", "RAT_STUDIO_CITE_THRESHOLD", float, MethodSettings.cite_threshold,
            "share of a sentence's content words a retrieved passage must hold for the sentence to cite it",
            _share("--cite-threshold"), group=SEARCH_GROUP),
    Setting("--language", "RAT_STUDIO_LANGUAGE", str, MethodSettings.language,
            "the language the model writes in: auto (the task's) or a code such as zh, ja, fr, en",
            _check_language, group=SEARCH_GROUP, metavar="CODE"),
    Setting("--max-task-chars", "RAT_STUDIO_MAX_TASK_CHARS", int, MethodSettings.max_task_chars,
            "longest task accepted", group=SEARCH_GROUP),
    Setting("--param", "RAT_STUDIO_PARAMS", list, None,
            "a method parameter, repeatable, e.g. --param itrg.iterations=3 (the variable: a comma list)",
            group=SEARCH_GROUP, readme_default="the papers'", metavar="KEY=VALUE"),
    # storage and server
    Setting("--db", "RAT_STUDIO_DB", str, None, "SQLite file, or a postgresql:// URL", _check_db, group=SERVER_GROUP,
            readme_default="the user data folder (~/.local/share/rat-studio/rat_studio.db on Linux)"),
    Setting("--host", "RAT_STUDIO_HOST", str, Settings.host, "address the UI listens on", group=SERVER_GROUP),
    Setting("--port", "RAT_STUDIO_PORT", int, Settings.port, "UI port", group=SERVER_GROUP),
    Setting("--concurrency", "RAT_STUDIO_CONCURRENCY", int, Settings.concurrency, "runs at once in the UI queue",
            group=SERVER_GROUP),
    Setting("--share", "RAT_STUDIO_SHARE", bool, Settings.share, "public Gradio link; needs --auth",
            group=SERVER_GROUP),
    Setting("--auth", "RAT_STUDIO_AUTH", str, Settings.auth, "USER:PASSWORD required to open the UI", _check_auth,
            group=SERVER_GROUP),
    Setting("--arena-only", "RAT_STUDIO_ARENA_ONLY", bool, Settings.arena_only,
            "serve only the Arena and Leaderboard tabs, for annotators", group=SERVER_GROUP),
    Setting("--arena-text", "RAT_STUDIO_ARENA_TEXT", str, Settings.arena_text,
            "which text of a run annotators and the judge see: latest (the author's latest version) or model",
            _check_arena_text, group=SERVER_GROUP),
    Setting("--arena-style", "RAT_STUDIO_ARENA_STYLE", str, Settings.arena_style,
            "how both sides of a pair are shown: sources (citations and sources in one house style) or plain",
            _check_arena_style, group=SERVER_GROUP),
    Setting("--votes-per-minute", "RAT_STUDIO_VOTES_PER_MINUTE", int, Settings.votes_per_minute,
            "votes a minute from one annotator", _at_least("--votes-per-minute", 1), group=SERVER_GROUP),
    Setting("--votes-per-address", "RAT_STUDIO_VOTES_PER_ADDRESS", int, Settings.votes_per_address,
            "votes a minute from one client address; 0: no limit by address (a lab behind one NAT)",
            _at_least("--votes-per-address", 0), group=SERVER_GROUP),
    Setting("--votes-per-day", "RAT_STUDIO_VOTES_PER_DAY", int, Settings.votes_per_day,
            "votes a day from one annotator; 0: no cap", _at_least("--votes-per-day", 0), group=SERVER_GROUP),
    Setting("--study-accounts-per-address", "RAT_STUDIO_STUDY_ACCOUNTS_PER_ADDRESS", int,
            Settings.study_accounts_per_address,
            "new participants a study link admits from one client address in an hour; 0: no cap (a lab behind one NAT)",
            _at_least("--study-accounts-per-address", 0), group=SERVER_GROUP),
    Setting("--trusted-proxies", "RAT_STUDIO_TRUSTED_PROXIES", str, None,
            "addresses (or networks) of reverse proxies whose X-Forwarded-For names the client, comma separated; "
            "none: the header is ignored", _check_proxies, group=SERVER_GROUP, readme_default="none",
            metavar="ADDRESSES"),
    Setting("--allowed-hosts", "RAT_STUDIO_ALLOWED_HOSTS", str, None,
            "host names the server answers to besides its address and localhost, comma separated "
            "(.example.org: its subdomains; the public name behind a reverse proxy); others get 421",
            _check_hosts, group=SERVER_GROUP, readme_default="none", metavar="NAMES"),
)

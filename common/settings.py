"""Settings in force. Built once, in app.py, from CLI flags and the environment; everything else
receives them. Defaults are the papers' own where a paper gives one."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

ROLES = ("draft", "query", "revise", "judge")
DEFAULT_CONTEXT_TOKENS = 8192  # when neither --context-tokens nor the server says
SEARCH_PROVIDERS = ("ddg", "searxng", "corpus")


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


@dataclass(frozen=True)
class Settings:
    llm: LLMSettings = field(default_factory=LLMSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    fetch: FetchSettings = field(default_factory=FetchSettings)
    method: MethodSettings = field(default_factory=MethodSettings)
    db_path: Path = Path("rat_studio.db")
    host: str = "127.0.0.1"
    port: int = 7860
    share: bool = False
    auth: tuple[str, str] | None = None
    concurrency: int = 4  # Gradio queue: runs at once
    # Annotators' deployment: only the Arena and Leaderboard tabs, so nothing in the app (the
    # Writer, History) can show which method wrote an output being judged.
    arena_only: bool = False

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

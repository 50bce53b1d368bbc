"""Our own errors. Lower-layer errors (openai, httpx, ddgs, sqlite) are mapped to these at the
boundary with ``raise X(...) from exc``. Every message is shown to the user as it is, so it says
what went wrong *and* what to do about it."""

from __future__ import annotations


class RatStudioError(Exception):
    """Base of every error we raise on purpose. ``str(err)`` is the user-facing message."""

    #: True when trying the same thing again later may succeed (rate limit, timeout, 5xx).
    retryable: bool = False


class ConfigError(RatStudioError):
    """A setting is missing or invalid (bad flag, unreadable folder, unknown provider)."""


class TaskError(RatStudioError):
    """The task itself cannot be run: empty, too long, unknown method or kind."""


# --- LLM -------------------------------------------------------------------------------------


class LLMError(RatStudioError):
    """The language model could not produce an answer."""


class LLMAuthError(LLMError):
    """The server refused our API key (401/403) or none was given."""


class LLMConnectionError(LLMError):
    """The base URL could not be reached."""

    retryable = True


class LLMModelNotFound(LLMError):
    """The server does not serve the model we asked for (404)."""


class LLMRateLimited(LLMError):
    """429 after all retries."""

    retryable = True


class LLMTimeout(LLMError):
    """No answer within the timeout, after all retries."""

    retryable = True


class LLMServerError(LLMError):
    """5xx after all retries."""

    retryable = True


class LLMBadRequest(LLMError):
    """400: the request was refused as invalid (often: the prompt is too long for the model)."""


class LLMContextExceeded(LLMBadRequest):
    """The server refused a prompt longer than the model's context window; the message names
    --context-tokens."""


class BudgetExceeded(RatStudioError):
    """The next model call of a run would take it past its token budget (--budget-tokens): the
    call was not made, what was done is kept, and the run resumes with a larger budget. Not an
    LLMError, so no method takes it for a bad answer and goes on.

    ``spent``: the run's tokens so far; ``budget``: its budget; ``need``: the refused call's
    estimate (``core.budget.TokenBudget.estimate``); ``role``: the call's role."""

    def __init__(self, message: str, *, spent: int = 0, budget: int = 0, need: int = 0, role: str = ""):
        super().__init__(message)
        self.spent, self.budget, self.need, self.role = spent, budget, need, role


# --- search ----------------------------------------------------------------------------------


class SearchError(RatStudioError):
    """A search provider failed.

    ``reason`` is the failure in a few words ("timed out", "rate-limited (429)"), which the
    search chain shows in its warnings; empty when the class says enough."""

    def __init__(self, message: str, *, reason: str = ""):
        super().__init__(message)
        self.reason = reason


class SearchRateLimited(SearchError):
    """The provider said we search too often (HTTP 429, DuckDuckGo's ratelimit)."""

    retryable = True


class SearchUnavailable(SearchError):
    """The provider timed out or answered with an error (5xx, engines down)."""

    retryable = True


class SearchUnreachable(SearchUnavailable):
    """The provider's host could not be reached at all: the DNS lookup failed, the connection
    was refused, no route to it. Trying again in a few seconds will not help, so it is not
    retried; the search chain skips the provider for the rest of the run.

    ``cause`` says what failed in words ("DNS lookup failed"), ``fix`` what to do ("check the
    network, or use --search searxng or corpus"); the message holds both."""

    retryable = False

    def __init__(self, message: str, *, provider: str = "", cause: str = "", fix: str = "", reason: str = ""):
        super().__init__(message, reason=reason)
        self.provider = provider
        self.cause = cause
        self.fix = fix


# --- fetching --------------------------------------------------------------------------------


class FetchError(RatStudioError):
    """A page could not be fetched or read. Never fatal to a run: it becomes a PageRead error."""


class BlockedURL(FetchError):
    """The SSRF guard refused the URL (scheme, or a host that resolves to a private address)."""


class FetchTimeout(FetchError):
    """The page took longer than the per-page timeout or the step's deadline."""

    retryable = True


class HTTPStatusError(FetchError):
    """The server answered 4xx or 5xx."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status
        self.retryable = status >= 500 or status == 429


class PageTooLarge(FetchError):
    """The body exceeded the size cap."""


class UnsupportedContentType(FetchError):
    """The body is not HTML, XHTML or plain text."""


class TooManyRedirects(FetchError):
    """More redirects than allowed (or a loop)."""


class ExtractionError(FetchError):
    """The page was fetched but no main text could be extracted."""


# --- store -----------------------------------------------------------------------------------


class StoreError(RatStudioError):
    """The database could not be opened or written."""


class RunNotFound(StoreError):
    """No run with that id in the database."""


class RunLive(TaskError):
    """The run is being driven by another runner (another process, or another Continue in this
    one) that is still alive: one runner per run."""


class EditConflict(TaskError):
    """An action on a run's article (undo, take, do a step again) would rewrite text the author
    edited by hand: nothing was changed; the message says what to do so the edit is not lost."""


class VersionNotFound(StoreError):
    """No version with that number (or name) of a run's article; the message says which versions
    the run has and what to pick instead."""


class StoreBusy(StoreError):
    """The database stayed locked by another writer past the busy timeout; nothing of the write
    was kept, and trying again once the lock is gone succeeds."""

    retryable = True


class StoreFull(StoreError):
    """The disk holding the database is full (sqlite's "database or disk is full", or ENOSPC);
    nothing of the write was kept: free space, then try again (a run: resume it)."""

    retryable = True

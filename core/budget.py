"""A run's token budget and its cost.

:class:`TokenBudget` is asked before each model call of a run (``core.llm.LLMClient.stream``):
the call is refused, with :class:`~common.errors.BudgetExceeded`, when the tokens the run spent so
far and the call's estimate would pass the budget (``--budget-tokens``). The estimate is the
prompt's tokens (``core.text.tokens.count_tokens``, the one estimate) and an allowance for the
answer: the call's cap, at most ``ANSWER_ALLOWANCE``, or the longest answer of the same role in
this run when that was longer. Caps are sized for rambling answers, far above what a call usually
takes (a draft's is 6,000 tokens), so counting them whole would refuse calls the budget can pay
for; an answer longer than its allowance may take the run past the budget by that much, once.

Prices (``--prices FILE``): a JSON object of model -> ``{"input": D, "output": D}``, dollars per
million tokens; :func:`run_cost` prices a run's tokens by role with its models, :func:`upper_bound`
says the most a budget can cost before a run starts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from common.errors import BudgetExceeded, ConfigError
from core.text.tokens import count_tokens

if TYPE_CHECKING:
    from common.settings import Settings

#: Tokens counted for a call's answer when its cap is higher or it has none: a long paragraph.
ANSWER_ALLOWANCE = 512


class TokenBudget:
    """The token budget of one run: ``limit`` tokens in all, ``spent`` of them before this client
    (a resumed run's earlier stretches). :meth:`check` before a call, :meth:`spend` after it."""

    def __init__(self, limit: int, spent: int = 0):
        self.limit = limit
        self.spent = spent
        self.longest: dict[str, int] = {}  # role -> the longest answer of this stretch

    def estimate(self, prompt: str, *, role: str, max_tokens: int | None) -> tuple[int, int]:
        """(prompt tokens, answer allowance) of a call of ``role`` with ``prompt`` (its messages'
        text) and ``max_tokens`` (the cap it is sent with; None: none)."""
        cap = max_tokens if max_tokens is not None else math.inf
        answer = min(cap, max(ANSWER_ALLOWANCE, self.longest.get(role, 0)))
        return count_tokens(prompt), int(answer)

    def check(self, prompt: str, *, role: str, max_tokens: int | None) -> None:
        """Raises BudgetExceeded when the call's estimate would take the run past its budget."""
        asked, answer = self.estimate(prompt, role=role, max_tokens=max_tokens)
        need = asked + answer
        if self.spent + need <= self.limit:
            return
        raise BudgetExceeded(
            f"Stopped at the token budget: {self.spent:,} of {self.limit:,} tokens spent, and the next {role} call "
            f"would take about {need:,} more (a prompt of about {asked:,} and up to {answer:,} for its answer), "
            f"so it was not made. {how_to_go_on(self.limit, self.spent, need)}",
            spent=self.spent, budget=self.limit, need=need, role=role)

    def spend(self, role: str, prompt_tokens: int, completion_tokens: int) -> None:
        """Count a finished call's tokens (as the server counted them, else estimated)."""
        self.spent += prompt_tokens + completion_tokens
        self.longest[role] = max(self.longest.get(role, 0), completion_tokens)


def how_to_go_on(limit: int, spent: int, need: int = 0, *, method: str = "", resumable: bool = True) -> str:
    """The end of a budget stop's message: continue with a larger budget, or (``method`` cannot
    resume) run it again with one."""
    more = suggested(limit, spent, need)
    if resumable:
        return f"What was done is kept: continue the run with a larger --budget-tokens, e.g. {more}."
    return f"{method} cannot resume: run it again with a larger --budget-tokens, e.g. {more}."


def suggested(limit: int, spent: int, need: int = 0) -> int:
    """A budget to resume with: twice the old one, and at least what was spent and the refused
    call's estimate, rounded up to a thousand."""
    return int(math.ceil(max(2 * limit, spent + need) / 1000) * 1000)


# -- prices ---------------------------------------------------------------------------------------
def read_prices(path: str | Path) -> dict[str, tuple[float, float]]:
    """The price table in the JSON file ``path``: model -> (input, output) dollars per million
    tokens. Raises ConfigError naming --prices when the file cannot be read or is not such a table."""
    example = '{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}'
    try:
        data = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--prices {path}: cannot read it ({exc.strerror or exc}): give a JSON file such as "
                          f"{example}.") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--prices {path} is not JSON ({exc}): write it as {example}.") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--prices {path} must hold a JSON object of model -> prices, e.g. {example}.")
    prices = {}
    for model, price in data.items():
        try:
            both = (float(price["input"]), float(price["output"]))
        except (TypeError, KeyError, ValueError):
            raise ConfigError(f"--prices {path}: the price of {model!r} must be {{\"input\": D, \"output\": D}} in "
                              f"dollars per million tokens, e.g. {example}.") from None
        if min(both) < 0:
            raise ConfigError(f"--prices {path}: the price of {model!r} is negative.")
        prices[str(model)] = both
    return prices


def call_cost(prices: Mapping[str, tuple[float, float]], model: str, prompt_tokens: int,
              completion_tokens: int) -> float | None:
    """Dollars of one call's tokens with ``model``; None when the table has no price for it."""
    price = prices.get(model)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


def run_cost(prices: Mapping[str, tuple[float, float]], tokens_by_role: Mapping[str, Mapping[str, int]],
             stored: Mapping[str, Any]) -> float | None:
    """Dollars of a run's tokens (``tokens_by_role``: role -> {"prompt", "completion"}, as a run row
    keeps them), each role's priced by its model in the run's ``stored`` settings (its "model" and
    "role_models"); None when there are no prices or a model used has none."""
    if not prices:
        return None
    models = stored.get("role_models") or {}
    total = 0.0
    for role, tokens in tokens_by_role.items():
        cost = call_cost(prices, models.get(role) or stored.get("model") or "", int(tokens.get("prompt", 0)),
                         int(tokens.get("completion", 0)))
        if cost is None:
            return None
        total += cost
    return total


def upper_bound(prices: Mapping[str, tuple[float, float]], budget: int, models: set[str]) -> float | None:
    """The most ``budget`` tokens can cost with ``models``: every token at the dearest price of
    them; None when a model has no price."""
    known = [prices.get(m) for m in models]
    if not known or any(p is None for p in known):
        return None
    return budget * max(max(p) for p in known if p is not None) / 1_000_000


def cost_before(settings: Settings) -> str:
    """What a run with ``settings`` (its token budget, its models, the --prices table) can cost,
    said before it starts (the command line's line, the Writer's Run settings): "budget: 20,000
    tokens, ≈ $0.04 at most"; "" without a budget or prices."""
    prices, budget = settings.prices, settings.llm.budget_tokens
    if budget is None or not prices:
        return ""
    models = {settings.llm.model, *settings.llm.role_models.values()}
    most = upper_bound(prices, budget, models)
    if most is None:
        return f"budget: {budget:,} tokens (no price in --prices for {', '.join(sorted(models))})"
    return f"budget: {budget:,} tokens, {dollars(most)} at most"


def dollars(amount: float) -> str:
    """"≈ $0.012": two significant digits below a dollar, cents above."""
    if amount >= 1:
        return f"≈ ${amount:,.2f}"
    if amount <= 0:
        return "≈ $0"
    return f"≈ ${amount:.{1 - math.floor(math.log10(amount))}f}"

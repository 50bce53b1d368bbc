"""Markdown for the Arena and Leaderboard tabs (pure functions, beside ``ui.run_html``): outputs
made inert, the battle an annotator sees, the reveal after the vote, an annotator's progress,
leaderboard rows and the agreement between the judge and people."""

from __future__ import annotations

import re
from collections.abc import Sequence

from annotation.campaigns import CampaignProgress
from annotation.present import SOURCES, present
from annotation.results.agreement import PeopleAgreement
from annotation.results.ratings import Agreement, Row
from annotation.results.results import Annotator
from annotation.results.style import StyleBoard
from annotation.voting.arena import UNDO_SECONDS
from annotation.voting.shown import Progress, Reveal, Shown

CHOICE_LABELS = {"a": "A is better", "b": "B is better", "tie": "Tie", "both_bad": "Both are bad"}
#: The keys that cast each vote (the first is shown on its button), and those of Next and Undo.
CHOICE_KEYS = {"a": ("1", "A"), "b": ("2", "B"), "tie": ("3", "T"), "both_bad": ("4", "X")}
NEXT_KEYS, UNDO_KEYS = ("N", "Enter"), ("U",)
#: A criterion's row (votes by criterion, issue 40): its choices, as each is labelled, and the keys
#: that answer the marked row with each (``KeyboardEvent.key`` names; the first is shown as an arrow).
CRITERION_CHOICES = ("a", "b", "tie")
CRITERION_LABELS = {"a": "A", "b": "B", "tie": "Tie"}
CRITERION_KEYS = {"a": ("ArrowLeft",), "b": ("ArrowRight",), "tie": ("ArrowDown",)}
ARROWS = {"ArrowLeft": "←", "ArrowRight": "→", "ArrowDown": "↓", "ArrowUp": "↑"}
#: What an annotator may flag about an output with their vote (``data.arena.FLAGS``), as the menu says it.
FLAG_LABELS = {"a_broken": "A is broken", "a_empty": "A is empty", "a_off_task": "A is off-task",
               "b_broken": "B is broken", "b_empty": "B is empty", "b_off_task": "B is off-task"}
HEADERS = ["method", "mu", "sigma", "mu - 3 sigma", "win rate", "battles", "wins", "ties", "losses",
           "BT", "BT 95% low", "BT 95% high"]

_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_SCRIPT_LINK = re.compile(r"\]\(\s*(?:javascript|data|vbscript):[^)]*\)", re.IGNORECASE)


def safe_markdown(text: str) -> str:
    """Markdown with every HTML tag made inert (``<`` escaped outside code, where Markdown
    already shows it as text) and script links removed. Gradio's own sanitiser runs too."""
    parts = re.split(r"(^(?:```|~~~)[^\n]*\n.*?^(?:```|~~~)[ \t]*$)", text or "", flags=re.MULTILINE | re.DOTALL)
    out = []
    for k, part in enumerate(parts):
        out.append(part if k % 2 else _escape_prose(part))
    return "".join(out)


def _escape_prose(text: str) -> str:
    pieces, last = [], 0
    for m in _CODE_SPAN.finditer(text):
        pieces.append(_escape_plain(text[last:m.start()]))
        pieces.append(m.group(0))
        last = m.end()
    pieces.append(_escape_plain(text[last:]))
    return "".join(pieces)


def _escape_plain(text: str) -> str:
    return _SCRIPT_LINK.sub("](#)", text.replace("&", "&amp;").replace("<", "&lt;"))


def method_name(value: str) -> str:
    """A method name (any text, from imports) shown inline, as written: in a code span, where
    Markdown shows ``<`` and ``&`` literally (escaping them too would show ``&lt;``). A backtick
    or a line break, which would end the span, becomes ' or a space."""
    return "`" + " ".join(value.replace("`", "'").split()) + "`"


def battle_view(shown: Shown, style: str = SOURCES) -> tuple[str, str, str]:
    """(task, A, B) Markdown of a battle, with no method name in it: both outputs shown alike in
    ``style`` (``--arena-style``: ``annotation.present``), then made inert."""
    task = f"### Task\n{safe_markdown(shown.task)}"
    a, b = (present(text or "", style) for text in (shown.text_a, shown.text_b))
    return task, safe_markdown(a or "*(empty)*"), safe_markdown(b or "*(empty)*")


def reveal_text(reveal: Reveal) -> str:
    """Who wrote A and B, and the vote cast — only ever called after the vote."""
    voted = CHOICE_LABELS.get(reveal.choice or "", "no vote")
    return (f"**A** was written by {method_name(reveal.method_a)}, **B** by {method_name(reveal.method_b)}. "
            f"Your vote: **{voted}**. **Next** (N) for another pair · **Undo** (U) within {UNDO_SECONDS} s.")


def button_label(label: str, keys: Sequence[str]) -> str:
    """A button's text with its first hotkey: "A is better [1]" (an arrow key as its arrow: "A [←]")."""
    return f"{label} [{ARROWS.get(keys[0], keys[0])}]"


def progress_text(progress: Progress) -> str:
    """"N voted today · M in all · about K pairs left" (and the quota, when there is one), after
    "Campaign “NAME”" when the votes count in a campaign."""
    left = "no pair left" if progress.left == 0 else f"about {progress.left:,} pair{'s' * (progress.left != 1)} left"
    parts = [f"{progress.today:,} voted today", f"{progress.total:,} in all", left]
    if progress.campaign is not None:
        parts.insert(0, f"Campaign “{safe_markdown(progress.campaign)}”")
    if progress.quota is not None:
        parts.append(f"quota {progress.quota:,}")
    return " · ".join(parts)


ANNOTATOR_HEADERS = ["annotator", "votes", "today", "quota", "done", "last vote", "median s",
                     "agrees with others", "flagged"]


def annotator_rows(annotators: Sequence[Annotator], agreed: PeopleAgreement | None = None) -> list[list]:
    """The admin's table of annotators (ANNOTATOR_HEADERS): progress against the quota, the
    newest vote's time (to the minute), the median seconds per vote, how often they chose what the
    others' majority chose on pairs they shared (``agreed``: "7/9 (78%)") and why one is flagged."""
    agrees = _agreement_of(agreed)
    return [[a.name, a.total, a.today, _blank(a.quota), _percent(a.done), _minute(a.last),
             "" if a.median_seconds is None else round(a.median_seconds, 1), agrees(a.name), a.flag]
            for a in annotators]


def _agreement_of(agreed: PeopleAgreement | None):
    """name -> how often they chose what the others' majority chose: "7/9 (78%)" ("" if never shared)."""
    rates = {a.annotator: a for a in (agreed.annotators if agreed else ())}

    def agrees(name: str) -> str:
        a = rates.get(name)
        return f"{a.agreed}/{a.shared} ({a.rate:.0%})" if a is not None and a.shared else ""

    return agrees


def _blank(value: object) -> object:
    return "" if value is None else value


def _percent(share: float | None) -> str:
    return "" if share is None else f"{share:.0%}"


def _minute(timestamp: str) -> str:
    """A stored time ("2026-11-26T03:08:15.123+00:00") to the minute: "2026-11-26 03:08"."""
    return timestamp[:16].replace("T", " ")


CAMPAIGN_HEADERS = ["campaign", "status", "settings", "pairs", "complete pairs", "votes / needed", "done",
                    "annotators"]
#: Their widths: the settings line wraps, the numbers stay whole.
CAMPAIGN_WIDTHS = ["11%", "7%", "34%", "7%", "9%", "11%", "8%", "13%"]
CAMPAIGN_ANNOTATOR_HEADERS = ["annotator", "votes", "today", "quota", "done", "last vote", "agrees with others"]
#: How an admin makes or changes a campaign (campaigns are made on the command line).
CAMPAIGN_HOW = ("Campaigns are made and changed on the command line: `python app.py campaign create NAME "
                "--task-set S --methods a,b --overlap 3 --quota 20` (and `python app.py campaign --help` for "
                "changing, closing and reopening one).")


def campaign_rows(progresses: Sequence[CampaignProgress]) -> list[list]:
    """The admin's table of campaigns (CAMPAIGN_HEADERS), one row per campaign's progress."""
    return [[p.campaign.name, p.campaign.status, p.campaign.settings(), p.pairs, p.complete,
             f"{p.votes:,} / {p.needed:,}", _percent(p.done), len(p.annotators)]
            for p in progresses]


def campaign_annotator_rows(progress: CampaignProgress, agreed: PeopleAgreement | None = None) -> list[list]:
    """One campaign's annotators (CAMPAIGN_ANNOTATOR_HEADERS): their votes in it, today's, the
    campaign's quota and the share of it cast, the newest vote's time, and how often they chose
    what the others' majority chose on the campaign's pairs they shared (``agreed``)."""
    agrees = _agreement_of(agreed)
    return [[a.name, a.votes, a.today, _blank(a.quota), _percent(a.done), _minute(a.last), agrees(a.name)]
            for a in progress.annotators]


def campaign_text(progress: CampaignProgress, agreed: PeopleAgreement) -> str:
    """The line above a campaign's annotators: its name, votes and agreement (its settings are in
    the table above)."""
    c = progress.campaign
    return (f"**{safe_markdown(c.name)}** ({c.status}): **{len(progress.annotators)}** annotator(s), "
            f"**{progress.votes:,}** of {progress.needed:,} votes needed. {agreed.summary()}")


def table_rows(rows: Sequence[Row]) -> list[list]:
    """Leaderboard rows for a table with HEADERS."""
    return [
        [r.method, round(r.mu, 2), round(r.sigma, 2), round(r.conservative, 2), f"{r.win_rate:.1%}", r.battles,
         r.wins, r.ties, r.losses, round(r.bt), round(r.bt_low), round(r.bt_high)]
        for r in rows
    ]


STYLE_HEADERS = ["method", "BT style-controlled", "95% interval", "rank", "BT raw", "rank raw", "battles"]


def style_rows(styled: StyleBoard) -> list[list]:
    """The style-controlled ranking for a table with STYLE_HEADERS, best first."""
    return [[r.method, round(r.bt), interval(r.bt_low, r.bt_high), r.rank, round(r.bt_raw), r.rank_raw, r.battles]
            for r in styled.rows]


CRITERION_HEADERS = ["criterion", *HEADERS]
CRITERION_STYLE_HEADERS = ["criterion", *STYLE_HEADERS]


def criterion_rows(boards: Sequence) -> list[list]:
    """Each criterion's leaderboard (``Results.criterion_boards``) for one table with
    CRITERION_HEADERS: its rows, best first, under the criterion's name."""
    return [[b.criterion, *row] for b in boards for row in table_rows(b.rows)]


def criterion_text(boards: Sequence) -> str:
    """What the per-criterion table holds, in one line ("" without criteria)."""
    if not boards:
        return ""
    counts = ", ".join(f"“{safe_markdown(b.criterion)}” {b.votes:,}" for b in boards)
    return (f"**By criterion**: each criterion rated as the overall vote is (TrueSkill, Bradley–Terry), from the "
            f"annotators' A/B/tie choice on it; votes per criterion: {counts}.")


def criterion_style_rows(styled: dict[str, StyleBoard]) -> list[list]:
    """Style control per criterion (criterion -> its StyleBoard) for a table with
    CRITERION_STYLE_HEADERS."""
    return [[criterion, *row] for criterion, board in styled.items() for row in style_rows(board)]


def interval(low: float, high: float) -> str:
    """"1,012–1,088" (a bootstrap interval on the Elo scale); "–" when not estimated."""
    if low != low or high != high:  # NaN
        return "–"
    return f"{low:,.0f}–{high:,.0f}"


def style_text(styled: StyleBoard) -> str:
    """What the style-controlled ranking is fitted on, and each style feature's effect in words."""
    if not styled.rows:
        return "No vote with both texts known yet: votes imported without their texts have no style."
    left = f" ({styled.left_out:,} imported without their texts left out)" if styled.left_out else ""
    effects = "\n".join(f"- {e.sentence()}" for e in styled.effects)
    return (f"Bradley–Terry over **{styled.votes:,}** votes{left}, with the length, [n] citations, headings, "
            f"list items and opening remarks (\"Let me search…\") of the two answers shown as covariates: "
            f"the ranking at equal style.\n\n{effects}")


def agreement_text(shared: Agreement) -> str:
    """The agreement between the judge and people, as a sentence."""
    if not shared.compared:
        return "Judge and people have not voted on the same task and method pair yet."
    return (f"Judge and people agree on **{shared.agreed} of {shared.compared}** people's votes "
            f"on the pairs both judged (**{shared.rate:.0%}**){by_pair_text(shared)}.")


def by_pair_text(shared: Agreement) -> str:
    """The agreement per method pair, as a clause ("; by method pair: cot–rat 7/9 (78%), ..."),
    when more than one pair of methods was compared ("" otherwise)."""
    if len(shared.by_pair) < 2:
        return ""
    return "; by method pair: " + ", ".join(f"{safe_markdown(a)}–{safe_markdown(b)} {k}/{n} ({k / n:.0%})"
                                            for (a, b), (n, k) in shared.by_pair.items())


def flags_text(flags: dict[str, str], *, left_out: bool) -> str:
    """The flagged voters and why, as a sentence to add to the summary ("" when none)."""
    if not flags:
        return ""
    names = "; ".join(f"{safe_markdown(name)} ({safe_markdown(why)})" for name, why in sorted(flags.items()))
    verb = "left out" if left_out else "counted; tick *Leave out flagged voters* to rate without them"
    return f"\n\n**{len(flags)} flagged voter{'s' if len(flags) != 1 else ''}**, {verb}: {names}."


def judge_log(summary: str, lines: Sequence[str], last: int = 30) -> str:
    """The judge's report: its summary and its last ``last`` lines as a list."""
    shown = "\n".join(f"- {safe_markdown(line)}" for line in lines[-last:])
    return f"{summary}\n\n{shown}"

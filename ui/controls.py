"""What the browser calls the settings the command line calls flags.

Core's messages (a run's notes, its errors) name the flag that fixes a problem ("raise
--max-tokens", "see --min-keep"): a browser user has no flags but the Writer's controls.
``LABELS`` is the one table of the controls' labels by flag (``ui.run_settings`` labels its
controls from it), and :func:`for_browser` rewrites each flag it knows in a message into the
control's label and where it is, e.g. "Max tokens (Run settings)". Flags with no control
(the server's own, such as --base-url) are left as they are.
"""

from __future__ import annotations

import re

from common.settings import ROLES

RUN_SETTINGS = "Run settings"  # the Writer's accordion of a run's own settings
WRITER = "Writer"  # the Writer's own controls, beside the task

#: flag -> (the control's label, where it is)
LABELS: dict[str, tuple[str, str]] = {
    "--model": ("Model", RUN_SETTINGS),
    **{f"--{role}-model": (f"Model for {role}", RUN_SETTINGS) for role in ROLES},
    "--k": ("Results read per step", RUN_SETTINGS),
    "--max-tokens": ("Max tokens", RUN_SETTINGS),
    "--budget-tokens": ("Token budget", RUN_SETTINGS),
    "--context-tokens": ("Context tokens", RUN_SETTINGS),
    "--passage-tokens": ("Passage tokens", RUN_SETTINGS),
    "--max-steps": ("Max steps", RUN_SETTINGS),
    "--min-keep": ("Min keep", RUN_SETTINGS),
    "--cite-threshold": ("Cite threshold", RUN_SETTINGS),
    "--language": ("Language", RUN_SETTINGS),
    "--search": ("Search", WRITER),
    "--method": ("Method", WRITER),
}

PARAM = "--param"
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
_PARAM = re.compile(r"(?<![\w-])--param\s+([a-z][\w.]*)(?:=([\w.+-]*\w))?")


def label(flag: str) -> str:
    """The label of the control that sets ``flag`` (e.g. "Max tokens"). Raises KeyError for a
    flag no control sets."""
    return LABELS[flag][0]


def control(flag: str) -> str:
    """The control that sets ``flag`` and where it is, e.g. "Max tokens (Run settings)".
    Raises KeyError for a flag no control sets."""
    name, where = LABELS[flag]
    return f"{name} ({where})"


def param_label(key: str) -> str:
    """The label of a method parameter's control: its key, as `python app.py methods` lists it."""
    return key


def param_control(key: str) -> str:
    return f"{param_label(key)} ({RUN_SETTINGS})"


def for_browser(text: str) -> str:
    """``text`` with each flag a Writer control sets named by that control: "raise --max-tokens
    (512)" -> "raise Max tokens (Run settings) (512)", "--param itrg.iterations=0" ->
    "itrg.iterations (Run settings) = 0". Unknown flags are left as they are."""
    if "--" not in (text or ""):
        return text

    def param(match: re.Match) -> str:
        value = match.group(2)
        return param_control(match.group(1)) + (f" = {value}" if value is not None else "")

    def flag(match: re.Match) -> str:
        return control(match.group(0)) if match.group(0) in LABELS else match.group(0)

    return _FLAG.sub(flag, _PARAM.sub(param, text))

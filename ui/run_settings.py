"""The Writer's "Run settings": a run's own model (per role where roles have their own), k, token
limits, revision and citation shares, and the chosen method's declared parameters, each with its
range; their defaults are the server's settings. ``per_run`` builds the run's ``Settings`` from
them (``core.runner.Runner.start(settings=...)`` runs with it and stores it with the run).

The controls are labelled from ``ui.controls.LABELS`` (the names ``for_browser`` gives the flags in
core's messages) and described by ``common.settings.SETTINGS``' help; a value out of range is
refused with the control's label and its range. ``test_run_settings_browser`` holds each range
to the check of its row in ``SETTINGS``, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from common.errors import ConfigError
from common.settings import MIN_CONTEXT_TOKENS, SETTINGS, Settings
from core.budget import cost_before
from core.methods import METHODS
from core.methods.base import Param
from core.text import language
from ui.controls import RUN_SETTINGS, control, for_browser, label, param_label
from ui.listeners import PRIVATE

ROWS = {row.flag: row for row in SETTINGS if row.flag}
MODEL = "model"  # the name of the model control's value; a role's is "model:ROLE"
LANGUAGE = "--language"
#: The Language control's choices (any other code may be typed): the task's own, then the
#: languages of the field's benchmarks and users first.
LANGUAGES = (language.AUTO, "en", "zh", "ja", "ko", "fr", "de", "es", "pt", "ru", "ar", "hi", "it")


@dataclass(frozen=True)
class Number:
    """A numeric setting a run may set for itself: its flag, where it is in ``Settings``
    (section, attribute) and its range (None: unbounded), as the flag's check in ``SETTINGS``
    accepts it."""

    flag: str
    section: str
    attr: str
    low: float | None = 1
    high: float | None = None
    whole: bool = True

    def server(self, settings: Settings) -> Any:
        return getattr(getattr(settings, self.section), self.attr)

    @property
    def optional(self) -> bool:
        """Its default is decided later (the server's): 0 in its control (a number field is never
        empty) stands for that."""
        return ROWS[self.flag].default is None


NUMBERS = (
    Number("--k", "method", "k"),
    Number("--max-tokens", "llm", "max_tokens"),
    Number("--budget-tokens", "llm", "budget_tokens"),
    Number("--context-tokens", "method", "context_tokens", MIN_CONTEXT_TOKENS),
    Number("--passage-tokens", "method", "passage_tokens"),
    Number("--max-steps", "method", "max_steps"),
    Number("--min-keep", "method", "min_keep", 0, 1, whole=False),
    Number("--cite-threshold", "method", "cite_threshold", 0, 1, whole=False),
)


# -- ranges ---------------------------------------------------------------------------------------
def range_text(low: float | None, high: float | None, whole: bool) -> str:
    """"a whole number from 1 to 10", "a number from 0 to 1", "a whole number of at least 1"."""
    what = "a whole number" if whole else "a number"
    if low is not None and high is not None:
        return f"{what} from {low:g} to {high:g}"
    if low is not None:
        return f"{what} of at least {low:g}"
    return f"{what} of at most {high:g}" if high is not None else what


def out_of_range(name: str, value: float, low: float | None, high: float | None, whole: bool) -> str:
    """The message for a value of control ``name`` out of its range, else ""."""
    if (low is not None and value < low) or (high is not None and value > high) or (whole and value != int(value)):
        return f"{name} must be {range_text(low, high, whole)}, not {value:g}."
    return ""


# -- the run's Settings (no gradio) ---------------------------------------------------------------
def model_choices(configured: str, served: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The configured model first (said unlisted when the server lists others but not it),
    then the server's other models."""
    unlisted = bool(served) and configured not in served
    first = (f"{configured} (not listed)" if unlisted else configured, configured)
    return [first, *((m, m) for m in served if m != configured)]


def param_text(p: Param, value: Any) -> str:
    """A parameter's value as ``--param`` gives it (settings.method.params holds strings)."""
    typed = p.parse(value)
    if isinstance(typed, bool):
        return "yes" if typed else "no"
    return f"{typed:g}" if isinstance(typed, float) else str(typed)


def param_value(settings: Settings, p: Param) -> Any:
    """The server's value of ``p``: its ``--param``, else the method's default."""
    given = settings.method.params.get(p.key)
    return p.default if given is None else p.parse(given)


def _number(n: Number, value: Any, server: Settings) -> Any:
    """``value`` of control ``n`` (empty: the server's). Raises ConfigError naming the control
    and its range."""
    if value is None or value == "" or (n.optional and value == 0):
        return n.server(server)
    problem = out_of_range(control(n.flag), float(value), n.low, n.high, n.whole)
    if problem:
        raise ConfigError(problem)
    value = int(value) if n.whole else float(value)
    check = ROWS[n.flag].check
    if check is not None:
        try:
            check(value)
        except ConfigError as exc:
            raise ConfigError(for_browser(str(exc))) from exc
    return value


def per_run(server: Settings, method: str, values: Mapping[str, Any]) -> Settings:
    """The settings of a run of ``method`` with the Run settings' ``values`` (name -> value:
    "model", "model:ROLE", a flag such as "--k", "param:KEY"; an empty or absent value keeps the
    server's). Raises ConfigError naming the control and its range for a value out of range."""
    llm, chosen = server.llm, {}
    for n in NUMBERS:
        chosen[n.flag] = _number(n, values.get(n.flag), server)
    params = dict(server.method.params)
    info = METHODS.get(method)
    for p in info.params if info else ():
        value = values.get(f"param:{p.key}")
        if value is None or value == "":
            continue
        try:
            text = param_text(p, value)
        except ValueError as exc:
            raise ConfigError(for_browser(str(exc))) from exc
        if p.parse(text) != param_value(server, p):
            params[p.key] = text
    roles = {role: (values.get(f"{MODEL}:{role}") or "").strip() or model
             for role, model in llm.role_models.items()}
    llm = replace(llm, model=(values.get(MODEL) or "").strip() or llm.model, role_models=roles,
                  max_tokens=chosen.pop("--max-tokens"), budget_tokens=chosen.pop("--budget-tokens"))
    method_settings = replace(server.method, params=params, language=_language(values.get(LANGUAGE), server),
                              **{n.attr: chosen[n.flag] for n in NUMBERS if n.section == "method"})
    return replace(server, llm=llm, method=method_settings)


def _language(value: Any, server: Settings) -> str:
    """The Language control's value (empty: the server's --language), a code or "auto". Raises
    ConfigError naming the control for a code no language has."""
    code = str(value or "").strip() or server.method.language
    try:
        return language.check(code)
    except ConfigError as exc:
        raise ConfigError(for_browser(str(exc))) from exc


def summary(settings: Settings) -> str:
    """The folded accordion's one line: "Run settings · gpt-4o-mini · k 5 · max tokens: the server's"."""
    limit = settings.llm.max_tokens
    cost = cost_before(settings)  # (with --prices and a budget)
    return (f"{RUN_SETTINGS} · {settings.llm.model} · k {settings.method.k} · max tokens: "
            f"{limit if limit is not None else ROWS['--max-tokens'].shown_default}" + (f" · {cost}" if cost else ""))


# -- the controls ---------------------------------------------------------------------------------
class RunSettings:
    """The Run settings' controls in the Writer; ``components()`` are the inputs of a run, in
    the order of ``names``."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.names: list[str] = []
        self._components: list = []
        self.models: dict[str, gr.Dropdown] = {}  # "model" / "model:ROLE" -> its dropdown
        self.params: dict[str, gr.Component] = {}  # key -> its control (every method's; the chosen one's shown)

    def layout(self, method: str | None) -> None:
        s = self.settings
        with gr.Accordion(summary(s), open=False, elem_classes="rat-run-settings") as self.box:
            with gr.Row(equal_height=True):
                self._model(MODEL, label("--model"), s.llm.model,
                            "the model of every role" + (" without a model of its own" if s.llm.role_models else ""))
                for role, model in s.llm.role_models.items():
                    self._model(f"{MODEL}:{role}", label(f"--{role}-model"), model, f"the model of the {role} role")
                self.language = self._add(LANGUAGE, gr.Dropdown(
                    [(language_choice(code), code) for code in LANGUAGES], value=s.method.language,
                    label=label(LANGUAGE), info=ROWS[LANGUAGE].help, allow_custom_value=True, min_width=200))
            with gr.Row(equal_height=True, elem_classes="rat-run-numbers"):
                for n in NUMBERS:
                    row, value = ROWS[n.flag], n.server(s)
                    info = (f"{row.help} ({range_text(n.low, n.high, n.whole)}"
                            + (f"; 0: {row.shown_default})" if n.optional else ")"))
                    # no minimum/maximum given to Gradio: its own refusal names no control; Run checks
                    # the values (``per_run``) and names the control and its range
                    self._add(n.flag, gr.Number(0 if value is None else value, label=label(n.flag), info=info,
                                                precision=0 if n.whole else None, step=1 if n.whole else 0.05,
                                                min_width=160))
            self.params_note = gr.HTML(self._params_note(method), js_on_load=None)
            with gr.Row(equal_height=True, elem_classes="rat-run-params"):
                for p in _declared():
                    self.params[p.key] = self._add(f"param:{p.key}", self._param(p, method))

    def _model(self, name: str, text: str, configured: str, info: str) -> None:
        self.models[name] = self._add(name, gr.Dropdown(model_choices(configured), value=configured, label=text,
                                                        info=info, allow_custom_value=True, min_width=200))

    def _param(self, p: Param, method: str | None):
        value, shown = param_value(self.settings, p), _reads(method, p.key)
        info = f"{p.help} ({p.accepts()}, default {p.default})"
        if p.choices:
            return gr.Dropdown(list(p.choices), value=value, label=param_label(p.key), info=info, visible=shown)
        if p.kind is bool:
            return gr.Checkbox(value=value, label=param_label(p.key), info=info, visible=shown)
        return gr.Number(value, label=param_label(p.key), info=info, precision=0 if p.kind is int else None,
                         visible=shown, min_width=160)

    def _add(self, name: str, component):
        self.names.append(name)
        self._components.append(component)
        return component

    @staticmethod
    def _params_note(method: str | None) -> str:
        info = METHODS.get(method or "")
        if info is None:
            return ""
        what = "its parameters, with their ranges" if info.params else "no parameters of its own"
        return f"<div class='rat-note'>{info.name} reads {what}.</div>"

    def components(self) -> list:
        return list(self._components)

    def component(self, name: str):
        """The control of ``name`` (as ``names`` has it, e.g. "--budget-tokens")."""
        return self._components[self.names.index(name)]

    def values(self, values: Sequence[Any]) -> dict[str, Any]:
        """The inputs ``components()`` gave, by name."""
        return dict(zip(self.names, values, strict=True))

    def build(self, method: str, values: Sequence[Any]) -> Settings:
        """The run's settings from the inputs of ``components()``. Raises ConfigError (see ``per_run``)."""
        return per_run(self.settings, method, self.values(values))

    # -- events -------------------------------------------------------------------------------
    def wire(self, method: gr.Dropdown) -> None:
        method.change(self.on_method, method, [self.params_note, *self.params.values()], **PRIVATE)
        gr.on([c.change for c in self._components], self.on_change, self._components, self.box,
              queue=False, show_progress="hidden", **PRIVATE)

    def on_method(self, method: str) -> dict:
        """Show the parameters of ``method`` only."""
        return {self.params_note: self._params_note(method),
                **{c: gr.update(visible=_reads(method, key)) for key, c in self.params.items()}}

    def on_change(self, *values) -> gr.Accordion:
        """The folded line follows the values (the server's where one is out of range)."""
        try:
            settings = per_run(self.settings, "", self.values(values))
        except ConfigError:
            settings = self.settings
        return gr.Accordion(label=summary(settings))

    def restored(self, stored: Mapping[str, Any]) -> dict:
        """Each control set to what a run stored of its settings (``core.runner.Runner``'s
        ``_run_settings``: the run's own model, limits and parameters), so Run again runs as it
        ran; a value the run did not store keeps the control's default."""
        out: dict = {}
        if stored.get("model"):
            out[self.models[MODEL]] = stored["model"]
        for role, model in (stored.get("role_models") or {}).items():
            if f"{MODEL}:{role}" in self.models and model:
                out[self.models[f"{MODEL}:{role}"]] = model
        by_name = dict(zip(self.names, self._components, strict=True))
        for n in NUMBERS:
            if n.attr in stored:
                out[by_name[n.flag]] = 0 if stored[n.attr] is None else stored[n.attr]
        if stored.get("language"):
            out[self.language] = stored["language"]
        params = stored.get("params") or {}
        for p in _declared():
            if p.key in params:
                try:
                    out[self.params[p.key]] = p.parse(str(params[p.key]))
                except (ValueError, ConfigError):
                    continue
        return out

    def served(self, served: Sequence[str]) -> dict:
        """Each model dropdown offers the server's models, its configured one first."""
        llm = self.settings.llm
        return {dropdown: gr.Dropdown(choices=model_choices(llm.role_models.get(name.partition(":")[2]) or llm.model,
                                                            served))
                for name, dropdown in self.models.items()}


def language_choice(code: str) -> str:
    """How the Language control shows ``code``: "auto (the task's language)", "zh · Chinese"."""
    return "auto (the task's language)" if code == language.AUTO else f"{code} · {language.name(code)}"


def _declared() -> list[Param]:
    """Every method's declared parameters, each key once."""
    return list({p.key: p for info in METHODS.values() for p in info.params}.values())


def _reads(method: str | None, key: str) -> bool:
    info = METHODS.get(method or "")
    return info is not None and any(p.key == key for p in info.params)


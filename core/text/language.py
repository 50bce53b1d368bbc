"""The language a run writes in: the task's, or the one the author set (``--language``, the
Writer's Run settings). Every request of the run then begins with one system message asking
for it (:func:`instruction`; ``core.llm.LLMClient(system=...)``), so the draft, the search
queries and the revisions of a Chinese task are Chinese, whatever the method.

Which language a task is in (:func:`detect`):

- where its letters are mostly of a script that one language writes (Hangul: Korean; Thai,
  Greek, Hebrew, ...; Han and kana: Japanese where hiragana, which Chinese never uses, make
  HIRAGANA_SHARE of them, else Chinese: a katakana name in a Chinese text leaves it Chinese),
  that language: a short Chinese task ("量子计算") is too short for a statistical guess, and its
  script says it;
- else py3langid's guess (a naive Bayes model of 97 languages, langid.py's) when it is sure
  (MIN_CONFIDENCE); a short English task ("Describe Jin Yong") is often not, and then no
  language is named.

A task detected as English gets no instruction: English prompts are as they always were, and a
model writes in the language it is asked in. Languages are named in English by Babel's CLDR data.
"""

from __future__ import annotations

import functools
import threading

import regex
from babel import Locale, UnknownLocaleError

from common.errors import ConfigError

AUTO = "auto"
ENGLISH = "en"
MIN_CONFIDENCE = 0.9  # py3langid's normalised probability, below which a guess names nothing
MIN_SCRIPT_SHARE = 0.5  # share of a text's letters in one script for the script to decide

HIRAGANA_SHARE = 0.05  # of a text's Han and kana, for it to be Japanese rather than Chinese

#: Scripts that name their language (Han and kana: Chinese or Japanese, by the hiragana).
SCRIPTS = {
    "cjk": regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}]"), "ko": regex.compile(r"\p{Hangul}"),
    "th": regex.compile(r"\p{Thai}"), "lo": regex.compile(r"\p{Lao}"), "km": regex.compile(r"\p{Khmer}"),
    "my": regex.compile(r"\p{Myanmar}"), "el": regex.compile(r"\p{Greek}"), "he": regex.compile(r"\p{Hebrew}"),
    "hy": regex.compile(r"\p{Armenian}"), "ka": regex.compile(r"\p{Georgian}"),
}
_HIRAGANA = regex.compile(r"\p{Hiragana}")
_LETTER = regex.compile(r"\p{L}")


def detect(text: str) -> str | None:
    """The language code of ``text`` (see the module docstring), None when unsure."""
    letters = len(_LETTER.findall(text))
    if not letters:
        return None
    for code, script in SCRIPTS.items():
        found = len(script.findall(text))
        if found and found >= MIN_SCRIPT_SHARE * letters:
            if code != "cjk":
                return code
            return "ja" if len(_HIRAGANA.findall(text)) >= HIRAGANA_SHARE * found else "zh"
    code, confidence = _identifier().classify(text)
    return code if confidence >= MIN_CONFIDENCE else None


def warm_up() -> None:
    """Load the identifier's model now, in a thread of its own (about a second of CPU): a server
    calls it as it starts, so its first task does not wait for the model."""
    threading.Thread(target=_identifier, name="language-model", daemon=True).start()


_LOADING = threading.Lock()


def _identifier():
    """py3langid's model (loaded once, on the first task that needs it: about a second). Under a
    lock: a task that came while ``warm_up``'s thread was loading it loaded it a second time
    (``functools.cache`` does not stop two first calls), a second of CPU spent twice; it now
    waits for that load."""
    with _LOADING:
        return _loaded()


@functools.cache
def _loaded():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def name(code: str) -> str:
    """The English name of language ``code`` ("zh" -> "Chinese", "pt-BR" -> "Portuguese (Brazil)").
    Raises ConfigError naming --language for a code Babel does not know."""
    try:
        locale = Locale.parse(code.replace("-", "_"))
    except (ValueError, TypeError, UnknownLocaleError) as exc:
        raise ConfigError(f"Unknown language {code!r}: give --language a language code such as zh, ja, fr "
                          f"or en, or {AUTO} for the task's own.") from exc
    return locale.get_display_name(ENGLISH) or code


def check(setting: str) -> str:
    """``setting`` when it is AUTO or a known language code. Raises ConfigError naming --language."""
    if setting != AUTO:
        name(setting)
    return setting


def resolve(setting: str, task: str) -> str | None:
    """The language a run of ``task`` writes in: ``setting`` when it names one, else (AUTO) the
    task's, None when unsure."""
    return detect(task) if setting == AUTO else check(setting)


def instruction(setting: str, task: str) -> str:
    """The system message of a run of ``task`` under ``setting`` ("" for none): asked for by
    name when set, or when the task's language is detected and is not English."""
    code = resolve(setting, task)
    if code is None or (setting == AUTO and code == ENGLISH):
        return ""
    language = name(code)
    return (f"Write in {language}, the language of the task: every answer you give (a draft, a search "
            f"query, a revision, an article) is in {language}. Quoted titles and names may stay as written.")

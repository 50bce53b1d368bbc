"""``common.settings.SETTINGS``, the one table of settings, against what is built from it and
what describes it: README.md's "## Settings" table, ``python app.py``'s parser and help, the checks
and ``app.settings_from``.

How README.md's table is compared (``readme_problems``):

- a README row names its flags in the first column (each backticked token that starts with "--";
  a metavar after it, as in `--corpus DIR`, is left out) and its environment variables in the
  second (each backticked NAME); a row with no flag is a setting of the environment only;
- a row with several flags pairs them with its variables in order; a "..." in the variables'
  column stands for the rest of them (the ones it lists must still be the first ones);
- the default column is compared after dropping backticks, case and extra spaces. A row with
  several flags gives each its own default when the column has as many comma-separated parts
  as the row has flags (`127.0.0.1`, 7860), else the whole column is every flag's default;
- a SETTINGS row's default as README says it is ``Setting.shown_default``: its
  ``readme_default`` where the value alone does not say it (None as "the server's", "OpenAI's",
  "--model"), else the value: None "none", a switch "off"/"on", 120.0 "120", else as str.

Every flag and variable must be in both, with the same pairing and default.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from app import setting_value, settings_from
from common.errors import ConfigError
from common.settings import SETTINGS, LLMSettings, MethodSettings, Setting, Settings
from ui.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
ROW = {s.flag or s.env: s for s in SETTINGS}


# -- README.md ------------------------------------------------------------------------------------
def normalised(text: str) -> str:
    return " ".join(text.replace("`", "").split()).lower()


def settings_section(readme: str) -> str:
    match = re.search(r"^## Settings\n(.*?)(?=^## |\Z)", readme, flags=re.M | re.S)
    return match.group(1) if match else ""


def readme_rows(readme: str) -> list[tuple[list[str], list[str], bool, str]]:
    """(flags, variables, "..." in the variables' column, default) of each row of the Settings table."""
    rows = []
    for line in settings_section(readme).splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) < 3 or cells[0] == "flag" or re.fullmatch(r"[-: ]+", cells[0]):  # header, separator
            continue
        flags = [tok.split()[0] for tok in re.findall(r"`([^`]+)`", cells[0]) if tok.startswith("--")]
        envs = re.findall(r"`([A-Z][A-Z0-9_]*)`", cells[1])
        rows.append((flags, envs, "..." in cells[1], cells[2]))
    return rows


def readme_problems(readme: str, settings: tuple[Setting, ...] = SETTINGS) -> list[str]:
    """Where README.md's Settings table and ``settings`` disagree, one line each (the rules are in
    this module's docstring)."""
    by_flag = {s.flag: s for s in settings if s.flag}
    by_env = {s.env: s for s in settings}
    problems: list[str] = []
    seen_flags: set[str] = set()
    seen_envs: set[str] = set()

    def same_default(name: str, s: Setting, said: str) -> None:
        if normalised(said) != normalised(s.shown_default):
            problems.append(f"{name}: README's default is {said!r}, SETTINGS' is {s.shown_default!r}")

    rows = readme_rows(readme)
    if not rows:
        return ["README.md has no table under '## Settings'"]
    for flags, envs, more, default in rows:
        if not flags:  # the environment's only
            for env in envs:
                s = by_env.get(env)
                if s is None:
                    problems.append(f"README lists {env}, which SETTINGS lacks")
                    continue
                seen_envs.add(env)
                if s.flag:
                    problems.append(f"README lists {env} without a flag; SETTINGS gives it {s.flag}")
                same_default(env, s, default)
            continue
        if len(envs) != len(flags) and not (more and len(envs) < len(flags)):
            problems.append(f"README's row of {', '.join(flags)} names {len(envs)} variable(s) for {len(flags)} flags")
        parts = [p.strip() for p in default.split(",")] if len(flags) > 1 else [default]
        defaults = parts if len(parts) == len(flags) else [default] * len(flags)
        for i, flag in enumerate(flags):
            s = by_flag.get(flag)
            if s is None:
                problems.append(f"README lists {flag}, which SETTINGS lacks")
                continue
            seen_flags.add(flag)
            if i < len(envs):
                seen_envs.add(envs[i])
                if envs[i] != s.env:
                    problems.append(f"{flag}: README's variable is {envs[i]}, SETTINGS' is {s.env}")
            elif more:  # "..." stands for it
                seen_envs.add(s.env)
            same_default(flag, s, defaults[i])
    for s in settings:
        if s.flag and s.flag not in seen_flags:
            problems.append(f"{s.flag} is in SETTINGS but not in README's Settings table")
        if s.env not in seen_envs:
            problems.append(f"{s.env} is in SETTINGS but not in README's Settings table")
    return list(dict.fromkeys(problems))


def test_readme_settings_table_matches_the_table():
    assert readme_problems(README) == []


def test_the_readme_check_finds_a_missing_row_a_wrong_default_and_an_unknown_flag():
    k_row = next(line for line in README.splitlines() if line.startswith("| `--k` |"))
    assert "--k is in SETTINGS but not in README's Settings table" in readme_problems(README.replace(k_row + "\n", ""))
    assert "RAT_STUDIO_K is in SETTINGS but not in README's Settings table" in readme_problems(
        README.replace(k_row + "\n", ""))

    assert readme_problems(README.replace(k_row, k_row.replace("| 5 |", "| 6 |"))) == [
        "--k: README's default is '6', SETTINGS' is '5'"]
    ports = next(line for line in README.splitlines() if line.startswith("| `--host`, `--port` |"))
    assert readme_problems(README.replace(ports, ports.replace("7860", "7861"))) == [
        "--port: README's default is '7861', SETTINGS' is '7860'"]
    assert readme_problems(README.replace(k_row, k_row.replace("RAT_STUDIO_K", "RAT_STUDIO_KAY"))) == [
        "--k: README's variable is RAT_STUDIO_KAY, SETTINGS' is RAT_STUDIO_K",
        "RAT_STUDIO_K is in SETTINGS but not in README's Settings table"]
    extra = k_row.replace("--k", "--kk").replace("RAT_STUDIO_K", "RAT_STUDIO_KK")
    assert "README lists --kk, which SETTINGS lacks" in readme_problems(README.replace(k_row, k_row + "\n" + extra))
    assert readme_problems("# no settings here\n") == ["README.md has no table under '## Settings'"]


def test_the_readme_check_finds_a_row_the_table_lacks():
    fewer = tuple(s for s in SETTINGS if s.flag != "--concurrency")
    assert readme_problems(README, fewer) == ["README lists --concurrency, which SETTINGS lacks"]


# -- the parser ------------------------------------------------------------------------------------
def long_options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {o: a for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"}


def leaf_parsers(parser: argparse.ArgumentParser, path: str = ""):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for sub in subs:
        for name, child in sub.choices.items():
            yield from leaf_parsers(child, f"{path} {name}".strip())


def test_the_parser_has_exactly_the_flags_of_the_table():
    parser = build_parser()
    options = long_options(parser)
    assert set(options) == {s.flag for s in SETTINGS if s.flag}
    for s in SETTINGS:
        if s.flag is None:
            continue
        action = options[s.flag]
        if s.type is bool:
            assert isinstance(action, argparse._StoreTrueAction), s.flag
        elif s.type is list:
            assert isinstance(action, argparse._AppendAction), s.flag
        else:
            assert action.type is (None if s.type is str else s.type), s.flag
    groups = {g.title: {o for a in g._group_actions for o in a.option_strings} for g in parser._action_groups}
    assert all(s.flag in groups[s.group] for s in SETTINGS if s.flag)


def test_every_command_takes_every_flag_of_the_table():
    flags = {s.flag for s in SETTINGS if s.flag}
    leaves = dict(leaf_parsers(build_parser()))
    assert {"run", "votes import", "leaderboard"} <= leaves.keys()
    for name, parser in leaves.items():
        assert flags <= long_options(parser).keys(), name


def test_help_lists_every_flag_with_its_variable_and_default():
    text = "".join(build_parser().format_help().split())  # argparse wraps lines where it likes
    for s in SETTINGS:
        if s.flag:
            assert s.flag in text
            assert "".join(f"[{s.env}; {s.shown_default}]".split()) in text, s.flag
        else:
            assert s.env in text


def test_every_commands_help_prints_its_percent_signs_once():
    """argparse formats an argument's help with %, not a description or an epilog: a "%%" written
    in those is printed as it is."""
    for name, parser in leaf_parsers(build_parser()):
        assert "%%" not in parser.format_help(), name


def test_defaults_come_from_the_dataclasses():
    assert ROW["--k"].default == MethodSettings.k and ROW["--model"].default == LLMSettings.model
    assert ROW["--port"].default == Settings.port and ROW["--llm-timeout"].default == LLMSettings.timeout


def test_nothing_given_is_the_dataclasses_defaults(tmp_path):
    db = tmp_path / "x.db"
    assert settings_from(build_parser().parse_args([]), {"RAT_STUDIO_DB": str(db)}) == Settings(db_path=db)


# -- the checks ------------------------------------------------------------------------------------
#: flag -> (a value its check refuses, the message, byte for byte)
BAD = {
    "--search": ("ddg,bing", "Unknown search provider bing: use a comma list of ddg, searxng, corpus, "
                             "e.g. --search ddg,searxng."),
    "--max-tokens": (0, "--max-tokens must be at least 1 (e.g. 1024), not 0; leave it out for the server's own "
                        "limit."),
    "--budget-tokens": (0, "--budget-tokens must be a positive whole number of tokens (e.g. 20000), not 0; leave "
                           "it out for no cap."),
    "--context-tokens": (100, "--context-tokens 100 is too small for any of the prompts: give the model's context "
                              "window, at least 1024 (e.g. 8192)."),
    "--min-keep": (1.5, "--min-keep must be a share between 0 and 1 (e.g. 0.4 for 40%), not 1.5."),
    "--cite-threshold": (-0.1, "--cite-threshold must be a share between 0 and 1 (e.g. 0.4 for 40%), not -0.1."),
    "--auth": ("ana:short", "--auth must be USER:PASSWORD with a user name and a password of at least 8 characters, "
                            "e.g. --auth ana:correct-horse."),
    "--arena-text": ("author", "--arena-text must be latest (the author's latest version of a run's article) or "
                               "model (the method's own text), not 'author'."),
    "--arena-style": ("fancy", "--arena-style must be sources (each output's citations and sources in one house "
                               "style) or plain (citation marks and source lists taken away), not 'fancy'."),
    "--language": ("Chinese", "--language 'Chinese' is not a language code: give auto (the task's language) or a "
                              "code such as zh, ja, fr or en."),
    "--allowed-hosts": ("rat.example.org,http://x", "--allowed-hosts takes host names, comma separated (e.g. "
                                                    "--allowed-hosts rat.example.org,.example.org), not 'http://x'."),
    "--study-accounts-per-address": (-1, "--study-accounts-per-address must be at least 0, not -1."),
    "--votes-per-minute": (0, "--votes-per-minute must be at least 1, not 0."),
    "--votes-per-address": (-1, "--votes-per-address must be at least 0, not -1."),
    "--votes-per-day": (-1, "--votes-per-day must be at least 0, not -1."),
    # issue 26: a server URL once made a folder "postgresql:" in the working directory
    "--db": ("mysql://lee@db/rat", "--db mysql://... is a URL of a database server this version cannot use: give a "
                                   "SQLite file path (e.g. --db rat_studio.db) or a PostgreSQL URL "
                                   "(e.g. --db postgresql://rat@127.0.0.1:5432/rat)."),
    "--trusted-proxies": ("127.0.0.1,proxy.lan", "--trusted-proxies takes the addresses of your reverse proxies, "
                                                 "comma separated (e.g. --trusted-proxies 127.0.0.1,10.0.0.0/8), "
                                                 "not 'proxy.lan'."),
}
#: flag -> a value its check lets through
GOOD = {"--search": "searxng,corpus", "--max-tokens": 1, "--budget-tokens": 1, "--context-tokens": 1024,
        "--min-keep": 0, "--cite-threshold": 1, "--auth": "ana:correct-horse",
        "--arena-text": "model", "--arena-style": "plain", "--votes-per-minute": 1, "--votes-per-address": 0,
        "--votes-per-day": 0, "--db": "data/rat.db", "--language": "pt-BR", "--allowed-hosts": ".example.org, *",
        "--study-accounts-per-address": 0,
        "--trusted-proxies": "127.0.0.1, 10.0.0.0/8"}


def test_auth_with_spaces_around_its_parts_is_refused():
    """"ann : password123" once started an app nobody could log in to."""
    with pytest.raises(ConfigError, match="spaces around the user name or the password"):
        ROW["--auth"].check("ann : password123")
    ROW["--auth"].check("ann:pass word123")  # a space inside is typed at the login


def test_every_check_has_a_case():
    assert {s.flag for s in SETTINGS if s.check} == set(BAD) == set(GOOD)


@pytest.mark.parametrize("flag", sorted(BAD))
def test_each_check_refuses_a_bad_value_with_its_message(flag):
    value, message = BAD[flag]
    row = ROW[flag]
    with pytest.raises(ConfigError) as caught:
        row.check(value)
    assert str(caught.value) == message
    row.check(GOOD[flag])  # and lets a good one through


@pytest.mark.parametrize("flag", sorted(BAD))
def test_a_bad_value_is_refused_from_the_flag_and_from_the_environment(flag):
    value, message = BAD[flag]
    with pytest.raises(ConfigError) as by_flag:
        settings_from(build_parser().parse_args([flag, str(value)]), {})
    with pytest.raises(ConfigError) as by_env:
        settings_from(build_parser().parse_args([]), {ROW[flag].env: str(value)})
    assert str(by_flag.value) == str(by_env.value) == message


def test_a_value_of_the_wrong_type_in_the_environment_names_the_variable():
    with pytest.raises(ConfigError) as caught:
        setting_value(ROW["--port"], build_parser().parse_args([]), {"RAT_STUDIO_PORT": "80x"})
    assert str(caught.value) == "RAT_STUDIO_PORT='80x' is not valid: invalid literal for int() with base 10: '80x'"


def test_flag_then_environment_then_default(tmp_path):
    env = {"RAT_STUDIO_PORT": "8000", "RAT_STUDIO_DB": str(tmp_path / "x.db")}
    assert settings_from(build_parser().parse_args(["--port", "9000"]), env).port == 9000
    assert settings_from(build_parser().parse_args(["run", "t", "--port", "9000"]), env).port == 9000
    assert settings_from(build_parser().parse_args([]), env).port == 8000
    assert settings_from(build_parser().parse_args([]), {**env, "RAT_STUDIO_PORT": ""}).port == Settings.port
    assert settings_from(build_parser().parse_args([]), {**env, "RAT_STUDIO_SHARE": "0"}).share is False


def test_share_without_auth_is_refused():
    with pytest.raises(ConfigError) as caught:
        settings_from(build_parser().parse_args(["--share"]), {})
    assert str(caught.value) == "--share makes the UI public: also pass --auth USER:PASSWORD."


def test_app_docstring_names_every_command_the_parser_has():
    import argparse
    import re

    import app as app_module
    from ui.cli import build_parser

    parser = build_parser()
    commands = {name for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                for name in action.choices}
    said = set(re.findall(r"[a-z][a-z-]+", app_module.__doc__.split("python app.py ", 1)[1].split("Every flag")[0]))
    assert commands and commands <= said, f"app.py's docstring does not name {sorted(commands - said)}"

"""Method parameters (``--param KEY=VALUE``): each method declares the keys it reads where it is
registered; every key and value is checked before any run is created. A typo names the close key
and the valid ones, a value out of range says the range, and a key of another method says whose
it is. Checked as a unit, through the runner and the batch (nothing stored), and through the
command line (exit 2, one line)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from common.errors import ConfigError, TaskError
from common.settings import MethodSettings
from common.types import Task
from core.batch import Batch
from core.methods import METHODS, MethodContext
from core.methods.base import Param, check_params, declared_param
from core.methods.helpers import param
from tests.fakes.method_scripts import collect, runner_with
from tests.test_app import cli

CORE_METHODS = Path(__file__).resolve().parents[2] / "core" / "methods"


def refused(methods, params, **kw) -> str:
    with pytest.raises(ConfigError) as info:
        check_params(methods, params, **kw)
    message = str(info.value)
    assert "\n" not in message, "one line"
    return message


# -- the check ---------------------------------------------------------------------------------
def test_a_typo_names_the_close_key_and_the_valid_ones():
    message = refused(["itrg-refine"], {"itrg.iteration": "1"})
    assert message.startswith("Unknown --param itrg.iteration: did you mean itrg.iterations?")
    assert "Valid keys for itrg-refine: itrg.iterations (1-10, default 5), itrg.top_k (1-20, default 5)." in message


def test_a_key_no_method_knows_is_refused_even_for_runs_of_every_method():
    message = refused(["rat"], {"nonsense.key": "1"}, strict=False)
    assert message.startswith("Unknown --param nonsense.key.") and "rat takes no --param" in message


@pytest.mark.parametrize(("key", "value", "says"), [
    ("itrg.iterations", "-5", "itrg.iterations=-5 is out of range: use a whole number from 1 to 10 (default 5)"),
    ("itrg.iterations", "0", "out of range: use a whole number from 1 to 10"),
    ("aag.critic_cycles", "11", "out of range: use a whole number from 0 to 10 (default 3)"),
    ("furepa.theta", "1.5", "furepa.theta=1.5 is out of range: use a number from 0 to 1 (default 0.6)"),
    ("itrg.iterations", "many", "itrg.iterations=many is not a whole number: use a whole number from 1 to 10"),
    ("itrg.iterations", "2.5", "is not a whole number"),
    ("itrg.iterations", "", "is not a whole number"),
    ("furepa.tp0", "nan", "furepa.tp0=nan is not a number: use a number from 0 to 2 (default 0.2)"),
    ("furepa.temperature_schedule", "sometimes", "is not one of on-repeat, per-iteration (default on-repeat)"),
])
def test_a_bad_value_says_what_is_accepted(key, value, says):
    method = next(m.name for m in METHODS.values() if any(p.key == key for p in m.params))
    assert says in refused([method], {key: value})


def test_several_bad_keys_are_named_in_one_line():
    message = refused(["furepa"], {"furepa.theta": "2", "furepa.n": "x", "furepa.nn": "3"})
    assert "furepa.theta=2" in message and "furepa.n=x" in message and "Unknown --param furepa.nn" in message


def test_valid_values_pass():
    check_params(["itrg-refine"], {"itrg.iterations": "3", "itrg.top_k": 7})
    check_params(["furepa"], {"furepa.theta": "0.8", "furepa.temperature_schedule": "per-iteration",
                              "furepa.eps": 2})
    check_params(["aag"], {"aag.critic_cycles": "0"})
    check_params(["rat"], {})


def test_a_key_of_another_method_says_whose_it_is():
    message = refused(["rat"], {"itrg.iterations": "3"})
    assert message.startswith("--param itrg.iterations is a parameter of itrg-refine, itrg-refresh, not of rat.")
    message = refused(["aag-nocr"], {"aag.critic_cycles": "1"})
    assert "is a parameter of aag, aag-nosum, aag-noqr, not of aag-nocr" in message
    assert "Valid keys for aag-nocr: aag.max_queries (1-10, default 4), aag.procedures (1-20, default 3)" in message
    # one of several methods reading it is enough; settings shared by every method (the UI) pass,
    # but their values are still checked
    check_params(["rat", "itrg-refresh"], {"itrg.iterations": "3"})
    check_params(["rat"], {"itrg.iterations": "3"}, strict=False)
    assert "out of range" in refused(["rat"], {"itrg.iterations": "-5"}, strict=False)


# -- the declarations --------------------------------------------------------------------------
def test_every_declared_default_is_valid_and_one_family_shares_one_declaration():
    for info in METHODS.values():
        for p in info.params:
            assert p.parse(p.default) == p.default, p
            assert p.help and p.key.split(".")[0] in info.name.replace("-", ""), p
            assert declared_param(p.key) == p


def test_every_key_a_method_reads_is_declared():
    read = set()
    for path in CORE_METHODS.glob("*.py"):
        read |= set(re.findall(r"""\bparam\(\s*\w+\s*,\s*["']([^"']+)["']""", path.read_text(encoding="utf-8")))
    assert read, "the methods read parameters with param(ctx, KEY)"
    assert {key for key in read if declared_param(key) is None} == set()


def test_param_reads_the_declared_default_and_type():
    def ctx(**params):
        return MethodContext(llm=None, search=None, fetch=None, settings=MethodSettings(params=params))

    assert param(ctx(), "itrg.iterations") == 5
    assert param(ctx(**{"itrg.iterations": "3"}), "itrg.iterations") == 3
    assert param(ctx(**{"furepa.theta": "1"}), "furepa.theta") == 1.0
    assert isinstance(param(ctx(**{"furepa.theta": "1"}), "furepa.theta"), float)
    with pytest.raises(TaskError, match="out of range"):
        param(ctx(**{"itrg.iterations": "-5"}), "itrg.iterations")
    with pytest.raises(TaskError, match="not declared"):
        param(ctx(), "itrg.nothing")


def test_a_bool_param_reads_yes_and_no_words():
    flag = Param("x.flag", False, "a switch")
    assert flag.parse("yes") is True and flag.parse("off") is False and flag.accepts() == "yes|no"
    with pytest.raises(ValueError, match="is not yes or no"):
        flag.parse("maybe")


# -- before any run is created -----------------------------------------------------------------
async def test_the_runner_stores_nothing_for_a_bad_param(app, llm):
    runner = runner_with(app, params={"itrg.iteration": "1"})
    with pytest.raises(ConfigError, match="did you mean itrg.iterations"):
        await collect(runner.start("itrg-refine", Task("When was Python 3.6.0 released?")))
    runner = runner_with(app, params={"itrg.iterations": "-5"})
    with pytest.raises(ConfigError, match="out of range"):
        await collect(runner.start("itrg-refine", Task("When was Python 3.6.0 released?")))
    assert app.store.list_runs() == [], "no run row, so no failed run in History"
    assert llm.requests == []


async def test_resume_checks_the_params_before_it_claims_the_run(app, llm):
    llm.reply(lambda body: "A plain answer.")
    events = await collect(app.runner.start("direct", Task("Who wrote Hamlet?")))
    run = app.store.get_run(events[0].run_id)
    runner = runner_with(app, params={"aag.critic_cycles": "99"})
    with pytest.raises(ConfigError, match="aag.critic_cycles=99 is out of range"):
        await collect(runner.resume(run.id))
    assert app.store.get_run(run.id).status == run.status


async def test_a_batch_refuses_a_param_none_of_its_methods_reads(app):
    runner = runner_with(app, params={"itrg.iterations": "3"})
    with pytest.raises(ConfigError, match="itrg.iterations is a parameter of itrg-refine, itrg-refresh, "
                                          "not of direct, cot"):
        Batch(runner, app.store, ["direct", "cot"])
    Batch(runner, app.store, ["direct", "itrg-refresh"])  # read by one of them: fine
    assert app.store.list_runs() == []


# -- the command line --------------------------------------------------------------------------
def test_the_cli_refuses_a_bad_param_in_one_line_and_creates_nothing(tmp_path):
    env = {"RAT_STUDIO_DB": str(tmp_path / "cli.db"), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "OPENAI_API_KEY": "sk-test"}
    cases = [
        (["run", "x", "--method", "itrg-refine", "--param", "itrg.iteration=1"],
         "Unknown --param itrg.iteration: did you mean itrg.iterations? Valid keys for itrg-refine: "
         "itrg.iterations (1-10, default 5)"),
        (["run", "x", "--method", "itrg-refresh", "--param", "itrg.iterations=-5"],
         "--param itrg.iterations=-5 is out of range: use a whole number from 1 to 10 (default 5)."),
        (["run", "x", "--method", "rat", "--param", "itrg.iterations=2"],
         "--param itrg.iterations is a parameter of itrg-refine, itrg-refresh, not of rat."),
    ]
    for args, says in cases:
        proc = cli(*args, env_extra=env, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ") and says in proc.stderr, proc.stderr
    assert not (tmp_path / "cli.db").exists(), "refused before the database is even opened"


def test_the_methods_command_lists_each_methods_params(tmp_path):
    proc = cli("methods", env_extra={"RAT_STUDIO_DB": str(tmp_path / "cli.db")}, timeout=60)
    assert proc.returncode == 0, proc.stderr
    block = proc.stdout.split("\nitrg-refine ")[1].split("\nitrg-refresh ")[0]
    assert "--param itrg.iterations (1-10, default 5): T, the rounds" in block
    assert "--param furepa.temperature_schedule (on-repeat|per-iteration, default on-repeat)" in proc.stdout

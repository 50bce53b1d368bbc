"""`eval race` (issue 40, item 3): DeepResearch Bench's RACE on stored runs, scored by the judge role
against reference articles on the bench's weighted criteria."""

from __future__ import annotations

import json
import re
import threading

import pytest

from annotation.admin import race
from tests.fakes.scripts import QuotingAuthor, draft_steps
from tests.test_drb import QUERY, write_jsonl

#: An excerpt of the bench's own criteria file (data/criteria_data/criteria.jsonl, id 57;
#: Ayanami0730/deep_research_bench, Apache-2.0): its dimension weights as published, and the first
#: criterion of each dimension (the line has 6 to 8 a dimension), explanations shortened.
BENCH_CRITERIA = json.dumps({
    "id": 57,
    "prompt": "Summarize the global investments, key initiatives, and outputs related to Artificial Intelligence (AI) "
              "by major international consulting firms (e.g., Big Four, Accenture, MBB, IBM, Capgemini). Cover "
              "aspects such as AI-driven products/services, client case studies, application scenarios, strategic "
              "directions, and talent development programs.",
    "dimension_weight": {"readability": 0.18, "insight": 0.24, "comprehensiveness": 0.35,
                         "instruction_following": 0.23},
    "criterions": {
        "comprehensiveness": [{"criterion": "Breadth and Representativeness of Consulting Firms Profiled",
                               "explanation": "Assesses if the article covers a sufficient number and a "
                                              "representative range of major international consulting firms.",
                               "weight": 0.2}],
        "insight": [{"criterion": "Synthesis of Cross-Firm Strategic AI Themes and Competitive Positioning",
                     "explanation": "Assesses if the article identifies and analyzes overarching strategic themes.",
                     "weight": 0.25}],
        "instruction_following": [{"criterion": "Focus on Major International Consulting Firms",
                                   "explanation": "Ensures the report focuses on the correct entities.",
                                   "weight": 0.2}],
        "readability": [{"criterion": "Overall Report Structure and Logical Flow",
                         "explanation": "Assesses if the article has a clear, logical, and consistent structure.",
                         "weight": 0.15}],
    },
}, ensure_ascii=False)
#: The bench's published RACE result for that task (results/race/claude-3-7-sonnet-latest/
#: raw_results.jsonl, id 57, prompt cut): the per-dimension relative scores and the overall one.
BENCH_RESULT = ('{"id": 57, "prompt": "Summarize the global investments...", "comprehensiveness": 0.4284433821332537, '
                '"insight": 0.40603919049148723, "instruction_following": 0.480611687602403, '
                '"readability": 0.41399327833791627, "overall_score": 0.43402179721012424}')


def test_the_bench_criteria_line_parses(tmp_path):
    (c,) = race.read_criteria(write_jsonl(tmp_path / "criteria.jsonl", [BENCH_CRITERIA]))
    assert c.id == 57 and c.prompt.startswith("Summarize the global investments")
    assert c.weights == {"readability": 0.18, "insight": 0.24, "comprehensiveness": 0.35, "instruction_following": 0.23}
    assert sum(c.weights.values()) == pytest.approx(1.0)
    assert set(c.criteria) == set(race.DIMENSIONS)
    assert c.criteria["insight"][0].weight == 0.25
    book = race.CriteriaBook([c])
    assert book.find("another prompt", 57) is c and book.find(c.prompt + "  ") is c and book.find("x", 58) is None
    assert race.criteria_from_line(race.CriteriaLine(**race.criteria_line(c))) == c, "written as the bench's line"


def test_the_bench_result_line_holds_its_dimensions_and_a_relative_score():
    result = json.loads(BENCH_RESULT)
    assert set(race.DIMENSIONS) <= set(result)
    assert all(0 < result[d] < 1 for d in (*race.DIMENSIONS, "overall_score"))
    # the relative score of equal totals is 0.5; of any, target / (target + reference)
    assert race.relative(6.0, 6.0) == 0.5 and race.relative(8.0, 2.0) == 0.8 and race.relative(0, 0) is None


CRIT = (race.Criterion("Breadth of coverage", "", 0.6), race.Criterion("Use of data", "", 0.4))


@pytest.mark.parametrize("reply, expected", [
    # the bench's output format, in a ```json block, with the analysis it asks for
    ('Here:\n```json\n{"insight": [{"criterion": "Breadth of coverage", "analysis": "a", "article_1_score": 8, '
     '"article_2_score": 4}, {"criterion": "Use of data", "analysis": "b", "article_1_score": 6, '
     '"article_2_score": 6}]}\n```', (0.6 * 8 + 0.4 * 6, 0.6 * 4 + 0.4 * 6, 2, 0)),
    # a bare list, a number as a string, a criterion in another case
    ('[{"criterion": "breadth of COVERAGE", "article_1_score": "7.5", "article_2_score": 5}]', (7.5, 5.0, 1, 0)),
    # a criterion matching none: the dimension's mean weight, counted (as the bench's score_calculator)
    ('{"insight": [{"criterion": "Something else", "article_1_score": 3, "article_2_score": 9}]}', (3.0, 9.0, 1, 1)),
    # out of range or missing scores are skipped; nothing left: unreadable
    ('{"insight": [{"criterion": "Use of data", "article_1_score": 12, "article_2_score": 5}]}', None),
    ('{"insight": [{"criterion": "Use of data", "article_1_score": 7}]}', None),
    ('{"comprehensiveness": [{"criterion": "Use of data", "article_1_score": 7, "article_2_score": 5}]}', None),
    ("I cannot score these articles.", None),
    ("", None),
])
def test_parse_scores(reply, expected):
    got = race.parse_scores(reply, "insight", CRIT)
    if expected is None:
        assert got is None
    else:
        assert (got.target, got.reference, got.criteria, got.unmatched) == pytest.approx(expected)


def test_parse_generated_weights_and_criteria():
    assert race.parse_weights('<analysis>x</analysis>\n<json_output>\n{"comprehensiveness": 0.3, "insight": 0.35, '
                              '"instruction_following": 0.2, "readability": 0.15}\n</json_output>') == pytest.approx(
        {"comprehensiveness": 0.3, "insight": 0.35, "instruction_following": 0.2, "readability": 0.15})
    assert race.parse_weights('{"comprehensiveness": 0.5, "insight": 0.5}') is None, "all four"
    assert race.parse_weights('{"comprehensiveness": 0.5, "insight": 0.5, "instruction_following": 0.5, '
                              '"readability": 0.5}') is None, "they must sum to 1"
    crit = race.parse_criteria('<json_output>[{"criterion": "A", "explanation": "e", "weight": 0.7}, '
                               '{"criterion": "B", "explanation": "f", "weight": 0.3}]</json_output>')
    assert [(c.text, c.weight) for c in crit] == [("A", 0.7), ("B", 0.3)]
    assert race.parse_criteria("no list here") is None


def test_interval_is_none_under_two_and_holds_the_mean():
    assert race.interval([0.4]) == (None, None)
    low, high = race.interval([0.3, 0.4, 0.5, 0.6])
    assert low <= 0.45 <= high and 0.3 <= low and high <= 0.6


# -- the command, on a rat run by the stand-ins ---------------------------------------------------

#: What the stand-in judge answers per dimension: (article 1 = target, article 2 = reference);
#: readability gets a reply with no JSON.
SCRIPTED = {"comprehensiveness": (8.0, 4.0), "insight": (6.0, 6.0), "instruction_following": (9.0, 3.0)}
UNREADABLE = "readability"
GENERATED_WEIGHTS = {"comprehensiveness": 0.4, "insight": 0.3, "instruction_following": 0.2, "readability": 0.1}


class Judge:
    """Answers RACE's prompts in the bench's JSON (the rest goes to the author); keeps what it was asked."""

    def __init__(self, author):
        self.author = author
        self.asked: list[tuple[str, str]] = []  # (dimension or "weights", user prompt)
        self.lock = threading.Lock()
        self.bad_weights = False

    def __call__(self, body: dict) -> str:
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        if system == race.CRITERIA_SYSTEM_PROMPT:
            dim = re.search(r"For the (\w+) dimension only", user)
            with self.lock:
                self.asked.append((dim.group(1) if dim else "weights", user))
            if dim is None:
                return "no weights today" if self.bad_weights else (
                    f"<analysis>why</analysis>\n<json_output>{json.dumps(GENERATED_WEIGHTS)}</json_output>")
            return (f'<json_output>[{{"criterion": "{dim.group(1)} one", "explanation": "e", "weight": 0.5}}, '
                    f'{{"criterion": "{dim.group(1)} two", "explanation": "e", "weight": 0.5}}]</json_output>')
        if system != race.SYSTEM_PROMPT:
            return self.author(body)
        dim = re.search(r'\{"(\w+)": \[\{"criterion"', user).group(1)
        with self.lock:
            self.asked.append((dim, user))
        if dim == UNREADABLE:
            return "Both articles are fine, I would say."
        listed = json.loads(re.search(r"<criteria_list>\n(.*?)\n</criteria_list>", user, re.S).group(1))
        t, r = SCRIPTED[dim]
        return "```json\n" + json.dumps({dim: [{"criterion": c["criterion"], "analysis": "compared",
                                               "article_1_score": t, "article_2_score": r} for c in listed]}) + "\n```"


@pytest.fixture
def env(db, llm, shared_web):
    return {"OPENAI_BASE_URL": llm.base_url, "OPENAI_API_KEY": "sk-test", "RAT_STUDIO_MODEL": "fake-model",
            "RAT_STUDIO_JUDGE_MODEL": "fake-judge", "RAT_STUDIO_SEARCH": "searxng",
            "RAT_STUDIO_SEARXNG_URL": shared_web.searxng_url, "RAT_STUDIO_ALLOW_PRIVATE_URLS": "1",
            "RAT_STUDIO_DB": str(db)}


@pytest.fixture
def db(tmp_path):
    return tmp_path / "race.db"


@pytest.fixture
def judge(cli, env, llm, tmp_path):
    """rat run by `batch` on the bench's English task (id 57) on the stand-ins; the judge's script."""
    script = Judge(QuotingAuthor(draft_steps(5)))
    llm.reply(script)
    code, _, err = cli("batch", str(write_jsonl(tmp_path / "q.jsonl", QUERY[1:])), "--methods", "rat", env=env)
    assert code == 0, err
    return script


@pytest.fixture
def files(tmp_path):
    ref = write_jsonl(tmp_path / "reference.jsonl", [{"id": 57, "prompt": QUERY[1]["prompt"],
                                                      "article": "A reference history of Python 3 [1].\n\n"
                                                                 "References\n[1] https://python.org - Python"}])
    return str(ref), str(write_jsonl(tmp_path / "criteria.jsonl", [BENCH_CRITERIA]))


def test_eval_race_scores_the_scripted_numbers_and_names_the_unreadable_dimension(judge, cli, env, files):
    ref, crit = files
    code, out, err = cli("eval", "race", "--reference", ref, "--criteria", crit, "--json", env=env)
    assert code == 0, err
    got = json.loads(out)
    (row,) = got["methods"]
    assert sorted(d for d, _ in judge.asked) == sorted(race.DIMENSIONS), "one call per dimension"
    asked = dict(judge.asked)
    assert "A reference history of Python 3." in asked["insight"] and "[1]" not in asked["insight"].split(
        "<article_2>")[1].split("</article_2>")[0], "the reference, its marks and list left out"
    assert "Breadth and Representativeness of Consulting Firms Profiled" in asked["comprehensiveness"]
    (task,) = row["per_task"]
    assert task["id"] == 57 and task["unreadable"] == [UNREADABLE] and task["failed"] == []
    weights = json.loads(BENCH_CRITERIA)["dimension_weight"]
    for dim, (t, r) in SCRIPTED.items():
        assert (task["dimensions"][dim]["target"], task["dimensions"][dim]["reference"]) == pytest.approx((t, r))
        assert task["dimensions"][dim]["relative"] == pytest.approx(t / (t + r))
    assert UNREADABLE not in task["dimensions"], "not scored, not guessed"
    w = sum(weights[d] for d in SCRIPTED)
    target = sum(weights[d] * SCRIPTED[d][0] for d in SCRIPTED) / w
    reference = sum(weights[d] * SCRIPTED[d][1] for d in SCRIPTED) / w
    assert (task["target"], task["reference"]) == pytest.approx((target, reference))
    assert task["relative"] == pytest.approx(target / (target + reference))
    assert row["mean"] == pytest.approx(task["relative"]) and row["low"] is None and row["tasks"] == 1
    assert (row["unreadable"], row["no_reference"], row["no_criteria"]) == (1, 0, 0)
    assert got["unreadable"] == [{"method": "rat", "task": QUERY[1]["prompt"], "id": 57, "dimension": UNREADABLE}]

    code, out, err = cli("eval", "race", "--reference", ref, "--criteria", crit, env=env)
    assert code == 0 and out.splitlines()[1].startswith("rat"), err
    assert "unreadable: rat, task id 57, readability: left out, not scored" in out


def test_a_task_without_a_reference_is_counted_not_scored(judge, cli, env, files, tmp_path):
    other = write_jsonl(tmp_path / "other.jsonl", [{"id": 1, "prompt": "Another task.", "article": "Text."}])
    code, out, err = cli("eval", "race", "--reference", str(other), "--criteria", files[1], "--json", env=env)
    assert code == 0, err
    (row,) = json.loads(out)["methods"]
    assert (row["outputs"], row["no_reference"], row["tasks"], row["mean"]) == (1, 1, 0, None)
    assert judge.asked == []


def test_without_criteria_the_judge_writes_them_once_and_they_are_kept(judge, cli, env, files, tmp_path):
    ref, _ = files
    kept = tmp_path / "kept.jsonl"
    code, out, err = cli("eval", "race", "--reference", ref, "--criteria-out", str(kept), "--json", env=env)
    assert code == 0, err
    assert sorted(d for d, _ in judge.asked[:5]) == sorted(["weights", *race.DIMENSIONS])
    (line,) = [json.loads(x) for x in kept.read_text(encoding="utf-8").splitlines()]
    assert line["id"] == 57 and line["prompt"] == QUERY[1]["prompt"]
    assert line["dimension_weight"] == pytest.approx(GENERATED_WEIGHTS)
    assert [c["criterion"] for c in line["criterions"]["insight"]] == ["insight one", "insight two"]
    (task,) = json.loads(out)["methods"][0]["per_task"]
    w = sum(GENERATED_WEIGHTS[d] for d in SCRIPTED)
    target = sum(GENERATED_WEIGHTS[d] * SCRIPTED[d][0] for d in SCRIPTED) / w
    assert task["target"] == pytest.approx(target)

    judge.asked.clear()
    code, _, err = cli("eval", "race", "--reference", ref, "--criteria-out", str(kept), "--json", env=env)
    assert code == 0, err
    assert len(judge.asked) == 4 and "weights" not in dict(judge.asked), "read back, not written again"
    assert len(kept.read_text(encoding="utf-8").splitlines()) == 1


def test_unreadable_generated_criteria_are_named_and_the_task_not_scored(judge, cli, env, files, tmp_path):
    judge.bad_weights = True
    kept = tmp_path / "kept.jsonl"
    code, out, err = cli("eval", "race", "--reference", files[0], "--criteria-out", str(kept), "--json", env=env)
    assert code == 0, err
    got = json.loads(out)
    (row,) = got["methods"]
    assert (row["tasks"], row["no_criteria"], row["unreadable"], row["mean"]) == (0, 1, 1, None)
    assert got["unreadable"][0]["dimension"] == "criteria: weights"
    assert not kept.exists()

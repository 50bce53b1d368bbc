"""Agreement between annotators (annotation.results.agreement): Krippendorff's alpha against a hand
computation, the orientation of A and B, the per-annotator rate, and the store's votes."""

from __future__ import annotations

import pytest

from annotation.results import ratings
from annotation.results.agreement import inter_annotator, oriented, people_agreement
from data import arena
from data.arena import PairVote
from tests.annotation.conftest import rooms


def vote(annotator: str, task: int, choice: str, *, flipped: bool = False) -> PairVote:
    """A vote on task ``task``'s pair cot (output 10 + task) vs rat (output 20 + task); ``choice``
    is in the pair's sorted order (a: cot wins); ``flipped`` shows rat as A, so a and b swap."""
    if not flipped:
        return PairVote(annotator, task, "cot", "rat", 10 + task, 20 + task, choice)
    return PairVote(annotator, task, "rat", "cot", 20 + task, 10 + task, {"a": "b", "b": "a"}.get(choice, choice))


#: unit 1: a a a / unit 2: a b / unit 3: b b tie / unit 4: tie tie / unit 5: a (one annotator only).
TABLE = [
    vote("ana", 1, "a"), vote("bob", 1, "a", flipped=True), vote("cy", 1, "a"),
    vote("ana", 2, "a", flipped=True), vote("bob", 2, "b"),
    vote("ana", 3, "b"), vote("bob", 3, "b", flipped=True), vote("cy", 3, "tie", flipped=True),
    vote("bob", 4, "tie"), vote("cy", 4, "tie"),
    vote("ana", 5, "a"),
]


def test_alpha_matches_the_hand_computation():
    """Nominal alpha by hand, with the coincidence matrix (Krippendorff 2011, "Computing
    Krippendorff's alpha-reliability"). Units with two or more values: 1 (a a a), 2 (a b),
    3 (b b tie), 4 (tie tie); unit 5 has one value and is not pairable.

    Each unit u with m_u values adds, for every ordered pair of values of two different
    annotators, 1 / (m_u - 1) to o[c][k]:
      u1: 6 pairs (a,a) x 1/2          -> o_aa += 3
      u2: (a,b), (b,a) x 1             -> o_ab += 1, o_ba += 1
      u3: (b,b) x2, (b,tie) x2, (tie,b) x2, each x 1/2 -> o_bb += 1, o_b,tie += 1, o_tie,b += 1
      u4: (tie,tie) x2 x 1             -> o_tie,tie += 2
    Marginals: n_a = 3 + 1 = 4, n_b = 1 + 1 + 1 = 3, n_tie = 1 + 2 = 3; n = 10 (the 10 pairable
    values). Observed off-diagonal: o_ab + o_ba + o_b,tie + o_tie,b = 4.
    Expected off-diagonal: sum over c != k of n_c n_k = n^2 - sum n_c^2 = 100 - (16 + 9 + 9) = 66.
    alpha = 1 - (n - 1) * 4 / 66 = 1 - 36/66 = 30/66 = 5/11 = 0.4545...
    """
    result = inter_annotator(TABLE)
    assert result.units == 4 and result.votes == 10
    assert result.alpha == pytest.approx(5 / 11)


def test_per_annotator_agreement_with_the_others_majority():
    """ana: u1 others a,a -> a, agrees; u2 other b, disagrees; u3 others b,tie tie -> left out: 1 of 2.
    bob: u1 agrees; u2 (other a) disagrees; u3 left out (a b/tie tie); u4 agrees: 2 of 3.
    cy: u1 agrees; u3 others b,b -> b, cy tie disagrees; u4 agrees: 2 of 3."""
    by_name = {a.annotator: a for a in inter_annotator(TABLE).annotators}
    assert [(n, a.agreed, a.shared) for n, a in sorted(by_name.items())] == [("ana", 1, 2), ("bob", 2, 3), ("cy", 2, 3)]
    assert by_name["ana"].rate == 0.5 and by_name["bob"].rate == pytest.approx(2 / 3)


def test_a_and_b_are_oriented_to_the_same_output_order():
    shown_one_way = PairVote("ana", 1, "cot", "rat", 11, 21, "a")
    shown_the_other = PairVote("bob", 1, "rat", "cot", 21, 11, "b")
    assert oriented(shown_one_way) == oriented(shown_the_other)
    assert inter_annotator([shown_one_way, shown_the_other]).annotators[0].agreed == 1
    # read as shown, without orientation, the two would disagree; alpha is undefined (one value)
    assert inter_annotator([shown_one_way, shown_the_other]).alpha is None


def test_perfect_and_chance_disagreement():
    agree = [vote(name, t, c) for t, c in ((1, "a"), (2, "b"), (3, "tie")) for name in ("ana", "bob")]
    assert inter_annotator(agree).alpha == pytest.approx(1.0)
    opposed = [vote("ana", 1, "a"), vote("bob", 1, "b"), vote("ana", 2, "b"), vote("bob", 2, "a")]
    assert inter_annotator(opposed).alpha < 0


def test_a_later_vote_replaces_the_same_annotators_earlier_one():
    votes = [vote("ana", 1, "a"), vote("bob", 1, "b"), vote("ana", 1, "b"), vote("ana", 2, "a"), vote("bob", 2, "a")]
    result = inter_annotator(votes)
    assert result.votes == 4 and result.alpha == pytest.approx(1.0)


def test_no_shared_pair_means_no_alpha():
    result = inter_annotator([vote("ana", 1, "a"), vote("bob", 2, "b")])
    assert (result.alpha, result.units, result.summary()) == (None, 0, "")
    assert all(a.rate is None for a in result.annotators) and not result.annotators


def test_an_unknown_choice_is_refused():
    with pytest.raises(ValueError, match="choice must be one of"):
        inter_annotator([vote("ana", 1, "void")])


def test_from_the_store_with_corrections(local_app, tmp_path):
    """Imported votes on the same outputs by three annotators; a correction counts, a void removes."""
    texts = {"rat": "Owls are birds.", "cot": "Owls."}

    def record(who: str, task: str, a: str, b: str, choice: str) -> dict:
        return {"prompt": task, "kind": None, "task_set": None, "method_a": a, "method_b": b, "choice": choice,
                "annotator": who, "output_a": texts[a], "output_b": texts[b]}

    arena.import_votes(local_app.store, [
        record("ana", "Describe owls", "rat", "cot", "a"), record("bob", "Describe owls", "cot", "rat", "b"),
        record("cy", "Describe owls", "rat", "cot", "b"),
        record("ana", "Describe bats", "rat", "cot", "a"), record("bob", "Describe bats", "cot", "rat", "a"),
    ])
    before = people_agreement(local_app.store)
    assert (before.units, before.votes) == (2, 5)
    assert before.alpha == pytest.approx(inter_annotator(arena.pair_votes(local_app.store)).alpha)
    arena.correct_vote(local_app.store, 3, "a", "admin", "misread")  # cy now agrees on owls
    arena.correct_vote(local_app.store, 5, "void", "admin", "spam")  # bob's bats vote no longer counts
    after = people_agreement(local_app.store)
    assert (after.units, after.votes, after.alpha) == (1, 3, None)  # one unit, every vote "rat wins"
    assert {a.annotator: a.rate for a in after.annotators} == {"ana": 1.0, "bob": 1.0, "cy": 1.0}
    assert people_agreement(local_app.store, "nope").votes == 0
    assert "Krippendorff's alpha" in before.summary()


def test_leaderboard_shows_the_agreement(tmp_path, capsys):
    """``python app.py leaderboard``: a line under the table; with --json --agreement, agreement_people."""
    import json

    import app as app_module

    env = {"RAT_STUDIO_DB": str(tmp_path / "a.db")}
    votes = [{"task": f"Describe {animal}", "method_a": "rat", "method_b": "cot", "winner": w, "annotator": who,
              "output_a": "Long.", "output_b": "Short."}
             for animal, row in (("owls", "aab"), ("bats", "bbb"), ("cats", "ab-")) for who, w in zip(
                 ("ana", "bob", "cy"), row, strict=True) if w != "-"]
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(v) + "\n" for v in votes), encoding="utf-8")
    assert app_module.main(["votes", "import", str(tmp_path / "v.jsonl")], env=env) == 0
    rat_wins = {"a": "b", "b": "a"}  # shown rat as A; in the sorted order (cot, rat) rat winning is "b"
    expected = inter_annotator([vote(who, t, rat_wins[c]) for t, row in ((1, "aab"), (2, "bbb"), (3, "ab-"))
                                for who, c in zip(("ana", "bob", "cy"), row, strict=True) if c != "-"])
    assert expected.alpha is not None
    capsys.readouterr()
    assert app_module.main(["leaderboard", "--json", "--agreement", "--bootstrap", "5"], env=env) == 0
    shown = json.loads(capsys.readouterr().out)
    assert {r["method"] for r in shown["rows"]} == {"rat", "cot"}
    assert shown["agreement_people"]["alpha"] == pytest.approx(expected.alpha)
    assert shown["agreement_people"]["units"] == 3
    assert app_module.main(["leaderboard", "--bootstrap", "5"], env=env) == 0
    assert f"Krippendorff's alpha {expected.alpha:.2f} over 3 output pair(s)" in capsys.readouterr().out


def test_the_admins_annotators_table_says_the_agreement(tmp_path):
    """The admin's Leaderboard tab: the Annotators accordion says the alpha once two annotators share a
    pair, and each one's agreement with the others (read when opened: the summary line stays cheap)."""
    import gradio as gr

    from annotation.voting.arena import Arena
    from data.store import Store
    from ui import leaderboard

    store = Store(tmp_path / "lb.db")
    arena.import_votes(store, [{"prompt": "t", "kind": "writing", "task_set": "s", "method_a": "rat", "method_b": "cot",
                                "choice": c, "annotator": who, "output_a": "Long.", "output_b": "Short."}
                               for who, c in (("ana", "a"), ("bob", "b"))])
    with gr.Blocks():
        tab = leaderboard.build(rooms(Arena(store)), None)
    shown = tab.people()  # the Annotators accordion: the overall line, and each one's rate in the table
    expected = people_agreement(store)
    assert expected.units == 1 and expected.summary() in shown[tab.people_note]
    rows = {row[0]: row for row in shown[tab.people_table]}
    assert rows["ana"][-2] == rows["bob"][-2] == "0/1 (0%)", "each disagreed with the other's vote"
    assert "Krippendorff" not in tab.show("people", leaderboard.ALL)[tab.summary], "the summary stays cheap"


def test_judge_people_agreement_is_shown_per_method_pair(tmp_path, capsys):
    """``leaderboard``: the judge-people line is broken down by method pair once two pairs were compared;
    ``--json --agreement`` carries it as agreement_judge; the tab's summary says it too."""
    import json

    import app as app_module
    from ui.render_arena import agreement_text

    env = {"RAT_STUDIO_DB": str(tmp_path / "a.db")}
    votes = [{"task": "Describe owls", "method_a": a, "method_b": b, "winner": w, "annotator": who}
             for a, b, w, who in (("rat", "cot", "a", "ana"), ("rat", "cot", "a", "bob"), ("rat", "llm", "b", "ana"))]
    (tmp_path / "v.jsonl").write_text("".join(json.dumps(v) + "\n" for v in votes), encoding="utf-8")
    assert app_module.main(["votes", "import", str(tmp_path / "v.jsonl")], env=env) == 0
    wired = app_module.build(app_module.settings_from(app_module.build_parser().parse_args([]), env))
    task = wired.store.db.execute("select id from tasks").fetchone()[0]
    for a, b, choice in (("rat", "cot", "a"), ("rat", "llm", "a")):  # the judge: rat over both
        arena.add_judge_vote(wired.store, task_id=task, output_a=None, output_b=None, method_a=a, method_b=b,
                             choice=choice, n=2, detail={}, model="judge-model")
    wired.store.close()
    capsys.readouterr()
    assert app_module.main(["leaderboard", "--bootstrap", "5"], env=env) == 0
    out = capsys.readouterr().out
    assert "Judge and people agree on 2 of 3 people's votes (67%)." in out
    assert "  cot vs rat: 2 of 2 (100%)\n  llm vs rat: 0 of 1 (0%)" in out
    assert app_module.main(["leaderboard", "--json", "--agreement", "--bootstrap", "5"], env=env) == 0
    judged = json.loads(capsys.readouterr().out)["agreement_judge"]
    assert (judged["compared"], judged["agreed"]) == (3, 2)
    assert [(p["method_a"], p["method_b"], p["rate"]) for p in judged["by_method_pair"]] == [
        ("cot", "rat", 1.0), ("llm", "rat", 0.0)]
    shared = ratings.agreement([ratings.VoteRecord("rat", "cot", "a", 1), ratings.VoteRecord("rat", "llm", "b", 1)],
                               [ratings.VoteRecord("rat", "cot", "a", 1), ratings.VoteRecord("rat", "llm", "a", 1)])
    assert agreement_text(shared).endswith("(**50%**); by method pair: cot–rat 1/1 (100%), llm–rat 0/1 (0%).")

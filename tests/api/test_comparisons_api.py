"""``GET /v1/comparisons``: paired comparisons of two models on seeded episodes, with published known answers."""

from __future__ import annotations

import pytest

from evaluations.domain.comparisons import NO_DIFFERENCE
from tests.support.comparisons import HEURISTICS, RANDOM, add_outcomes, finished, rate, table

pytestmark = pytest.mark.django_db

AUTH = 1  # the API key with its organization, creator and the creator's membership (one statement)


def compare(client, a, b, **params):
    return client.get("/v1/comparisons", {"a": a, "b": b, **params})


def test_it_matches_the_published_cavo_example_and_counts_what_does_not_pair(api, tenant_a):
    """Fagerland, Lydersen & Laake (2014/2017) on Cavo et al. (2012): complete response before (A) and after (B)
    consolidation, 59/16/6/80 → Δ = −0.0621 with Newcombe's (−0.1186, −0.0046) and McNemar's exact P = 0.052479,
    so no detectable difference at 0.05 although the interval excludes 0."""
    before, after = finished(tenant_a, name="before"), finished(tenant_a, name="after")
    a_out, b_out = table(59, 16, 6, 80)
    add_outcomes(before, a_out + [(1000, True), (1001, False), (1002, True)])  # three seeds B never ran
    add_outcomes(after, b_out + [(2000, True), (2001, True), (3000, "error")])  # two seeds A never ran, one error
    r = compare(api, before.public_id, after.public_id)
    assert r.status_code == 200, r.content
    body = r.json()
    assert body["a"] == {"evaluation": before.public_id, "model": HEURISTICS, "name": "before", "status": "completed"}
    assert (body["paired"], body["unpaired"], body["errored"]) == (161, {"a": 3, "b": 2}, {"a": 0, "b": 1})
    assert "3 of A's and 2 of B's completed episodes have no partner" in body["message"]
    (task,) = body["tasks"]
    assert (task["task"], task["env"], task["taskId"]) == (
        "prebuilt/classic-control/classic/CartPole-v1", "prebuilt/classic-control", "classic/CartPole-v1")
    assert task["perturbation"] == "none" and task["paired"] == 161
    success = task["success"]
    assert success["table"] == {"bothSuccess": 59, "aOnly": 16, "bOnly": 6, "bothFail": 80}
    assert success["difference"] == pytest.approx(-0.0621, abs=5e-5)
    assert success["differenceCi"] == pytest.approx([-0.1186, -0.0046], abs=5e-5)
    assert success["pValue"] == pytest.approx(0.052479, abs=5e-7)
    assert task["basis"] == "success" and task["pAdjusted"] == pytest.approx(0.052479, abs=5e-7)
    assert task["verdict"] == NO_DIFFERENCE
    assert task["return"]["meanDifference"] == pytest.approx(-10 / 161) and task["return"]["pValue"] is not None
    assert body["overall"]["verdict"] == NO_DIFFERENCE and body["overall"]["paired"] == 161
    # A looser family-wise error rate turns the same test into a verdict.
    assert compare(api, before.public_id, after.public_id, alpha=0.1).json()["tasks"][0]["verdict"] == "worse"


def test_two_models_of_one_evaluation_and_the_eval_model_syntax(api, tenant_a):
    both = finished(tenant_a, models=(RANDOM, HEURISTICS))
    add_outcomes(both, rate(0.1, 30), model=RANDOM)
    add_outcomes(both, rate(0.9, 30), model=HEURISTICS)
    r = compare(api, f"{both.public_id}:{RANDOM}", f"{both.public_id}:{HEURISTICS}")
    assert r.status_code == 200, r.content
    body = r.json()
    assert (body["a"]["model"], body["b"]["model"]) == (RANDOM, HEURISTICS)
    assert body["paired"] == 30 and body["tasks"][0]["verdict"] == "better"
    assert body["tasks"][0]["success"]["difference"] == pytest.approx(0.8)
    assert compare(api, f"{both.public_id}:{HEURISTICS}", f"{both.public_id}:{RANDOM}").json()["overall"]["verdict"] == "worse"


@pytest.mark.parametrize("a, b, param, fragment", [
    ("{multi}", "{single}", "a", "has 2 models"),
    ("{single}", "{multi}:prebuilt/nope", "b", "has no model 'prebuilt/nope'"),
    ("{single}", "", "b", "is required"),
    (None, "{single}", "a", "is required"),
])
def test_a_side_that_names_no_single_model_is_a_400_naming_the_parameter(api, tenant_a, a, b, param, fragment):
    ids = {"multi": finished(tenant_a, models=(RANDOM, HEURISTICS)).public_id, "single": finished(tenant_a).public_id}
    params = {k: v.format(**ids) for k, v in (("a", a), ("b", b)) if v is not None}
    r = api.get("/v1/comparisons", params)
    assert r.status_code == 400, r.content
    error = r.json()["error"]
    assert error["details"][0]["path"] == param and fragment in error["message"]


@pytest.mark.parametrize("alpha", ["0", "0.6", "nan", "x", "-1"])
def test_alpha_must_lie_in_range(api, tenant_a, alpha):
    e = finished(tenant_a).public_id
    r = compare(api, e, e, alpha=alpha)
    assert r.status_code == 400 and r.json()["error"]["details"][0]["path"] == "alpha"


def test_another_organizations_evaluation_is_a_404(api, tenant_a, tenant_b):
    mine, theirs = finished(tenant_a), finished(tenant_b)
    for a, b in ((mine.public_id, theirs.public_id), (theirs.public_id, mine.public_id), ("eval_nope", mine.public_id),
                 (f"{theirs.public_id}:{HEURISTICS}", mine.public_id)):
        r = compare(api, a, b)
        assert r.status_code == 404, (a, b, r.content)
        assert r.json()["error"]["message"] == f"evaluation {theirs.public_id if 'nope' not in a else 'eval_nope'} not found"


def test_it_says_so_when_nothing_pairs(api, tenant_a):
    a, b = finished(tenant_a), finished(tenant_a)
    add_outcomes(a, rate(0.5, 4))
    add_outcomes(b, rate(0.5, 5, start=100))
    body = compare(api, a.public_id, b.public_id).json()
    assert body["paired"] == 0 and body["unpaired"] == {"a": 4, "b": 5}
    assert body["message"].startswith("Nothing pairs")
    (task,) = body["tasks"]
    assert task["verdict"] is None and task["pValue"] is None and "No episodes pair" in task["message"]
    assert body["overall"]["verdict"] is None and body["overall"]["success"]["difference"] is None


def test_tasks_and_perturbations_pair_separately_with_holm_across_tasks(api, tenant_a):
    tasks = ("classic/CartPole-v1", "classic/Acrobot-v1")
    a, b = finished(tenant_a, task_ids=tasks), finished(tenant_a, models=(RANDOM,), task_ids=tasks)
    for t in tasks:
        add_outcomes(a, rate(0.9, 30), task_id=t)
    add_outcomes(b, rate(0.9, 30), task_id=tasks[0])
    add_outcomes(b, rate(0.1, 30), task_id=tasks[1])
    body = compare(api, a.public_id, b.public_id).json()
    verdicts = {t["taskId"]: t["verdict"] for t in body["tasks"]}
    assert verdicts == {"classic/CartPole-v1": NO_DIFFERENCE, "classic/Acrobot-v1": "worse"}
    worse = next(t for t in body["tasks"] if t["taskId"] == tasks[1])
    assert worse["pAdjusted"] == pytest.approx(min(1.0, 2 * worse["pValue"]))  # Holm over two tested tasks


def test_query_count_does_not_grow_with_episodes(api, tenant_a, django_assert_num_queries):
    a, b = finished(tenant_a), finished(tenant_a, models=(RANDOM,))
    add_outcomes(a, rate(0.5, 10))
    add_outcomes(b, rate(0.5, 10))
    api.get("/v1/me")  # writes last_used_at once
    url = f"/v1/comparisons?a={a.public_id}&b={b.public_id}"
    with django_assert_num_queries(AUTH + 6):  # per side: the evaluation, its models, its episodes
        assert api.get(url).status_code == 200
    add_outcomes(a, rate(0.5, 300, start=10))
    add_outcomes(b, rate(0.5, 300, start=10))
    with django_assert_num_queries(AUTH + 6):
        assert api.get(url).json()["paired"] == 310

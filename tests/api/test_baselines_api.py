"""``/v1/baselines/{tag}`` and the ``regression`` of ``GET /v1/evaluations/{id}``: set, replace, unset, who may, and
verdicts that flip when the candidate is swapped for a worse model's episodes."""

from __future__ import annotations

import json

import pytest

from evaluations.choices import EvaluationStatus
from evaluations.models import Baseline
from tests.support.comparisons import HEURISTICS, RANDOM, add_outcomes, finished, rate

pytestmark = pytest.mark.django_db

NIGHTLY = {"suite": "nightly"}
AUTH = 1  # the API key with its organization, creator and the creator's membership (one statement)


def put(client, tag, evaluation):
    return client.put(f"/v1/baselines/{tag}", data=json.dumps({"evaluation": evaluation}), content_type="application/json")


@pytest.fixture
def baseline(tenant_a):
    """Yesterday's nightly: 90 % on CartPole and Acrobot over 40 seeds each."""
    tasks = ("classic/CartPole-v1", "classic/Acrobot-v1")
    evaluation = finished(tenant_a, tags=NIGHTLY, name="nightly 1", age_minutes=60, task_ids=tasks)
    for t in tasks:
        add_outcomes(evaluation, rate(0.9, 40), task_id=t)
    return evaluation


def candidate(tenant, *, acrobot_rate: float, model=HEURISTICS, tags=NIGHTLY, **kwargs):
    tasks = ("classic/CartPole-v1", "classic/Acrobot-v1")
    evaluation = finished(tenant, models=(model,), tags=tags, task_ids=tasks, **kwargs)
    add_outcomes(evaluation, rate(0.9, 40), task_id=tasks[0])
    add_outcomes(evaluation, rate(acrobot_rate, 40), task_id=tasks[1])
    return evaluation


class TestBaselines:
    def test_set_read_replace_list_and_unset(self, api, tenant_a, baseline):
        r = put(api, "suite:nightly", baseline.public_id)
        assert r.status_code == 201, r.content
        assert r.json()["tag"] == "suite:nightly" and r.json()["evaluation"] == baseline.public_id
        assert r.json()["createdBy"] == tenant_a.user.username
        assert api.get("/v1/baselines/suite:nightly").json()["evaluationName"] == "nightly 1"
        newer = finished(tenant_a, tags=NIGHTLY)
        assert put(api, "suite:nightly", newer.public_id).status_code == 200  # replaced, still one
        assert [b["evaluation"] for b in api.get("/v1/baselines").json()["items"]] == [newer.public_id]
        r = api.delete("/v1/baselines/suite:nightly")
        assert r.status_code == 200 and r.json()["evaluation"] == newer.public_id
        assert api.get("/v1/baselines/suite:nightly").status_code == 404
        assert api.delete("/v1/baselines/suite:nightly").status_code == 404

    def test_a_tag_value_may_hold_colons_and_slashes(self, api, tenant_a):
        evaluation = finished(tenant_a, tags={"ckpt": "repo/x:v2"})
        assert put(api, "ckpt:repo/x:v2", evaluation.public_id).status_code == 201
        assert Baseline.objects.get().tag == "ckpt:repo/x:v2"

    def test_viewers_read_but_cannot_set_or_unset(self, api, tenant_a, baseline):
        viewer = tenant_a.client(tenant_a.viewer_key)
        assert put(viewer, "suite:nightly", baseline.public_id).status_code == 403
        put(api, "suite:nightly", baseline.public_id)
        assert viewer.get("/v1/baselines/suite:nightly").status_code == 200
        assert viewer.delete("/v1/baselines/suite:nightly").status_code == 403
        assert Baseline.objects.count() == 1

    @pytest.mark.parametrize("tag, edit, status, path", [
        ("suite:weekly", {}, 409, "evaluation"),  # the evaluation is not tagged suite:weekly
        ("nocolon", {}, 400, "tag"),
        ("suite:nightly", {"status": EvaluationStatus.RUNNING}, 409, None),
    ])
    def test_refusals(self, api, tenant_a, tag, edit, status, path):
        evaluation = finished(tenant_a, tags=NIGHTLY, status=edit.get("status", EvaluationStatus.COMPLETED))
        r = put(api, tag, evaluation.public_id)
        assert r.status_code == status, r.content
        if path:
            assert r.json()["error"]["details"][0]["path"] == path
        assert Baseline.objects.count() == 0

    def test_a_bad_body_is_a_400(self, api, baseline):
        r = api.put("/v1/baselines/suite:nightly", data="[]", content_type="application/json")
        assert r.status_code == 400
        r = api.put("/v1/baselines/suite:nightly", data="{}", content_type="application/json")
        assert r.status_code == 400 and r.json()["error"]["details"][0]["path"] == "evaluation"
        r = api.put("/v1/baselines/suite:nightly", data='{"evaluation": 5}', content_type="application/json")
        assert r.status_code == 400 and r.json()["error"]["details"][0]["path"] == "evaluation"  # not "eval 5 not found"

    def test_another_organizations_evaluation_and_baselines_are_not_found(self, api, tenant_a, tenant_b, baseline):
        assert put(tenant_b.client(), "suite:nightly", baseline.public_id).status_code == 404
        put(api, "suite:nightly", baseline.public_id)
        assert tenant_b.client().get("/v1/baselines/suite:nightly").status_code == 404
        assert tenant_b.client().delete("/v1/baselines/suite:nightly").status_code == 404
        assert tenant_b.client().get("/v1/baselines").json()["items"] == []
        assert Baseline.objects.count() == 1


class TestRegressionVerdicts:
    def test_the_verdict_flips_when_the_candidate_is_swapped_for_a_worse_model(self, api, tenant_a, baseline):
        put(api, "suite:nightly", baseline.public_id)
        same = candidate(tenant_a, acrobot_rate=0.9)
        worse = candidate(tenant_a, acrobot_rate=0.2, model=RANDOM)
        kept = api.get(f"/v1/evaluations/{same.public_id}").json()["regression"]
        assert (kept["status"], kept["regressed"], kept["comparable"]) == ("no regression", False, True)
        (verdict,) = kept["baselines"]
        assert verdict["tag"] == "suite:nightly" and verdict["baseline"] == baseline.public_id
        assert verdict["regressions"] == [] and verdict["paired"] == 80
        assert {t["verdict"] for t in verdict["tasks"]} == {"no detectable difference"}
        swapped = api.get(f"/v1/evaluations/{worse.public_id}").json()["regression"]
        assert (swapped["status"], swapped["regressed"]) == ("regressed", True)
        (verdict,) = swapped["baselines"]
        ((task, diff),) = [(r["task"], r["difference"]) for r in verdict["regressions"]]
        assert task == "prebuilt/classic-control/classic/Acrobot-v1" and diff == pytest.approx(-0.7)
        by_task = {t["taskId"]: (t["model"], t["verdict"], t["successRateA"], t["successRateB"]) for t in verdict["tasks"]}
        assert by_task == {"classic/CartPole-v1": (RANDOM, "no detectable difference", 0.9, 0.9),
                           "classic/Acrobot-v1": (RANDOM, "worse", 0.9, 0.2)}

    def test_only_later_completed_evaluations_with_the_tag_get_a_verdict(self, api, tenant_a, baseline):
        put(api, "suite:nightly", baseline.public_id)
        older = candidate(tenant_a, acrobot_rate=0.2, age_minutes=120)
        running = candidate(tenant_a, acrobot_rate=0.2, status=EvaluationStatus.RUNNING)
        untagged = candidate(tenant_a, acrobot_rate=0.2, tags={"suite": "weekly"})
        for e in (older, running, untagged):
            assert api.get(f"/v1/evaluations/{e.public_id}").json()["regression"] is None, e
        body = api.get(f"/v1/evaluations/{baseline.public_id}").json()
        assert body["regression"] is None and body["baselineFor"] == ["suite:nightly"]

    def test_nothing_pairing_is_not_comparable(self, api, tenant_a, baseline):
        put(api, "suite:nightly", baseline.public_id)
        other_seeds = finished(tenant_a, tags=NIGHTLY)
        add_outcomes(other_seeds, rate(0.1, 40, start=500))
        regression = api.get(f"/v1/evaluations/{other_seeds.public_id}").json()["regression"]
        assert (regression["status"], regression["regressed"], regression["comparable"]) == ("not comparable", False, False)
        assert regression["baselines"][0]["message"].startswith("Nothing pairs")

    def test_each_model_of_a_multi_model_candidate_meets_the_baselines_model(self, api, tenant_a, baseline):
        put(api, "suite:nightly", baseline.public_id)
        both = finished(tenant_a, models=(RANDOM, HEURISTICS), tags=NIGHTLY, task_ids=("classic/Acrobot-v1",))
        add_outcomes(both, rate(0.1, 40), model=RANDOM)
        add_outcomes(both, rate(0.9, 40), model=HEURISTICS)
        (verdict,) = api.get(f"/v1/evaluations/{both.public_id}").json()["regression"]["baselines"]
        rows = {t["model"]: (t["task"], t["verdict"]) for t in verdict["tasks"] if t["taskId"] == "classic/Acrobot-v1"}
        assert rows == {
            RANDOM: (f"{RANDOM} · prebuilt/classic-control/classic/Acrobot-v1", "worse"),
            HEURISTICS: (f"{HEURISTICS} · prebuilt/classic-control/classic/Acrobot-v1", "no detectable difference"),
        }
        assert verdict["regressed"] is True

    def test_detail_queries_stay_constant_in_episodes(self, api, tenant_a, baseline, django_assert_num_queries):
        put(api, "suite:nightly", baseline.public_id)
        later = candidate(tenant_a, acrobot_rate=0.9)
        api.get("/v1/me")
        url = f"/v1/evaluations/{later.public_id}"
        # evaluation; workloads; baselines of its tags; both evaluations' episodes (cache miss)
        with django_assert_num_queries(AUTH + 4):
            assert api.get(url).json()["regression"]["regressed"] is False
        with django_assert_num_queries(AUTH + 3):  # cached
            api.get(url)
        bigger = candidate(tenant_a, acrobot_rate=0.9)
        add_outcomes(bigger, rate(0.9, 400, start=40))
        with django_assert_num_queries(AUTH + 4):
            assert api.get(f"/v1/evaluations/{bigger.public_id}").json()["regression"]["comparable"] is True

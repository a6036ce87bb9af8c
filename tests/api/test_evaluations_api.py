"""Contract tests for /v1 evaluations (spec/PLATFORM_API.md §1, §3.9–§3.16)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from evaluations.choices import EvaluationStatus, ShardStatus
from evaluations.models import Episode, Evaluation, Shard, WorkerProcess, Workload
from tests.conftest import CARTPOLE_TASK, cartpole_request

pytestmark = pytest.mark.django_db


def post_json(client, path, body, **extra):
    raw = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post(path, data=raw, content_type="application/json", **extra)


def error_of(response):
    body = response.json()
    assert set(body) == {"error"}, body
    assert {"code", "message", "details"} <= set(body["error"])
    return body["error"]


# ----------------------------------------------------------------- auth
class TestAuthentication:
    def test_it_returns_401_without_credentials(self, client):
        r = client.get("/v1/evaluations")
        assert r.status_code == 401
        assert error_of(r)["code"] == "unauthenticated"
        assert r["WWW-Authenticate"].startswith("Bearer")

    @pytest.mark.parametrize("header", ["Bearer rlm_notarealkeynotarealkeynotarealkey", "Basic Zm9vOmJhcg==", "Bearer "])
    def test_it_returns_401_for_bad_credentials(self, client, tenant_a, header):
        r = client.get("/v1/evaluations", HTTP_AUTHORIZATION=header)
        assert r.status_code == 401
        error_of(r)

    def test_revoked_and_expired_keys_get_401(self, tenant_a):
        tenant_a.api_key.revoked_at = timezone.now()
        tenant_a.api_key.save()
        r = tenant_a.client().get("/v1/evaluations")
        assert r.status_code == 401 and "revoked" in error_of(r)["message"]
        from tests.conftest import make_api_key

        key, _ = make_api_key(tenant_a.org, tenant_a.user, expires_at=timezone.now() - timedelta(seconds=1))
        r = tenant_a.client(key).get("/v1/evaluations")
        assert r.status_code == 401 and "expired" in error_of(r)["message"]

    def test_it_records_last_use(self, tenant_a):
        assert tenant_a.api_key.last_used_at is None
        assert tenant_a.client().get("/v1/evaluations").status_code == 200
        tenant_a.api_key.refresh_from_db()
        assert tenant_a.api_key.last_used_at is not None

    def test_a_viewer_may_read_but_not_submit_403(self, tenant_a):
        viewer = tenant_a.client(tenant_a.viewer_key)
        assert viewer.get("/v1/evaluations").status_code == 200
        r = post_json(viewer, "/v1/evaluations", cartpole_request())
        assert r.status_code == 403
        assert error_of(r)["code"] == "forbidden"
        assert Evaluation.objects.count() == 0

    def test_info_needs_no_credentials_and_uses_the_configured_base_url(self, client, settings):
        settings.PUBLIC_URL = "https://evals.example.org"
        r = client.get("/v1/info", HTTP_HOST="attacker.example")
        assert r.status_code == 200
        assert r.json()["urls"]["dashboard"] == "https://evals.example.org"


# --------------------------------------------------------------- routing
class TestRouting:
    def test_trailing_slash_is_not_redirected(self, api):
        from rest_framework.test import APIClient

        csrf_checking = APIClient(enforce_csrf_checks=True)
        r = post_json(csrf_checking, "/v1/evaluations/", cartpole_request())
        assert r.status_code == 404 and r["Content-Type"] == "application/json"
        r = post_json(api, "/v1/evaluations/", cartpole_request())
        assert r.status_code == 404
        assert error_of(r)["code"] == "not_found"
        assert Evaluation.objects.count() == 0

    def test_unknown_api_path_is_a_json_404(self, api):
        r = api.get("/v1/nope")
        assert r.status_code == 404 and error_of(r)

    def test_responses_are_json_for_accept_star(self, api):
        r = api.get("/v1/evaluations", HTTP_ACCEPT="*/*")
        assert r["Content-Type"] == "application/json"

    def test_method_not_allowed_uses_the_envelope(self, api):
        r = api.delete("/v1/evaluations")
        assert r.status_code == 405 and error_of(r)


# ------------------------------------------------------------ validation
BAD_REQUESTS = [
    ("[]", "$", "must be a JSON object"),
    ("null", "$", "must be a JSON object"),
    ("{not json", "$", "not valid JSON"),
    ({"models": [{"model": "prebuilt/random"}]}, "tasks", "required"),
    ({"models": [{"model": "prebuilt/random"}], "tasks": []}, "tasks", "empty"),
    ({"tasks": [CARTPOLE_TASK]}, "models", "required"),
    (cartpole_request(models=[]), "models", "empty"),
    (cartpole_request(models=[{"model": "prebuilt/nope"}]), "models[0].model", 'unknown model "prebuilt/nope"'),
    (cartpole_request(models=[{"model": "prebuilt/classic-control"}]), "models[0].model", "is an env, not a model"),
    (cartpole_request(models=[{"model": "Not A Ref!"}]), "models[0].model", '"Not A Ref!" has whitespace in its name "Not A Ref!": a name holds lowercase letters'),
    (cartpole_request(models=[{"model": "Prebuilt/random"}]), "models[0].model", "names are lowercase (prebuilt/random)"),
    (cartpole_request(models=[{"model": "prebuilt/ppo"}]), "models[0].model", "needs a checkpoint"),
    (cartpole_request(models=[{"model": "prebuilt/ppo/mountaincar"}]), "models[0].model", 'no checkpoint "mountaincar"'),
    (cartpole_request(models=[{"model": "prebuilt/random:v9"}]), "models[0].model", 'no tag "v9"'),
    (cartpole_request(models=["prebuilt/ppo/cartpole"], tasks=[{**CARTPOLE_TASK, "taskId": "classic/MountainCar-v0"}]),
     "models[0]", "incompatible with tasks[0] (prebuilt/classic-control classic/MountainCar-v0): it was trained for classic/CartPole-v1"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "env": "x/y"}]), "tasks[0].env", 'unknown environment "x/y"'),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "env": "prebuilt/random"}]), "tasks[0].env", "is a model, not an env"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "taskId": "classic/Nope-v0"}]), "tasks[0].taskId", 'unknown scenario "classic/Nope-v0"'),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": 0}]), "tasks[0].episodes", "greater than or equal to 1"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": -3}]), "tasks[0].episodes", "greater than or equal to 1"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": 10001}]), "tasks[0].episodes", "at most 10000"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": "5"}]), "tasks[0].episodes", "valid integer"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": True}]), "tasks[0].episodes", "valid integer"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": 2.5}]), "tasks[0].episodes", "valid integer"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "env": 5}]), "tasks[0].env", "Must be a string"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "workers": 0}]), "tasks[0].workers", "greater than or equal to 1"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "maxSteps": 0}]), "tasks[0].maxSteps", "greater than or equal to 1"),
    (cartpole_request(tasks=[{**CARTPOLE_TASK, "perturbation": "gravity-x2"}]), "tasks[0].perturbation", "unknown perturbation"),
    (cartpole_request(tasks=[CARTPOLE_TASK, {**CARTPOLE_TASK, "seed": -1}]), "tasks[1].seed", "greater than or equal to 0"),
    (cartpole_request(tasks={"env": "x"}), "tasks", "Expected a list"),
    (cartpole_request(tags={"team": 5}), "tags.team", "Must be a string"),
    (cartpole_request(tags={"a:b": "c"}), "tags.a:b", 'contain no ":"'),
    (cartpole_request(tags={"k" * 101: "c"}), "tags." + "k" * 101, "1–100 characters"),
    (cartpole_request(tags={f"t{i}": "v" for i in range(51)}), "tags", "at most 50 tags"),
    (cartpole_request(timeoutSeconds=1e308), "timeoutSeconds", "less than or equal to 2592000"),
    (cartpole_request(models=[{"model": "prebuilt/random", "envVars": {"A=B": "x"}}]), "models[0].envVars.A=B", "not a valid environment variable name"),
    (cartpole_request(models=[{"model": "prebuilt/random", "envVars": {"": "x"}}]), "models[0].envVars.", "not a valid environment variable name"),
    (cartpole_request(models=[{"model": "prebuilt/random", "envVars": {"A": "x\u0000y"}}]), "models[0].envVars.A", "NUL character"),
    ('{"tasks": [], "metadata": {"k": "\\ud800"}}', "metadata.k", "unpaired surrogate"),
    ('{"tasks": [], "tags": {"\\ud800": "v"}}', "tags", "unpaired surrogate"),
    ('{"tasks": [], "metadata": ' + '{"a": ' * 40 + '1' + '}' * 41, "metadata" + ".a" * 32, "deeper than 32"),
    ('{"tasks": [], "metadata": ' + '[' * 2000 + ']' * 2000 + '}', "$", "deeper than 32"),
    ('{"tasks": [], "metadata": {"n": ' + '9' * 5000 + '}}', "metadata.n", "is a whole number of 5000 digits"),
    ('{"tasks": [], "metadata": {"n": NaN}}', "$", "not acceptable JSON"),
    # A repeated key: the stored raw request would mean different things to different readers (a field case).
    ('{"name": "a", "tasks": [], "name": "b"}', "$", 'the key "name" appears twice in one object'),
    ('{"tasks": [{"env": "x", "episodes": 1, "episodes": 500}]}', "$", 'the key "episodes" appears twice'),
    (cartpole_request(tags=["x"]), "tags", "Expected an object"),
    (cartpole_request(metadata="label"), "metadata", "Expected an object"),
    (cartpole_request(timeoutSeconds="soon"), "timeoutSeconds", "valid number"),
    (cartpole_request(models=[{"model": "prebuilt/random", "envVars": {"A": 1}}]), "models[0].envVars.A", "Must be a string"),
    ({**cartpole_request(), "model": {"model": "prebuilt/random"}}, "model", "not both"),
    (cartpole_request(models=[{"model": "prebuilt/random"}, {"model": "prebuilt/agent-endpoint"}]), "models[1].model",
     "POST /agents/evaluations/run"),
]


class TestValidation:
    @pytest.mark.parametrize("body,path,fragment", BAD_REQUESTS)
    @pytest.mark.parametrize("endpoint", ["/v1/evaluations", "/v1/evaluation-previews"])
    def test_bad_requests_get_400_with_the_json_path(self, api, body, path, fragment, endpoint):
        r = post_json(api, endpoint, body)
        assert r.status_code == 400, r.content
        err = error_of(r)
        assert any(d["path"] == path and fragment in d["message"] for d in err["details"]), err
        assert err["message"].startswith(f"{path}: ") or path == "$"
        assert r["Content-Type"] == "application/json"
        assert Evaluation.objects.count() == 0 and Workload.objects.count() == 0 and Shard.objects.count() == 0

    def test_every_problem_is_reported(self, api):
        body = cartpole_request(
            models=[{"model": "prebuilt/nope"}], tasks=[{**CARTPOLE_TASK, "env": "x/y"}, {**CARTPOLE_TASK, "taskId": "a/b"}]
        )
        err = error_of(post_json(api, "/v1/evaluations", body))
        assert {d["path"] for d in err["details"]} == {"models[0].model", "tasks[0].env", "tasks[1].taskId"}
        assert "(and 2 more)" in err["message"]

    def test_workload_cap(self, api, settings):
        settings.RLMESH_MAX_WORKLOADS_PER_EVALUATION = 3
        body = cartpole_request(models=["prebuilt/random", "prebuilt/classic-control-heuristics"], tasks=[CARTPOLE_TASK, CARTPOLE_TASK])
        err = error_of(post_json(api, "/v1/evaluation-previews", body))
        assert "4 workloads; at most 3" in err["message"]

    def test_total_episode_cap(self, api, settings):
        settings.RLMESH_MAX_EPISODES_PER_EVALUATION = 5
        body = cartpole_request(models=["prebuilt/random", "prebuilt/classic-control-heuristics"])
        err = error_of(post_json(api, "/v1/evaluations", body))
        assert err["details"][0]["path"] == "tasks" and "6 episodes in total" in err["details"][0]["message"]

    def test_oversized_body_gets_413(self, api, settings):
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
        body = cartpole_request(metadata={"blob": "x" * 2000})
        r = post_json(api, "/v1/evaluations", body)
        assert r.status_code == 413 and error_of(r)["code"] == "payload_too_large"
        assert Evaluation.objects.count() == 0

    def test_unknown_fields_warn_but_do_not_fail(self, api):
        body = cartpole_request(colour="blue", maxBatchSize=8)
        body["tasks"][0]["difficulty"] = "hard"
        r = post_json(api, "/v1/evaluation-previews", body)
        assert r.status_code == 200
        warnings = r.json()["warnings"]
        assert 'unknown field "colour" was ignored' in warnings
        assert 'unknown field "tasks[0].difficulty" was ignored' in warnings
        assert any("maxBatchSize" in w for w in warnings)

    def test_many_unknown_fields_make_a_bounded_warning_list(self, api):
        """A field case: 80,000 unknown fields in an 858 KB body were stored as 80,000 warnings, making every
        later read of the evaluation megabytes long. Ten are named, the rest counted; a long key is cut."""
        body = cartpole_request(**{f"k{i}": 1 for i in range(3000)}, **{"x" * 5000: 1})
        body["tasks"][0].update({f"u{i}": 1 for i in range(2000)})
        r = post_json(api, "/v1/evaluations", body)
        assert r.status_code == 201, r.content
        warnings = Evaluation.objects.get(public_id=r.json()["id"]).warnings
        unknown = [w for w in warnings if "unknown field" in w]
        assert unknown[:2] == ['unknown field "k0" was ignored', 'unknown field "k1" was ignored']
        assert unknown[-1] == "4,991 more unknown fields were ignored" and len(unknown) == 11
        assert len(json.dumps(warnings)) < 2000
        body = cartpole_request(**{"y" * 5000: 1})
        (long_one,) = post_json(api, "/v1/evaluation-previews", body).json()["warnings"][:1]
        assert long_one == f'unknown field "{"y" * 100}…" was ignored'

    def test_an_unknown_field_is_quoted_so_it_reads_as_one_name(self, api):
        """A field case: a key with a quote, a newline or a right-to-left override was stored raw in a warning
        other members read (in the CLI too)."""
        body = cartpole_request(**{'a"b': 1, "x\ny": 1, "ab\u202ecd": 1})
        warnings = post_json(api, "/v1/evaluation-previews", body).json()["warnings"]
        assert 'unknown field "a\\"b" was ignored' in warnings
        assert 'unknown field "x\\u000ay" was ignored' in warnings
        assert 'unknown field "ab\\u202ecd" was ignored' in warnings


# --------------------------------------------------------------- preview
def test_preview_sizes_the_request_and_writes_nothing(api):
    body = cartpole_request(models=["prebuilt/random", {"model": "prebuilt/ppo/cartpole"}])
    body["tasks"][0].update(episodes=250, workers=2, seed=7)
    r = post_json(api, "/v1/evaluation-previews", body)
    assert r.status_code == 200
    data = r.json()
    assert data["valid"] is True and len(data["workloads"]) == 2
    assert data["workloads"][0] == {
        "model": "prebuilt/random", "env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1",
        "episodes": 250, "workers": 2, "shards": 3, "seeds": [7, 256],
    }
    assert data["estimates"]["episodes"] == 500 and data["estimates"]["shards"] == 6
    assert Evaluation.objects.count() == 0


# ---------------------------------------------------------------- submit
class TestSubmit:
    def test_it_creates_the_evaluation_and_enqueues_each_shard_on_commit(self, api, tenant_a, django_capture_on_commit_callbacks, monkeypatch, live_worker):
        sent = []
        monkeypatch.setattr("evaluations.dispatch._send", lambda name, shard_id: sent.append(shard_id))
        body = cartpole_request(name="smoke", tags={"team": "robotics"}, metadata={"evaluationLabel": "lbl"})
        body["tasks"][0].update(episodes=5, workers=2, seed=3)
        raw = json.dumps(body, indent=3)  # odd formatting must survive byte for byte
        with django_capture_on_commit_callbacks(execute=True):
            r = api.post("/v1/evaluations", data=raw, content_type="application/json")
        assert r.status_code == 201
        data = r.json()
        assert data["id"].startswith("eval_") and data["status"] == "queued"
        assert data["progress"] == {"completedEpisodes": 0, "totalEpisodes": 5, "erroredEpisodes": 0}
        assert data["warnings"] == [] and data["tags"] == {"team": "robotics"} and data["metadata"] == {"evaluationLabel": "lbl"}
        evaluation = Evaluation.objects.get(public_id=data["id"])
        assert evaluation.organization == tenant_a.org and evaluation.creator == tenant_a.user
        assert evaluation.request_raw == raw
        shards = list(Shard.objects.filter(evaluation=evaluation).order_by("index"))
        assert [(s.start, s.stop) for s in shards] == [(0, 3), (3, 5)]
        assert sorted(sent) == sorted(s.pk for s in shards)
        task_cfg = evaluation.config["tasks"][0]
        assert task_cfg["seeds"] == [3, 4, 5, 6, 7]
        assert task_cfg["digest"].startswith("sha256:") and evaluation.config["models"][0]["digest"].startswith("sha256:")

    def test_single_model_shorthand_and_string_models(self, api):
        body = {"model": "prebuilt/random", "tasks": [CARTPOLE_TASK]}
        assert post_json(api, "/v1/evaluations", body).status_code == 201
        body = {"model": {"model": "prebuilt/ppo/cartpole"}, "tasks": [CARTPOLE_TASK]}
        assert post_json(api, "/v1/evaluations", body).status_code == 201

    def test_keys_in_any_order_are_fine(self, api):
        raw = json.dumps(cartpole_request(name="z"), sort_keys=True)
        assert api.post("/v1/evaluations", data=raw, content_type="application/json").status_code == 201

    def test_name_is_absent_when_not_given_so_the_cli_shows_the_label(self, api):
        data = post_json(api, "/v1/evaluations", cartpole_request(metadata={"evaluationLabel": "L"})).json()
        assert "name" not in data and data["metadata"]["evaluationLabel"] == "L"


# ------------------------------------------------------------------- get
def submit(client, **overrides) -> str:
    r = post_json(client, "/v1/evaluations", cartpole_request(**overrides))
    assert r.status_code == 201, r.content
    return r.json()["id"]


def test_get_returns_request_config_and_workloads(api):
    eid = submit(api, name="detail")
    r = api.get(f"/v1/evaluations/{eid}")
    assert r.status_code == 200
    data = r.json()
    assert data["request"] == cartpole_request(name="detail")
    assert data["config"]["tasks"][0]["taskId"] == "classic/CartPole-v1"
    assert data["workloads"][0]["model"] == "prebuilt/classic-control-heuristics"
    assert data["workloads"][0]["completedEpisodes"] == 0
    assert data["dashboardUrl"].endswith(f"/evaluations/{eid}")


def test_another_organizations_evaluation_is_a_404(tenant_a, tenant_b):
    eid = submit(tenant_a.client())
    other = tenant_b.client()
    for path in (f"/v1/evaluations/{eid}", f"/v1/evaluations/{eid}/scores", f"/v1/evaluations/{eid}/metrics",
                 f"/v1/evaluations/{eid}/logs", f"/v1/evaluations/{eid}/episodes"):
        r = other.get(path)
        assert r.status_code == 404 and error_of(r)["message"] == f"evaluation {eid} not found"
    r = post_json(other, f"/v1/evaluations/{eid}/cancellations", {})
    assert r.status_code == 404
    assert other.get("/v1/evaluations").json()["items"] == []
    assert Evaluation.objects.get(public_id=eid).status == "queued"


# ------------------------------------------------------------------ list
class TestList:
    def test_pagination_reaches_the_last_page_with_a_null_cursor(self, api):
        ids = [submit(api, name=f"e{i}") for i in range(5)]
        seen, cursor, pages = [], None, 0
        while True:
            params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = api.get("/v1/evaluations", params).json()
            pages += 1
            seen += [item["id"] for item in page["items"]]
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert pages == 3 and seen == list(reversed(ids))

    def test_items_carry_what_the_cli_prints(self, api):
        submit(api, name="x")
        (item,) = api.get("/v1/evaluations").json()["items"]
        assert {"id", "status", "progress", "metadata", "tags", "createdAt", "updatedAt"} <= set(item)
        assert isinstance(item["progress"]["completedEpisodes"], int)

    def test_filters_status_q_and_repeated_tags(self, api):
        a = submit(api, name="LIBERO smoke", tags={"team": "research", "a b": "c&d"})
        b = submit(api, name="other", tags={"team": "research"})
        c = submit(api, metadata={"evaluationLabel": "libero label"}, tags={"team": "infra"})
        Evaluation.objects.filter(public_id=b).update(status=EvaluationStatus.COMPLETED)

        def ids(**params):
            return {i["id"] for i in api.get("/v1/evaluations", params).json()["items"]}

        assert ids(status="completed") == {b}
        r = api.get("/v1/evaluations?status=completed&status=queued")
        assert {i["id"] for i in r.json()["items"]} == {a, b, c}
        assert ids(q="libero") == {a, c}
        assert ids(tag="team:research") == {a, b}
        r = api.get("/v1/evaluations?tag=team%3Aresearch&tag=a+b%3Ac%26d")
        assert {i["id"] for i in r.json()["items"]} == {a}
        assert ids(tag="team:nobody") == set()

    @pytest.mark.parametrize("params,path", [("status=bogus", "status"), ("tag=novalue", "tag"), ("limit=ten", "limit"), ("cursor=%%%", "cursor")])
    def test_bad_filters_are_400(self, api, params, path):
        r = api.get(f"/v1/evaluations?{params}")
        assert r.status_code == 400
        assert error_of(r)["details"][0]["path"] == path

    def test_limit_is_at_least_one_and_large_ones_are_clamped(self, api):
        """Field case: ``limit=0`` returned one item. Zero, negative or not a number is a 400 naming the range;
        above the maximum a page holds the maximum (the CLI sends --limit as given, even 0 or 1000)."""
        submit(api)
        submit(api)
        for bad in ("0", "-3", "ten", "1.5"):
            r = api.get(f"/v1/evaluations?limit={bad}")
            assert r.status_code == 400, bad
            assert r.json()["error"]["details"][0]["path"] == "limit" and "from 1 to 500" in r.json()["error"]["message"]
        one = api.get("/v1/evaluations?limit=1").json()
        assert len(one["items"]) == 1 and one["nextCursor"]
        assert len(api.get("/v1/evaluations?limit=100000").json()["items"]) == 2
        assert len(api.get(f"/v1/evaluations?limit={'9' * 5000}").json()["items"]) == 2  # past int()'s 4,300 digits
        assert len(api.get("/v1/evaluations").json()["items"]) == 2


def test_a_plan_warns_while_no_worker_is_alive(api, settings):
    def warnings():
        return post_json(api, "/v1/evaluation-previews", cartpole_request()).json()["warnings"]

    assert any(w.startswith("no worker has been seen") for w in warnings())
    worker = WorkerProcess.objects.create(identity="h:7", hostname="h", pid=7)
    assert not any(w.startswith("no worker") for w in warnings())
    WorkerProcess.objects.filter(pk=worker.pk).update(
        last_seen=timezone.now() - timedelta(seconds=settings.RLMESH_WORKER_LIVENESS_TIMEOUT + 1))
    assert any(w.startswith("no worker has been seen") for w in warnings())  # silent too long: dead


def test_a_400_lists_at_most_fifty_problems(api):
    body = cartpole_request(tasks=[{**CARTPOLE_TASK, "episodes": 0, "x" * 1000: 1} for _ in range(120)])
    r = post_json(api, "/v1/evaluation-previews", body)
    details = error_of(r)["details"]
    assert r.status_code == 400 and len(details) == 51 and details[-1]["message"] == "70 more problems not listed"
    assert details[0]["path"] == "tasks[0].episodes"


def test_the_no_worker_warning_is_said_on_submit_but_not_stored(api):
    """A field case: "no worker has been seen" was stored with the evaluation and still shown after it completed."""
    r = post_json(api, "/v1/evaluations", cartpole_request())
    assert any(w.startswith("no worker has been seen") for w in r.json()["warnings"])
    assert not any(w.startswith("no worker") for w in Evaluation.objects.get(public_id=r.json()["id"]).warnings)
    assert not any(w.startswith("no worker") for w in api.get(f"/v1/evaluations/{r.json()['id']}").json()["warnings"])


# ---------------------------------------------------------- cancellation
class TestCancel:
    def test_cancelling_a_queued_evaluation_cancels_it_at_once(self, api):
        eid = submit(api)
        r = post_json(api, f"/v1/evaluations/{eid}/cancellations", {})
        assert r.status_code == 202 and r.json()["status"] == "cancelled"
        assert set(Shard.objects.filter(evaluation__public_id=eid).values_list("status", flat=True)) == {ShardStatus.CANCELLED}

    def test_cancelling_a_running_evaluation_waits_for_its_shards(self, api):
        eid = submit(api)
        Shard.objects.filter(evaluation__public_id=eid).update(status=ShardStatus.RUNNING)
        Evaluation.objects.filter(public_id=eid).update(status=EvaluationStatus.RUNNING)
        r = post_json(api, f"/v1/evaluations/{eid}/cancellations", {})
        assert r.json()["status"] == "cancelling"
        assert post_json(api, f"/v1/evaluations/{eid}/cancellations", {}).json()["status"] == "cancelling"

    def test_cancelling_a_finished_evaluation_is_a_409(self, api):
        eid = submit(api)
        Evaluation.objects.filter(public_id=eid).update(status=EvaluationStatus.COMPLETED)
        r = post_json(api, f"/v1/evaluations/{eid}/cancellations", {})
        assert r.status_code == 409 and "already completed" in error_of(r)["message"]

    def test_a_viewer_cannot_cancel(self, tenant_a):
        eid = submit(tenant_a.client())
        r = post_json(tenant_a.client(tenant_a.viewer_key), f"/v1/evaluations/{eid}/cancellations", {})
        assert r.status_code == 403


# ------------------------------------------------------ scores & metrics
def _fake_episodes(eid: str, outcomes: list[tuple[bool, float]]):
    evaluation = Evaluation.objects.get(public_id=eid)
    workload = evaluation.workloads.get()
    for i, (success, reward) in enumerate(outcomes):
        Episode.objects.create(
            evaluation=evaluation, workload=workload, index=i, seed=i, status="completed", success=success,
            success_source="criterion", reward=reward, steps=int(reward), stop_condition="time_limit",
            started_at=timezone.now(), latency={"predict": {"60": 3}, "step": {"66": 3}},
        )


@pytest.mark.parametrize("group_by,key", [
    ("task", {"model": "prebuilt/classic-control-heuristics", "env": "prebuilt/classic-control", "taskId": "classic/CartPole-v1", "perturbation": "none"}),
    ("scenario", {"model": "prebuilt/classic-control-heuristics", "scenario": "CartPole-v1"}),
    ("benchmark", {"model": "prebuilt/classic-control-heuristics", "benchmark": "classic"}),
    ("perturbation", {"model": "prebuilt/classic-control-heuristics", "perturbation": "none"}),
    ("model", {"model": "prebuilt/classic-control-heuristics"}),
])
def test_scores_group_by(api, group_by, key):
    eid = submit(api)
    _fake_episodes(eid, [(True, 500.0), (True, 500.0), (False, 20.0)])
    r = api.get(f"/v1/evaluations/{eid}/scores", {"groupBy": group_by})
    assert r.status_code == 200
    (g,) = r.json()["groups"]
    assert g["key"] == key
    assert (g["episodes"], g["successes"], g["errors"]) == (3, 2, 0)
    assert g["successRate"] == pytest.approx(2 / 3)
    assert g["successRateCi"] == pytest.approx([0.2077, 0.9385], abs=1e-4)
    assert g["meanReward"] == pytest.approx(340.0)
    assert g["successSources"] == {"criterion": 3}


def test_scores_default_to_task_and_reject_unknown_groupings(api):
    eid = submit(api)
    assert api.get(f"/v1/evaluations/{eid}/scores").json()["groupBy"] == "task"
    r = api.get(f"/v1/evaluations/{eid}/scores?groupBy=colour")
    assert r.status_code == 400 and error_of(r)["details"][0]["path"] == "groupBy"


def test_metrics_roll_up_steps_and_latency(api):
    eid = submit(api)
    _fake_episodes(eid, [(True, 500.0), (False, 20.0)])
    m = api.get(f"/v1/evaluations/{eid}/metrics").json()
    assert m["episodes"] == 2 and m["steps"] == 520
    assert m["latencyMs"]["predict"]["p50"] == pytest.approx(1.0, rel=0.1)
    assert m["latencyMs"]["envStep"]["p50"] == pytest.approx(2.0, rel=0.13)
    assert m["queueWaitSeconds"]["n"] == 0


def test_episodes_are_listed_in_pages_and_filtered(api, tenant_b):
    eid = submit(api)
    _fake_episodes(eid, [(True, 500.0), (False, 20.0), (True, 500.0)])
    Episode.objects.filter(evaluation__public_id=eid, index=1).update(status="error", error="boom")
    page = api.get(f"/v1/evaluations/{eid}/episodes?limit=2").json()
    assert [e["index"] for e in page["items"]] == [0, 1] and page["nextCursor"]
    rest = api.get(f"/v1/evaluations/{eid}/episodes?limit=2&cursor={page['nextCursor']}").json()
    assert [e["index"] for e in rest["items"]] == [2] and rest["nextCursor"] is None
    errors = api.get(f"/v1/evaluations/{eid}/episodes?status=error").json()["items"]
    assert [(e["index"], e["error"]) for e in errors] == [(1, "boom")]
    assert api.get(f"/v1/evaluations/{eid}/episodes?status=weird").status_code == 400
    r = api.get(f"/v1/evaluations/{eid}/episodes?cursor=garbage")
    assert r.status_code == 400 and error_of(r)["details"][0]["path"] == "cursor"
    assert tenant_b.client().get(f"/v1/evaluations/{eid}/episodes").status_code == 404


def test_episodes_carry_their_trajectory_digest_and_whether_it_compares(api):
    eid = submit(api)
    _fake_episodes(eid, [(True, 500.0), (False, 20.0), (True, 500.0)])
    digest = "ab" * 32
    Episode.objects.filter(evaluation__public_id=eid, index=0).update(trajectory_digest=digest, digest_comparable=True)
    Episode.objects.filter(evaluation__public_id=eid, index=1).update(trajectory_digest=digest, digest_comparable=False)
    items = api.get(f"/v1/evaluations/{eid}/episodes").json()["items"]
    assert [(e["trajectoryDigest"], e["digestComparable"]) for e in items] == [
        (digest, True), (digest, False), (None, None)]


def test_logs_list_the_evaluation_history(api):
    eid = submit(api)
    items = api.get(f"/v1/evaluations/{eid}/logs").json()["items"]
    assert items[0]["message"].startswith("submitted: 1 workload, 1 shard, 3 episodes")
    post_json(api, f"/v1/evaluations/{eid}/cancellations", {})
    first = api.get(f"/v1/evaluations/{eid}/logs?limit=1").json()
    assert len(first["items"]) == 1 and first["nextCursor"]
    rest = api.get(f"/v1/evaluations/{eid}/logs?cursor={first['nextCursor']}").json()
    assert rest["items"] and rest["nextCursor"] is None
    assert rest["items"][0]["message"] != first["items"][0]["message"]


def test_preview_estimates_use_the_live_worker_pool(api):
    from django.utils import timezone

    from evaluations.models import WorkerProcess

    body = cartpole_request()
    body["tasks"][0].update(episodes=40, workers=8)
    slow = api.post("/v1/evaluation-previews", data=json.dumps(body), content_type="application/json").json()["estimates"]
    for i in range(8):  # eight live worker processes: all eight shards at once
        WorkerProcess.objects.create(identity=f"h:{i}", hostname="h", pid=i, last_seen=timezone.now())
    fast = api.post("/v1/evaluation-previews", data=json.dumps(body), content_type="application/json").json()["estimates"]
    assert fast["estimatedSecondsUpperBound"] * 4 == pytest.approx(slow["estimatedSecondsUpperBound"], rel=0.01)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "application/xml"])
@pytest.mark.parametrize("url", ["/v1/evaluations", "/v1/evaluation-previews"])
def test_a_body_that_is_not_sent_as_json_is_a_415(api, url, content_type):
    r = api.post(url, data=json.dumps(cartpole_request()), content_type=content_type)
    assert r.status_code == 415 and r.json()["error"]["code"] == "unsupported_media_type"
    assert "application/json" in r.json()["error"]["message"]
    assert Evaluation.objects.count() == 0


def test_json_with_a_charset_or_a_json_suffix_is_accepted(api):
    for content_type in ("application/json; charset=utf-8", "application/vnd.rlmesh+json"):
        r = api.post("/v1/evaluation-previews", data=json.dumps(cartpole_request()), content_type=content_type)
        assert r.status_code == 200, (content_type, r.content)

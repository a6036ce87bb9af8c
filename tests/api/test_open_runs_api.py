"""POST /agents/runs/open (seed 004) on the shop: the seed's body is accepted; profile, verifiers and judge are
checked with their paths; keys are stored encrypted and never echoed; the task catalog lists the shop."""

from __future__ import annotations

import json
import uuid

import pytest

from evaluations.crypto import decrypt
from evaluations.models import Evaluation

from .test_agents_api import SECRET, error_of, post, public_dns  # noqa: F401 - the fixture is autouse there

pytestmark = pytest.mark.django_db

JUDGE_SECRET = "sk-judge-" + uuid.uuid4().hex + "-never-echo"
#: The seed's POST /runs/open body, with our env id.
SEED_OPEN = {"env_id": "shop", "task_definition": "Browse headphones and add any pair to cart.", "max_steps": 20,
             "profile_id": "U_001", "rollouts": 1, "endpoint": {"url": "https://your-agent.example.com"}}


def open_run(client, **changes):
    return post(client, {**SEED_OPEN, **changes}, path="/agents/runs/open")


def paths(r) -> list[str]:
    assert r.status_code == 400, r.content
    return [d["path"] for d in error_of(r)["details"]]


def test_the_seed_body_starts_an_open_run(api, tenant_a):
    r = open_run(api)
    assert r.status_code == 201, r.content
    data = r.json()
    assert data["status"] == "QUEUED" and data["status_url"] == f"/evaluations/run/{data['run_id']}/status"
    evaluation = Evaluation.objects.get(run_id=data["run_id"])
    (w,) = evaluation.workloads.all()
    assert w.task_id == "shop.open" and w.episodes == 1 and w.max_steps == 20
    assert w.env_kwargs == {"task": "open", "task_definition": SEED_OPEN["task_definition"], "profile_id": "U_001",
                            "max_steps": 20, "verifiers": ""}
    assert evaluation.config["agent"]["open"]["judgedBy"] == "none"
    status = api.get(f"/agents{data['status_url']}").json()
    assert status["env_id"] == "shop" and status["evaluations"][0]["results"] == []


def test_request_verifiers_go_to_the_env_and_the_profile_defaults_to_u001(api):
    checks = [{"check": "cart_count", "where": {"category": "headphones"}, "op": "==", "value": 1}]
    r = open_run(api, verifiers=checks, profile_id=None, rollouts=3, max_steps=7)
    assert r.status_code == 201, r.content
    (w,) = Evaluation.objects.get(run_id=r.json()["run_id"]).workloads.all()
    assert json.loads(w.env_kwargs["verifiers"]) == checks and w.env_kwargs["profile_id"] == "U_001"
    assert (w.episodes, w.max_steps, w.env_kwargs["max_steps"]) == (3, 7, 7)


@pytest.mark.parametrize(("changes", "expected"), [
    ({"profile_id": "U_999"}, ["profile_id"]),
    ({"profile_id": 7}, ["profile_id"]),
    ({"task_definition": ""}, ["task_definition"]),
    ({"task_definition": "x" * 2001}, ["task_definition"]),
    ({"max_steps": 0}, ["max_steps"]),
    ({"max_steps": 1001}, ["max_steps"]),
    ({"rollouts": 0}, ["rollouts"]),
    ({"rollouts": 101}, ["rollouts"]),
    ({"verifiers": []}, ["verifiers"]),
    ({"verifiers": {"check": "page"}}, ["verifiers"]),
    ({"verifiers": [{"check": "cart_count", "op": "=~"}, {"check": "page", "is": "home"},
                    {"check": "order_placed", "where": {"delivery": "teleport", "contains": {"price_lt": "cheap"}}},
                    {"check": "nope"}]},
     ["verifiers[0].op", "verifiers[2].where.delivery", "verifiers[2].where.contains.price_lt", "verifiers[3].check"]),
    ({"judge": {"url": "ftp://judge.example.com"}}, ["judge.url"]),
    ({"judge": {"url": "tcp://judge.example.com:9000"}}, ["judge.url"]),
    ({"judge": {"url": "http://127.0.0.1:9/"}}, ["judge.url"]),
    ({"judge": {"url": "https://judge.example.com", "additional_params": {"messages": []}}},
     ["judge.additional_params.messages"]),
    ({"judge": {"url": "https://judge.example.com", "key": "sk-judge\r\n"}}, ["judge.key"]),
    ({"env_id": "nope/nope"}, ["env_id"]),
    ({"endpoint": {"url": "http://10.0.0.1/"}}, ["endpoint.url"]),
])
def test_bad_open_runs_are_400_with_paths(api, changes, expected):
    assert sorted(paths(open_run(api, **changes))) == sorted(expected)


def test_keys_are_stored_encrypted_and_never_echoed(api):
    r = open_run(api, endpoint={"url": "https://your-agent.example.com", "key": SECRET},
                 judge={"url": "https://judge.example.com", "key": JUDGE_SECRET, "model": "judge-1"})
    assert r.status_code == 201, r.content
    evaluation = Evaluation.objects.get(run_id=r.json()["run_id"])
    assert decrypt(evaluation.endpoint_key) == SECRET and decrypt(evaluation.judge_key) == JUDGE_SECRET
    assert evaluation.config["agent"]["judge"] == {"url": "https://judge.example.com", "model": "judge-1",
                                                   "additional_params": None, "key": "***"}
    assert evaluation.config["agent"]["open"]["judgedBy"] == "judge"
    stored = json.dumps([evaluation.request, evaluation.request_raw, evaluation.config])
    assert SECRET not in stored and JUDGE_SECRET not in stored
    for url in (f"/agents{r.json()['status_url']}", f"/v1/evaluations/{evaluation.public_id}"):
        text = api.get(url).content.decode()
        assert SECRET not in text and JUDGE_SECRET not in text


def test_unknown_fields_are_warnings(api, live_worker):
    r = open_run(api, colour="blue", judge={"url": "https://judge.example.com", "temperature": 0})
    assert r.status_code == 201
    assert r.json()["warnings"] == ['unknown field "colour" was ignored', 'unknown field "judge.temperature" was ignored']


def test_many_unknown_fields_make_a_bounded_warning_list(api, live_worker):
    r = open_run(api, **{f"k{i}": 1 for i in range(11)})
    assert r.status_code == 201
    assert r.json()["warnings"] == [f'unknown field "k{i}" was ignored' for i in range(10)] + [
        "1 more unknown field was ignored"]


def test_the_open_task_is_not_a_catalog_task(api):
    r = post(api, {"env_id": "shop", "model": "m", "task_ids": ["shop.open"],
                   "endpoint": {"url": "https://your-agent.example.com"}})
    assert paths(r) == ["task_ids[0]"]
    assert "POST /agents/runs/open" in error_of(r)["details"][0]["message"]


@pytest.mark.parametrize("params", [None, {}, {"task_definition": "  "}])
def test_a_v1_task_on_the_open_scenario_needs_a_task_definition(api, params):
    task = {"env": "prebuilt/shop", "taskId": "shop.open", "episodes": 1, **({"params": params} if params is not None else {})}
    r = api.post("/v1/evaluation-previews", data=json.dumps({"model": "prebuilt/random", "tasks": [task]}),
                 content_type="application/json")
    assert r.status_code == 400 and "tasks[0].params.task_definition" in paths(r)
    task["params"] = {"task_definition": "Add any pair of headphones to the cart."}
    r = api.post("/v1/evaluation-previews", data=json.dumps({"model": "prebuilt/random", "tasks": [task]}),
                 content_type="application/json")
    assert "tasks[0].params.task_definition" not in (paths(r) if r.status_code == 400 else [])


def test_the_catalog_lists_the_shop_tasks_with_profiles_and_verifiers(api):
    environments = {e["env_id"]: e for e in api.get("/agents/evaluations/tasks").json()["environments"]}
    shop = environments["shop"]
    tasks = {t["task_id"]: t for t in shop["tasks"]}
    assert len(tasks) >= 100 and "shop.open" not in tasks
    assert {t.split(".")[1] for t in tasks} == {"search", "cart", "checkout", "account", "wishlist"}
    task = tasks["shop.cart.t013"]
    assert task["goal"].startswith("Browse ") and task["profile_id"].startswith("U_") and task["verifiers"]
    assert shop["open_runs"]["profiles"][0] == "U_001" and len(shop["open_runs"]["profiles"]) == 50
    assert shop["open_runs"]["verifier_vocabulary"] == "shop.state.v1"
    assert environments["miniwob"]["open_runs"] is None and environments["miniwob"]["tasks"][0]["verifiers"] is None


def test_a_catalog_run_on_the_shop_plans_its_tasks(api):
    r = post(api, {"env_id": "shop", "model": "m", "task_ids": ["shop.checkout.t001", "shop.cart.t002.s0004"],
                   "endpoint": {"url": "https://your-agent.example.com"}})
    assert r.status_code == 201, r.content
    workloads = list(Evaluation.objects.get(run_id=r.json()["run_id"]).workloads.order_by("index"))
    assert [w.env_kwargs["task"] for w in workloads] == ["shop.checkout.t001", "shop.cart.t002"]
    assert workloads[1].seed == 4 and workloads[0].max_steps == 16


def test_an_error_does_not_grow_with_the_request(api):
    """A field case: one verifier with 2,000 unknown 500-character keys came back as a 1.1 MB 400 (every key
    quoted whole). At most 50 problems are listed, the rest counted, each path and message cut at 300."""
    verifier = {"check": "cart_count", "op": "==", "value": 1, **{f"{i:04d}" + "k" * 496: 1 for i in range(2000)}}
    r = open_run(api, verifiers=[verifier])
    assert r.status_code == 400 and len(r.content) < 60_000, len(r.content)
    details = r.json()["error"]["details"]
    assert len(details) == 51 and details[-1] == {"path": "$", "message": "1,950 more problems not listed"}
    assert all(len(d["path"]) <= 301 and len(d["message"]) <= 301 for d in details)

"""The dashboard's agent launch page (catalog runs and open runs from forms, keys as password fields never shown
back), and a shop rollout's transcript with its verifiers beside it and the final state of the shop."""

from __future__ import annotations

import json

import pytest

from evaluations.choices import EpisodeStatus, Role, StopCondition
from evaluations.crypto import decrypt
from evaluations.models import Episode, Evaluation
from evaluations.planning.open_runs import plan_open_run
from evaluations.runs.lifecycle import create_evaluation
from evaluations.runs.transcripts import TranscriptRecorder
from tests.conftest import make_user

pytestmark = pytest.mark.django_db
SECRET = "sk-launch-do-not-leak"
JUDGE = "sk-judge-do-not-leak"


@pytest.fixture
def web(client, tenant_a, settings):
    settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS = True
    client.login(username=tenant_a.user.username, password=f"pw-{tenant_a.user.username}")
    return client


ENDPOINT = {"url": "http://127.0.0.1:9", "key": SECRET, "endpoint_model": "gpt", "use_openai_chat": "on",
            "use_wrapper": "on", "send_tool_definitions": "on"}


def form(prefix: str, **fields) -> dict:
    return {"mode": prefix, **{f"{prefix}-{k}": v for k, v in fields.items()}}


def test_the_page_offers_both_forms_with_the_catalog_and_password_keys(web):
    page = web.get("/evaluations/agents/new").content.decode()
    assert 'id="agent-run-form"' in page and 'id="open-run-form"' in page
    assert '<optgroup label="shop">' in page and 'value="shop.checkout.t001"' in page
    assert 'value="miniwob.login-user"' in page and 'value="U_050"' in page
    assert page.count('type="password" name="run-key"') == 1 and 'type="password" name="open-judge_key"' in page
    assert "<script>" not in page and " onclick=" not in page  # the CSP: no inline code


def test_a_catalog_run_starts_from_the_form(web, tenant_a):
    r = web.post("/evaluations/agents/new", form("run", model="my-agent", env_id="shop", rollouts_per_example=2,
                                                  task_ids=["shop.cart.t001", "shop.search.t003"], **ENDPOINT))
    assert r.status_code == 302, r.content.decode()[:2000]
    evaluation = Evaluation.objects.get(organization=tenant_a.org)
    assert r["Location"] == evaluation.get_absolute_url()
    assert [w.task_id for w in evaluation.workloads.order_by("index")] == ["shop.cart.t001", "shop.search.t003"]
    assert decrypt(evaluation.endpoint_key) == SECRET and SECRET not in evaluation.request_raw


def test_an_open_run_starts_from_the_form_with_verifiers_and_a_judge(web, tenant_a):
    checks = [{"check": "cart_count", "where": {"category": "headphones"}, "op": "==", "value": 1}]
    r = web.post("/evaluations/agents/new", form(
        "open", env_id="shop", task_definition="Browse headphones and add any pair to cart.", profile_id="U_003",
        max_steps=15, rollouts=1, verifiers=json.dumps(checks), judge_url="http://127.0.0.1:8", judge_key=JUDGE,
        **ENDPOINT))
    assert r.status_code == 302, r.content.decode()[:2000]
    evaluation = Evaluation.objects.get(organization=tenant_a.org)
    (w,) = evaluation.workloads.all()
    assert w.env_kwargs["profile_id"] == "U_003" and json.loads(w.env_kwargs["verifiers"]) == checks
    assert decrypt(evaluation.judge_key) == JUDGE and JUDGE not in json.dumps(evaluation.config)


def test_refused_submissions_show_paths_and_never_the_keys(web, tenant_a):
    r = web.post("/evaluations/agents/new", form(
        "open", env_id="shop", task_definition="Do it.", profile_id="U_001", max_steps=5, rollouts=1,
        verifiers='[{"check": "cart_count", "op": "~"}]', judge_key=JUDGE, **ENDPOINT))
    page = r.content.decode()
    assert r.status_code == 400 and "<code>verifiers[0].op</code>" in page
    assert SECRET not in page and JUDGE not in page and not Evaluation.objects.exists()
    r = web.post("/evaluations/agents/new", form("run", model="m", env_id="shop", task_ids=["shop.cart.t001"],
                                                  rollouts_per_example=1, **{**ENDPOINT, "url": "ftp://x"}))
    assert r.status_code == 400 and "<code>endpoint.url</code>" in r.content.decode()
    r = web.post("/evaluations/agents/new", form(
        "open", env_id="shop", task_definition="Do it.", profile_id="U_001", max_steps=5, rollouts=1,
        verifiers='[{"check": "form_value", "field": "q", "value": "a\\u0000b"}]', **ENDPOINT))
    assert r.status_code == 400 and "<code>verifiers[0].value</code>" in r.content.decode()


def test_viewers_cannot_launch(client, tenant_a):
    viewer = make_user("viewer-a", tenant_a.org, Role.VIEWER)
    client.login(username=viewer.username, password="pw-viewer-a")
    assert 'id="agent-run-button"' not in client.get("/evaluations/agents/new").content.decode()
    r = client.post("/evaluations/agents/new", form("run", model="m", env_id="shop", task_ids=["shop.cart.t001"],
                                                     rollouts_per_example=1, **ENDPOINT))
    assert r.status_code == 403 and not Evaluation.objects.exists()


def _shop_rollout(tenant, state: dict, verifiers: list[dict], success) -> Episode:
    plan = plan_open_run({"env_id": "shop", "task_definition": "Buy something.", "rollouts": 1,
                          "endpoint": {"url": "http://127.0.0.1:9"}}, organization=tenant.org)
    evaluation = create_evaluation(plan=plan, raw_body="{}", organization=tenant.org, creator=tenant.user)
    workload = evaluation.workloads.get()
    rec = TranscriptRecorder(evaluation=evaluation, workload=workload, index=0)
    rec.on_reset({"goal": "Buy something.", "dom": "[1] body", "error": ""}, {}, seed=0)
    info = {"tool_result": "finished", "terminal_action": True, "verifiers": verifiers, "is_success": success,
            "verdict": "state" if verifiers else "unverified", "shop_state": state}
    rec.on_step(1, json.dumps({"tool": "finish", "arguments": {}}), {"goal": "Buy something.", "dom": "[1] body"},
                0.0, True, False, info, predict_ms=1.0, step_ms=1.0)
    fields = rec.finish({"seed": 0, "status": EpisodeStatus.COMPLETED, "reward": 0.0, "success": success, "steps": 1,
                         "terminated": True, "stop_condition": StopCondition.TERMINATED})
    return Episode.objects.create(evaluation=evaluation, workload=workload, index=0, **fields)


STATE = {"profile_id": "U_001", "page": {"kind": "order_confirmation"}, "form": {}, "cart_total": 0.0,
         "cart": [{"name": "Sonix Aria Over-Ear Headphones", "variant": "Black", "qty": 1, "category": "headphones",
                   "price": 45.99}], "wishlist": [],
         "orders": [{"id": "O-001-N1", "status": "processing", "address": "home", "delivery": "express",
                     "payment_label": "Visa ending 4242", "total": 55.98, "placed": "episode",
                     "items": [{"name": "Nordtone Bolt Speaker", "qty": 2}]}],
         "account": {"default_address": "home", "newsletter": False, "preferred_delivery": "standard"}}


def test_a_shop_transcript_shows_its_verifiers_and_the_final_state(web, tenant_a):
    checks = [{"name": "order_placed(address=home, delivery=express)", "kind": "state", "passed": True,
               "score": 1.0, "detail": "1 orders matching address=home, delivery=express (O-001-N1 …)"},
              {"name": "cart_count == 0", "kind": "state", "passed": False, "score": 0.0,
               "detail": "1 cart items matching anything (cart: Sonix …); expected == 0"}]
    episode = _shop_rollout(tenant_a, STATE, checks, False)
    page = web.get(f"/evaluations/{episode.evaluation.public_id}/episodes/{episode.pk}/transcript").content.decode()
    assert 'id="verifiers"' in page and "order_placed(address=home, delivery=express)" in page
    assert 'data-passed="false"' in page and "expected == 0" in page
    assert 'id="final-state"' in page and "Sonix Aria Over-Ear Headphones (Black) ×1" in page
    assert "O-001-N1" in page and "placed in this rollout" in page and "Visa ending 4242" in page
    tab = web.get(f"/evaluations/{episode.evaluation.public_id}/episodes").content.decode()
    assert "1/2 checks" in tab


def test_an_unverified_rollout_says_so(web, tenant_a):
    episode = _shop_rollout(tenant_a, STATE, [], None)
    assert episode.success is None and episode.reward is None
    page = web.get(f"/evaluations/{episode.evaluation.public_id}/episodes/{episode.pk}/transcript").content.decode()
    assert 'id="unverified-badge"' in page and "recorded unverified" in page
    tab = web.get(f"/evaluations/{episode.evaluation.public_id}/episodes").content.decode()
    assert "unverified" in tab

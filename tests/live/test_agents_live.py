"""Agent runs end to end on a live platform (web server + Celery worker, real MiniWoB in Chromium, the endpoint
bridge started by the local runtime, the reference agent over HTTP): the seed-004 calls with the host replaced by
$PUBLIC_URL/agents, a signed webhook retried after a 500, the key grepped for everywhere, the endpoint killed mid-run
and a run cancelled mid-run."""

from __future__ import annotations

import io
import json
import re
import uuid
import zipfile

import pytest
import requests
from standardwebhooks import Webhook

from tests.live.conftest import wait_for
from tests.support.agents import ReferenceAgent, WebhookReceiver

pytestmark = [pytest.mark.live, pytest.mark.browser_env]
SECRET = "sk-live-" + uuid.uuid4().hex + "-must-not-leak"


class Agents:
    """The /agents API of a live platform, keeping every response body for the key grep."""

    def __init__(self, live):
        self.live, self.base = live, f"{live.url}/agents"
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {live.api_key}"
        self.bodies: list[bytes] = []

    def call(self, method: str, path: str, **kw) -> requests.Response:
        r = self.http.request(method, self.base + path, timeout=60, **kw)
        self.bodies.append(r.content)
        return r

    def submit(self, **body) -> dict:
        r = self.call("POST", "/evaluations/run", json=body)
        assert r.status_code == 201, r.text
        return r.json()

    def status(self, run: dict) -> dict:
        return self.call("GET", run["status_url"]).json()

    def wait(self, run: dict, *words: str, timeout: float = 240) -> dict:
        return wait_for(lambda: (doc := self.status(run))["status"] in words and doc, timeout=timeout)


def seed_body(url: str, tasks: list[str], **changes) -> dict:
    body = {"env_id": "miniwob", "model": "reference-agent-v1", "task_ids": tasks, "rollouts_per_example": 1,
            "webhook_url": None, "endpoint": {"url": url, "key": SECRET, "model": "reference", "use_wrapper": True,
                                              "send_tool_definitions": True, "use_openai_chat": True,
                                              "minimal_observation": None, "additional_params": {"temperature": 0}}}
    body.update(changes)
    return body


@pytest.fixture
def agent(tmp_path):
    ref = ReferenceAgent(tmp_path / "reference-agent.log")
    yield ref
    ref.stop()


def signed_in(live) -> requests.Session:
    web = requests.Session()
    page = web.get(f"{live.url}/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    web.post(f"{live.url}/accounts/login/", data={"csrfmiddlewaretoken": token, "username": "demo",
                                                   "password": "demo-password"}, timeout=30)
    return web


def test_reference_agent_full_path_signed_webhook_and_the_key_nowhere(live, agent):
    api = Agents(live)
    catalog = api.call("GET", "/evaluations/tasks").json()
    assert "miniwob.login-user" in {t["task_id"] for e in catalog["environments"] for t in e["tasks"]}
    receiver = WebhookReceiver([500])
    tasks = ["miniwob.click-test", "miniwob.login-user", "miniwob.click-checkboxes.s0002"]
    run = api.submit(**seed_body(agent.url, tasks, webhook_url=receiver.url))
    assert run["status"] in ("QUEUED", "RUNNING") and run["status_url"] == f"/evaluations/run/{run['run_id']}/status"
    doc = api.wait(run, "COMPLETED", "FAILED")
    assert doc["status"] == "COMPLETED", doc
    results = doc["evaluations"][0]["results"]
    assert [r["task"] for r in results] == tasks
    for r in results:
        assert (r["task_passed"], r["task_outcome"], r["stop_condition"], r["reward"]) == \
            (True, "pass", "terminal_action", 1.0), r
    assert doc["usage"]["total_tokens"] > 0 and doc["progress"]["completed_rollouts"] == 3

    # The webhook: a 500, then the retry; both verified with the organization's secret.
    wait_for(lambda: len(receiver.received) >= 2, timeout=60)
    secret = live.manage("shell", "-c", "from evaluations.models import Organization; from evaluations.webhooks "
                         "import webhook_secret; print(webhook_secret(Organization.objects.get(slug='demo')))").split()[-1]
    payloads = [Webhook(secret).verify(body, headers) for headers, body in receiver.received[:2]]
    assert payloads[0] == payloads[1] and payloads[0]["status"] == "COMPLETED" and payloads[0]["run_id"] == run["run_id"]
    deliveries = wait_for(lambda: len((d := api.status(run)["webhook"]["deliveries"])) == 2 and d, timeout=30)
    assert [(d["attempt"], d["status_code"]) for d in deliveries] == [(1, 500), (2, 200)]
    receiver.stop()

    # Every API, transcript and page of the run, and every log line, without the key.
    listed = api.call("GET", "/evaluations?environment_id=miniwob&limit=5").json()
    assert run["run_id"] in [i["run_id"] for i in listed["items"]]
    assert api.call("GET", f"/evaluations/{doc['evaluation_id']}").json()["run_id"] == run["run_id"]
    bundle = zipfile.ZipFile(io.BytesIO(api.call("GET", "/" + doc["run_output_path"]).content))
    assert len([n for n in bundle.namelist() if n.startswith("transcripts/")]) == 3
    transcripts = [bundle.read(n) for n in bundle.namelist()]
    for r in results:
        api.call("GET", r["transcript_url"])
    v1 = [api.http.get(f"{live.url}/v1/evaluations/{doc['evaluation_id']}{p}", timeout=30).content
          for p in ("", "/episodes", "/logs", "/metrics")]
    assert json.loads(v1[3])["agent"]["totalTokens"] == doc["usage"]["total_tokens"]
    web = signed_in(live)
    public_id = doc["evaluation_id"]
    pages = [web.get(f"{live.url}/evaluations/{public_id}/{tab}", timeout=30).content
             for tab in ("overview", "episodes", "configuration", "logs")]
    episodes = re.findall(rf"/evaluations/{public_id}/episodes/(\d+)/transcript", pages[1].decode())
    assert len(set(episodes)) == 3
    pages += [web.get(f"{live.url}/evaluations/{public_id}/episodes/{e}/transcript", timeout=30).content
              for e in set(episodes)]
    assert b"Bearer ***" in pages[-1]
    logs = [p.read_bytes() for p in live.var.rglob("*.log")]
    assert any(b"bridge" in log or b"agent-endpoint" in log or b"model server" in log for log in logs)
    haystack = api.bodies + transcripts + v1 + pages + logs + [json.dumps(payloads).encode()]
    leaks = [i for i, blob in enumerate(haystack) if SECRET.encode() in blob]
    assert leaks == [], "the endpoint key leaked"


def test_killing_the_endpoint_mid_run_errors_its_rollouts_and_the_run_completes(live, agent):
    api = Agents(live)
    run = api.submit(**seed_body(agent.url, ["miniwob.use-autocomplete"], rollouts_per_example=6))
    wait_for(lambda: api.status(run)["progress"]["completed_rollouts"] >= 1, timeout=240, interval=0.1)
    agent.stop()
    doc = api.wait(run, "COMPLETED", "FAILED")
    assert doc["status"] == "COMPLETED", doc
    outcomes = [r["task_outcome"] for r in doc["evaluations"][0]["results"]]
    assert outcomes[0] == "pass" and outcomes[-1] == "error", outcomes
    errored = [r for r in doc["evaluations"][0]["results"] if r["task_outcome"] == "error"]
    # An endpoint that went away is said apart from the agent failing: its own stop condition, no verdict.
    assert all(r["stop_condition"] == "endpoint_unavailable" and r["task_passed"] is None
               and r["error"].startswith("endpoint unavailable") for r in errored), errored
    assert doc["summary"]["endpoint_failures"]["endpoint_unavailable"] == len(errored)


def test_cancelling_mid_run_keeps_the_finished_rollouts(live, agent):
    api = Agents(live)
    run = api.submit(**seed_body(agent.url, ["miniwob.use-autocomplete"], rollouts_per_example=8))
    wait_for(lambda: api.status(run)["progress"]["completed_rollouts"] >= 1, timeout=240, interval=0.1)
    r = api.call("DELETE", f"/evaluations/run/{run['run_id']}")
    assert r.status_code == 202 and r.json()["status"] in ("RUNNING", "CANCELLED")
    doc = api.wait(run, "CANCELLED", "COMPLETED", "FAILED")
    assert doc["status"] == "CANCELLED"
    results = doc["evaluations"][0]["results"]
    assert len(results) == 8
    kept = [x for x in results if x["stop_condition"] != "cancelled"]
    assert kept and all(x["task_outcome"] == "pass" for x in kept) and len(kept) < 8
    again = api.call("DELETE", f"/evaluations/run/{run['run_id']}")
    assert again.status_code == 409 and "cancelled" in again.json()["error"]["message"]

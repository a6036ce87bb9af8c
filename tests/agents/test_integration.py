"""End to end with nothing mocked: MiniWoB env servers (real Chromium), endpoint bridges and the reference agent
as real processes, driven by ``rlmesh.run(RemoteModel(bridge), env, seeds=...)``."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import rlmesh

from evaluations.prebuilt.miniwob import REFERENCE_SOLVED, TASKS

from .conftest import SECRET, free_port, serve_bridge, serve_env

pytestmark = [pytest.mark.browser_env, pytest.mark.usefixtures("chromium")]
SEEDS = [0, 1]


class StepLog(rlmesh.RunHooks):
    """Every step's action text and info, per episode."""

    def __init__(self):
        self.steps: list[dict] = []

    def on_step(self, event):
        self.steps.append({"seed": event.seed, "step": event.step, "action": str(event.action),
                           "info": dict(event.info)})


def run(bridge: str, env: str, *, seeds=SEEDS, max_steps: int = 20):
    log = StepLog()
    result = rlmesh.run(rlmesh.RemoteModel(bridge, connect_timeout_seconds=10, request_timeout_seconds=120), env,
                        seeds=seeds, max_episode_steps=max_steps, hooks=log)
    return result, log


#: Bridge configurations the tasks are spread over, so every protocol solves real episodes.
CONFIGS = {
    "chat-tools": {"use_openai_chat": True, "send_tool_definitions": True},
    "chat-text": {"use_openai_chat": True, "send_tool_definitions": False},
    "chat-raw": {"use_openai_chat": True, "send_tool_definitions": True, "use_wrapper": False},
    "http-agent": {"use_openai_chat": False},
}


def test_reference_agent_solves_its_tasks_over_every_protocol(procs, reference_agent):
    bridges = {}
    for name, config in CONFIGS.items():
        url = reference_agent + ("/agent/step" if not config["use_openai_chat"] else "")
        bridges[name] = serve_bridge(procs, {"url": url, "model": "reference", "timeout_seconds": 30,
                                             "additional_params": {"temperature": 0}, **config})
    names = list(CONFIGS)
    for i, task in enumerate(REFERENCE_SOLVED):
        protocol = names[i % len(names)]
        result, log = run(bridges[protocol], serve_env(procs, task), max_steps=TASKS[task].max_steps)
        last = {s["seed"]: s["info"] for s in log.steps}
        for ep in result.episodes:
            info = last[ep.seed]
            assert ep.success, (task, protocol, ep.seed, [s["action"][:200] for s in log.steps])
            assert ep.terminated and (info["page_ended"] or info["terminal_action"]), (task, info)
            assert info["raw_reward"] == 1.0 and ep.reward == 1.0
        for step in log.steps:
            trace = json.loads(step["action"])["trace"]
            assert trace["protocol"] == ("http-agent" if protocol == "http-agent" else "openai-chat")
            assert trace["attempts"] == 1 and trace["error"] is None
            assert set(trace["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens",
                                           "reasoning_tokens"}
            assert trace["usage"]["total_tokens"] > 0 and trace["retryMs"] == 0
            assert trace["request"]["headers"] == {"Authorization": "Bearer ***"}
            assert SECRET not in step["action"] and SECRET not in json.dumps(step["info"])


def test_an_endpoint_that_stays_down_ends_the_episode_with_endpoint_error(procs):
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    bridge = serve_bridge(procs, {"url": dead, "max_retries": 2, "backoff_seconds": 0.05, "timeout_seconds": 2})
    result, log = run(bridge, serve_env(procs, "click-test"), seeds=[0])
    (ep,) = result.episodes
    info = log.steps[-1]["info"]
    assert ep.steps == 1 and ep.truncated and not ep.terminated and not ep.success
    assert info["endpoint_error"].startswith("endpoint unavailable: connection failed")
    trace = json.loads(log.steps[-1]["action"])["trace"]
    assert trace["attempts"] == 3 and trace["backoffMs"] == pytest.approx(150, abs=1)
    assert SECRET not in log.steps[-1]["action"]


class _NeverFinishes(BaseHTTPRequestHandler):
    """An agent (our HTTP protocol) that only ever waits."""

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"tool": "wait", "arguments": {"ms": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_an_agent_that_never_finishes_is_truncated_at_the_step_cap(procs):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NeverFinishes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        bridge = serve_bridge(procs, {"url": f"http://127.0.0.1:{server.server_address[1]}/step",
                                      "use_openai_chat": False})
        env = serve_env(procs, "click-button")
        result, log = run(bridge, env, seeds=[3], max_steps=4)
        (ep,) = result.episodes
        assert ep.steps == 4 and ep.truncated and not ep.terminated and not ep.success
        assert [s["info"]["tool_result"] for s in log.steps] == ["waited 1 ms"] * 4
        # The env's own cap (max_steps param) truncates too, when the runner sets none.
        capped = serve_env(procs, "click-button", max_steps=3)
        result, log = run(bridge, capped, seeds=[3], max_steps=50)
        assert result.episodes[0].steps == 3 and result.episodes[0].truncated
        assert log.steps[-1]["info"]["max_steps_reached"] is True
    finally:
        server.shutdown()
        server.server_close()


def test_the_env_is_an_ordinary_rlmesh_env_and_the_bridge_forwards_to_rlmesh_models(procs):
    policy_port = free_port()
    procs([sys.executable, "-m", "rlmesh.serve", "evaluations.agents.reference_agent:ReferencePolicy", "--address",
           f"127.0.0.1:{policy_port}"], "policy").wait_port(policy_port)
    env = serve_env(procs, "enter-password")
    direct, _ = run(f"127.0.0.1:{policy_port}", env)  # an rlmesh model straight on the env: no bridge
    assert [ep.success for ep in direct.episodes] == [True, True]
    bridge = serve_bridge(procs, {"url": f"tcp://127.0.0.1:{policy_port}"})
    result, log = run(bridge, env)
    assert [ep.success for ep in result.episodes] == [True, True]
    traces = [json.loads(s["action"])["trace"] for s in log.steps]
    assert {t["protocol"] for t in traces} == {"rlmesh"} and all(t["attempts"] == 1 for t in traces)
    assert SECRET not in json.dumps([s["action"] for s in log.steps])

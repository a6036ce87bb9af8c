"""Agent runs through the whole platform (not a timed test): a live platform started here (web server, Celery
worker, SQLite, the local runtime starting MiniWoB env servers in Chromium and the endpoint bridge) and the
reference agent over HTTP (OpenAI-compatible chat with tools), driven through ``/agents``.

Prints:

1. **Per-step overhead** the platform adds on top of the endpoint's own latency, from the rollouts' transcripts
   (p50/p95 over every step after the first of each rollout, in ms):
   - ``predict − endpoint``: the platform's model call (rlmesh RPC to the bridge, the bridge's request building and
     reply parsing, the openai client) minus the endpoint call as the bridge timed it (``trace.latencyMs``);
   - ``step wall − endpoint − env``: the time between two consecutive steps' tool events minus the endpoint call
     and the env's own step (the browser action, ``stepMs``): everything else, transcript recording included.
2. **Rollouts per second** of one task × ``--rollouts`` rollouts with 1, 2 and 4 concurrent envs (``workers``;
   a worker pool of 4): over the episodes' own span (first start → last end, servers already up) and from submit
   to COMPLETED (server starts included).

Usage: ``.venv/bin/python bench/bench_agent_runs.py [--rollouts 16] [--task miniwob.click-button]``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("RLMESH_WORKFLOW_EDITION", "2026.06")

from tests.support.agents import ReferenceAgent, agent_env  # noqa: E402
from tests.support.live import LivePlatform, wait_for  # noqa: E402


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else float("nan")


def fmt(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5):6.2f}  p95 {pct(values, 0.95):6.2f}  (n={len(values)})"


class Api:
    def __init__(self, live: LivePlatform):
        self.live, self.http = live, requests.Session()
        self.http.headers["Authorization"] = f"Bearer {live.api_key}"

    def run(self, agent_url: str, tasks: list[str], rollouts: int, workers: int) -> tuple[dict, float]:
        body = {"env_id": "miniwob", "model": "reference-agent", "task_ids": tasks, "rollouts_per_example": rollouts,
                "workers": workers, "endpoint": {"url": agent_url, "model": "reference"}}
        t0 = time.monotonic()
        run = self.http.post(f"{self.live.url}/agents/evaluations/run", json=body, timeout=60).json()
        url = f"{self.live.url}/agents{run['status_url']}"
        doc = wait_for(lambda: (d := self.http.get(url, timeout=60).json())["status"] in ("COMPLETED", "FAILED") and d,
                       timeout=900, interval=0.25)
        return doc, time.monotonic() - t0

    def transcripts(self, doc: dict) -> list[dict]:
        raw = self.http.get(f"{self.live.url}/agents/{doc['run_output_path']}", timeout=120).content
        bundle = zipfile.ZipFile(io.BytesIO(raw))
        return [json.loads(bundle.read(n)) for n in bundle.namelist() if n.startswith("transcripts/")]

    def metrics(self, doc: dict) -> dict:
        return self.http.get(f"{self.live.url}/v1/evaluations/{doc['evaluation_id']}/metrics", timeout=60).json()


def overheads(transcripts: list[dict]) -> tuple[list[float], list[float], list[float]]:
    """(predict − endpoint, step wall − endpoint − env, endpoint) per step, from the transcripts' events."""
    rpc, wall, endpoint = [], [], []
    for transcript in transcripts:
        models = {e["step"]: e for e in transcript["events"] if e["type"] == "model"}
        tools = {e["step"]: e for e in transcript["events"] if e["type"] == "tool"}
        for step, model in models.items():
            endpoint.append(model["latencyMs"])
            rpc.append(model["predictMs"] - model["latencyMs"])
            if step - 1 in tools and step in tools:  # a step between two tool events: the loop's whole turn
                turn = (tools[step]["t"] - tools[step - 1]["t"]) * 1000
                wall.append(turn - model["latencyMs"] - tools[step]["stepMs"])
    return rpc, wall, endpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rollouts", type=int, default=16)
    parser.add_argument("--task", default="miniwob.click-button")
    parser.add_argument("--overhead-tasks",
                        default="miniwob.login-user,miniwob.click-checkboxes,miniwob.enter-password")
    args = parser.parse_args()
    var = Path(tempfile.mkdtemp(prefix="rlm-bench-agents-"))
    live = LivePlatform(var, **agent_env())
    live.concurrency = 4
    live.start()
    agent = ReferenceAgent(var / "reference-agent.log")
    try:
        api = Api(live)
        doc, _ = api.run(agent.url, args.overhead_tasks.split(","), rollouts=4, workers=1)
        passed = sum(r["task_passed"] for r in doc["evaluations"][0]["results"])
        rpc, wall, endpoint = overheads(api.transcripts(doc))
        total = doc["progress"]["total_rollouts"]
        print(f"== per-step overhead over the endpoint ({doc['status']}, {passed}/{total} passed), ms")
        print(f"endpoint call (reference agent)   {fmt(endpoint)}")
        print(f"predict - endpoint                {fmt(rpc)}")
        print(f"step wall - endpoint - env step   {fmt(wall)}")
        print(f"\n== rollouts/s, {args.task} x {args.rollouts}")
        for workers in (1, 2, 4):
            doc, total = api.run(agent.url, [args.task], rollouts=args.rollouts, workers=workers)
            m = api.metrics(doc)
            passed = sum(r["task_passed"] for r in doc["evaluations"][0]["results"])
            print(f"workers={workers}: {m['episodesPerSecond']:.2f} rollouts/s over the episodes "
                  f"({m['wallSeconds']:.1f} s), {args.rollouts / total:.2f} rollouts/s submit→done ({total:.1f} s), "
                  f"{passed}/{args.rollouts} passed, env start p50 {m['serverStartSeconds']['env']['p50']:.2f} s")
    finally:
        agent.stop()
        live.stop()


if __name__ == "__main__":
    main()

"""The browser envs never use a proxy (issue 28, item 4): with every proxy variable pointing at a logging proxy on
loopback, a whole MiniWoB episode and a whole shop episode send it nothing, neither Selenium's calls to
chromedriver nor Chromium's own background requests (time, update, account services), with ``NO_PROXY`` unset
(Selenium would send its commands through the proxy) and with ``NO_PROXY=localhost,127.0.0.1`` (Chromium would
send its background requests through it)."""

from __future__ import annotations

import json
import time

import pytest

from evaluations.agents.reference_agent import decide
from evaluations.prebuilt.miniwob import MiniWoB
from evaluations.prebuilt.shop import Shop
from tests.support.proxy import LoggingProxy

pytestmark = [pytest.mark.browser_env, pytest.mark.usefixtures("chromium")]

ENVS = {"miniwob": lambda: MiniWoB().make(task="click-test"), "shop": lambda: Shop().make(task="shop.search.t001")}


@pytest.fixture
def proxy():
    server = LoggingProxy()
    yield server
    server.stop()


@pytest.mark.parametrize("no_proxy", [None, "localhost,127.0.0.1"], ids=["no NO_PROXY", "NO_PROXY=localhost"])
@pytest.mark.parametrize("name", list(ENVS))
def test_a_whole_episode_sends_nothing_through_the_proxy_in_the_environment(name, no_proxy, proxy, monkeypatch):
    for variable in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in proxy.environment(no_proxy).items():
        monkeypatch.setenv(variable, value)
    env = ENVS[name]()
    try:
        obs, _ = env.reset(seed=0)
        time.sleep(3)  # Chromium's background services start within seconds of the browser
        for _ in range(30):
            obs, reward, terminated, truncated, info = env.step(json.dumps(decide(obs["goal"], obs["dom"])))
            if terminated or truncated:
                break
    finally:
        env.close()
    assert terminated and reward > 0, info
    assert proxy.requests == []

"""The shop tool env behind :class:`evaluations.prebuilt.shop.Shop` (contract in that package's docstring).

One Chromium (Selenium, :mod:`evaluations.prebuilt.browser`) and one shop server (a thread of this process) per
env, both started at the first ``reset``. A step executes the tool call exactly as on a MiniWoB page (miniwob's
``execute_action_on_chromedriver``), waits until any navigation it caused has finished (the page being left is
flagged by ``shop.js``; the new one carries the server's page number), then reads the page with miniwob's
``core.getDOMInfo`` and copies the page kind and form values into the server-side state, which the checks read.
"""

from __future__ import annotations

import io
import json
import shutil
import time
import uuid
from typing import Any

import gymnasium as gym
import numpy as np

from ...agents.observation import render_elements
from ..browser import ToolStepMixin, action_config, elements_from_dom_info, new_profile_dir, start_chrome, text_space
from . import checks
from .app import ShopApp, ShopServer
from .data import Content
from .state import ShopState
from .tasks import ShopTask

__all__ = ["SHOT_HEIGHT", "SHOT_WIDTH", "ShopToolEnv"]

WINDOW = (1000, 750)
SHOT_WIDTH, SHOT_HEIGHT = 400, 300
SETTLE_SECONDS = 10.0
_SNAPSHOT = ("return {ready: document.readyState, seq: document.body ? (document.body.dataset.seq || null) : null, "
             "leaving: !!window.__shopLeaving};")
_OBSERVE = ("return {dom: core.getDOMInfo(), page: document.body.dataset.page || '{}', "
            "form: window.shopForm ? window.shopForm() : {}};")


class ShopToolEnv(ToolStepMixin, gym.Env):
    """One shop task (or an open task) acted on with tool calls; see :mod:`evaluations.prebuilt.shop`."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, task: ShopTask, content: Content, *, max_steps: int, screenshot: bool = False,
                 tools: tuple[str, ...] | list[str] = ("click", "type_text", "press_key", "wait", "finish")):
        self.content, self.screenshot, self.tools = content, screenshot, list(tools)
        self.configure(task, max_steps=max_steps)
        self.render_mode = "rgb_array"
        spaces: dict[str, gym.Space] = {"goal": text_space(4096), "dom": text_space(1 << 20),
                                        "error": text_space(4096), "meta": text_space(4096),
                                        "raw": text_space(1 << 21)}
        if screenshot:
            spaces["screenshot"] = gym.spaces.Box(0, 255, shape=(SHOT_HEIGHT, SHOT_WIDTH, 3), dtype=np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = text_space(1 << 22)
        self._driver = None
        self._server: ShopServer | None = None
        self._app: ShopApp | None = None
        self._profile = ""
        self._episode, self._steps = "", 0
        self._elements: dict[int, dict] = {}
        self._last: dict[str, Any] = {}

    def configure(self, task: ShopTask, *, max_steps: int | None = None) -> None:
        """Switch to another task (takes effect at the next reset; the browser is kept)."""
        self.task = task
        self.max_steps = int(max_steps or task.max_steps)

    # -- browser and server --------------------------------------------------------------------------------
    def _ensure_started(self) -> None:
        if self._driver is not None:
            return
        state = ShopState.start(self.content, self.task.profile_id)
        self._app = ShopApp(state)
        self._server = ShopServer(self._app)
        self._profile = new_profile_dir()
        self._driver = start_chrome(self._profile, f"--window-size={WINDOW[0]},{WINDOW[1]}")

    def _settle(self) -> str:
        """Wait until the browser shows the last page the server rendered, fully loaded, and is not leaving it;
        returns an error text when that takes longer than :data:`SETTLE_SECONDS`."""
        from selenium.common.exceptions import WebDriverException

        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline:
            try:
                snap = self._driver.execute_script(_SNAPSHOT)
            except WebDriverException:  # the document went away under the script: a navigation is on
                snap = None
            if snap and snap["ready"] == "complete" and not snap["leaving"] and str(snap["seq"]) == str(self._app.seq):
                return ""
            time.sleep(0.005)
        return f"the page did not finish loading within {SETTLE_SECONDS:g} s"

    # -- observation -------------------------------------------------------------------------------------------
    def _shot(self) -> np.ndarray:
        from PIL import Image

        image = Image.open(io.BytesIO(self._driver.get_screenshot_as_png())).convert("RGB")
        return np.asarray(image.resize((SHOT_WIDTH, SHOT_HEIGHT)), dtype=np.uint8)

    def _observe(self, error: str) -> dict[str, Any]:
        snap = self._driver.execute_script(_OBSERVE)
        elements = elements_from_dom_info(snap["dom"])
        self._elements = {el["ref"]: el for el in elements}
        try:
            page = json.loads(snap["page"])
        except (TypeError, json.JSONDecodeError):
            page = {}
        with self._app.lock:
            self._app.state.page, self._app.state.form = page, dict(snap.get("form") or {})
        raw = {"utterance": self.task.goal, "fields": [], "dom_elements": elements}
        meta = {"episode": self._episode, "step": self._steps, "task": self.task.id, "tools": self.tools}
        obs: dict[str, Any] = {"goal": self.task.goal, "dom": render_elements(elements),
                               "error": f"ERROR: {error}" if error else "", "meta": json.dumps(meta),
                               "raw": json.dumps(raw, ensure_ascii=False)}
        if self.screenshot:
            obs["screenshot"] = self._shot()
        self._last = obs
        return obs

    def _verdict(self, ended: bool) -> tuple[float, dict[str, Any]]:
        """The reward to pay now (the checks' reward when the episode ends, else 0) and the info fields of the
        checks: ``verifiers``, ``verdict`` (``state`` or ``unverified``), ``is_success`` (null when unverified),
        ``raw_reward`` and, at the end, ``shop_state`` (the whole state summary)."""
        with self._app.lock:
            summary = self._app.state.summary()
        extra: dict[str, Any] = {"shop_state": summary} if ended else {}
        if self.task.verifiers is None:
            return 0.0, {"verifiers": [], "verdict": "unverified", "is_success": None, "raw_reward": 0.0, **extra}
        results = checks.evaluate(self.task.verifiers, summary)
        reward = checks.reward_of(results, self.task.reward)
        return (reward if ended else 0.0), {"verifiers": results, "verdict": "state", "raw_reward": reward,
                                            "is_success": all(r["passed"] for r in results), **extra}

    def _info(self, *, tool_result: str = "", error: str = "", ended: bool = False, **flags: Any):
        reward, verdict = self._verdict(ended)
        info = {"task": self.task.id, "episode": self._episode, "tool_result": tool_result, "error": error,
                "terminal_action": False, "page_ended": False, "timed_out": False, "max_steps_reached": False,
                "page": (self._app.state.page or {}).get("kind", ""), **verdict, **flags}
        return reward, info

    # -- gymnasium API ---------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._ensure_started()
        state = ShopState.start(self.content, self.task.profile_id, seed=int(seed or 0),
                                initial=self.task.initial)
        with self._app.lock:
            self._app.state = state
        self._episode, self._steps = str(uuid.uuid4()), 0
        self._driver.get(self._server.url + "/")
        obs = self._observe(self._settle())
        return obs, self._info(tool_result="reset")[1]

    def _endpoint_error(self, message: str):
        obs = self._observe("")
        _, info = self._info(tool_result="endpoint error", ended=True, endpoint_error=message)
        return obs, 0.0, False, True, info

    def _finish(self, reason: str):
        obs = self._observe("")
        reward, info = self._info(tool_result=reason, ended=True, terminal_action=True)
        return obs, reward, True, False, info

    def _execute(self, action: dict, keys: tuple[str, ...]) -> str:
        """Run one miniwob action in the browser; the error text when the browser refused it."""
        from miniwob.selenium_actions import execute_action_on_chromedriver
        from selenium.common.exceptions import WebDriverException

        config = action_config(keys)
        action = {**action, "action_type": config.action_types.index(action["action_type"])}
        try:
            execute_action_on_chromedriver(action, [], config, self._driver)
        except WebDriverException as exc:
            try:
                self._driver.execute_script("return 1;")
            except WebDriverException:
                raise exc from None  # the browser itself is gone: the episode fails and the server restarts
            return f"the browser refused the action: {exc.msg or type(exc).__name__}"[:300]
        return ""

    def _after(self, action: dict | None, *, keys: tuple[str, ...] = (), result: str = "", error: str = ""):
        """Execute ``action`` (None: nothing), wait for the page, observe, and build the step tuple."""
        if action is not None:
            error = self._execute(action, keys) or self._settle()
        obs = self._observe(error)
        truncated = self._steps >= self.max_steps
        reward, info = self._info(tool_result=result or ("error" if error else ""), error=obs["error"],
                                  ended=truncated, max_steps_reached=truncated)
        return obs, reward, False, truncated, info

    def render(self) -> np.ndarray:
        """The browser window as an RGB array (SHOT_HEIGHT, SHOT_WIDTH, 3); black before the first reset."""
        if self._driver is None:
            return np.zeros((SHOT_HEIGHT, SHOT_WIDTH, 3), np.uint8)
        return self._shot()

    def state_summary(self) -> dict:
        """The shop's whole state now (tests, benchmarks)."""
        with self._app.lock:
            return self._app.state.summary()

    def close(self):
        driver, self._driver = self._driver, None
        if driver is not None:
            try:
                driver.quit()
            except Exception:  # noqa: BLE001 - a dead browser is closed either way
                pass
        if self._server is not None:
            self._server.close()
            self._server = None
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = ""

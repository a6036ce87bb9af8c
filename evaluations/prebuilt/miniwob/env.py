"""The MiniWoB tool env behind :class:`evaluations.prebuilt.miniwob.MiniWoB` (contract in that module's docstring).

Chromium is Debian's, driven by miniwob's own ``SeleniumInstance`` with our command line (headless, no sandbox,
no background networking, a fresh profile directory, only loopback resolvable) and with the page's episode timer
raised before each episode starts. Tool calls map to miniwob's element actions (``CLICK_ELEMENT``,
``FOCUS_ELEMENT_AND_TYPE_TEXT``, ``PRESS_KEY``) executed by ``SeleniumInstance.step``.
"""

from __future__ import annotations

import json
import shutil
import uuid
from typing import Any

import gymnasium as gym
import numpy as np

from ...agents.observation import render_elements
from ..browser import CHROME_FLAGS, PROFILE_PREFIX, BrowserMissing, action_config, chromium_paths, element_json, \
    ToolStepMixin, new_profile_dir, start_chrome, text_space

__all__ = ["CHROME_FLAGS", "PROFILE_PREFIX", "BrowserMissing", "MiniWoBToolEnv", "chromium_paths"]

TASK_HEIGHT, TASK_WIDTH = 210, 160


def _browser_class():
    """miniwob's environment with our Selenium instance (imported lazily: selenium/miniwob only where used)."""
    from miniwob.environment import MiniWoBEnvironment
    from miniwob.selenium_instance import SeleniumInstance
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.wait import WebDriverWait

    class Instance(SeleniumInstance):
        page_timer_ms = 0
        profile_dir = ""

        def create_driver(self):
            self.driver = start_chrome(self.profile_dir)
            self.driver.get(self.url)
            WebDriverWait(self.driver, 10).until(EC.element_to_be_clickable((By.ID, self.SYNC_SCREEN_ID)))
            self.inner_width, self.inner_height = self.driver.execute_script(
                "return [window.innerWidth, window.innerHeight];")

        def begin_task(self, seed: Any = None):
            if self.page_timer_ms:  # the page sets its timer when it loads; startEpisodeReal reads it
                self.driver.execute_script(f"core.EPISODE_MAX_TIME = {int(self.page_timer_ms)};")
            super().begin_task(seed=seed)

    class Browser(MiniWoBEnvironment):
        def __init__(self, task: str, page_timer_ms: int, profile_dir: str):
            self._timer, self._profile = page_timer_ms, profile_dir
            super().__init__(subdomain=task, render_mode=None)

        def _hard_reset_instance(self):
            if getattr(self, "instance", None):
                self.instance.close()
            self.instance = Instance(index=0, **self.instance_kwargs)
            self.instance.page_timer_ms, self.instance.profile_dir = self._timer, self._profile
            self.instance.start()

    return Browser


class MiniWoBToolEnv(ToolStepMixin, gym.Env):
    """One MiniWoB task acted on with tool calls (JSON text actions); see :mod:`evaluations.prebuilt.miniwob`."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 2}

    def __init__(self, task: str, *, tools: tuple[str, ...] | list[str], max_steps: int, screenshot: bool = False,
                 page_timer_ms: int = 0):
        """``task``: the miniwob task name; ``tools``: the tool names offered; ``max_steps``: the env's own step
        cap (truncation); ``page_timer_ms``: the page timer to set before each episode (0: the page's own)."""
        self.task, self.scenario, self.screenshot = task, f"miniwob.{task}", screenshot
        self.max_steps = max_steps
        self.page_timer_ms = page_timer_ms
        self.tools = list(tools)
        self.render_mode = "rgb_array"
        spaces: dict[str, gym.Space] = {"goal": text_space(4096), "dom": text_space(1 << 20), "error": text_space(4096),
                                        "meta": text_space(4096), "raw": text_space(1 << 21)}
        if screenshot:
            spaces["screenshot"] = gym.spaces.Box(0, 255, shape=(TASK_HEIGHT, TASK_WIDTH, 3), dtype=np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = text_space(1 << 22)
        self._browser = None
        self._profile = ""
        self._episode, self._steps, self._goal = "", 0, ""
        self._last: dict[str, Any] = {}
        self._elements: dict[int, dict] = {}

    # -- browser ---------------------------------------------------------------------------------------
    def _ensure_browser(self):
        if self._browser is None or self._browser.instance.died:
            self.close()
            self._profile = new_profile_dir()
            self._browser = _browser_class()(self.task, self.page_timer_ms, self._profile)
        return self._browser

    def _miniwob_step(self, action: dict | None, keys: tuple[str, ...] = ()) -> tuple[dict, dict]:
        """Run one miniwob step (``action`` None: only observe); returns (miniwob obs, metadata)."""
        config = action_config(keys)
        if action is not None:
            action = {**action, "action_type": config.action_types.index(action["action_type"])}
        obs, rewards, dones, infos = [{}], [0.0], [False], [{}]
        self._browser.instance.step(action, config, obs, rewards, dones, infos)
        return obs[0], infos[0]

    # -- observation -----------------------------------------------------------------------------------
    def _observe(self, mw_obs: dict, error: str) -> dict[str, Any]:
        elements = [element_json(el) for el in mw_obs.get("dom_elements", ())]
        self._elements = {el["ref"]: el for el in elements}
        raw = {"utterance": str(mw_obs.get("utterance", "")),
               "fields": [[str(k), str(v)] for k, v in mw_obs.get("fields", ())], "dom_elements": elements}
        meta = {"episode": self._episode, "step": self._steps, "task": self.scenario, "tools": self.tools}
        obs: dict[str, Any] = {"goal": self._goal, "dom": render_elements(elements),
                               "error": f"ERROR: {error}" if error else "", "meta": json.dumps(meta),
                               "raw": json.dumps(raw, ensure_ascii=False)}
        if self.screenshot:
            shot = mw_obs.get("screenshot")
            obs["screenshot"] = (np.asarray(shot, dtype=np.uint8) if shot is not None
                                 else np.zeros((TASK_HEIGHT, TASK_WIDTH, 3), np.uint8))
        self._last = obs
        return obs

    def _info(self, raw_reward: float = 0.0, *, tool_result: str = "", error: str = "", ended: bool = False,
              **flags: Any) -> dict[str, Any]:
        return {"task": self.scenario, "episode": self._episode, "raw_reward": float(raw_reward),
                "is_success": bool(ended and raw_reward == 1.0), "tool_result": tool_result, "error": error,
                "terminal_action": False, "page_ended": False, "timed_out": False, "max_steps_reached": False,
                **flags}

    # -- gymnasium API ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        browser = self._ensure_browser()
        browser.set_record_screenshots(self.screenshot)
        mw_obs, _ = browser.reset(seed=seed)
        self._episode, self._steps = str(uuid.uuid4()), 0
        self._goal = str(mw_obs.get("utterance", ""))
        return self._observe(mw_obs, ""), self._info(tool_result="reset")

    def _endpoint_error(self, message: str):
        self._observe_again()
        return self._last, 0.0, False, True, self._info(tool_result="endpoint error", endpoint_error=message)

    def _finish(self, reason: str):
        meta = self._browser.instance.get_metadata()
        raw = float(meta.get("raw_reward") or 0.0) if meta.get("done") else 0.0
        self._observe_again()
        return self._last, max(raw, 0.0), True, False, self._info(raw, tool_result=reason, ended=True,
                                                                   terminal_action=True)

    def _observe_again(self) -> None:
        if not self._browser.instance.get_metadata().get("done"):
            mw_obs, _ = self._miniwob_step(None)
            self._observe(mw_obs, "")

    def _after(self, action: dict | None, *, keys: tuple[str, ...] = (), result: str = "", error: str = ""):
        """Execute ``action`` (None: nothing), observe, and build the step tuple."""
        from selenium.common.exceptions import WebDriverException

        try:
            mw_obs, meta = self._miniwob_step(action, keys)
        except WebDriverException as exc:
            if self._browser.instance.died:
                raise
            error = f"the browser refused the action: {exc.msg or type(exc).__name__}"[:300]
            mw_obs, meta = self._miniwob_step(None)
        ended = bool(meta.get("done"))
        raw = float(meta.get("raw_reward") or 0.0) if ended else 0.0
        obs = self._observe(mw_obs, error)
        if ended:
            result = f"{result}; the page ended the episode (raw reward {raw:g})".lstrip("; ")
        truncated = not ended and self._steps >= self.max_steps
        info = self._info(raw, tool_result=result or ("error" if error else ""), error=obs["error"], ended=ended,
                          page_ended=ended, timed_out=ended and meta.get("reason") == "timed out",
                          max_steps_reached=truncated)
        return obs, max(raw, 0.0), ended, truncated, info

    def render(self) -> np.ndarray:
        """The task area as an RGB array (210, 160, 3); black before the first reset."""
        if self._browser is None:
            return np.zeros((TASK_HEIGHT, TASK_WIDTH, 3), np.uint8)
        from miniwob.screenshot import get_screenshot, pil_to_numpy_array

        inst = self._browser.instance
        image = get_screenshot(inst.driver, inst.inner_width, inst.inner_height, inst.task_width, inst.task_height)
        return pil_to_numpy_array(image)

    def close(self):
        if self._browser is not None:
            try:
                self._browser.close()
            finally:
                self._browser = None
        if self._profile:
            shutil.rmtree(self._profile, ignore_errors=True)
            self._profile = ""


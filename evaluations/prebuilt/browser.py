"""What every web env of the agent family shares (MiniWoB, the shop): Debian's Chromium driven by Selenium, the
page read as miniwob's DOM elements, and the five tools executed as miniwob actions.

One env family, one message contract: both envs extract elements with miniwob's own ``core.getDOMInfo()`` (the
MiniWoB pages carry ``core.js``; the shop serves the same file from the miniwob wheel), serialize them with
miniwob's ``serialize_dom_element`` into :func:`element_json`, render them with
:func:`evaluations.agents.observation.render_elements`, and execute a tool call through :func:`tool_action` and
miniwob's ``execute_action_on_chromedriver`` (``core.elementClick`` for clicks, key events for typing).

Nothing here imports selenium or miniwob at module level.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from ..agents.observation import mark_cut
from ..agents.tools import ENDPOINT_ERROR_TOOL, WAIT_MAX_MS, ToolCall, ToolCallError, parse_action

__all__ = ["CHROME_FLAGS", "PROFILE_PREFIX", "PROXY_VARIABLES", "BrowserMissing", "action_config", "chromium_paths", "element_json",
           "elements_from_dom_info", "key_name", "new_profile_dir", "start_chrome", "sweep_profiles", "text_space",
           "tool_action"]

#: Chromium switches (as root, closed network): no sandbox, no GPU, no proxy, nothing phoning home (no time, update,
#: account, optimization-guide or search-engine requests), only loopback resolves.
CHROME_FLAGS: tuple[str, ...] = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--no-proxy-server",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
    "--disable-default-apps", "--disable-extensions", "--disable-domain-reliability", "--no-pings",
    "--disable-client-side-phishing-detection", "--no-default-browser-check",
    "--disable-features=NetworkTimeServiceQuerying,OptimizationHints,OptimizationGuideModelDownloading,Translate,"
    "MediaRouter,AutofillServerCommunication,SearchPrefetch,NetworkPrediction",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
)
#: Environment variables that name a proxy; chromedriver and Chromium start without them (:func:`start_chrome`).
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "socks_proxy", "no_proxy", "auto_proxy")
_KEY_ALIASES = {"<Up>": "<ArrowUp>", "<Down>": "<ArrowDown>", "<Left>": "<ArrowLeft>", "<Right>": "<ArrowRight>",
                "<Esc>": "<Escape>", "<Return>": "<Enter>", "<Del>": "<Delete>"}
#: Fresh Chromium profile directories are ``$TMPDIR/miniwob-chromium-<pid>-<random>`` (every web env's).
PROFILE_PREFIX = "miniwob-chromium-"


class BrowserMissing(RuntimeError):
    """Chromium or its driver is not installed where expected."""


def chromium_paths() -> tuple[str, str]:
    """``(chromium, chromedriver)`` from ``MINIWOB_CHROME_BINARY`` / ``MINIWOB_CHROMEDRIVER`` (defaults
    ``/usr/bin/chromium``, ``/usr/bin/chromedriver``). Raises :class:`BrowserMissing` naming the apt command."""
    binary = os.environ.get("MINIWOB_CHROME_BINARY") or "/usr/bin/chromium"
    driver = os.environ.get("MINIWOB_CHROMEDRIVER") or "/usr/bin/chromedriver"
    missing = [p for p in (binary, driver) if not (os.path.isfile(p) and os.access(p, os.X_OK))]
    if missing:
        raise BrowserMissing(f"{', '.join(missing)} not found: install Chromium and its driver in one transaction "
                             "with `apt-get install -y chromium chromium-driver`")
    return binary, driver


def sweep_profiles() -> None:
    """Remove profile directories left by env processes that died without ``close()`` (a SIGTERMed server)."""
    for path in Path(tempfile.gettempdir()).glob(f"{PROFILE_PREFIX}*-*"):
        pid = path.name[len(PROFILE_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)


def new_profile_dir() -> str:
    """A fresh, empty Chromium profile directory for this process (after sweeping dead processes' ones)."""
    sweep_profiles()
    return tempfile.mkdtemp(prefix=f"{PROFILE_PREFIX}{os.getpid()}-")


def _direct_service(driver_path: str):
    """A chromedriver ``Service`` started without :data:`PROXY_VARIABLES` whose shutdown request goes to loopback
    directly (Selenium's own sends it through ``urllib``'s environment proxy)."""
    import urllib.request

    from selenium.webdriver.chrome.service import Service

    class DirectService(Service):
        def send_remote_shutdown_command(self) -> None:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            try:
                opener.open(f"{self.service_url}/shutdown", timeout=10).close()
            except OSError:  # URLError, a timeout, a refused connection: the process is terminated next either way
                return
            for _ in range(30):
                if not self.is_connectable():
                    break
                time.sleep(1)

    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    return DirectService(executable_path=driver_path, env=env)


def start_chrome(profile_dir: str, *extra_flags: str):
    """A Selenium Chrome driver on Debian's binaries with :data:`CHROME_FLAGS` and ``profile_dir``.

    Nothing of it uses a proxy, whatever the environment says: Selenium's calls to chromedriver (commands and the
    shutdown request) go to loopback directly, chromedriver and Chromium start with every :data:`PROXY_VARIABLES`
    removed from their environment, and Chromium runs with ``--no-proxy-server``."""
    from selenium import webdriver

    binary, driver_path = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in (*CHROME_FLAGS, *extra_flags, f"--user-data-dir={profile_dir}"):
        options.add_argument(flag)
    with warnings.catch_warnings():  # deprecated in favour of a ClientConfig, which ``webdriver.Chrome`` cannot take
        warnings.simplefilter("ignore", DeprecationWarning)
        options.ignore_local_proxy_environment_variables()
    return webdriver.Chrome(service=_direct_service(driver_path), options=options)


def element_json(el: dict) -> dict[str, Any]:
    """A miniwob serialized element (``serialize_dom_element``) as plain JSON: the ``raw`` observation's element."""
    tag = str(el["tag"])
    value: Any = str(el["value"])
    if tag in ("INPUT_checkbox", "INPUT_radio"):
        value = value == "True"
    flags = np.asarray(el["flags"]).tolist()
    return {
        "ref": int(el["ref"]), "parent": int(el["parent"]), "tag": tag, "text": str(el["text"]), "value": value,
        "id": str(el["id"]), "classes": str(el["classes"]),
        **{k: round(float(np.asarray(el[k]).reshape(-1)[0]), 1) for k in ("left", "top", "width", "height")},
        "focused": bool(flags[0]), "tampered": bool(flags[1]),
    }


def elements_from_dom_info(dom_info: dict) -> list[dict[str, Any]]:
    """The elements of a ``core.getDOMInfo()`` tree, in document order, as :func:`element_json` dicts (miniwob's
    own ``DOMElement`` and ``serialize_dom_element`` do the walking, exactly as for a MiniWoB page). miniwob cuts
    ``text`` and ``value`` at 256 characters; a cut one says its full length in ``text_chars`` / ``value_chars``
    (:func:`evaluations.agents.observation.mark_cut`), so the agent is told it sees only the start."""
    from miniwob.dom import DOMElement
    from miniwob.observation import serialize_dom_element

    return [mark_cut(element_json(serialize_dom_element(e)), text=e.text, value=e.value)
            for e in DOMElement(dom_info).subtree_elements]


def text_space(max_length: int) -> gym.spaces.Text:
    # rlmesh 0.1.0 requires min_length >= 1; an empty value still travels (with a conformance warning in info).
    return gym.spaces.Text(min_length=1, max_length=max_length)


def action_config(keys: tuple[str, ...] = ()):
    """miniwob's action space config for the tool actions (``NONE``, ``CLICK_ELEMENT``, ``PRESS_KEY``,
    ``FOCUS_ELEMENT_AND_TYPE_TEXT``) with ``keys`` allowed."""
    from miniwob.action import ActionSpaceConfig, ActionTypes

    return ActionSpaceConfig(action_types=[ActionTypes.NONE, ActionTypes.CLICK_ELEMENT, ActionTypes.PRESS_KEY,
                                           ActionTypes.FOCUS_ELEMENT_AND_TYPE_TEXT], allowed_keys=keys)


def key_name(key: str) -> str:
    """A press_key key in miniwob's syntax (modifier prefixes ``C-``/``S-``/``A-``/``M-``, then one character or a
    ``<Special>`` name); raises :class:`ToolCallError` for anything else."""
    from miniwob.constants import WEBDRIVER_MODIFIER_KEYS, WEBDRIVER_SPECIAL_KEYS

    prefix, rest = "", key
    while rest[:2] in WEBDRIVER_MODIFIER_KEYS and len(rest) > 2:
        prefix, rest = prefix + rest[:2], rest[2:]
    rest = _KEY_ALIASES.get(rest, rest)
    if len(rest) == 1 or rest in WEBDRIVER_SPECIAL_KEYS:
        return prefix + rest
    raise ToolCallError(f"press_key: unknown key {key!r} (one character, or a name such as <Enter>, <Backspace>, "
                        "<Tab>, <ArrowDown>, <Escape>, optionally after C-, S-, A-, M-)")


def _clickable_ref(elements: dict[int, dict], ref: int) -> int:
    element = elements.get(ref)
    if element is None:
        raise ToolCallError(f"no element with ref {ref} on the page")
    if ref < 0:  # a text pseudo-element: act on the element that holds the text
        return int(element["parent"])
    return ref


def tool_action(call: ToolCall, elements: dict[int, dict]) -> tuple[dict | None, tuple[str, ...], str]:
    """The miniwob action (``action_type`` by name; None: nothing to execute), the allowed keys and a short
    result text for a validated ``click``/``type_text``/``press_key``/``wait`` call on a page whose elements are
    ``elements`` (ref → :func:`element_json`). ``wait`` sleeps here. Raises :class:`ToolCallError` for an unknown
    ref or an unknown key."""
    args = call.arguments
    if call.tool == "wait":
        ms = min(args["ms"], WAIT_MAX_MS)
        time.sleep(ms / 1000)
        return None, (), f"waited {ms} ms"
    if call.tool == "press_key":
        key = key_name(args["key"])
        return {"action_type": "PRESS_KEY", "key": 0}, (key,), f"pressed {key}"
    ref = _clickable_ref(elements, args["ref"])
    if call.tool == "click":
        return {"action_type": "CLICK_ELEMENT", "ref": ref}, (), f"clicked [{args['ref']}]"
    return ({"action_type": "FOCUS_ELEMENT_AND_TYPE_TEXT", "ref": ref, "text": args["text"]}, (),
            f"typed {json.dumps(args['text'])[:80]} into [{args['ref']}]")


class ToolStepMixin:
    """``step`` of a gymnasium env driven by tool calls in a browser (MiniWoB, the shop): parse the call, then an
    endpoint error, ``finish`` or a browser action. The env provides ``tools``, ``_elements`` (ref → element),
    ``_steps``, and ``_after(action, keys=, result=, error=)``, ``_endpoint_error(message)`` and ``_finish(reason)``,
    each returning the gymnasium step tuple."""

    def step(self, action: Any):
        self._steps += 1
        try:
            call = parse_action(action, self.tools)
        except ToolCallError as exc:
            return self._after(None, error=str(exc))
        if call.tool == ENDPOINT_ERROR_TOOL:
            return self._endpoint_error(str(call.arguments.get("message") or "endpoint error"))
        if call.tool == "finish":
            return self._finish(f"finished: {call.arguments.get('reason', '')}"[:200])
        try:
            browser_action, keys, result = tool_action(call, self._elements)
        except ToolCallError as exc:
            return self._after(None, error=str(exc))
        return self._after(browser_action, keys=keys, result=result)

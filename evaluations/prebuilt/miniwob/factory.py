"""Prebuilt MiniWoB++ web tasks (Farama ``miniwob`` 1.1.0) in Debian's Chromium, acted on with five tools.

An ordinary ``rlmesh`` env (so ``/v1`` users can run rlmesh models on it too), served like the others::

    python -m rlmesh.serve --env evaluations.prebuilt.miniwob:MiniWoB --address 127.0.0.1:7400 \\
        --kwargs-json '{"task": "login-user"}'

Needs ``apt-get install -y chromium chromium-driver`` (one apt transaction, so the versions match); the binaries
are taken from ``MINIWOB_CHROME_BINARY`` / ``MINIWOB_CHROMEDRIVER`` (default ``/usr/bin/chromium`` and
``/usr/bin/chromedriver``), so Selenium Manager never downloads anything. Chromium starts at the first ``reset``
(≈1 s), not at ``make()``, so describing the factory needs no browser.

**Observation** (``gymnasium.spaces.Dict`` of ``Text``, plus a ``Box`` when asked):

- ``goal``: the task's utterance, e.g. ``Click on the "Ok" button.``
- ``dom``: the page's elements in the contract format of :mod:`evaluations.agents.observation`.
- ``error``: ``ERROR: <message>`` when the last action failed (invalid call, unknown ref, browser error), else ``""``.
- ``meta``: JSON ``{"episode": "<uuid4 made at reset>", "step": n, "task": "miniwob.<task>", "tools": [...]}``
  (``step`` is 0 at reset; a stateless model server keys its conversation on ``episode``).
- ``raw``: JSON of the raw miniwob observation without the screenshot: ``{"utterance": str, "fields": [[key,
  value], ...], "dom_elements": [{"ref", "parent", "tag", "text", "value", "id", "classes", "left", "top",
  "width", "height", "focused", "tampered"}, ...]}`` (``value`` is a bool for checkboxes and radios; positions in
  CSS pixels of the 160×210 task area).
- ``screenshot`` (only with ``screenshot=True``): uint8 RGB ``Box(210, 160, 3)`` of the task area.

**Action**: ``Text``, a JSON tool call ``{"tool": "<name>", "arguments": {...}}`` (:mod:`evaluations.agents.tools`;
extra keys such as ``"trace"`` are ignored). Invalid calls never raise: no page action, the step counts, reward 0,
and the next ``error`` explains. ``finish`` ends the episode (``terminated``, ``info["terminal_action"]``); the
page ending it (``core.endEpisode``) sets ``terminated`` and ``info["page_ended"]``; ``__endpoint_error__`` ends it
``truncated`` with ``info["endpoint_error"]``; ``max_steps`` reached ends it ``truncated``.

**Reward and info**: the reward is the page's raw reward (1 success, −1 failure/timeout, or partial) with −1
clamped to 0, paid when the page ends the episode (0 on other steps). Every step's info has ``raw_reward``,
``is_success`` (raw reward == 1 at the end), ``tool_result``, ``error``, ``terminal_action``, ``page_ended``,
``timed_out`` (the page's own timer fired), ``max_steps_reached`` and ``task``. The page's timer (10–30 s) is
lifted to ``page_timer_ms`` (default one hour) so LLM-speed agents are not scored as timeouts. ``reset(seed=s)``
gives the same goal in any process (miniwob seeds the page's ``Math.seedrandom``).

**Catalog**: :data:`TASKS` lists the tasks whose pages need only the five tools (element refs, typing, keys; no
coordinates; a ``select`` is set by typing an option's text into it). The reference agent
(:mod:`evaluations.agents.reference_agent`) solves the ones in :data:`REFERENCE_SOLVED`; every other entry resets
and renders (``bench/bench_agents.py --catalog``) and was included by reading its page. Excluded, because they need
coordinates, dragging, drawing, hovering, text selection, or information only the pixels carry:
``bisect-angle``, ``circle-center``, ``right-angle``, ``find-midpoint``, ``grid-coordinate``, ``chase-circle``,
``moving-items`` (coordinates); ``drag-*``, ``draw-*``, ``resize-textarea``, ``use-slider*``, ``use-colorwheel*``,
``highlight-text*``, ``text-editor`` (drag/selection); ``hover-shape`` (hover); ``click-color``, ``click-shades``,
``click-pie*``, ``click-shape``, ``count-shape``, ``count-sides``, ``identify-shape``, ``visual-addition``,
``number-checkboxes``, ``simon-says`` (colours, shapes or drawings only in pixels); ``click-scroll-list``,
``scroll-text-2``, ``form-sequence`` (multi-select, scrolling, a slider); ``text-transform`` (distorted text);
``*-nodelay``, ``*-easy``/``-medium`` variants and ``flight.*`` (duplicates, or a separate HTTP-served site). Nothing
here imports Chromium, selenium or miniwob at module level: the API reads :data:`TASKS` cheaply.
"""

from __future__ import annotations

from dataclasses import dataclass

import rlmesh

__all__ = ["CLICK_TOOLS", "REFERENCE_SOLVED", "SCENARIOS", "TASKS", "TYPE_TOOLS", "VARIANTS", "AgentTask", "MiniWoB",
           "task_id"]

#: Tool sets a task needs (``wait`` and ``finish`` always included).
CLICK_TOOLS: tuple[str, ...] = ("click", "wait", "finish")
TYPE_TOOLS: tuple[str, ...] = ("click", "type_text", "press_key", "wait", "finish")
#: Default page timer (ms) replacing the pages' own 10–30 s, so slow agents are scored on what they did.
PAGE_TIMER_MS = 3_600_000


@dataclass(frozen=True)
class AgentTask:
    """One MiniWoB task of the catalog: ``description`` (what it tests), ``example_goal`` (one utterance the page
    generates), ``max_steps`` (default step cap for one episode) and ``tools`` (the tool names it needs)."""

    description: str
    example_goal: str
    max_steps: int
    tools: tuple[str, ...]


def _t(description: str, example: str, max_steps: int, tools: tuple[str, ...] = TYPE_TOOLS) -> AgentTask:
    return AgentTask(description, example, max_steps, tools)


#: MiniWoB task name (``miniwob/<name>-v1``) → catalog entry. Descriptions and examples from the package's docs.
TASKS: dict[str, AgentTask] = {
    "click-test": _t("Click on a single button.", "Click the button.", 5, CLICK_TOOLS),
    "click-test-2": _t("Click on one of two buttons.", "Click button ONE.", 5, CLICK_TOOLS),
    "click-test-transfer": _t("Click on one of two buttons (different buttons in train and test).",
                              "Click button ONE.", 5, CLICK_TOOLS),
    "click-button": _t("Click on a specific button in a generated form.", 'Click on the "Ok" button.', 5, CLICK_TOOLS),
    "click-button-sequence": _t("Click on buttons in a certain order.", "Click button ONE, then click button TWO.",
                                6, CLICK_TOOLS),
    "click-link": _t("Click on a specified link in text.", 'Click on the link "Eget".', 5, CLICK_TOOLS),
    "click-dialog": _t("Click the button to close the dialog box.", 'Close the dialog box by clicking the "x".',
                       5, CLICK_TOOLS),
    "click-dialog-2": _t("Click a specific button in a dialog box.",
                         'Click the button in the dialog box labeled "Cancel".', 5, CLICK_TOOLS),
    "click-widget": _t("Click on a specific widget in a generated form.", 'Click on a "button" widget.', 5,
                       CLICK_TOOLS),
    "click-option": _t("Click option boxes.", "Select AU and click Submit.", 6, CLICK_TOOLS),
    "click-checkboxes": _t("Click desired checkboxes.", "Select 91YPF, i6Vdpn2, nd7Qt, XPMut and click Submit.",
                           10, CLICK_TOOLS),
    "click-checkboxes-large": _t("Click at least 5 out of up to 12 checkboxes.",
                                 "Select 4aycHnY, 1YPFe2i, gbQ4S2, Vdpn2dP, OX and click Submit.", 20, CLICK_TOOLS),
    "click-checkboxes-soft": _t("Click checkboxes of paraphrased entries.",
                                "Select words similar to brave, chubby, depraved and click Submit.", 10, CLICK_TOOLS),
    "click-checkboxes-transfer": _t("Click desired checkboxes (different counts in train and test).",
                                    "Select FBYPK4g, coN4Zj, ICsb and click Submit.", 10, CLICK_TOOLS),
    "click-collapsible": _t("Click a collapsible element to expand it.", "Expand the section below and click submit.",
                            8, CLICK_TOOLS),
    "click-collapsible-2": _t("Find and click on a specified link, from collapsible elements.",
                              'Expand the sections below, to find and click on the link "Habitasse".', 10, CLICK_TOOLS),
    "click-menu": _t("Click menu items.", "Select Almira>Sherye>Anissa", 10, CLICK_TOOLS),
    "click-menu-2": _t("Find a specific item from a menu.",
                       'Click the "Menu" button, and then find and click on the item labeled "Next".', 10, CLICK_TOOLS),
    "click-tab": _t("Click on a tab element.", "Click on Tab #1.", 5, CLICK_TOOLS),
    "click-tab-2": _t("Click a link inside a specific tab element.",
                      'Switch between the tabs to find and click on the link "Habitasse".', 10, CLICK_TOOLS),
    "click-tab-2-hard": _t("Click a link inside one of 2 to 6 tabs.",
                           'Switch between the tabs to find and click on the link "Duis".', 15, CLICK_TOOLS),
    "focus-text": _t("Focus into a text input.", "Focus into the textbox.", 5, CLICK_TOOLS),
    "focus-text-2": _t("Focus on a specific text input.", "Focus into the 1st input textbox.", 5, CLICK_TOOLS),
    "unicode-test": _t("Click on the button with the correct Unicode text.", 'Click on the "Cancél" button.', 5,
                       CLICK_TOOLS),
    "sign-agreement": _t("Sign a user agreement.", "Click the cancel button.", 6, CLICK_TOOLS),
    "navigate-tree": _t("Navigate a file tree to find a specified file or folder.",
                        'Navigate through the file tree. Find and click on the folder or file named "Agustina".', 15,
                        CLICK_TOOLS),
    "phone-book": _t("Find a contact in a phone book.", "Find Casie in the contact book and click on their address.",
                     15, CLICK_TOOLS),
    "ascending-numbers": _t("Click on the numbers in ascending order.", "Click on the numbers in ascending order.",
                            15, CLICK_TOOLS),
    "tic-tac-toe": _t("Win a game of tic-tac-toe.", "Playing as 'X', win a game of tic-tac-toe.", 10, CLICK_TOOLS),
    "social-media": _t("Interact with a social media feed.",
                       'For the user @consectetur, click on the "Block" button.', 10, CLICK_TOOLS),
    "social-media-all": _t("Do some action on all matching entries of a feed.",
                           'Click the "Like" button on all posts by @deneen and then click Submit.', 20, CLICK_TOOLS),
    "social-media-some": _t("Do some action on some matching entries of a feed.",
                            'Click the "Like" button on 5 posts by @deneen and then click Submit.', 20, CLICK_TOOLS),
    "stock-market": _t("Buy from the stock market below a specified price.",
                       "Buy ACP stock when the price is less than $56.60.", 30, CLICK_TOOLS),
    "buy-ticket": _t("Buy a ticket that matches the requested criteria.", "Buy the ticket with the cheapest cost.",
                     10, CLICK_TOOLS),
    "enter-text": _t("Enter given text to a textfield.", 'Enter "Agustina" into the text field and press Submit.', 6),
    "enter-text-2": _t("Convert given text to upper or lower case.",
                       'Type "IGNACIO" in all lower case letters in the text input and press Submit.', 6),
    "enter-text-dynamic": _t("Enter dynamically generated text to a textfield.",
                             'Enter "6gH" into the text field and press Submit.', 6),
    "enter-password": _t("Enter the password into the form.",
                         'Enter the password "817" into both text fields and press submit.', 8),
    "enter-date": _t("Use the date input to pick the correct date.", "Enter 05/20/2010 as the date and hit submit.", 8),
    "enter-time": _t("Enter the specified time into the input.", "Enter 12:25 AM as the time and press submit.", 8),
    "login-user": _t("Enter user login details into the form.",
                     'Enter the username "karrie" and the password "AU" into the text fields and press login.', 8),
    "login-user-popup": _t("Enter user login details into the form, closing a random popup.",
                           'Enter the username "karrie" and the password "AU" into the text fields and press login.',
                           10),
    "find-word": _t("Find nth word in a block of text.",
                    'Find the 1st word in the paragraph, type that into the textbox and press "Submit".', 6),
    "read-table": _t("Read information out from a table.",
                     "Enter the value of Color into the text field and press Submit.", 6),
    "read-table-2": _t("Read multiple pieces of information out from a table.",
                       "Enter the value that corresponds with each label into the form and submit when done.", 10),
    "simple-arithmetic": _t("Perform some arithmetic math operations.",
                            "Solve the math problem and type your answer into the textbox. Press submit when done.", 6),
    "simple-algebra": _t("Solve for X.",
                         "Solve for x and type your answer into the textbox. Press Submit when done.", 6),
    "copy-paste": _t("Copy text and paste it into an input.",
                     "Copy the text in the textarea below, paste it into the textbox and press Submit.", 6),
    "copy-paste-2": _t("Copy text from a specific textarea and paste it into an input.",
                       "Copy the text from the 1st text area below and paste it into the text input, then press "
                       "Submit.", 6),
    "generate-number": _t("Generate a random number that meets certain criteria.",
                          "Generate a number greater than 4, then press submit.", 6),
    "guess-number": _t("Guess the number.", "Guess the number between 0-9 and press Submit. Use the feedback below "
                       "to find the right number.", 20),
    "odd-or-even": _t("Mark each number as odd or even.",
                      "Mark the numbers below as odd or even and press submit when done.", 15),
    "choose-list": _t("Choose an item from a drop down list.", "Select Betty from the list and click Submit.", 6),
    "choose-date": _t("Learn to operate a date picker tool.", "Select 01/14/2016 as the date and hit submit.", 20),
    "use-spinner": _t("Use a spinner to select given number.", "Select -10 with the spinner and hit Submit.", 25),
    "use-autocomplete": _t("Use autocomplete element efficiently.",
                           'Enter an item that starts with "An" and ends with "ica".', 10),
    "search-engine": _t("Search through a bunch of results to find a specified link.",
                        'Use the textbox to enter "Dolores" and press "Search", then find and click the 7th search '
                        "result.", 15),
    "multi-layouts": _t("Fill in forms of varying layouts.", "Search for action movies directed by Bowen from year "
                        "1998.", 15),
    "multi-orderings": _t("Fill in forms with shuffled field orderings.",
                          "Search for action movies directed by Bowen from year 1998.", 15),
    "form-sequence-2": _t("Perform a series of instructions on a form.",
                          'Check the 1st radio button and enter the number "-5" into the 2nd textbox.', 10),
    "form-sequence-3": _t("Perform a series of instructions on a form.",
                          'Choose 5ft 10in from the dropdown, then click the button labeled "Maybe".', 10),
    "email-inbox": _t("Navigate through an email inbox and perform some actions.",
                      "Find the email by Audrey and forward that email to Hedy.", 20),
    "email-inbox-reply": _t("Reply to an email in an inbox.",
                            'Find the email by Audrey and reply to them with the text "Vel quis. Semper.".', 15),
    "email-inbox-forward-nl": _t("Forward an email (varied instruction texts).",
                                 "Amargo is waiting for the email by Lissie.", 15),
    "terminal": _t("Use the terminal to delete a file.",
                   "Use the terminal below to delete a file ending with the extension .gif", 10),
    "order-food": _t("Order food items from a menu.", "Order 3 items that are vegan", 20),
    "book-flight": _t("Search for flight results and book one.",
                      "Book the cheapest one-way flight from: Anvik, AK to: NYC on 12/23/2016.", 30),
}

#: Tasks the reference agent solves from the messages alone (tests/agents run them end to end).
REFERENCE_SOLVED: tuple[str, ...] = (
    "click-test", "click-button", "click-link", "focus-text", "enter-text", "enter-password", "login-user",
    "click-checkboxes", "use-autocomplete",
)


def task_id(task: str) -> str:
    """The scenario id of a task: ``miniwob.<task>`` (e.g. ``miniwob.login-user``)."""
    return f"miniwob.{task}"


#: Scenario id → what the API shows without a browser: ``{"task", "description", "example_goal", "max_steps",
#: "tools"}``, e.g. ``SCENARIOS["miniwob.login-user"]["max_steps"] == 8``.
SCENARIOS: dict[str, dict] = {
    task_id(task): {"task": task, "description": e.description, "example_goal": e.example_goal,
                    "max_steps": e.max_steps, "tools": list(e.tools)}
    for task, e in TASKS.items()
}

#: Scenario id → make params, e.g. ``"miniwob.login-user" → {"task": "login-user"}``.
VARIANTS: dict[str, dict[str, str]] = {task_id(task): {"task": task} for task in TASKS}


class MiniWoB(rlmesh.EnvFactory):
    """MiniWoB++ tasks in headless Chromium, one task per variant (``miniwob.<task>``); see the module docstring
    for the observation, action, reward and info contract."""

    workflow_edition = "2026.06"
    params = rlmesh.ParamSpec(
        rlmesh.Param("task", str, choices=tuple(TASKS), description="MiniWoB task name", group="task"),
        rlmesh.Param("screenshot", bool, description="Add the 160x210 RGB screenshot as 'screenshot'",
                     group="observation"),
        rlmesh.Param("max_steps", int, description="Steps after which the env truncates the episode (0: the "
                     "task's default)", group="task"),
        rlmesh.Param("page_timer_ms", int, description="The page's own episode timer in ms (0: keep the page's "
                     "10-30 s)", group="task"),
    )

    def make(  # type: ignore[override]
        self, task: str = "click-test", screenshot: bool = False, max_steps: int = 0,
        page_timer_ms: int = PAGE_TIMER_MS,
    ):
        if task not in TASKS:
            raise ValueError(f"unknown MiniWoB task {task!r} (see evaluations.prebuilt.miniwob.TASKS)")
        if int(max_steps) < 0 or int(page_timer_ms) < 0:
            raise ValueError("max_steps and page_timer_ms must be >= 0")
        from .env import MiniWoBToolEnv

        entry = TASKS[task]
        return MiniWoBToolEnv(task, tools=entry.tools, max_steps=int(max_steps) or entry.max_steps,
                              screenshot=bool(screenshot), page_timer_ms=int(page_timer_ms))

    @classmethod
    def enumerate_variants(cls):
        for variant_id, params in VARIANTS.items():
            entry = TASKS[params["task"]]
            yield rlmesh.Variant(
                variant_id, params, name=f"MiniWoB {params['task']}", instruction=entry.example_goal,
                description=entry.description, max_steps=entry.max_steps, tools=list(entry.tools),
                success={"kind": "env_flag"},
            )

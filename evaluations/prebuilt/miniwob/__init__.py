"""MiniWoB++ in one folder: web tasks in Debian's Chromium, acted on with tool calls.

- :mod:`.factory` — the env factory (``evaluations.prebuilt.miniwob:MiniWoB``): tasks, scenarios, tools, the
  reference agent's solved set.
- :mod:`.env` — :class:`~.env.MiniWoBToolEnv`, one task in one browser (``evaluations.prebuilt.browser``).
"""

from .factory import *  # noqa: F401,F403 - the env's contract, as its catalog source names it

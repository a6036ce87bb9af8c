"""The shop tests share the agent tests' fixtures (Chromium check, real processes, the reference agent)."""

from ..agents.conftest import chromium, procs, reference_agent  # noqa: F401 - fixtures

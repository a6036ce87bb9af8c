"""Fixtures for end-to-end tests against a live platform (see tests/support/live.py)."""

import pytest

from tests.support.live import ROOT, LivePlatform, wait_for

__all__ = ["ROOT", "wait_for"]


@pytest.fixture(scope="session")
def live(tmp_path_factory):
    platform = LivePlatform(tmp_path_factory.mktemp("live"))
    try:
        yield platform.start()
    finally:
        platform.stop()

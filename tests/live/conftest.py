"""End-to-end tests use the session-wide ``live`` fixture from tests/conftest.py."""

from tests.support.live import ROOT, wait_for

__all__ = ["ROOT", "wait_for"]

"""Secrets a request carries (a policy server's key, an agent endpoint's), never stored nor shown in the clear: the
request as stored holds ``***`` in their place."""

from __future__ import annotations

__all__ = ["REDACTED", "redacted"]

#: What a secret reads as once stored.
REDACTED = "***"


def redacted(data: dict) -> dict:
    """The request as stored and shown: every model entry's ``endpoint.key`` replaced by ``***``."""
    def entry(e):
        if isinstance(e, dict) and isinstance(e.get("endpoint"), dict) and e["endpoint"].get("key"):
            return {**e, "endpoint": {**e["endpoint"], "key": REDACTED}}
        return e

    out = dict(data)
    if isinstance(out.get("models"), list):
        out["models"] = [entry(e) for e in out["models"]]
    if "model" in out:
        out["model"] = entry(out["model"])
    return out

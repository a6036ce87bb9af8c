"""Outbound connections to user-supplied addresses: the address rule (:mod:`.addresses`) and the HTTP client and
address pinning that apply it at the moment of connecting (:mod:`.connect`). Nothing here imports Django: the
endpoint bridge uses it in its own process."""

from .addresses import allowed, refusal
from .connect import (
    RefusedTarget, checked_address, connection_error, cut_off_after, excerpt, http_client, refused, status_error,
)

__all__ = ["RefusedTarget", "allowed", "checked_address", "connection_error", "cut_off_after", "excerpt",
           "http_client", "refusal", "refused", "status_error"]

"""The per-credential budget of previews: workloads previewed per minute, counted before anything is planned.

A preview within the size limits is real work (about 0.7 s for one model × 1,000 tasks, measured with
``bench/bench_oversized_requests.py``'s host) and any role may send one, viewers included. Each credential (an API
key, a signed-in user, else the address) may preview ``RLMESH_PREVIEW_WORKLOADS_PER_MINUTE`` workloads (models ×
tasks, as the request spells them; at least 1 per request) per fixed minute; past it previews get 429 until the
minute ends. The count lives in the default cache, shared by every web process.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from rest_framework.exceptions import Throttled

from ..models import ApiKey
from ..planning.limits import refuse_oversized_evaluation, request_counts

__all__ = ["charge_preview"]


def _credential(request) -> str:
    if isinstance(request.auth, ApiKey):
        return f"key:{request.auth.pk}"
    if getattr(request.user, "pk", None):
        return f"user:{request.user.pk}"
    return f"address:{request.META.get('REMOTE_ADDR', '')}"


def charge_preview(request, data: dict) -> None:
    """Count the workloads of the preview ``data`` against the caller's budget; Throttled (429, ``Retry-After`` the
    rest of the minute) when it is spent. A request over the size limits is refused first (the 400 naming ``tasks``)
    and costs nothing."""
    refuse_oversized_evaluation(data)
    models, tasks, _ = request_counts(data)
    cost = max(1, models * tasks)
    now = time.time()
    key = f"preview-workloads:{_credential(request)}:{int(now // 60)}"
    cache.add(key, 0, timeout=120)
    try:
        used = cache.incr(key, cost)
    except ValueError:  # expired between add and incr
        cache.set(key, cost, timeout=120)
        used = cost
    limit = settings.RLMESH_PREVIEW_WORKLOADS_PER_MINUTE
    if used > limit:
        raise Throttled(wait=max(1, int(60 - now % 60)),
                        detail=f"previews of this credential asked for {used} workloads this minute; the budget is "
                        f"{limit} (RLMESH_PREVIEW_WORKLOADS_PER_MINUTE).")

"""Run webhooks: when an evaluation with a ``webhook_url`` ends, its status document is POSTed to it, signed with the
Standard Webhooks scheme (``standardwebhooks``: headers ``webhook-id``, ``webhook-timestamp``, ``webhook-signature``
= ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``) under the organization's secret (``whsec_…``, made on
first use, shown and rotated in Settings).

A non-2xx answer, a timeout or a refused connection is retried by Celery with exponential backoff
(``RLMESH_WEBHOOK_BACKOFF_SECONDS`` × 2ⁿ⁻¹, at most ``RLMESH_WEBHOOK_MAX_ATTEMPTS`` attempts in all); every attempt
is a :class:`~evaluations.models.WebhookDelivery` row. All attempts carry the same ``webhook-id`` and body, so a
receiver can drop duplicates. The target is checked again at each attempt and at the moment of connecting (the
same rule as endpoints, :mod:`evaluations.outbound`), and redirects are not followed.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import time
from datetime import datetime, timedelta, timezone as dt_timezone

import httpx2
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import outbound
from .reports.agents import status_document
from .agents.validation import validate_endpoint_url
from .models import Evaluation, Organization, WebhookDelivery
from . import dispatch

__all__ = ["deliver", "new_secret", "rotate_secret", "sign", "webhook_secret"]

logger = logging.getLogger(__name__)


def new_secret() -> str:
    """A fresh Standard Webhooks secret: ``whsec_`` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def webhook_secret(organization: Organization) -> str:
    """The organization's signing secret, made (once, race-free) on first use."""
    Organization.objects.filter(pk=organization.pk, webhook_secret="").update(webhook_secret=new_secret())
    organization.webhook_secret = Organization.objects.values_list("webhook_secret", flat=True).get(pk=organization.pk)
    return organization.webhook_secret


def rotate_secret(organization: Organization) -> str:
    """Replace the organization's secret; deliveries from now on are signed with the new one."""
    organization.webhook_secret = new_secret()
    organization.save(update_fields=["webhook_secret"])
    return organization.webhook_secret


def sign(secret: str, webhook_id: str, body: str, at: datetime) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body`` sent at ``at``."""
    from standardwebhooks import Webhook

    return {"webhook-id": webhook_id, "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(secret).sign(webhook_id, at, body)}


def _post(url: str, body: str, headers: dict) -> tuple[int | None, str]:
    """``(status, error)`` of one POST; status None when no HTTP answer came. The connection goes only to an
    address checked as it is made (:func:`evaluations.outbound.http_client`)."""
    allow = settings.RLMESH_AGENT_ALLOW_PRIVATE_TARGETS
    problems = validate_endpoint_url(url, allow_private=allow, path="webhook_url")
    if problems:
        return None, problems[0]["message"]
    headers = {**headers, "Content-Type": "application/json", "User-Agent": "rlmesh-platform"}
    try:
        with outbound.http_client(allow_private=allow, timeout=settings.RLMESH_WEBHOOK_TIMEOUT) as client:
            resp = client.post(url, content=body.encode("utf-8"), headers=headers)
    except httpx2.HTTPError as exc:
        refused = outbound.refused(exc)
        return None, str(refused) if refused else outbound.connection_error(exc)
    if 200 <= resp.status_code < 300:
        return resp.status_code, ""
    return resp.status_code, outbound.status_error(resp.status_code, resp.text)


def deliver(evaluation_id: int, attempt: int = 1) -> WebhookDelivery | None:
    """Make attempt ``attempt`` of an ended evaluation's webhook, log it, and schedule the next one when it failed
    and attempts are left. A repeated message for an attempt already made does nothing (returns None)."""
    evaluation = Evaluation.objects.select_related("organization").filter(pk=evaluation_id).first()
    if evaluation is None or not evaluation.webhook_url or not evaluation.is_terminal:
        return None
    if evaluation.webhook_deliveries.filter(attempt=attempt).exists():
        return None
    webhook_id = f"msg_{evaluation.run_id.hex}"
    body = json.dumps(status_document(evaluation, deliveries=False), separators=(",", ":"), ensure_ascii=False)
    headers = sign(webhook_secret(evaluation.organization), webhook_id, body, datetime.now(dt_timezone.utc))
    t0 = time.monotonic()
    status, error = _post(evaluation.webhook_url, body, headers)
    duration = round((time.monotonic() - t0) * 1000, 3)
    retry = bool(error) and attempt < settings.RLMESH_WEBHOOK_MAX_ATTEMPTS
    delay = settings.RLMESH_WEBHOOK_BACKOFF_SECONDS * 2 ** (attempt - 1)
    with transaction.atomic():
        delivery = WebhookDelivery.objects.create(
            evaluation=evaluation, attempt=attempt, webhook_id=webhook_id, url=evaluation.webhook_url,
            status_code=status, error=error, duration_ms=duration,
            next_attempt_at=timezone.now() + timedelta(seconds=delay) if retry else None)
        if retry:
            dispatch.send_webhook(evaluation.pk, attempt + 1, countdown=delay)
    logger.info("%s: webhook attempt %d → %s", evaluation.public_id, attempt, status or error[:80])
    return delivery

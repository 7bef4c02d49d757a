"""Webhook signature verification (docs/webhooks.md): ``X-Service-Signature`` and Standard Webhooks."""

from __future__ import annotations

import binascii
import hashlib
import hmac
import re
import time
from collections.abc import Mapping
from datetime import datetime, timezone

import standardwebhooks
import standardwebhooks.webhooks

from .errors import ScoresError
from .models import WebhookEnvelope


class WebhookVerificationError(ScoresError):
    pass


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by its name in any case (``Webhook-Id`` as well as ``webhook-id``)."""
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _standard_signature(secret: str, raw: bytes, headers: Mapping[str, str], tolerance_seconds: float, now: float | None) -> None:
    """The Standard Webhooks signature, as the ``standardwebhooks`` library signs it."""
    msg_id = _header(headers, "webhook-id")
    timestamp = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature") or ""
    if msg_id is None or timestamp is None or not timestamp.isdigit():
        raise WebhookVerificationError("webhook-id or webhook-timestamp missing or malformed")
    skew = abs((time.time() if now is None else now) - int(timestamp))
    if skew > tolerance_seconds:
        raise WebhookVerificationError(f"webhook-timestamp is {round(skew)} s from now")
    try:
        signer = standardwebhooks.Webhook(secret)
        text = raw.decode("utf-8")
    except (binascii.Error, ValueError, RuntimeError, standardwebhooks.webhooks.EmptyWebhookSecretError) as e:
        raise WebhookVerificationError("the secret is not a whsec_ secret, or the body is not UTF-8") from e
    # The library's own verify() has a fixed five-minute window and the wall clock: the
    # timestamp is checked above (tolerance_seconds, now), the signature by the library's sign().
    expected = signer.sign(msg_id, datetime.fromtimestamp(int(timestamp), tz=timezone.utc), text).encode()
    if not any(hmac.compare_digest(s.encode(), expected) for s in signatures.split(" ")):
        raise WebhookVerificationError("webhook-signature does not match the body")


def verify_webhook(
    secret: str,
    body: bytes | str,
    headers: Mapping[str, str],
    *,
    tolerance_seconds: float = 300,
    now: float | None = None,
) -> WebhookEnvelope:
    """Checks a delivery's signatures against the raw body and returns the parsed envelope.

    Every signature present must hold, and at least one must be present:
    ``X-Service-Signature`` (lowercase hex HMAC-SHA256 of the body, keyed with the secret's UTF-8
    text; during a secret rotation's overlap ``X-Service-Signature-Previous`` is the same with the
    old secret, and either matching holds) and the Standard Webhooks ``webhook-signature``
    (checked with the ``standardwebhooks`` library: ``v1,<base64>``, space-separated, over
    ``{webhook-id}.{webhook-timestamp}.{body}``, keyed with the bytes after ``whsec_``) with a
    ``webhook-timestamp`` within ``tolerance_seconds`` of ``now``. Header names match in any case.
    Keep the ``webhook-id``s you processed to drop a replay. Raises ``WebhookVerificationError``
    otherwise.
    """
    raw = body.encode() if isinstance(body, str) else body
    service = _header(headers, "x-service-signature")
    previous = _header(headers, "x-service-signature-previous")
    signatures = _header(headers, "webhook-signature")
    if service is None and signatures is None:
        raise WebhookVerificationError("no signature header (X-Service-Signature or webhook-signature)")
    if service is not None:
        expected = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
        if not any(h is not None and re.fullmatch(r"[0-9a-f]{64}", h) and hmac.compare_digest(h, expected) for h in (service, previous)):
            raise WebhookVerificationError("X-Service-Signature does not match the body")
    if signatures is not None:
        _standard_signature(secret, raw, headers, tolerance_seconds, now)
    try:
        return WebhookEnvelope.model_validate_json(raw)
    except ValueError as e:
        raise WebhookVerificationError("the signed body is not a webhook envelope") from e

"""What the sync and async clients share: retries, credits, query parameters, sync pages."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import httpx

from . import models
from .errors import ScoresConfigurationError, error_of, problem_code, retry_after_seconds
from .frames import MultiTickerHistory

Credits = int | Literal["unlimited"]
#: What ``npm start`` serves; ``SCORES_BASE_URL`` or ``base_url`` name another server.
DEFAULT_BASE_URL = "http://localhost:8080"
#: Dated before any score: a window ending here holds nothing (dates are clamped, never refused).
BEFORE_ANY_DATA = "1970-01-01"
_IDEMPOTENT = {"GET", "DELETE"}


#: Failures with no answer that a retry may cure: refused, reset or cut connections and timeouts.
_NETWORK_ERRORS = (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class RetryEvent:
    """A retry about to happen: after an answer (``status``, ``code``) or after no answer (``error``,
    the name of httpx's error, and ``status`` None)."""

    attempt: int
    delay: float
    status: int | None
    code: str | None
    error: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """``429 rate_limited`` (and, on GET and DELETE, 502/503/504 and network errors: connection
    refused or reset, timeouts) are retried with backoff, honouring ``Retry-After``;
    ``429 credits_exhausted`` never is."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 60.0

    def backoff(self, attempt: int) -> float:
        return min(self.base_delay * 2.0**attempt * (0.5 + random.random() / 2), self.max_delay)

    def network_delay(self, method: str, error: httpx.RequestError, attempt: int) -> float | None:
        """Seconds to wait before retrying a request that got no answer, or None to raise."""
        if attempt >= self.max_retries or method not in _IDEMPOTENT or not isinstance(error, _NETWORK_ERRORS):
            return None
        return self.backoff(attempt)

    def delay(self, method: str, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before retrying `response`, or None to return it."""
        if attempt >= self.max_retries:
            return None
        if response.status_code == 429:
            if problem_code(response) != "rate_limited":
                return None
        elif not (response.status_code in (502, 503, 504) and method in _IDEMPOTENT):
            return None
        after = retry_after_seconds(response.headers.get("retry-after"))
        if after is None:
            return self.backoff(attempt)
        return None if after > self.max_delay else after


@dataclass(frozen=True)
class SyncPage:
    """One answer of a history sync. Upsert ``rows`` by ticker and date and save ``next_since``
    with them, in one transaction: pass it as ``since`` to resume."""

    rows: list[models.MultiTickerHistoryRow]
    next_since: str
    has_more: bool
    credits: Credits | None
    page: MultiTickerHistory


OnRetry = Callable[[RetryEvent], None]


def credits_of(response: httpx.Response) -> Credits | None:
    value = response.headers.get("x-credits-remaining")
    if value is None:
        return None
    return "unlimited" if value == "unlimited" else int(value)


def raise_for_problem(response: httpx.Response) -> httpx.Response:
    if response.is_success or response.status_code == 304:
        return response
    raise error_of(response)


def clean(params: dict[str, str | int | Sequence[str] | None]) -> dict[str, str | int]:
    """Query parameters without the unset ones; a list is one comma-separated value (``tickers``)."""
    out: dict[str, str | int] = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = v if isinstance(v, (str, int)) else ",".join(v)
    return out


def headers_for(api_key: str) -> dict[str, str]:
    return {"X-API-Key": api_key, "Accept": "application/json"}


def settings(api_key: str | None, base_url: str | None) -> tuple[str, str]:
    """The key and the base URL: as given, else ``SCORES_API_KEY`` and ``SCORES_BASE_URL``, else
    (the URL only) ``DEFAULT_BASE_URL``."""
    key = api_key or os.environ.get("SCORES_API_KEY") or ""
    if not key.strip():
        raise ScoresConfigurationError("no API key: pass api_key or set SCORES_API_KEY")
    url = base_url or os.environ.get("SCORES_BASE_URL") or DEFAULT_BASE_URL
    if not url.startswith(("http://", "https://")):
        raise ScoresConfigurationError(f"base_url (or SCORES_BASE_URL) must be an http(s) URL, got {url!r}")
    return key, url.rstrip("/")

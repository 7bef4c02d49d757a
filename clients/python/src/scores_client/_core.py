"""What the sync and async clients share: retries, credits, query parameters, sync pages."""

from __future__ import annotations

import copy
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Self

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


@dataclass(frozen=True)
class Price:
    """What a dry run said a call would cost now (``price``): nothing was run or charged."""

    cost: int
    credits: Credits


class DryRunAnswered(Exception):
    """A dry run's 204, raised where the call would have read its body and caught by ``price``."""

    def __init__(self, price: Price) -> None:
        super().__init__(f"dry run: {price.cost} credits")
        self.price = price


def budget_headers(method: str, max_credits: int | None, dry_run: bool) -> dict[str, str]:
    """``X-Max-Credits`` and ``X-Dry-Run`` of a request: on reads only (a dry run of a write is refused)."""
    if method != "GET":
        return {}
    out = {"X-Max-Credits": str(max_credits)} if max_credits is not None else {}
    if dry_run:
        out["X-Dry-Run"] = "true"
    return out


@dataclass
class Balances:
    """What the latest answers said of the account and the key: ``X-Credits-Remaining``,
    ``X-Key-Budget-Remaining`` (a key with a credit limit only) and ``X-Credits-Cost``."""

    credits: Credits | None = None
    key_budget: int | None = None
    last_cost: int | None = None

    def note(self, response: httpx.Response, dry_run: bool) -> None:
        """Keeps what `response` says; raises ``DryRunAnswered`` for a dry run's 204."""
        if (c := credits_of(response)) is not None:
            self.credits = c
        if (b := response.headers.get("x-key-budget-remaining")) is not None:
            self.key_budget = int(b)
        if (cost := response.headers.get("x-credits-cost")) is not None:
            self.last_cost = int(cost)
        if dry_run and response.status_code == 204 and self.last_cost is not None and self.credits is not None:
            raise DryRunAnswered(Price(self.last_cost, self.credits))


class Budgeted:
    """What both clients say of the budget: the balances the latest answers carried, and a view
    of the client with another maximum per call."""

    max_credits: int | None
    _balances: Balances

    @property
    def credits(self) -> Credits | None:
        """``X-Credits-Remaining`` of the latest answer that carried it."""
        return self._balances.credits

    @property
    def key_budget(self) -> int | None:
        """``X-Key-Budget-Remaining`` of the latest answer that carried it: what this key may still
        spend under its daily and monthly limits (None for a key without a limit)."""
        return self._balances.key_budget

    @property
    def last_cost(self) -> int | None:
        """``X-Credits-Cost`` of the latest answer that carried it: what that call cost."""
        return self._balances.last_cost

    def with_budget(self, max_credits: int | None) -> Self:
        """This client, for reads that may cost at most ``max_credits`` each (a call that would cost
        more raises ``CostExceedsMaxError``, charged nothing). It shares this client's connections:
        close this one when done."""
        view = copy.copy(self)
        view.max_credits = max_credits
        view._balances = Balances()
        return view


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

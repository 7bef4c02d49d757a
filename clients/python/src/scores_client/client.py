"""The synchronous client (httpx)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any

import httpx

from . import models
from ._core import (
    BEFORE_ANY_DATA,
    DEFAULT_BASE_URL,
    Credits,
    OnRetry,
    RetryEvent,
    RetryPolicy,
    SyncPage,
    clean,
    credits_of,
    headers_for,
    raise_for_problem,
)
from .errors import problem_code
from .frames import DivergenceEvents, MultiTickerHistory, Screener, ScoreHistory


class ScoresClient:
    """A Scores API client. Every failure raises the ``ScoresApiError`` subclass of its problem
    ``code``; ``credits`` is the latest ``X-Credits-Remaining`` (a number, or ``"unlimited"``).

    >>> with ScoresClient(api_key, base_url="http://localhost:8080") as scores:
    ...     scores.history("AAPL", start="2024-01-01").to_pandas()
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = DEFAULT_BASE_URL,
        *,
        retry: RetryPolicy | None = None,
        on_retry: OnRetry | None = None,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.credits: Credits | None = None
        self.retry = retry or RetryPolicy()
        self._on_retry = on_retry
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers_for(api_key), timeout=timeout, transport=transport)

    def __enter__(self) -> ScoresClient:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None) -> httpx.Response:
        """Any call, retried by the policy; raises the typed error of a failure."""
        attempt = 0
        while True:
            response = self._http.request(method, path, params=clean(params or {}), json=json)
            if (c := credits_of(response)) is not None:
                self.credits = c
            wait = self.retry.delay(method, response, attempt)
            if wait is None:
                return raise_for_problem(response)
            attempt += 1
            if self._on_retry:
                self._on_retry(RetryEvent(attempt, wait, response.status_code, problem_code(response)))
            time.sleep(wait)

    def get_score(self, ticker: str) -> models.ScoreResponse:
        return models.ScoreResponse.model_validate_json(self.request("GET", f"/v1/scores/{ticker}").content)

    def history(self, ticker: str, *, start: str | None = None, end: str | None = None, as_known_at: str | None = None) -> ScoreHistory:
        r = self.request("GET", f"/v1/scores/{ticker}/history", params={"start": start, "end": end, "as_known_at": as_known_at})
        return ScoreHistory.model_validate_json(r.content)

    def multi_history(
        self,
        tickers: Sequence[str] | None = None,
        *,
        start: str | None = None,
        end: str | None = None,
        since: str | None = None,
        as_known_at: str | None = None,
    ) -> MultiTickerHistory:
        params = {"tickers": tickers, "start": start, "end": end, "since": since, "as_known_at": as_known_at}
        return MultiTickerHistory.model_validate_json(self.request("GET", "/v1/scores/history", params=params).content)

    def screener(self, *, min_score: int | None = None, limit: int | None = None) -> Screener:
        return Screener.model_validate_json(self.request("GET", "/v1/screener", params={"min_score": min_score, "limit": limit}).content)

    def divergence_events(self, *, since: str | None = None) -> DivergenceEvents:
        return DivergenceEvents.model_validate_json(self.request("GET", "/v1/divergence/events", params={"since": since}).content)

    def usage(self) -> models.UsageResponse:
        return models.UsageResponse.model_validate_json(self.request("GET", "/v1/usage").content)

    def bulk_exports(self) -> models.BulkExportsResponse:
        return models.BulkExportsResponse.model_validate_json(self.request("GET", "/v1/bulk/exports").content)

    def download_export(self, bundle_id: str, name: str) -> bytes:
        """One file of a bundle (gzipped CSV), as bytes."""
        return self.request("GET", f"/v1/bulk/exports/{bundle_id}/{name}").content

    def register_webhook(self, event_type: str, url: str) -> models.RegisteredWebhookResponse:
        r = self.request("POST", "/v1/webhooks", json={"event_type": event_type, "url": url})
        return models.RegisteredWebhookResponse.model_validate_json(r.content)

    def test_webhook(self, webhook_id: int) -> models.TestDeliveryResponse:
        return models.TestDeliveryResponse.model_validate_json(self.request("POST", f"/v1/webhooks/{webhook_id}/test").content)

    def rotate_webhook_secret(self, webhook_id: int, overlap_hours: int | None = None) -> models.RotatedSecretResponse:
        """A new signing secret (shown once); the old one signs beside it for ``overlap_hours`` (default 24)."""
        body = {} if overlap_hours is None else {"overlap_hours": overlap_hours}
        return models.RotatedSecretResponse.model_validate_json(self.request("POST", f"/v1/webhooks/{webhook_id}/rotate-secret", json=body).content)

    def delete_webhook(self, webhook_id: int) -> models.WebhookOkResponse:
        return models.WebhookOkResponse.model_validate_json(self.request("DELETE", f"/v1/webhooks/{webhook_id}").content)

    def sync_history(
        self,
        tickers: Sequence[str] | None = None,
        *,
        start: str | None = None,
        end: str | None = None,
        as_known_at: str | None = None,
        since: str | None = None,
        poll_interval: float | None = None,
    ) -> Iterator[SyncPage]:
        """``GET /v1/scores/history`` page by page over ``next_since`` (docs/sync.md).

        Each page holds the rows written or restated since the previous one, each row version
        once. Stop (or crash) at any page and call again with the last ``next_since`` you saved:
        nothing is missed or billed twice. Without ``since``, a free call whose window ends before
        any data (``end=1970-01-01``) gives the cursor of an empty copy, so the whole window comes
        as rows that entered it, in pages of at most 200,000 (``has_more``). With
        ``poll_interval`` (seconds) it polls again after the last page, forever.
        """
        if since is None:
            since = self.multi_history(tickers, end=BEFORE_ANY_DATA, as_known_at=as_known_at).next_since
        while True:
            page = self.multi_history(tickers, start=start, end=end, since=since, as_known_at=as_known_at)
            since = page.next_since
            yield SyncPage(page.rows, page.next_since, page.has_more, self.credits, page)
            if page.has_more:
                continue
            if poll_interval is None:
                return
            time.sleep(poll_interval)

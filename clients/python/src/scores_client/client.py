"""The synchronous client (httpx)."""

from __future__ import annotations


import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any, Self

import httpx

from ._core import (
    BEFORE_ANY_DATA,
    Balances,
    Budgeted,
    Credits,
    DryRunAnswered,
    Price,
    OnRetry,
    RetryEvent,
    RetryPolicy,
    SyncPage,
    budget_headers,
    clean,
    headers_for,
    raise_for_problem,
    settings,
)
from ._operations import Operations
from ._params import DateLike, InstantLike
from .errors import ScoresConfigurationError, ScoresNetworkError, problem_code
from .frames import MultiTickerHistory


class ScoresClient(Operations, Budgeted):
    """A Scores API client: a typed method per operation (``get_score``, ``get_score_history``,
    ``list_themes``, ...; ``OPERATIONS`` lists them). Every failure raises a ``ScoresError``: the
    ``ScoresApiError`` subclass of its problem ``code``, ``ScoresHttpError`` or
    ``ScoresNetworkError``; ``credits`` is the latest ``X-Credits-Remaining`` (a number, or
    ``"unlimited"``). The key and the URL default to ``SCORES_API_KEY`` and ``SCORES_BASE_URL``.

    >>> with ScoresClient() as scores:
    ...     scores.get_score_history("AAPL", start=date(2024, 1, 1)).to_pandas()
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        retry: RetryPolicy | None = None,
        on_retry: OnRetry | None = None,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
        max_credits: int | None = None,
    ) -> None:
        key, url = settings(api_key, base_url)
        self.base_url = url
        #: The most any read of this client may cost (``X-Max-Credits``); ``with_budget`` sets another.
        self.max_credits = max_credits
        self._balances = Balances()
        self._dry_run = False
        self.retry = retry or RetryPolicy()
        self._on_retry = on_retry
        self._http = httpx.Client(base_url=url, headers=headers_for(key), timeout=timeout, transport=transport)

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
            try:
                response = self._http.request(
                    method, path, params=clean(params or {}), json=json, headers=budget_headers(method, self.max_credits, self._dry_run)
                )
            except httpx.RequestError as e:
                wait = self.retry.network_delay(method, e, attempt)
                if wait is None:
                    raise ScoresNetworkError(method, f"{self.base_url}{path}", e) from e
                attempt += 1
                if self._on_retry:
                    self._on_retry(RetryEvent(attempt, wait, None, None, type(e).__name__))
                time.sleep(wait)
                continue
            self._balances.note(response, self._dry_run)
            wait = self.retry.delay(method, response, attempt)
            if wait is None:
                return raise_for_problem(response)
            attempt += 1
            if self._on_retry:
                self._on_retry(RetryEvent(attempt, wait, response.status_code, problem_code(response)))
            time.sleep(wait)

    def price(self, call: Callable[[Self], object]) -> Price:
        """What a call would cost now, without running or charging it (``X-Dry-Run: true``):
        ``scores.price(lambda c: c.get_multi_ticker_history())``. Raises what the call would raise
        (``TierError``, ``CreditsExhaustedError`` with the cost, ``CostExceedsMaxError``, ...)."""
        dry = self.with_budget(self.max_credits)
        dry._dry_run = True
        try:
            call(dry)
        except DryRunAnswered as answered:
            self._balances.credits = answered.price.credits
            return answered.price
        raise ScoresConfigurationError("the call priced made no read with a price (a dry run prices GET operations)")

    # The names of the first release, kept: each is the generated method of its operation.
    history = Operations.get_score_history
    screener = Operations.screen_stocks
    divergence_events = Operations.get_divergence_events
    usage = Operations.get_usage
    bulk_exports = Operations.list_bulk_exports
    download_export = Operations.download_bulk_export_file
    register_webhook = Operations.create_webhook

    def multi_history(
        self,
        tickers: Sequence[str] | None = None,
        *,
        start: DateLike | None = None,
        end: DateLike | None = None,
        since: str | None = None,
        as_known_at: InstantLike | None = None,
    ) -> MultiTickerHistory:
        """``get_multi_ticker_history`` with ``tickers`` first."""
        return self.get_multi_ticker_history(tickers=tickers, start=start, end=end, since=since, as_known_at=as_known_at)

    def sync_history(
        self,
        tickers: Sequence[str] | None = None,
        *,
        start: DateLike | None = None,
        end: DateLike | None = None,
        as_known_at: InstantLike | None = None,
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

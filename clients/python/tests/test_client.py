"""The Python client against a live server process: typed errors, credits, retries, async, frames, webhooks."""

from __future__ import annotations

import asyncio
import typing

import pandas as pd
import pytest

from conftest import Receiver
from live_server import LiveServer
from scores_client import (
    ERROR_CLASSES,
    AsyncScoresClient,
    BadRequestError,
    CostExceedsMaxError,
    CreditsExhaustedError,
    CursorInvalidError,
    NotFoundError,
    RateLimitedError,
    RetryEvent,
    RetryPolicy,
    ScoresApiError,
    ScoresClient,
    TierError,
    UnauthorizedError,
    WebhookVerificationError,
    history_frame,
    verify_webhook,
)
from scores_client.models import ProblemDetails


def test_every_problem_code_of_the_document_has_its_error_class() -> None:
    problems = typing.get_args(ProblemDetails.model_fields["root"].annotation)
    codes = [code for p in problems for code in typing.get_args(p.model_fields["code"].annotation)]
    assert sorted(ERROR_CLASSES) == sorted(codes)
    assert all(issubclass(c, ScoresApiError) for c in ERROR_CLASSES.values())


def test_raises_the_typed_error_of_each_problem_with_its_details(server: LiveServer) -> None:
    with ScoresClient(server.key("quant"), base_url=server.url) as c:
        with pytest.raises(NotFoundError) as nf:
            c.get_score("ZZZZZ")
        assert nf.value.status == 404 and nf.value.code == "not_found"
        assert nf.value.request_id is not None and nf.value.request_id.startswith("req_")
        with pytest.raises(BadRequestError) as bad:
            c.history("AAPL", start="2020-13-45")
        assert bad.value.problem.errors is not None and bad.value.problem.errors[0].parameter == "start"
        with pytest.raises(CursorInvalidError):
            next(c.sync_history(["AAPL"], since="c1_bm90LWEtY3Vyc29y"))
    with ScoresClient("sk_live_not_a_key", base_url=server.url) as anon, pytest.raises(UnauthorizedError):
        anon.usage()
    with ScoresClient(server.key("free"), base_url=server.url) as free, pytest.raises(TierError):
        free.divergence_events()


def test_reads_credits_remaining_a_number_or_unlimited(server: LiveServer) -> None:
    with ScoresClient(server.key("builder"), base_url=server.url) as c:
        c.usage()
        start = c.credits
        assert isinstance(start, int)
        h = c.history("MSFT", start="2020-06-01")
        assert c.credits == start - h.count > 0
    with ScoresClient(server.key("enterprise"), base_url=server.url) as e:
        e.usage()
        assert e.credits == "unlimited"


def test_prices_a_call_first_and_caps_calls_charging_nothing_for_either_refusal(server: LiveServer) -> None:
    with ScoresClient(server.key("quant"), base_url=server.url) as c:
        priced = c.price(lambda dry: dry.history("MSFT", start="2020-06-01"))
        assert priced.cost > 5 and isinstance(priced.credits, int)
        before = c.credits
        assert isinstance(before, int)
        with pytest.raises(CostExceedsMaxError) as over:
            c.with_budget(priced.cost - 1).history("MSFT", start="2020-06-01")
        assert over.value.problem.max_credits == priced.cost - 1
        assert c.with_budget(priced.cost).history("MSFT", start="2020-06-01").count == priced.cost
        c.usage()
        assert c.credits == before - priced.cost
    with ScoresClient(server.key("quant"), base_url=server.url, max_credits=1) as capped, pytest.raises(CostExceedsMaxError):
        capped.get_score("AAPL")
    with ScoresClient(server.key("free"), base_url=server.url) as free, pytest.raises(TierError):
        free.price(lambda dry: dry.divergence_events())


def test_async_client_prices_a_call_first(server: LiveServer) -> None:
    async def run() -> None:
        async with AsyncScoresClient(server.key("quant"), base_url=server.url) as c:
            priced = await c.price(lambda dry: dry.get_score("AAPL"))
            assert priced.cost == 2
            with pytest.raises(CostExceedsMaxError):
                await c.with_budget(1).get_score("AAPL")

    asyncio.run(run())


def test_to_pandas_types_the_columns_of_history_screener_and_events(server: LiveServer) -> None:
    with ScoresClient(server.key("quant"), base_url=server.url) as c:
        h = c.history("AAPL", start="2020-06-01").to_pandas()
        assert list(h.columns) == ["ticker", "date", "main_street", "wall_street", "service_score", "estimated"]
        assert len(h) > 10 and (h["ticker"] == "AAPL").all()
        assert str(h["ticker"].dtype) == "string" and str(h["date"].dtype) == "datetime64[ns]"
        assert str(h["service_score"].dtype) == "float64" and str(h["estimated"].dtype) == "bool"
        m = c.multi_history(["AAPL", "MSFT"], start="2020-06-01")
        mf = m.to_pandas()
        assert len(mf) == m.count and set(mf["ticker"]) == {"AAPL", "MSFT"}
        assert str(mf["divergence_gap"].dtype) == "Float64" and str(mf["restated_at"].dtype) == "datetime64[ns, UTC]"
        assert mf.equals(history_frame(m.rows))
        s = c.screener(limit=5).to_pandas()
        assert len(s) == 5 and str(s["divergence_gap"].dtype) == "float64"
        ev = c.divergence_events(since="2019-01-01").to_pandas()
        assert len(ev) > 0
        assert str(ev["direction"].dtype) == "category" and set(ev["direction"].cat.categories) <= {"bull", "bear"}
        assert str(ev["flag_date"].dtype) == "datetime64[ns]" and str(ev["days"].dtype) == "Int64"
        assert str(ev["pct_change"].dtype) == "Float64"
        empty = c.multi_history(["AAPL"], end="1970-01-01").to_pandas()
        assert len(empty) == 0 and str(empty["date"].dtype) == "datetime64[ns]"
        assert isinstance(empty, pd.DataFrame)


async def _flood(client: AsyncScoresClient, n: int) -> list[object]:
    return list(await asyncio.gather(*(client.usage() for _ in range(n)), return_exceptions=True))


def test_async_client_retries_rate_limited_after_retry_after_and_gives_up_when_told(server: LiveServer) -> None:
    # The free demo key: 10 requests/s, bursts of 20; GET /v1/usage is free of credits.
    events: list[RetryEvent] = []

    async def scenario() -> tuple[list[object], list[object]]:
        async with AsyncScoresClient(server.key("free"), base_url=server.url, retry=RetryPolicy(max_retries=0)) as strict:
            refused = await _flood(strict, 60)
        await asyncio.sleep(3)
        async with AsyncScoresClient(server.key("free"), base_url=server.url, on_retry=events.append, retry=RetryPolicy(max_retries=8)) as patient:
            answered = await _flood(patient, 60)
        return refused, answered

    refused, answered = asyncio.run(scenario())
    limited = [r for r in refused if isinstance(r, RateLimitedError)]
    assert limited, "the flood was limited"
    assert all(r.retry_after is not None and r.retry_after >= 1 for r in limited)
    assert all(not isinstance(r, BaseException) for r in answered), answered
    assert events and all(e.code == "rate_limited" and e.status == 429 and e.delay >= 1 for e in events)


def test_never_retries_credits_exhausted(server: LiveServer) -> None:
    # A free key's call that costs more than its monthly 1,000 credits is refused whole.
    events: list[RetryEvent] = []
    with ScoresClient(server.key("free"), base_url=server.url, on_retry=events.append) as c:
        with pytest.raises(CreditsExhaustedError) as err:
            c.multi_history()
    assert err.value.status == 429 and events == []


def test_verify_webhook_accepts_a_real_delivery_by_both_signatures_and_refuses_forgeries(server: LiveServer, receiver: Receiver) -> None:
    import time

    # The server signs on its transport clock, the wall clock, whatever SCORES_NOW pins for the data.
    now = time.time()
    with ScoresClient(server.key("quant"), base_url=server.url) as c:
        hook = c.register_webhook("divergence_event", receiver.url)
        assert c.test_webhook(hook.id).ok
        c.delete_webhook(hook.id)
    headers, body = receiver.received[-1]
    envelope = verify_webhook(hook.secret, body, headers, now=now)
    assert envelope.test is True and envelope.source == "scores-service"
    service_only = {k: v for k, v in headers.items() if not k.startswith("webhook-")}
    standard_only = {k: v for k, v in headers.items() if k != "x-service-signature"}
    assert verify_webhook(hook.secret, body.decode(), service_only).test is True
    assert verify_webhook(hook.secret, body, standard_only, now=now).test is True
    forged = body.replace(b"divergence_event", b"divergence_evenT")
    # After a rotation, during its overlap: a receiver with the old secret and one with the new both verify.
    with ScoresClient(server.key("quant"), base_url=server.url) as c:
        rotating = c.register_webhook("score_move", receiver.url)
        rotated = c.rotate_webhook_secret(rotating.id, overlap_hours=1)
        assert c.test_webhook(rotating.id).ok
        c.delete_webhook(rotating.id)
    r_headers, r_body = receiver.received[-1]
    for secret in (rotating.secret, rotated.secret):
        assert verify_webhook(secret, r_body, r_headers, now=time.time()).test is True
    for args in [(hook.secret, forged, service_only, now), (hook.secret, forged, standard_only, now), (hook.secret, body, standard_only, now + 600), (hook.secret, body, {}, now)]:
        with pytest.raises(WebhookVerificationError):
            verify_webhook(args[0], args[1], args[2], now=args[3])

"""The generated methods against a live server: dates, the environment, every list as a DataFrame,
network errors retried and wrapped, one error base, webhooks with headers in any case."""

from __future__ import annotations

import asyncio
import inspect
import socket
import threading
import typing
from datetime import date, datetime, timedelta, timezone

import pandas as pd
import pytest
import standardwebhooks

from live_server import LiveServer
from scores_client import (
    DEFAULT_BASE_URL,
    AsyncScoresClient,
    NotFoundError,
    RetryEvent,
    RetryPolicy,
    ScoresApiError,
    ScoresClient,
    ScoresConfigurationError,
    ScoresError,
    ScoresHttpError,
    ScoresNetworkError,
    WebhookVerificationError,
    verify_webhook,
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def forward(port: int, target: int, stop: threading.Event) -> None:
    """A TCP forwarder on `port` to `target`: the server coming up late."""
    listener = socket.create_server(("127.0.0.1", port))
    listener.settimeout(0.1)

    def pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            b.close()

    while not stop.is_set():
        try:
            client, _ = listener.accept()
        except TimeoutError:
            continue
        upstream = socket.create_connection(("127.0.0.1", target))
        threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()
    listener.close()


def test_dates_and_datetimes_are_sent_as_the_strings_they_name(server: LiveServer) -> None:
    with ScoresClient(server.key("quant"), base_url=server.url) as c:
        by_string = c.get_score_history("AAPL", start="2020-06-01", end="2020-06-15")
        by_date = c.get_score_history("AAPL", start=date(2020, 6, 1), end=datetime(2020, 6, 15, 23, tzinfo=timezone.utc))
        assert len(by_string.rows) > 5 and by_date.rows == by_string.rows
        known = c.get_multi_ticker_history(tickers=["AAPL"], start=date(2020, 6, 1), as_known_at=datetime(2020, 6, 10, 21, tzinfo=timezone.utc))
        assert all(r.date <= date(2020, 6, 10) for r in known.rows)
        with pytest.raises(ValueError, match="as_known_at: a naive datetime"):
            c.get_score_history("AAPL", as_known_at=datetime(2020, 6, 10))
        with pytest.raises(TypeError, match="start: expected a date"):
            c.get_score_history("AAPL", start=20200601)  # type: ignore[arg-type]


class Framed(typing.Protocol):
    def to_pandas(self) -> pd.DataFrame: ...


def test_every_list_answer_gives_a_typed_dataframe(server: LiveServer) -> None:
    with ScoresClient(server.key("quant"), base_url=server.url) as c:
        themes = c.list_themes()
        answers: list[Framed] = [
            themes,
            c.get_theme(themes.themes[0].slug),
            c.get_signals(limit=3),
            c.screen_stocks(limit=5),
            c.get_divergences(direction="bull", limit=5),
            c.get_open_divergences(),
            c.get_divergence_events(since=date(2020, 1, 1)),
            c.get_upcoming_earnings(days=30),
            c.get_coverage(since=date(2020, 6, 1)),
            c.get_usage_ledger(limit=3),
            c.get_track_record(),
            c.get_social_heat("AAPL", start=date(2020, 6, 1)),
            c.get_score_history("AAPL", start=date(2020, 6, 1)),
            c.get_multi_ticker_history(tickers=["AAPL"], start=date(2020, 6, 1)),
            c.list_webhooks(),
            c.list_bulk_exports(),
        ]
        for answer in answers:
            df = answer.to_pandas()
            assert isinstance(df, pd.DataFrame), type(answer).__name__
        assert "AAPL" in set(c.get_coverage().to_pandas()["ticker"])
        ledger = c.get_usage_ledger(limit=3).to_pandas()
        assert len(ledger) == 3 and str(ledger["at"].dtype) == "datetime64[ns, UTC]" and str(ledger["cost"].dtype) == "Int64"
        heat = c.get_social_heat("AAPL", start=date(2020, 6, 1)).to_pandas()
        assert str(heat["date"].dtype) == "datetime64[ns]" and str(heat["value"].dtype) == "float64"
    # Every method whose answer holds a list returns a class with to_pandas().
    for name, method in inspect.getmembers(ScoresClient, inspect.isfunction):
        ret = typing.get_type_hints(method).get("return")
        fields = getattr(ret, "model_fields", {})
        if any(typing.get_origin(f.annotation) is list for f in fields.values()):
            assert hasattr(ret, "to_pandas"), f"{name} returns {ret} without to_pandas()"


def test_reads_the_key_and_the_server_from_the_environment(server: LiveServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SCORES_API_KEY", server.key("quant"))
    monkeypatch.setenv("SCORES_BASE_URL", server.url + "/")
    with ScoresClient() as c:
        assert c.base_url == server.url and c.get_score("AAPL").ticker == "AAPL"
    monkeypatch.delenv("SCORES_BASE_URL")
    with ScoresClient() as c:
        assert c.base_url == DEFAULT_BASE_URL == "http://localhost:8080"
    monkeypatch.delenv("SCORES_API_KEY")
    with pytest.raises(ScoresConfigurationError, match="no API key: pass api_key or set SCORES_API_KEY"):
        ScoresClient(base_url=server.url)
    with pytest.raises(ScoresConfigurationError, match="must be an http"):
        ScoresClient("k", base_url="localhost:8080")


def test_a_refused_get_is_retried_with_backoff_until_the_server_answers(server: LiveServer) -> None:
    port = closed_port()
    target = int(server.url.rsplit(":", 1)[1])
    stop = threading.Event()
    events: list[RetryEvent] = []
    timer = threading.Timer(0.4, forward, args=(port, target, stop))
    timer.start()
    try:
        with ScoresClient(server.key("quant"), base_url=f"http://127.0.0.1:{port}", retry=RetryPolicy(max_retries=6, base_delay=0.2), on_retry=events.append) as c:
            assert c.get_score("AAPL").ticker == "AAPL"
    finally:
        stop.set()
        timer.join()
    assert events and all(e.status is None and e.error == "ConnectError" for e in events)
    assert 0.1 <= events[0].delay <= 0.2


def test_no_answer_raises_scores_network_error_after_retries_and_a_post_is_not_retried() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    events: list[RetryEvent] = []
    with ScoresClient("k", base_url=url, retry=RetryPolicy(max_retries=2, base_delay=0.01), on_retry=events.append) as c:
        with pytest.raises(ScoresNetworkError, match=f"GET {url}/v1/scores/AAPL: ConnectError") as e:
            c.get_score("AAPL")
        assert isinstance(e.value, ScoresError) and len(events) == 2
        events.clear()
        with pytest.raises(ScoresNetworkError):
            c.create_webhook("score_move", "https://example.org/h")
        assert events == []
    silent = socket.create_server(("127.0.0.1", 0))
    try:
        with ScoresClient("k", base_url=f"http://127.0.0.1:{silent.getsockname()[1]}", timeout=0.3, retry=RetryPolicy(max_retries=1, base_delay=0.01), on_retry=events.append) as hung:
            with pytest.raises(ScoresNetworkError, match="ReadTimeout"):
                hung.get_score("AAPL")
        assert [e.error for e in events] == ["ReadTimeout"]
    finally:
        silent.close()


def test_the_async_client_retries_and_wraps_the_same_way() -> None:
    async def run() -> list[RetryEvent]:
        events: list[RetryEvent] = []
        async with AsyncScoresClient("k", base_url=f"http://127.0.0.1:{closed_port()}", retry=RetryPolicy(max_retries=1, base_delay=0.01), on_retry=events.append) as c:
            with pytest.raises(ScoresNetworkError):
                await c.get_score("AAPL")
        return events

    assert [e.error for e in asyncio.run(run())] == ["ConnectError"]


def test_one_base_class_for_every_error(server: LiveServer) -> None:
    with ScoresClient(server.key("quant"), base_url=server.url) as c, pytest.raises(ScoresError) as e:
        c.get_score("ZZZZZ")
    assert isinstance(e.value, NotFoundError) and isinstance(e.value, ScoresApiError)
    for cls in (ScoresApiError, ScoresHttpError, ScoresNetworkError, ScoresConfigurationError, WebhookVerificationError):
        assert issubclass(cls, ScoresError)


def test_verify_webhook_uses_standardwebhooks_with_headers_in_any_case() -> None:
    secret = "whsec_" + "CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJ"
    body = '{"source": "scores-service", "events": [], "sent_at": "2020-06-30T23:00:00Z", "test": true}'
    at = datetime.now(timezone.utc)
    signature = standardwebhooks.Webhook(secret).sign("msg_1", at, body)
    stamp = str(int(at.timestamp()))
    for headers in (
        {"Webhook-Id": "msg_1", "Webhook-Timestamp": stamp, "Webhook-Signature": signature},
        {"WEBHOOK-ID": "msg_1", "webhook-timestamp": stamp, "webhook-SIGNATURE": "v1,bm90LWl0 " + signature},
    ):
        assert verify_webhook(secret, body, headers).source == "scores-service"
    good = {"Webhook-Id": "msg_1", "Webhook-Timestamp": stamp, "Webhook-Signature": signature}
    for bad_body, bad_headers in (
        (body.replace("true", "false"), good),
        (body, {**good, "Webhook-Id": "msg_2"}),
        (body, {**good, "Webhook-Timestamp": str(int((at - timedelta(minutes=10)).timestamp()))}),
    ):
        with pytest.raises(WebhookVerificationError):
            verify_webhook(secret, bad_body, bad_headers)

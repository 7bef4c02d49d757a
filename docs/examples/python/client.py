"""A Scores API client in plain `requests` (docs/client-examples.md): reads the credit balance from
the response header, keeps two tickers' score history in sync with `next_since`, and pages through
the account's credit ledger.

    SCORES_API_KEY=sk_live_... python3 client.py
"""
import os

import requests

BASE_URL = os.environ.get("SCORES_API_URL", "http://localhost:8080")
api = requests.Session()
api.headers["X-API-Key"] = os.environ["SCORES_API_KEY"]


def get(path, **params):
    """GET a /v1 path; an error answer is problem+json with a stable `code`."""
    response = api.get(BASE_URL + path, params=params, timeout=60)
    if not response.ok:
        problem = response.json()
        raise RuntimeError(f"{problem['code']}: {problem.get('detail', '')}")
    return response


def credits_remaining(response):
    """X-Credits-Remaining: a decimal integer (negative in overage), or "unlimited" on an unmetered plan."""
    value = response.headers["X-Credits-Remaining"]
    return value if value == "unlimited" else int(value)


# 1. The balance: every authenticated response carries it.
usage = get("/v1/usage")
print(f"credits remaining: {credits_remaining(usage)}")

# 2. Incremental sync: the first poll returns the whole visible history, each later one only the
# rows written (new or restated) since the previous poll. Keep `since` between runs; a real client
# sleeps and polls again instead of stopping once it is caught up.
tickers = ["AAPL", "MSFT"]
held = {}
since = None  # requests leaves a None parameter out
first_poll_id = None
poll = 0
while True:
    poll += 1
    response = get("/v1/scores/history", tickers=",".join(tickers), since=since)
    page = response.json()
    first_poll_id = first_poll_id or response.headers["X-Request-Id"]
    for row in page["rows"]:
        held[(row["ticker"], row["date"])] = row
    print(f"poll {poll}: {page['count']} rows, next_since={page['next_since']}, credits remaining: {credits_remaining(response)}")
    since = page["next_since"]
    if page["count"] == 0:
        break
print(f"holding {len(held)} rows of {', '.join(tickers)}")

# 3. The ledger, newest first, page by page: each charged call is a line naming its request id.
lines = []
pages = 0
cursor = None
while True:
    page = get("/v1/usage/ledger", cursor=cursor).json()
    lines.extend(page["entries"])
    pages += 1
    cursor = page["next_cursor"]
    if cursor is None:
        break
charge = next((line for line in lines if line["request_id"] == first_poll_id), None)
print(f"ledger: {len(lines)} lines, pages: {pages}; poll 1 ({first_poll_id}) was charged {charge['cost'] if charge else 0} credits")

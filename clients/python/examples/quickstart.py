"""Quickstart: the key and the server come from SCORES_API_KEY and SCORES_BASE_URL (default
http://localhost:8080, what ``npm start`` serves). test/clients/packages.test.ts installs the built
wheel into a fresh venv, runs this file there and checks it with ``mypy --strict``."""

from __future__ import annotations

import json
from datetime import date

from scores_client import API_VERSION, NotFoundError, ScoresClient, ScoresError


def main() -> None:
    with ScoresClient() as scores:
        latest = scores.get_score("AAPL")
        # A date, a datetime or a YYYY-MM-DD string.
        history = scores.get_score_history("AAPL", start=date(2019, 2, 1))
        frame = history.to_pandas()  # every answer holding a list has to_pandas() (the [pandas] extra)
        themes = scores.list_themes().to_pandas()
        missing = ""
        try:
            scores.get_score("ZZZZZ")
        except ScoresError as e:  # every error of the SDK; a problem+json answer is the class of its code
            missing = f"{type(e).__name__} {e.code if isinstance(e, NotFoundError) else ''}"
        print(
            json.dumps(
                {
                    "api_version": API_VERSION,
                    "ticker": latest.ticker,
                    "service_score": latest.service_score,
                    "history_rows": len(frame),
                    "first_date": str(frame["date"].min().date()) if len(frame) else None,
                    "date_dtype": str(frame["date"].dtype),
                    "themes": len(themes),
                    "missing": missing,
                    "credits": scores.credits,
                }
            )
        )


if __name__ == "__main__":
    main()

"""Responses with ``to_pandas()``: history, screener and divergence events as typed DataFrames.

pandas is an optional extra (``pip install scores-client[pandas]``); it is imported when a frame is
made. Dates are ``datetime64[ns]``, ``restated_at`` is ``datetime64[ns, UTC]``, tickers are
``string``, scores ``float64`` and the values that can be null nullable (``Float64``, ``Int64``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from . import models

if TYPE_CHECKING:
    import pandas as pd

_HISTORY = {"ticker": "string", "date": "date", "main_street": "float64", "wall_street": "float64", "service_score": "float64", "estimated": "bool"}
_MULTI = {
    "ticker": "string",
    "date": "date",
    "main_street": "float64",
    "wall_street": "float64",
    "service_score": "float64",
    "divergence_gap": "Float64",
    "estimated": "bool",
    "restated_at": "utc",
}
_SCREENER = {"ticker": "string", "date": "date", "main_street": "float64", "wall_street": "float64", "service_score": "float64", "divergence_gap": "float64"}
_EVENTS = {
    "ticker": "string",
    "direction": "category",
    "flag_date": "date",
    "close_date": "date",
    "price_at_flag": "Float64",
    "price_at_close": "Float64",
    "pct_change": "Float64",
    "days": "Int64",
}


_NO_PANDAS = "to_pandas() needs pandas: pip install 'scores-client[pandas]'"


def frame(rows: Sequence[BaseModel], columns: dict[str, str], **constant: str) -> pd.DataFrame:
    """A DataFrame of `rows` with exactly `columns`, each of its dtype (`date`, `utc`, `instant`:
    datetimes; `object`: the value as it came, a list or a mapping)."""
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(_NO_PANDAS) from e

    records = [{**constant, **r.model_dump(mode="json")} for r in rows]
    df = pd.DataFrame.from_records(records, columns=list(columns))
    for name, dtype in columns.items():
        if dtype == "date":
            df[name] = pd.to_datetime(df[name], format="%Y-%m-%d").astype("datetime64[ns]")
        elif dtype == "utc":
            df[name] = pd.to_datetime(df[name], format="%Y-%m-%d %H:%M:%S", utc=True).astype("datetime64[ns, UTC]")
        elif dtype == "instant":
            df[name] = pd.to_datetime(df[name], format="ISO8601", utc=True).astype("datetime64[ns, UTC]")
        elif dtype != "object":
            df[name] = df[name].astype(dtype)  # type: ignore[call-overload]
    return df


def value_frame(values: Sequence[str], column: str, dtype: str) -> pd.DataFrame:
    """A one-column DataFrame of `values` (``CoverageResponse.tickers``, say)."""
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(_NO_PANDAS) from e

    return pd.DataFrame({column: pd.Series(list(values), dtype=dtype)})


class ScoreHistory(models.ScoreHistoryResponse):
    def to_pandas(self) -> pd.DataFrame:
        """One row per date: ticker, date, main_street, wall_street, service_score, estimated."""
        return frame(self.rows, _HISTORY, ticker=self.ticker)


class MultiTickerHistory(models.MultiTickerHistoryResponse):
    def to_pandas(self) -> pd.DataFrame:
        """One row per ticker and date, as `GET /v1/scores/history` orders them."""
        return frame(self.rows, _MULTI)


def history_frame(rows: Sequence[models.MultiTickerHistoryRow]) -> pd.DataFrame:
    """Rows gathered over several sync pages, as `MultiTickerHistory.to_pandas()` types them."""
    return frame(rows, _MULTI)


class Screener(models.ScreenerResponse):
    def to_pandas(self) -> pd.DataFrame:
        return frame(self.rows, _SCREENER)


class DivergenceEvents(models.DivergenceEventsResponse):
    def to_pandas(self) -> pd.DataFrame:
        return frame(self.events, _EVENTS)

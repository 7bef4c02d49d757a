"""How the typed methods write their parameters: dates from ``date``/``datetime`` or strings, path
segments escaped, unset body fields left out. Bad input raises ``TypeError``/``ValueError`` naming
the parameter, before any request."""

from __future__ import annotations

from datetime import date, datetime, timezone
from typing import Any
from urllib.parse import quote

#: A date parameter: ``YYYY-MM-DD`` as a string, or a ``date`` (a ``datetime`` gives its UTC date).
DateLike = str | date
#: An instant parameter (``as_known_at``): a string, a ``date`` (00:00 UTC) or an aware ``datetime``.
InstantLike = str | date | datetime


def date_param(value: DateLike | None, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc)
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{name}: expected a date, a datetime or a YYYY-MM-DD string, got {type(value).__name__}")


def instant_param(value: InstantLike | None, name: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"{name}: a naive datetime names no instant; give it a tzinfo (datetime.timezone.utc, say)")
        return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{name}: expected a datetime, a date or a string, got {type(value).__name__}")


def path_segment(value: str | int) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"a path parameter must be a string or an int, got {type(value).__name__}")
    text = str(value)
    if text == "":
        raise ValueError("a path parameter must not be empty")
    return quote(text, safe="")


def body_of(fields: dict[str, Any]) -> dict[str, Any]:
    """A JSON body without the fields left unset."""
    return {k: v for k, v in fields.items() if v is not None}

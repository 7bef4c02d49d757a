"""The typed errors: one class per problem ``code`` of the API (one ``…Problem`` schema per code in
the document, ``ProblemDetails`` their union); each class carries its code's typed problem."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx

from .models import (
    BadRequestProblem,
    CursorInvalidProblem,
    UnauthorizedProblem,
    KeyForbiddenProblem,
    KeyExpiredProblem,
    KeyScopeForbiddenProblem,
    CoverageProblem,
    TierProblem,
    NotFoundProblem,
    MethodNotAllowedProblem,
    RequestTimeoutProblem,
    DeliveryExpiredProblem,
    PayloadTooLargeProblem,
    UnsupportedMediaTypeProblem,
    RangeNotSatisfiableProblem,
    HeadersTooLargeProblem,
    LimitExceededProblem,
    CreditsExhaustedProblem,
    CostExceedsMaxProblem,
    KeyBudgetExhaustedProblem,
    RateLimitedProblem,
    ConflictProblem,
    InternalProblem,
    ProblemDetails,
)

#: A problem of any code, as the document's ``ProblemDetails`` (told apart by ``code``).
Problem = (
    BadRequestProblem
    | CursorInvalidProblem
    | UnauthorizedProblem
    | KeyForbiddenProblem
    | KeyExpiredProblem
    | KeyScopeForbiddenProblem
    | CoverageProblem
    | TierProblem
    | NotFoundProblem
    | MethodNotAllowedProblem
    | RequestTimeoutProblem
    | DeliveryExpiredProblem
    | PayloadTooLargeProblem
    | UnsupportedMediaTypeProblem
    | RangeNotSatisfiableProblem
    | HeadersTooLargeProblem
    | LimitExceededProblem
    | CreditsExhaustedProblem
    | CostExceedsMaxProblem
    | KeyBudgetExhaustedProblem
    | RateLimitedProblem
    | ConflictProblem
    | InternalProblem
)


_STANDARD_MEMBERS = frozenset({"type", "title", "status", "detail", "instance", "code"})


class ScoresError(Exception):
    """The base of every error the SDK raises: catch it to handle them all."""


class ScoresApiError(ScoresError):
    """A problem+json answer. Catch the subclass of its ``code`` to handle one case."""

    problem: Problem

    def __init__(self, problem: Problem, response: httpx.Response) -> None:
        super().__init__(f"{problem.status} {problem.code}: {problem.detail}")
        self.problem = problem
        self.status: int = problem.status
        self.code: str = problem.code
        self.title: str = problem.title
        self.detail: str = problem.detail
        self.request_id: str | None = response.headers.get("x-request-id")
        self.retry_after: float | None = retry_after_seconds(response.headers.get("retry-after"))

    @property
    def extensions(self) -> dict[str, Any]:
        """The problem's members beyond RFC 9457's and ``code`` (``unknown_tickers``, ``required_tier``, ...)."""
        sent = self.problem.model_dump(mode="json", exclude_unset=True)
        return {k: v for k, v in sent.items() if k not in _STANDARD_MEMBERS}


class BadRequestError(ScoresApiError):
    problem: BadRequestProblem


class CursorInvalidError(ScoresApiError):
    problem: CursorInvalidProblem


class UnauthorizedError(ScoresApiError):
    problem: UnauthorizedProblem


class KeyForbiddenError(ScoresApiError):
    problem: KeyForbiddenProblem


class KeyExpiredError(ScoresApiError):
    """403: the key is past its expiry (``expires_at``)."""

    problem: KeyExpiredProblem


class KeyScopeForbiddenError(ScoresApiError):
    """403: the key may not make this call (read-only, or limited to other operations); nothing
    was read or charged."""

    problem: KeyScopeForbiddenProblem


class CoverageError(ScoresApiError):
    problem: CoverageProblem


class TierError(ScoresApiError):
    problem: TierProblem


class NotFoundError(ScoresApiError):
    problem: NotFoundProblem


class MethodNotAllowedError(ScoresApiError):
    problem: MethodNotAllowedProblem


class RequestTimeoutError(ScoresApiError):
    problem: RequestTimeoutProblem


class DeliveryExpiredError(ScoresApiError):
    """410: a webhook delivery made more than 30 days ago, which can no longer be resent."""

    problem: DeliveryExpiredProblem


class PayloadTooLargeError(ScoresApiError):
    problem: PayloadTooLargeProblem


class UnsupportedMediaTypeError(ScoresApiError):
    problem: UnsupportedMediaTypeProblem


class RangeNotSatisfiableError(ScoresApiError):
    problem: RangeNotSatisfiableProblem


class HeadersTooLargeError(ScoresApiError):
    problem: HeadersTooLargeProblem


class LimitExceededError(ScoresApiError):
    problem: LimitExceededProblem


class CreditsExhaustedError(ScoresApiError):
    """429: the account's credits are spent. Never retried: waiting brings no credits."""

    problem: CreditsExhaustedProblem


class CostExceedsMaxError(ScoresApiError):
    """403: the call would cost more than the maximum sent with it (``max_credits``); nothing was
    charged. Never retried: the same call costs the same."""

    problem: CostExceedsMaxProblem


class KeyBudgetExhaustedError(ScoresApiError):
    """429: the call would take the key past its daily or monthly credit limit. Not retried:
    ``retry_after`` is the window's reset, hours away."""

    problem: KeyBudgetExhaustedProblem


class RateLimitedError(ScoresApiError):
    """429: too many requests per second, or (with ``bytes_per_second``) too many bytes of free
    answers. The client retries it after ``Retry-After``."""

    problem: RateLimitedProblem


class ConflictError(ScoresApiError):
    problem: ConflictProblem


class InternalError(ScoresApiError):
    problem: InternalProblem


ERROR_CLASSES: dict[str, type[ScoresApiError]] = {
    "bad_request": BadRequestError,
    "cursor_invalid": CursorInvalidError,
    "unauthorized": UnauthorizedError,
    "key_forbidden": KeyForbiddenError,
    "key_expired": KeyExpiredError,
    "key_scope_forbidden": KeyScopeForbiddenError,
    "coverage": CoverageError,
    "tier": TierError,
    "not_found": NotFoundError,
    "method_not_allowed": MethodNotAllowedError,
    "request_timeout": RequestTimeoutError,
    "delivery_expired": DeliveryExpiredError,
    "payload_too_large": PayloadTooLargeError,
    "unsupported_media_type": UnsupportedMediaTypeError,
    "range_not_satisfiable": RangeNotSatisfiableError,
    "headers_too_large": HeadersTooLargeError,
    "limit_exceeded": LimitExceededError,
    "credits_exhausted": CreditsExhaustedError,
    "cost_exceeds_max": CostExceedsMaxError,
    "key_budget_exhausted": KeyBudgetExhaustedError,
    "rate_limited": RateLimitedError,
    "conflict": ConflictError,
    "internal": InternalError,
}


class ScoresHttpError(ScoresError):
    """A failure that is not problem+json (a proxy's HTML 502, say)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:200]}")
        self.status = status
        self.body = body


class ScoresNetworkError(ScoresError):
    """No answer: the connection was refused or reset, or the request timed out. A GET or DELETE
    is retried with backoff first; ``__cause__`` is httpx's error."""

    def __init__(self, method: str, url: str, cause: Exception) -> None:
        super().__init__(f"{method} {url}: {type(cause).__name__}: {cause or 'no answer'}")
        self.method = method
        self.url = url


class ScoresConfigurationError(ScoresError, ValueError):
    """The client cannot be made as asked (no API key given nor in ``SCORES_API_KEY``, say)."""


def problem_code(response: httpx.Response) -> str | None:
    """The ``code`` of a problem+json body, or None."""
    try:
        body = json.loads(response.content)
    except ValueError:
        return None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None


def error_of(response: httpx.Response) -> ScoresApiError | ScoresHttpError:
    """The typed error of a failed response (its body read)."""
    try:
        problem = ProblemDetails.model_validate_json(response.content).root
    except ValueError:
        return ScoresHttpError(response.status_code, response.text)
    return ERROR_CLASSES.get(problem.code, ScoresApiError)(problem, response)


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        at = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - time.time())


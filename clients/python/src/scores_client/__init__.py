"""Python client for the Scores API: httpx sync and async clients with a typed method per operation,
pydantic v2 models generated from the OpenAPI document (``models``), retries honouring
``Retry-After`` and network errors, one error hierarchy (``ScoresError``), incremental sync over
``next_since``, webhook verification and pandas frames."""

from ._core import DEFAULT_BASE_URL, Credits, Price, RetryEvent, RetryPolicy, SyncPage
from ._operations import API_VERSION, OPERATIONS
from ._params import DateLike, InstantLike
from .async_client import AsyncScoresClient
from .client import ScoresClient
from .errors import (
    ERROR_CLASSES,
    BadRequestError,
    ConflictError,
    CostExceedsMaxError,
    CoverageError,
    CreditsExhaustedError,
    CursorInvalidError,
    HeadersTooLargeError,
    InternalError,
    KeyBudgetExhaustedError,
    KeyExpiredError,
    KeyForbiddenError,
    KeyScopeForbiddenError,
    LimitExceededError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    RangeNotSatisfiableError,
    RateLimitedError,
    RequestTimeoutError,
    ScoresApiError,
    ScoresConfigurationError,
    ScoresError,
    ScoresHttpError,
    ScoresNetworkError,
    TierError,
    UnauthorizedError,
    UnsupportedMediaTypeError,
)
from .frames import DivergenceEvents, MultiTickerHistory, Screener, ScoreHistory, history_frame
from .webhooks import WebhookVerificationError, verify_webhook

__version__ = "1.0.0"

__all__ = [
    "API_VERSION",
    "DEFAULT_BASE_URL",
    "OPERATIONS",
    "DateLike",
    "InstantLike",
    "ScoresConfigurationError",
    "ScoresError",
    "ScoresNetworkError",
    "ERROR_CLASSES",
    "AsyncScoresClient",
    "BadRequestError",
    "ConflictError",
    "CostExceedsMaxError",
    "CoverageError",
    "Credits",
    "Price",
    "CreditsExhaustedError",
    "CursorInvalidError",
    "DivergenceEvents",
    "HeadersTooLargeError",
    "InternalError",
    "KeyBudgetExhaustedError",
    "KeyExpiredError",
    "KeyForbiddenError",
    "KeyScopeForbiddenError",
    "LimitExceededError",
    "MethodNotAllowedError",
    "MultiTickerHistory",
    "NotFoundError",
    "PayloadTooLargeError",
    "RangeNotSatisfiableError",
    "RateLimitedError",
    "RequestTimeoutError",
    "RetryEvent",
    "RetryPolicy",
    "ScoreHistory",
    "ScoresApiError",
    "ScoresClient",
    "ScoresHttpError",
    "Screener",
    "SyncPage",
    "TierError",
    "UnauthorizedError",
    "UnsupportedMediaTypeError",
    "WebhookVerificationError",
    "history_frame",
    "verify_webhook",
]

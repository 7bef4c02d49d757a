"""Every operation of an OpenAPI document has a typed method in both Python clients.

    python check_operations.py URL_OR_FILE     (a server's /openapi.json, or a saved document)

Prints one line per operation without one (``get_theme: AsyncScoresClient: no method``) and exits 1,
else prints ``N operations, each with a typed method`` and exits 0. A typed method: named after the
operationId in snake_case, a coroutine on ``AsyncScoresClient``, every parameter annotated, the
path parameters among them, and a return type that is a model (or ``bytes`` for a file), never
``Any`` nor a raw ``httpx.Response``. test/clients/operations.test.ts and test_operations.py run it.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import typing
import urllib.request
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from scores_client import AsyncScoresClient, ScoresClient

METHODS = ("get", "post", "put", "patch", "delete")


def load(source: str) -> dict[str, Any]:
    if source.startswith(("http://", "https://")):
        with urllib.request.urlopen(source) as r:
            doc: dict[str, Any] = json.load(r)
            return doc
    loaded: dict[str, Any] = json.loads(Path(source).read_text())
    return loaded


def snake(operation_id: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", operation_id).lower()


def operations(doc: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(operationId, its path parameters) of every operation."""
    out = []
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                out.append((item[method]["operationId"], re.findall(r"\{(\w+)\}", path)))
    return out


def problem(cls: type, name: str, path_params: list[str]) -> str | None:
    method = getattr(cls, name, None)
    if method is None or not callable(method):
        return "no method"
    if cls is AsyncScoresClient and not inspect.iscoroutinefunction(method):
        return "not a coroutine"
    hints = typing.get_type_hints(method)
    params = [p for p in inspect.signature(method).parameters if p != "self"]
    untyped = [p for p in params if p not in hints or hints[p] is Any]
    if untyped:
        return f"untyped parameters {untyped}"
    missing = [p for p in path_params if p not in params]
    if missing:
        return f"no parameter for {missing}"
    ret = hints.get("return")
    if ret is bytes or (isinstance(ret, type) and issubclass(ret, BaseModel) and ret is not BaseModel):
        return None
    return f"returns {ret!r}, not a model" if ret is not httpx.Response else "returns a raw httpx.Response"


def main(source: str) -> int:
    ops = operations(load(source))
    failures = [f"{snake(op)}: {cls.__name__}: {why}" for op, params in ops for cls in (ScoresClient, AsyncScoresClient) if (why := problem(cls, snake(op), params))]
    for line in failures:
        print(line)
    if failures:
        return 1
    print(f"{len(ops)} operations, each with a typed method")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))

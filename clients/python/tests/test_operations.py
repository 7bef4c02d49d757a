"""Every operation of the live server's /openapi.json has a typed method in both clients (check_operations.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from check_operations import main
from live_server import LiveServer


def test_every_operation_of_the_served_document_has_a_typed_method(server: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(f"{server.url}/openapi.json") == 0
    assert "operations, each with a typed method" in capsys.readouterr().out


def test_an_operation_without_a_method_is_reported(server: LiveServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads((Path(__file__).parents[2] / "openapi.json").read_text())
    doc["paths"]["/v1/portfolios/{portfolio_id}"] = {"get": {"operationId": "getPortfolio", "responses": {}}}
    saved = tmp_path / "openapi.json"
    saved.write_text(json.dumps(doc))
    assert main(str(saved)) == 1
    out = capsys.readouterr().out
    assert "get_portfolio: ScoresClient: no method" in out and "get_portfolio: AsyncScoresClient: no method" in out

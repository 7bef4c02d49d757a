"""The mirror example as a user runs it: two processes, the first stopped mid-way, the second
resuming from the cursor saved in the SQLite file; the file then holds exactly the rows of the
same day's scores_history.csv.gz and the credits charged equal the rows received."""

from __future__ import annotations

import csv
import gzip
import io
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from live_server import LiveServer
from scores_client import ScoresClient

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "mirror.py"


def run_mirror(server: LiveServer, key: str, db: Path, *extra: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(EXAMPLE), "--url", server.url, "--key", key, "--db", str(db), *extra], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _num(value: str | float | None) -> str:
    """A number as both sides spell it: a float's repr, or null."""
    return "null" if value is None or value == "" else repr(float(value))


def export_rows(client: ScoresClient) -> list[tuple[str, ...]]:
    """The newest bundle's scores_history.csv.gz (the server runs the nightly export at start), in the API's spelling."""
    deadline = time.monotonic() + 120
    while not (listed := client.bulk_exports().exports) and time.monotonic() < deadline:
        time.sleep(0.5)
    history = next(f for f in listed if f.name == "scores_history.csv.gz")
    bundle = str(history.url).split("/")[-2]
    text = gzip.decompress(client.download_export(bundle, "scores_history.csv.gz")).decode()
    reader = csv.reader(io.StringIO(text))
    assert next(reader) == ["ticker", "date", "main_street", "wall_street", "service_score", "divergence_gap", "estimated", "restated_at"]
    rows: list[tuple[str, ...]] = [(t, d, _num(m), _num(w), _num(s), _num(g), e, r[:19].replace("T", " ")) for t, d, m, w, s, g, e, r in reader]
    assert len(rows) == history.row_count
    return rows


def mirrored_rows(db: Path) -> list[tuple[str, ...]]:
    con = sqlite3.connect(db)
    try:
        got = con.execute("SELECT ticker, date, main_street, wall_street, service_score, divergence_gap, estimated, restated_at FROM scores ORDER BY ticker, date").fetchall()
    finally:
        con.close()
    return [(t, d, _num(m), _num(w), _num(s), _num(g), "true" if e else "false", r) for t, d, m, w, s, g, e, r in got]


def test_mirror_stops_mid_way_resumes_from_the_saved_cursor_and_ends_with_the_export(server: LiveServer, tmp_path: Path) -> None:
    key = server.key("quant")
    db = tmp_path / "mirror.sqlite"
    with ScoresClient(key, base_url=server.url) as client:
        before = client.usage()
        start_credits = client.credits
        assert isinstance(start_credits, int)

        first = run_mirror(server, key, db, "--stop-after-pages", "1")
        assert first["pages"] == 1 and first["complete"] is False, first
        assert first["rows_received"] == 200_000 == first["rows_held"]

        second = run_mirror(server, key, db)
        assert second["complete"] is True, second
        received = first["rows_received"] + second["rows_received"]

        client.usage()
        assert isinstance(client.credits, int)
        assert start_credits - client.credits == received, "credits charged equal the rows received"
        assert before.tier.root == "quant"

        exported = export_rows(client)
    # Both by ticker, then date (the file's own order is by its month buckets' keys).
    exported.sort(key=lambda r: (r[0], r[1]))
    mirrored = mirrored_rows(db)
    assert len(mirrored) == len(exported) == received
    diff = next((i for i, (a, b) in enumerate(zip(mirrored, exported)) if a != b), None)
    assert diff is None, f"row {diff}: mirror {mirrored[diff]} / export {exported[diff]}"

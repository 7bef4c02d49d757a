"""Mirror the whole multi-ticker score history of a key into a local SQLite file, and keep it in sync.

    python examples/mirror.py --url http://localhost:8080 --key sk_live_... --db scores.sqlite
    python examples/mirror.py ... --stop-after-pages 1     # stop mid-way; run again to resume

Each page of ``sync_history`` is written in one transaction with its ``next_since``, so a stop or
a crash anywhere leaves rows and cursor that agree, and the next run resumes from the saved cursor:
no row is missed, none is billed twice. Prints one JSON line: pages, rows received, rows held,
whether the sync reached the end, and the credits remaining.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from dataclasses import asdict, dataclass

from scores_client import ScoresClient

SCHEMA = """
CREATE TABLE IF NOT EXISTS scores (
  ticker TEXT NOT NULL, date TEXT NOT NULL, main_street REAL NOT NULL, wall_street REAL NOT NULL,
  service_score REAL NOT NULL, divergence_gap REAL, estimated INTEGER NOT NULL, restated_at TEXT NOT NULL,
  PRIMARY KEY (ticker, date)
);
CREATE TABLE IF NOT EXISTS sync_state (id INTEGER PRIMARY KEY CHECK (id = 1), next_since TEXT NOT NULL);
"""


@dataclass
class MirrorRun:
    pages: int
    rows_received: int
    rows_held: int
    complete: bool
    credits: int | str | None


def saved_cursor(db: sqlite3.Connection) -> str | None:
    row = db.execute("SELECT next_since FROM sync_state WHERE id = 1").fetchone()
    return None if row is None else str(row[0])


def mirror(client: ScoresClient, db_path: str, stop_after_pages: int | None = None) -> MirrorRun:
    db = sqlite3.connect(db_path)
    try:
        db.executescript(SCHEMA)
        pages = received = 0
        complete = False
        for page in client.sync_history(since=saved_cursor(db)):
            with db:  # one transaction: the rows and the cursor that follows them
                db.executemany(
                    "INSERT INTO scores VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ticker, date) DO UPDATE SET"
                    " main_street = excluded.main_street, wall_street = excluded.wall_street, service_score = excluded.service_score,"
                    " divergence_gap = excluded.divergence_gap, estimated = excluded.estimated, restated_at = excluded.restated_at",
                    [
                        (r.ticker, r.date.isoformat(), r.main_street, r.wall_street, r.service_score, r.divergence_gap, int(r.estimated), r.restated_at)
                        for r in page.rows
                    ],
                )
                db.execute("INSERT INTO sync_state VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET next_since = excluded.next_since", (page.next_since,))
            pages += 1
            received += len(page.rows)
            complete = not page.has_more
            if stop_after_pages is not None and pages >= stop_after_pages:
                break
        held = int(db.execute("SELECT COUNT(*) FROM scores").fetchone()[0])
        return MirrorRun(pages, received, held, complete, client.credits)
    finally:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--stop-after-pages", type=int, default=None)
    args = parser.parse_args()
    with ScoresClient(args.key, base_url=args.url) as client:
        run = mirror(client, args.db, args.stop_after_pages)
    print(json.dumps(asdict(run)))


if __name__ == "__main__":
    main()

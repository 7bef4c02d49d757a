"""schemathesis against a live server with the demo data (issue 32): every operation, positive and
negative data, every check (response schema, status codes, headers, ...), a fixed seed and a bounded
number of examples. There is no baseline of accepted failures: any failure fails the run. It prints
its counts (operations, examples, failures) as one JSON line.

    python tests/run_schemathesis.py              from clients/python, with the server built
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from live_server import start_server

HERE = Path(__file__).resolve().parent
SEED = "42"
MAX_EXAMPLES = "10"


def main() -> int:
    server = start_server("2019-03-01T23:00:00Z", {"SCORES_EXPORTS_SCHEDULE": "off"})
    try:
        st = Path(sys.executable).parent / "st"
        with tempfile.TemporaryDirectory() as reports:
            report = Path(reports) / "run.json"
            args = [
                str(st), "run", f"{server.url}/openapi.json", "--url", server.url,
                "-H", f"X-API-Key: {server.key('enterprise')}",
                "--checks", "all", "--mode", "all", "--phases", "examples,coverage,fuzzing",
                "--max-examples", MAX_EXAMPLES, "--seed", SEED, "--workers", "1", "--continue-on-failure",
                # Below the key-less limit (10 requests/s per client address): a request without a key
                # beyond it is 429 before it can be 401, which the auth checks would report.
                "--rate-limit", "8/s",
                "--generation-deterministic", "--no-color",
                "--report", "json", "--report-json-path", str(report), "--output-truncate", "true",
            ]
            # The rules the document states in words but a schema cannot (schemathesis_hooks.py).
            env = {**os.environ, "SCHEMATHESIS_HOOKS": str(HERE / "schemathesis_hooks.py")}
            done = subprocess.run(args, text=True, capture_output=True, env=env)
            run = json.loads(report.read_text()) if report.exists() else None
        out = done.stdout
        summary = {
            "operations": run["operations"]["tested"] if run else None,
            "examples": run["test_cases"]["generated"] if run else None,
            "failures": sum(f["count"] for f in run["failures"]) if run else None,
            "errors": sum(e["count"] for e in run["errors"]) if run else None,
            "exit_code": done.returncode,
        }
        clean = done.returncode == 0 and summary["failures"] == 0 and summary["errors"] == 0
        if not clean:
            print(out[-30000:], done.stderr[-3000:], sep="\n")
        else:
            print(out[out.find("=== SUMMARY") - 40 :] if "=== SUMMARY" in out else out)
        print("schemathesis:", json.dumps(summary))
        return 0 if clean else 1
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())

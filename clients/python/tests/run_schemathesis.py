"""schemathesis against a live server with the demo data (issue 32): every operation, positive and
negative data, every check (response schema, status codes, headers, ...), a fixed seed and a bounded
number of examples. Failures recorded in schemathesis-baseline.json (each explained in
docs/client-examples.md) are the known ones; any other failure fails the run.

    python tests/run_schemathesis.py              from clients/python, with the server built
    python tests/run_schemathesis.py --update     record this run's failures in the baseline
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from live_server import start_server

HERE = Path(__file__).resolve().parents[1]
BASELINE = HERE / "schemathesis-baseline.json"
SEED = "42"
MAX_EXAMPLES = "10"


def main() -> int:
    update = "--update" in sys.argv[1:]
    server = start_server("2019-03-01T23:00:00Z", {"SCORES_EXPORTS_SCHEDULE": "off"})
    try:
        st = Path(sys.executable).parent / "st"
        with tempfile.TemporaryDirectory() as reports:
            args = [
                str(st), "run", f"{server.url}/openapi.json", "--url", server.url,
                "-H", f"X-API-Key: {server.key('enterprise')}",
                "--checks", "all", "--mode", "all", "--phases", "examples,coverage,fuzzing",
                "--max-examples", MAX_EXAMPLES, "--seed", SEED, "--workers", "1", "--continue-on-failure",
                # Below the key-less limit (10 requests/s per client address): a request without a key
                # beyond it is 429 before it can be 401, which the auth checks would report.
                "--rate-limit", "8/s",
                "--generation-deterministic", "--baseline", str(BASELINE), *(["--baseline-update"] if update else []),
                "--report", "ndjson", "--report-dir", reports, "--output-truncate", "true",
            ]
            done = subprocess.run(args, text=True, capture_output=True)
        out = done.stdout
        print(out[out.find("=== SUMMARY") - 40:] if "=== SUMMARY" in out else out)
        ops = re.search(r"Tested: (\d+)", out)
        cases = re.search(r"(\d+) generated", out)
        failures = re.search(r"(\d+) failures?", out.split("SUMMARY")[-1])
        summary = {
            "operations": int(ops.group(1)) if ops else None,
            "examples": int(cases.group(1)) if cases else None,
            "new_failures": int(failures.group(1)) if failures and done.returncode != 0 else 0,
            "exit_code": done.returncode,
        }
        print("schemathesis:", json.dumps(summary))
        if done.returncode != 0:
            print(out[-30000:], done.stderr[-3000:], sep="\n")
        return done.returncode
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())

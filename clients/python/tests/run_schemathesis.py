"""schemathesis against a live server with the demo data, as a stranger runs it: no project hooks or
configuration, `--checks all`, its default phases (examples, coverage, fuzzing, stateful: the
stateful phase follows the document's links, so the bulk download is called with a real bundle's
ids), a fixed seed and a bounded number of examples. There is no baseline of accepted failures: any
failure fails the run. It prints its counts (operations, examples, failures) as one JSON line. The
rules a schema cannot state are listed in docs/api-contract.md.

    python tests/run_schemathesis.py              from clients/python, with the server built
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from live_server import start_server

SEED = "42"
MAX_EXAMPLES = "10"


def wait_for_bundle(url: str, key: str, timeout: float = 300) -> None:
    """Until the export bundle is listed (the run starts with the server)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        request = urllib.request.Request(f"{url}/v1/bulk/exports", headers={"X-API-Key": key})
        with urllib.request.urlopen(request) as res:
            if json.load(res)["exports"]:
                return
        time.sleep(1)
    raise RuntimeError(f"no export bundle listed within {timeout} s")


def main() -> int:
    # After 22:30 UTC: the server writes the day's export bundle at its start, for the download to be exercised.
    server = start_server("2019-03-01T23:00:00Z")
    try:
        wait_for_bundle(server.url, server.key("enterprise"))
        st = Path(sys.executable).parent / "st"
        with tempfile.TemporaryDirectory() as reports:
            report = Path(reports) / "run.json"
            args = [
                str(st), "run", f"{server.url}/openapi.json", "--url", server.url,
                "-H", f"X-API-Key: {server.key('enterprise')}",
                "--checks", "all",
                "--max-examples", MAX_EXAMPLES, "--seed", SEED, "--workers", "1", "--continue-on-failure",
                # Below the key-less limit (10 requests/s per client address): a request without a key
                # beyond it is 429 before it can be 401, which the auth checks would report.
                "--rate-limit", "8/s",
                "--generation-deterministic", "--no-color",
                "--report", "json", "--report-json-path", str(report), "--output-truncate", "true",
            ]
            done = subprocess.run(args, text=True, capture_output=True)
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

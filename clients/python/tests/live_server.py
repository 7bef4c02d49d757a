"""A real Scores server process for the tests and the schemathesis run: ``node dist/src/app/main.js``
(build it first: ``npm run build``) on a temp data directory with the demo data and a pinned clock,
as test/support/server.ts ``testEnv`` starts one; ``PORT=0``, so the URL is read from its banner."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MAIN = ROOT / "dist" / "src" / "app" / "main.js"


@dataclass
class LiveServer:
    url: str
    data_dir: Path
    process: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)

    def key(self, tier: str) -> str:
        """The demo account's key of a tier, as the server wrote it to ``demo-keys.json``."""
        keys = json.loads((self.data_dir / "demo-keys.json").read_text())["keys"]
        return str(next(k["key"] for k in keys if k["tier"] == tier))

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def start_server(now: str, env: dict[str, str] | None = None, timeout: float = 180) -> LiveServer:
    if not MAIN.exists():
        raise RuntimeError(f"{MAIN} is missing: run `npm run build` first")
    data_dir = Path(tempfile.mkdtemp(prefix="scores-py-"))
    full_env = {
        **os.environ,
        "SCORES_DATA_DIR": str(data_dir),
        "SCORES_NOW": now,
        "PORT": "0",
        "HOST": "127.0.0.1",
        "LOG_LEVEL": "silent",
        **(env or {}),
    }
    process = subprocess.Popen(["node", str(MAIN)], cwd=ROOT, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            m = re.search(r"listening on (http://\S+)", line)
            if m and not found.is_set():
                url.append(m.group(1))
                found.set()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not found.wait(0.2):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            shutil.rmtree(data_dir, ignore_errors=True)
            raise RuntimeError("the server did not start:\n" + "".join(output))
    return LiveServer(url[0], data_dir, process, output)

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from live_server import LiveServer, start_server

# About 370 trading days of the demo: 232,000 history rows, more than one call returns (200,000).
NOW = "2020-06-30T23:00:00Z"


@dataclass
class Receiver:
    """A local HTTPS webhook receiver (self-signed, trusted by the server through WEBHOOK_CA_FILE)."""

    url: str
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)


@pytest.fixture(scope="session")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("cert")
    key, cert = d / "key.pem", d / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return key, cert


@pytest.fixture(scope="session")
def receiver(certificate: tuple[Path, Path]) -> Iterator[Receiver]:
    got: list[tuple[dict[str, str], bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            got.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(certificate[1]), str(certificate[0]))
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield Receiver(f"https://127.0.0.1:{httpd.server_address[1]}/hooks", got)
    httpd.shutdown()


@pytest.fixture(scope="session")
def server(certificate: tuple[Path, Path]) -> Iterator[LiveServer]:
    """One server process for the session: the demo data up to NOW, its nightly export run at start."""
    live = start_server(NOW, {"WEBHOOK_CA_FILE": str(certificate[1]), "WEBHOOK_ALLOW_SUBNETS": "127.0.0.0/8"})
    yield live
    live.stop()

"""The upload client against a stub class server on 127.0.0.1 (nothing leaves the host)."""
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from hwlab_helpers import run_cmd
from hwlab import upload


class Stub:
    def __init__(self, status=201, body=b'{"id": "r-42", "url": "http://127.0.0.1/r/42"}'):
        self.requests = []
        stub = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                stub.requests.append((self.path, dict(self.headers), self.rfile.read(n)))
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = HTTPServer(("127.0.0.1", 0), H)
        self.url = "http://127.0.0.1:%d/api/results" % self.server.server_port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *a):
        self.server.shutdown()
        self.server.server_close()


def test_run_uploads_exactly_the_file(tmp_path, hwlab_bin):
    out = tmp_path / "r.json"
    with Stub() as s:
        r = run_cmd(["--no-build", "--quick", "--only", "cpuid_exit", "--out", str(out),
                     "--upload", s.url, "--class", "CS101-fall"])
    assert r.returncode == 0, r.stderr
    assert len(s.requests) == 1
    path, headers, body = s.requests[0]
    assert path == "/api/results"
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Vmemlab-Class"] == "CS101-fall"
    assert body == out.read_bytes()
    assert json.loads(body)["class_code"] == "CS101-fall"
    assert "id=r-42" in r.stderr


def test_server_error_is_reported_and_file_kept(tmp_path, hwlab_bin):
    out = tmp_path / "r.json"
    with Stub(status=500, body=b"database is on fire") as s:
        r = run_cmd(["--no-build", "--quick", "--only", "cpuid_exit", "--out", str(out),
                     "--upload", s.url, "--class", "CS101"])
    assert r.returncode == 3
    assert "HTTP 500" in r.stderr and "database is on fire" in r.stderr
    assert "result is still in" in r.stderr
    assert json.loads(out.read_text())["class_code"] == "CS101"


def test_unreachable_server():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()   # nothing listens there now
    with pytest.raises(upload.UploadError, match="could not reach"):
        upload.upload("http://127.0.0.1:%d/x" % port, "CS101", b"{}", timeout=5)


def test_client_validates_before_sending():
    with pytest.raises(upload.UploadError, match="http:// or https://"):
        upload.upload("file:///etc/passwd", "CS101", b"{}")
    with pytest.raises(upload.UploadError, match="class code"):
        upload.upload("http://127.0.0.1:1/", "x", b"{}")


def test_plain_text_reply_is_shown():
    with Stub(status=200, body=b"thanks") as s:
        info = upload.upload(s.url, "CS101", b"{}")
    assert info == {"status": 200, "message": "thanks"}

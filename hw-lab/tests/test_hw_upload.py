"""The upload client: against a stub class server on 127.0.0.1 that records what it gets
(exact bytes and headers), and against the real class server (web/server/main.mjs)."""
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from hwlab_helpers import HW, run_cmd
from hwlab import upload

REPLY = {"id": "r-42", "receipt": "rcpt_SECRET-1", "class": "CS101-FALL",
         "url": "http://127.0.0.1/?view=results&class=CS101-FALL&mine=r-42",
         "message": "stored in class CS101-FALL; keep the receipt to delete this upload later"}


class Stub:
    def __init__(self, status=201, body=json.dumps(REPLY).encode()):
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


@pytest.fixture(scope="module")
def result_file(tmp_path_factory, hwlab_bin):
    out = tmp_path_factory.mktemp("up") / "r.json"
    r = run_cmd(["--no-build", "--quick", "--only", "ctxswitch:same_cpu", "--out", str(out)])
    assert r.returncode == 0, r.stderr
    return out


def key_of(code, body):
    return "hwlab-" + hashlib.sha256(code.encode() + b"\n" + body).hexdigest()


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
    assert headers["Idempotency-Key"] == key_of("CS101-fall", body)
    assert re.fullmatch(r"[A-Za-z0-9_-]{8,128}", headers["Idempotency-Key"])
    assert "X-Vmemlab-Name" not in headers
    assert body == out.read_bytes()
    assert json.loads(body)["class_code"] == "CS101-fall"
    assert "id=r-42" in r.stderr
    # the receipt and the exact way to delete with it, on stdout
    assert "receipt:   rcpt_SECRET-1" in r.stdout
    assert ("curl -X DELETE -H 'Authorization: Bearer rcpt_SECRET-1' "
            "'%s'" % s.url.replace("/api/results", "/api/classes/CS101-FALL/results/r-42")
            ) in r.stdout


def test_from_uploads_an_existing_file_without_measuring(result_file):
    body = result_file.read_bytes()
    with Stub() as s:
        t0 = time.monotonic()
        r1 = run_cmd(["--from", str(result_file), "--upload", s.url, "--class", "CS101"])
        r2 = run_cmd(["--from", str(result_file), "--upload", s.url, "--class", "CS101"])
        r3 = run_cmd(["--from", str(result_file), "--upload", s.url, "--class", "CS202"])
    assert r1.returncode == r2.returncode == r3.returncode == 0, r1.stderr + r3.stderr
    assert time.monotonic() - t0 < 20
    for r in (r1, r2, r3):
        assert "running" not in r.stderr and "probing" not in r.stderr   # nothing measured
        assert "receipt:   rcpt_SECRET-1" in r.stdout
    (_, h1, b1), (_, h2, b2), (_, h3, b3) = s.requests
    assert b1 == b2 == b3 == body              # byte for byte, never rewritten
    assert h1["Idempotency-Key"] == h2["Idempotency-Key"] == key_of("CS101", body)
    assert h3["Idempotency-Key"] != h1["Idempotency-Key"]    # another class, another key
    assert h3["X-Vmemlab-Class"] == "CS202"


def test_another_file_gets_another_key(result_file, tmp_path):
    other = tmp_path / "other.json"
    doc = json.loads(result_file.read_text())
    doc["created_utc"] = "2001-01-01T00:00:00Z"
    other.write_text(json.dumps(doc))
    with Stub() as s:
        assert run_cmd(["--from", str(result_file), "--upload", s.url, "--class", "CS101"]).returncode == 0
        assert run_cmd(["--from", str(other), "--upload", s.url, "--class", "CS101"]).returncode == 0
    assert s.requests[0][1]["Idempotency-Key"] != s.requests[1][1]["Idempotency-Key"]


def test_name_is_sent_percent_encoded(result_file):
    name = "山田 太郎/ü & co"
    with Stub() as s:
        r = run_cmd(["--from", str(result_file), "--upload", s.url, "--class", "CS101",
                     "--name", name])
    assert r.returncode == 0, r.stderr
    sent = s.requests[0][1]["X-Vmemlab-Name"]
    assert sent.isascii() and " " not in sent and "/" not in sent
    assert urllib.parse.unquote(sent, errors="strict") == name
    assert name not in s.requests[0][2].decode()     # the name is not put into the result


@pytest.mark.parametrize("name,needle", [
    ("x" * 61, "--name is 61 characters long; the class server keeps at most 60"),
    ("   ", "--name is empty"),
    ("a\tb", "--name contains a control character (U+0009)"),
])
def test_bad_names_are_refused_before_anything_is_sent(result_file, name, needle):
    with Stub() as s:
        r = run_cmd(["--from", str(result_file), "--upload", s.url, "--class", "CS101",
                     "--name", name])
    assert r.returncode == 2 and needle in r.stderr, r.stderr
    assert s.requests == []


def test_a_60_character_name_is_fine(result_file):
    with Stub() as s:
        r = run_cmd(["--from", str(result_file), "--upload", s.url, "--class", "CS101",
                     "--name", "é" * 60])
    assert r.returncode == 0, r.stderr
    assert urllib.parse.unquote(s.requests[0][1]["X-Vmemlab-Name"]) == "é" * 60


@pytest.mark.parametrize("content,needle", [
    (None, "cannot read --from"),
    (b"{not json", "is not JSON"),
    (b'{"hello": 1}', "is not a hw-lab result"),
    (b'{"format": "vmemlab-hw-lab-result", "schema_version": 1}', "result does not match"),
])
def test_from_a_bad_file(tmp_path, content, needle):
    f = tmp_path / "bad.json"
    if content is not None:
        f.write_bytes(content)
    with Stub() as s:
        r = run_cmd(["--from", str(f), "--upload", s.url, "--class", "CS101"])
    assert r.returncode == 2 and needle in r.stderr, r.stderr
    assert s.requests == []
    if content is not None:
        assert f.read_bytes() == content            # loses nothing


@pytest.mark.parametrize("args,needle", [
    (["--from", "x.json"], "--from FILE uploads an existing result: give --upload URL"),
    (["--from", "x.json", "--upload", "http://127.0.0.1:9/api/results", "--class", "C1",
      "--quick"], "--from uploads without measuring; --quick would have no effect"),
    (["--from", "x.json", "--upload", "http://127.0.0.1:9/api/results", "--class", "C1",
      "--out", "y.json"], "--out would have no effect"),
    (["--name", "Ann"], "--name only makes sense with --upload"),
])
def test_from_flag_errors(args, needle):
    r = run_cmd(args)
    assert r.returncode == 2 and needle in r.stderr, r.stderr


def test_class_mismatch_is_said(result_file, tmp_path):
    f = tmp_path / "for-cs9.json"
    doc = json.loads(result_file.read_text())
    doc["class_code"] = "CS9"
    f.write_text(json.dumps(doc))
    with Stub() as s:
        r = run_cmd(["--from", str(f), "--upload", s.url, "--class", "CS101"])
    assert r.returncode == 0
    assert "was measured for class CS9; uploading it to class CS101" in r.stderr
    assert s.requests[0][2] == f.read_bytes()


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
    assert info["status"] == 200 and info["message"] == "thanks"
    lines = upload.receipt_lines(s.url, "CS101", info)
    assert lines == ["the server gave no receipt: only your teacher can delete this upload"]


def test_delete_url():
    assert upload.delete_url("https://lab.example/api/results", "AB-CD", "x_1") == \
        "https://lab.example/api/classes/AB-CD/results/x_1"
    assert upload.delete_url("http://h:8080/prefix/api/results/", "C", "i") == \
        "http://h:8080/prefix/api/classes/C/results/i"
    assert upload.delete_url("http://h/upload", "C/1", "i?") == \
        "http://h/api/classes/C%2F1/results/i%3F"


# ---------------------------------------------------------------- the real class server

ROOT = os.path.dirname(HW)
SERVER = os.path.join(ROOT, "web", "server", "main.mjs")


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    node = shutil.which("node")
    if not node or not os.path.isdir(os.path.join(ROOT, "node_modules", "fastify")):
        pytest.skip("node and the npm packages (make setup) are needed for the class server")
    data = tmp_path_factory.mktemp("server-data")
    env = dict(os.environ, PORT="0", HOST="127.0.0.1", VMEMLAB_DATA_DIR=str(data),
               VMEMLAB_RATE_MAX="0")
    p = subprocess.Popen([node, SERVER], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    try:
        line = p.stdout.readline()
        m = re.search(r"at (http://127\.0\.0\.1:\d+)/", line)
        assert m, "class server did not start: " + line + (p.stdout.read() if p.poll() is not None else "")
        yield m.group(1)
    finally:
        p.terminate()
        p.wait(timeout=10)


def api(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def test_real_server_upload_receipt_and_delete(class_server, result_file):
    st, cls = api("POST", class_server + "/api/classes", json.dumps({"name": "hw-lab test"}).encode(),
                  {"Content-Type": "application/json"})
    assert st == 201, cls
    code = cls["code"]
    r = run_cmd(["--from", str(result_file), "--upload", class_server + "/api/results",
                 "--class", code, "--name", "Ada L."])
    assert r.returncode == 0, r.stderr
    rid = re.search(r"^upload id: (\S+)$", r.stdout, re.M).group(1)
    receipt = re.search(r"^receipt:   (\S+)$", r.stdout, re.M).group(1)
    cmd = re.search(r"^delete it: curl -X DELETE -H 'Authorization: Bearer (\S+)' '(\S+)'$",
                    r.stdout, re.M)
    assert cmd.group(1) == receipt
    st, listing = api("GET", "%s/api/classes/%s/results" % (class_server, code))
    assert st == 200 and [x["id"] for x in listing["results"]] == [rid]
    # the printed command works as printed: the receipt deletes this upload
    st, body = api("DELETE", cmd.group(2), headers={"Authorization": "Bearer " + receipt})
    assert st == 200 and body == {"deleted": rid, "by": "student"}
    st, listing = api("GET", "%s/api/classes/%s/results" % (class_server, code))
    assert listing["results"] == []

"""hw-lab/run trace: the recorder. A program of ours whose accesses are known must come out
exactly (its pages, in its order); the header must say what the body holds and match the
schema; a limit marks the trace partial; bad programs, a missing valgrind and an
unwritable output are refused with a clear message and the documented exit status. The
traces are read back with hwlab.tracefile, written apart from the C encoder."""
import json
import os
import re
import shutil
import subprocess
import sys
import zlib

import pytest

from hwlab_helpers import HW, run_cmd

from hwlab.tracefile import KIND, read_trace

TOUCH = os.path.join(HW, "build", "touch-pages")
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind is not installed (make -C hw-lab setup installs it)")


@pytest.fixture(scope="module")
def built():
    r = subprocess.run(["make", "-s", "-C", HW, "build/tracepack", "build/touch-pages"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def schema():
    with open(os.path.join(HW, "schema", "trace.schema.json")) as f:
        return json.load(f)


def check_schema(header, schema):
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(schema).validate(header)


@needs_valgrind
@pytest.mark.parametrize("n", [64, 300])
def test_known_pages_in_known_order(n, built, tmp_path, schema):
    out = tmp_path / "touch.vmtrace"
    r = run_cmd(["trace", "--out", str(out), "--", TOUCH, str(n)], timeout=120)
    assert r.returncode == 0, r.stderr
    m = re.search(r"base (0x[0-9a-f]+) pages (\d+)", r.stdout)
    assert m, r.stdout          # the program's own output passes through
    base = int(m.group(1), 16)
    header, accesses = read_trace(str(out))
    check_schema(header, schema)
    region = [(k, a) for k, a in accesses if base <= a < base + n * 4096]
    expect = [(KIND["store"], base + ((7 * i + 3) % n) * 4096 + (i % 64) * 64) for i in range(n)]
    assert region == expect     # exactly these stores, in this order, nothing else there
    # the header says what the body holds
    assert header["accesses"] == len(accesses)
    assert header["pages"] == len({a >> 12 for _, a in accesses})
    for name, k in KIND.items():
        assert header["counts"][name] == sum(1 for kk, _ in accesses if kk == k)
    assert header["partial"] is False and "partial_reason" not in header
    assert header["program_exit"] == {"code": 0, "signal": None}
    assert header["program"] == TOUCH and header["args"] == [str(n)]
    assert header["recorder"]["source"] == "valgrind"
    assert header["body"]["bytes"] == os.path.getsize(out) - 16 - len(
        json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode())


@needs_valgrind
def test_limit_marks_the_trace_partial(built, tmp_path, schema):
    out = tmp_path / "lim.vmtrace"
    r = run_cmd(["trace", "--out", str(out), "--limit", "5000", "--", TOUCH, "600"], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "PARTIAL trace: stopped at the --limit of 5000 accesses" in r.stderr
    header, accesses = read_trace(str(out))
    check_schema(header, schema)
    assert len(accesses) == header["accesses"] == 5000
    assert header["partial"] is True
    assert "--limit of 5000" in header["partial_reason"]
    assert header["recorder"]["limit"] == 5000


@needs_valgrind
def test_ls_is_under_two_bytes_per_access(built, tmp_path):
    out = tmp_path / "ls.vmtrace"
    r = run_cmd(["trace", "--out", str(out), "--", "ls", "/"], timeout=180)
    assert r.returncode == 0, r.stderr
    header, accesses = read_trace(str(out))
    assert header["accesses"] > 100_000
    assert os.path.getsize(out) / header["accesses"] <= 2.0


def test_lackey_log_conversion(built, tmp_path, schema):
    log = tmp_path / "x.lackey"
    log.write_text("==1== Lackey, an example Valgrind tool\n==1== Command: /bin/prog a b\n"
                   "I  00401000,3\n L 7ffd0010,8\n S 7ffd0018,8\n M 00602000,4\nI  00401003,2\n"
                   "==1== Exit code:       3\n")
    out = tmp_path / "x.vmtrace"
    r = run_cmd(["trace", "--out", str(out), "--from-lackey", str(log)])
    assert r.returncode == 0, r.stderr
    header, accesses = read_trace(str(out))
    check_schema(header, schema)
    assert accesses == [(2, 0x401000), (0, 0x7ffd0010), (1, 0x7ffd0018), (3, 0x602000), (2, 0x401003)]
    assert header["program"] == "/bin/prog" and header["args"] == ["a", "b"]
    assert header["program_exit"]["code"] == 3 and header["partial"] is False
    assert header["recorder"]["source"] == "lackey-log"
    # a log cut before valgrind said how the program ended is partial
    log.write_text("I  00401000,3\n L 7ffd0010,8\n")
    r = run_cmd(["trace", "--out", str(out), "--from-lackey", str(log)])
    assert r.returncode == 1, r.stderr
    header, _ = read_trace(str(out))
    assert header["partial"] is True and "log ends before" in header["partial_reason"]


def test_not_a_lackey_log(built, tmp_path):
    log = tmp_path / "notes.txt"
    log.write_text("hello\nworld\n")
    r = run_cmd(["trace", "--out", str(tmp_path / "x.vmtrace"), "--from-lackey", str(log)])
    assert r.returncode == 2
    assert "is not a valgrind lackey log" in r.stderr
    assert not (tmp_path / "x.vmtrace").exists()


@pytest.mark.parametrize("cmd,needle", [
    (["--", "no-such-program-here"], "no-such-program-here: no such program on PATH"),
    (["--", "/no/such/file"], "/no/such/file: no such file"),
    (["--", "NOEXEC"], "is not executable"),
    (["--", "/"], "is a directory, not a program"),
    ([], "name the program to record after --"),
    (["--limit", "0", "--", "ls"], "0 is out of range"),
    (["--limit", "many", "--", "ls"], "'many' is not a whole number"),
    # what the header cannot hold is refused before the program runs, not after
    (["--", "ls", "x" * 5000], "argument 1 is 5,000 characters long; a trace header holds at most 4,096"),
    (["--", "x" * 4097], "the program's name is 4,097 characters long"),
    # ["ls","yy..",...] as the header writes it: 2 + 4 + 700 x (1 + 102) bytes
    (["--", "ls"] + ["y" * 100] * 700, "the command line takes 72,106 bytes in a trace header, which holds at most 61,440"),
])
def test_bad_programs_and_flags(cmd, needle, built, tmp_path):
    out = tmp_path / "x.vmtrace"
    noexec = tmp_path / "data.txt"
    noexec.write_text("not a program\n")
    noexec.chmod(0o644)
    cmd = [str(noexec) if c == "NOEXEC" else c for c in cmd]
    r = run_cmd(["trace", "--out", str(out)] + cmd)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert not out.exists()


@needs_valgrind
def test_arguments_that_are_not_utf8(built, tmp_path, schema):
    # a file name in another encoding: recorded, its bytes shown as U+FFFD in the header
    out = tmp_path / "x.vmtrace"
    r = subprocess.run([sys.executable.encode(), os.path.join(HW, "run").encode(), b"trace", b"--out", bytes(out),
                        b"--", b"/bin/echo", b"caf\xe9", b"ok"], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode("utf-8", "replace")
    assert b"caf\xe9 ok" in r.stdout          # the program had its own bytes
    header, _ = read_trace(str(out))
    check_schema(header, schema)
    assert header["program"] == "/bin/echo" and header["args"] == ["caf\ufffd", "ok"]


def test_valgrind_missing(built, tmp_path):
    # a PATH without valgrind (the program is given by its path)
    env = dict(os.environ, PATH=str(tmp_path))
    r = subprocess.run([sys.executable, os.path.join(HW, "run"), "trace", "--out", str(tmp_path / "x.vmtrace"),
                        "--", "/bin/ls"], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "valgrind is not installed" in r.stderr and "apt-get install valgrind" in r.stderr


def test_unwritable_output(built):
    r = run_cmd(["trace", "--out", "/nonexistent-dir/x.vmtrace", "--", "ls"])
    assert r.returncode == 4
    assert "directory /nonexistent-dir does not exist" in r.stderr


@pytest.mark.parametrize("body_bytes,room,command,in_place", [
    (3 << 20, None, ["prog", "a"], True),           # a large body: the header goes into its room
    (3 << 20, None, ["prog", "x" * 4000], True),    # a long command line: more room
    (3 << 20, 40, ["prog"], False),                 # a header that outgrew the room: copied
    (64 << 10, None, ["prog", "a"], False),         # a small body: copied, no padding
    (3 << 20, 0, ["prog", "a"], False),             # no room asked (a converted lackey log)
], ids=["in-place", "long-command", "outgrown", "small", "no-room"])
def test_header_written_before_the_body_in_place_or_copied(body_bytes, room, command, in_place, tmp_path):
    """write_trace puts the prefix and header into the room BodyWriter left before a large
    body (its text padded with spaces to the room, and the body file becomes the trace), and
    copies the body behind them otherwise. Either way the file reads back as that header and
    that body, byte for byte, and no temporary file is left."""
    from hwlab import trace as tracelib
    from hwlab.tracefile import read_header
    out = tmp_path / "t.vmtrace"
    out.write_bytes(b"an earlier trace, replaced")
    w = tracelib.BodyWriter(str(out), room=tracelib.header_room(command) if room is None else room)
    raw = os.urandom(body_bytes)            # incompressible: the compressed body is about as large
    for at in range(0, len(raw), 70_001):
        w.write(raw[at:at + 70_001])
    size = w.close()
    header = {"format": "vmemlab-trace", "program": command[0], "args": command[1:],
              "body": {"compression": "gzip", "bytes": size}}
    tracelib.write_trace(str(out), header, w)
    w.discard()
    data = out.read_bytes()
    got, offset = read_header(data)
    assert got == header
    assert zlib.decompress(data[offset:], 31) == raw and len(data) - offset == size
    text_len = offset - 16
    if in_place:
        assert text_len == tracelib.header_room(command) and data[16:offset].rstrip(b" ").endswith(b"}")
        assert text_len > len(json.dumps(header, separators=(",", ":")))
    else:
        assert data[16:offset].endswith(b"}"), "a copied trace carries no padding"
    assert sorted(os.listdir(tmp_path)) == ["t.vmtrace"]
    assert oct(os.stat(out).st_mode & 0o777) == "0o644"

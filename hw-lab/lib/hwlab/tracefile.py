"""Reading and writing vmemlab traces in Python (wasm-core/docs/replay.md, "The trace
format"), written from the format's description apart from the C encoders (trace/
tracepack.c, trace/vmtrace_tool.c) and the engine's decoder (wasm-core/src/trace.c), so
that each checks the others: the recorder's tests read what the recorder wrote with
read_trace and decode_body, the replay's tests write traces of known accesses with
write_trace.

    header, accesses = read_trace("ls.vmtrace")        # accesses: [(kind, address), ...]
    write_trace("t.vmtrace", [(KIND["load"], 0x401000)], program="t")
"""
import json
import struct
import zlib

MAGIC = b"\x89VMTRC\r\n"
KIND = {"load": 0, "store": 1, "fetch": 2, "modify": 3}
KIND_NAMES = ["load", "store", "fetch", "modify"]
ESCAPE, CONTROL = 30, 31


class TraceError(ValueError):
    pass


def _zigzag(v):
    return (v << 1) if v >= 0 else ((-v) << 1) - 1


def _unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def _varint(out, v):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def encode_body(accesses, end_count=None):
    """The uncompressed body: one record per (kind, address), then the end record."""
    out = bytearray()
    last_page, last_off = [0, 0], [0, 0]
    n = 0
    for kind, addr in accesses:
        s = 1 if kind == KIND["fetch"] else 0
        page, off = addr >> 12, addr & 0xFFF
        dp = page - last_page[s]
        od = _zigzag(off - last_off[s])
        out.append(kind | (4 if dp else 0) | ((od if od < ESCAPE else ESCAPE) << 3))
        if dp:
            _varint(out, _zigzag(dp))
        if od >= ESCAPE:
            _varint(out, od)
        last_page[s], last_off[s] = page, off
        n += 1
    out.append(CONTROL << 3)
    _varint(out, n if end_count is None else end_count)
    return bytes(out)


def make_header(accesses, body_bytes, **fields):
    counts = {k: 0 for k in KIND_NAMES}
    pages = set()
    for kind, addr in accesses:
        counts[KIND_NAMES[kind]] += 1
        pages.add(addr >> 12)
    h = {
        "format": "vmemlab-trace", "version": 1, "program": "test", "args": [],
        "created_utc": "2026-01-01T00:00:00Z",
        "recorder": {"tool": "valgrind-lackey", "valgrind": None, "hw_lab": "test", "source": "valgrind"},
        "probe": {"arch": "x86_64", "cpu_model": "test"},
        "page_size": 4096, "accesses": len(accesses), "pages": len(pages), "counts": counts,
        "partial": False, "program_exit": {"code": 0, "signal": None},
        "body": {"compression": "gzip", "bytes": body_bytes},
    }
    h.update(fields)
    return h


def pack(header, body_gz, version=1):
    text = json.dumps(header, separators=(",", ":")).encode()
    return MAGIC + struct.pack("<HHI", version, 0, len(text)) + text + body_gz


def gzip_bytes(raw):
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return z.compress(raw) + z.flush()


def write_trace(path, accesses, body=None, **fields):
    """Writes accesses (a list of (kind, address)) as a trace; fields override the header."""
    accesses = list(accesses)
    gz = gzip_bytes(encode_body(accesses) if body is None else body)
    data = pack(make_header(accesses, len(gz), **fields), gz)
    with open(path, "wb") as f:
        f.write(data)
    return data


def read_header(data):
    """(header dict, body offset) from the file's bytes."""
    if data[:8] != MAGIC:
        raise TraceError("not a vmemlab trace")
    version, reserved, hlen = struct.unpack_from("<HHI", data, 8)
    if version != 1:
        raise TraceError("format version %d" % version)
    if reserved or not 0 < hlen <= 65536 or len(data) < 16 + hlen:
        raise TraceError("corrupt prefix")
    return json.loads(data[16:16 + hlen].decode("utf-8")), 16 + hlen


def decode_body(raw):
    """[(kind, address)] from an uncompressed body; raises TraceError on anything off."""
    out = []
    last_page, last_off = [0, 0], [0, 0]
    i, n = 0, len(raw)

    def varint():
        nonlocal i
        v, shift = 0, 0
        while True:
            if i >= n:
                raise TraceError("truncated record")
            b = raw[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return v
            if shift >= 70:
                raise TraceError("varint too long")

    while i < n:
        tag = raw[i]
        i += 1
        code = tag >> 3
        if code == CONTROL:
            if tag & 7:
                raise TraceError("unknown record 0x%02x" % tag)
            count = varint()
            if count != len(out):
                raise TraceError("end record counts %d, body holds %d" % (count, len(out)))
            if i != n:
                raise TraceError("data after the end record")
            return out
        kind = tag & 3
        s = 1 if kind == KIND["fetch"] else 0
        page = last_page[s] + (_unzigzag(varint()) if tag & 4 else 0)
        off = last_off[s] + _unzigzag(varint() if code == ESCAPE else code)
        if not 0 <= off < 4096 or page < 0:
            raise TraceError("offset or page out of range")
        last_page[s], last_off[s] = page, off
        out.append((kind, page << 12 | off))
    raise TraceError("no end record")


def read_trace(path):
    with open(path, "rb") as f:
        data = f.read()
    header, off = read_header(data)
    body = data[off:]
    if len(body) != header["body"]["bytes"]:
        raise TraceError("body is %d bytes, header says %d" % (len(body), header["body"]["bytes"]))
    d = zlib.decompressobj(31)
    raw = d.decompress(body) + d.flush()
    if not d.eof or d.unused_data:
        raise TraceError("gzip body truncated or followed by data")
    return header, decode_body(raw)

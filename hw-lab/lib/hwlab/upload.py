"""POST a result file to a class server (web/server/main.mjs, or any server that accepts
the same request).

Protocol:
  POST <URL>                          (the class server's /api/results)
  Content-Type: application/json
  X-Vmemlab-Class: <class code>
  Idempotency-Key: hwlab-<64 hex>     (SHA-256 of the class code and the file's bytes: the
                                       same file sent to the same class again is stored once)
  X-Vmemlab-Name: <display name>      (optional; UTF-8, percent-encoded, at most 60 characters)
  body: the result document, byte for byte as written to --out (or as read from --from)
A 2xx answer is success. The class server answers JSON with id, receipt, class, url and
message; the receipt is the one token that deletes this upload:
  DELETE <server>/api/classes/<class>/results/<id>   with   Authorization: Bearer <receipt>
"""
import hashlib
import json
import re
import unicodedata
import urllib.error
import urllib.parse
import urllib.request

CLASS_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$")
NAME_MAX = 60


class UploadError(Exception):
    pass


def check_url(url):
    u = urllib.parse.urlparse(url)
    if u.scheme not in ("http", "https") or not u.netloc:
        raise UploadError("--upload needs an http:// or https:// URL, got '%s'" % url)


def check_class(code):
    if not code or not CLASS_CODE.match(code):
        raise UploadError(
            "--class needs the class code your teacher gave you (2-64 letters, digits, "
            "'-' or '_'), got '%s'" % (code or ""))


def check_name(name):
    """The optional display name: 1-60 characters, no control characters."""
    if name is None:
        return None
    if not name.strip():
        raise UploadError("--name is empty; leave it out to upload without a name")
    if len(name) > NAME_MAX:
        raise UploadError("--name is %d characters long; the class server keeps at most %d: "
                          "give a shorter name" % (len(name), NAME_MAX))
    bad = [c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")]
    if bad:
        raise UploadError("--name contains a control character (%s); use letters, digits, "
                          "spaces and punctuation" % ", ".join("U+%04X" % ord(c) for c in bad[:3]))
    return name


def idempotency_key(class_code, body):
    """Derived from the class code and the file's bytes: 'hwlab-' and 64 hex digits."""
    h = hashlib.sha256()
    h.update(class_code.encode("utf-8") + b"\n")
    h.update(body)
    return "hwlab-" + h.hexdigest()


def delete_url(upload_url, class_code, result_id):
    """Where DELETE removes an upload: next to /api/results on the same server."""
    u = urllib.parse.urlparse(upload_url)
    tail = "classes/%s/results/%s" % (urllib.parse.quote(class_code, safe=""),
                                      urllib.parse.quote(str(result_id), safe=""))
    path = u.path
    if path.rstrip("/").endswith("/results"):
        path = path.rstrip("/")[: -len("results")] + tail
    else:
        path = "/api/" + tail
    return urllib.parse.urlunparse((u.scheme, u.netloc, path, "", "", ""))


def upload(url, class_code, body, timeout=30, version="0", name=None):
    check_url(url)
    check_class(class_code)
    check_name(name)
    headers = {
        "Content-Type": "application/json",
        "X-Vmemlab-Class": class_code,
        "Idempotency-Key": idempotency_key(class_code, body),
        "User-Agent": "vmemlab-hw-lab/%s" % version,
    }
    if name is not None:
        headers["X-Vmemlab-Name"] = urllib.parse.quote(name, safe="")
    req = urllib.request.Request(url, data=body, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, text = resp.status, resp.read(65536).decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        text = e.read(2000).decode("utf-8", "replace") if e.fp else ""
        raise UploadError("the server at %s refused the upload: HTTP %d %s%s" % (
            url, e.code, e.reason, (": " + text.strip()[:300]) if text.strip() else ""))
    except urllib.error.URLError as e:
        raise UploadError("could not reach %s: %s (is the address right, is the server up?)"
                          % (url, e.reason))
    except OSError as e:
        raise UploadError("could not reach %s: %s" % (url, e))
    info = {"status": status, "idempotency_key": headers["Idempotency-Key"]}
    try:
        j = json.loads(text)
        if isinstance(j, dict):
            info.update({k: j[k] for k in ("id", "receipt", "class", "url", "message")
                         if k in j and isinstance(j[k], (str, int))})
    except ValueError:
        if text.strip():
            info["message"] = text.strip()[:300]
    return info


def receipt_lines(upload_url, class_code, info):
    """What the learner must keep: the id, the receipt and the exact delete command."""
    lines = []
    if "id" in info:
        lines.append("upload id: %s" % info["id"])
    if "url" in info:
        lines.append("see it:    %s" % info["url"])
    if info.get("receipt") and "id" in info:
        code = str(info.get("class") or class_code)
        target = delete_url(upload_url, code, info["id"])
        lines += [
            "receipt:   %s" % info["receipt"],
            "           keep it: it is the only way to delete this upload yourself",
            "delete it: curl -X DELETE -H 'Authorization: Bearer %s' '%s'"
            % (info["receipt"], target),
            "           (DELETE %s with the header Authorization: Bearer <receipt>)" % target,
        ]
    else:
        lines.append("the server gave no receipt: only your teacher can delete this upload")
    return lines

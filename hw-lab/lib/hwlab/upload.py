"""POST a result file to a class server.

Protocol (the server side comes later; this is the contract it must accept):
  POST <URL>
  Content-Type: application/json
  X-Vmemlab-Class: <class code>
  body: the result document, byte for byte as written to --out (it carries "class_code")
A 2xx answer is success; a JSON body with "id" or "url" is shown to the learner.
"""
import json
import re
import urllib.error
import urllib.parse
import urllib.request

CLASS_CODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$")


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


def upload(url, class_code, body, timeout=30, version="0"):
    check_url(url)
    check_class(class_code)
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json",
        "X-Vmemlab-Class": class_code,
        "User-Agent": "vmemlab-hw-lab/%s" % version,
    })
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
    info = {"status": status}
    try:
        j = json.loads(text)
        if isinstance(j, dict):
            info.update({k: j[k] for k in ("id", "url", "message") if k in j})
    except ValueError:
        if text.strip():
            info["message"] = text.strip()[:300]
    return info

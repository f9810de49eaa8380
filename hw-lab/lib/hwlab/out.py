"""The result file: whether --out can be written (run and run trace both ask)."""
import os
import tempfile


def check_writable(path):
    """Fail before minutes of benchmarking, not after."""
    path = os.path.abspath(path)
    d = os.path.dirname(path)
    if os.path.isdir(path):
        return "--out %s is a directory; give a file name" % path
    if not os.path.isdir(d):
        return "cannot write --out %s: directory %s does not exist" % (path, d)
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return "cannot write --out %s: the file is not writable" % path
    try:  # access() says yes to root even on read-only file systems: really try
        fd, tmp = tempfile.mkstemp(prefix=".hwlab-probe-", dir=d)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        return "cannot write --out %s: cannot create files in %s (%s)" % (path, d, e.strerror)
    return None

"""hw-lab/run: build, probe, benchmark, write one result JSON, optionally upload it."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

from . import VERSION
from . import modules as modlib
from . import probe as probelib
from .out import check_writable

SCHEMA_VERSION = 1
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(HERE, "schema", "result.schema.json")

EXIT_OK, EXIT_BENCH_FAILED, EXIT_USAGE, EXIT_UPLOAD, EXIT_OUTPUT = 0, 1, 2, 3, 4
OUT_DEFAULT = "hwlab-result.json"


def say(msg):
    print("hw-lab: " + msg, file=sys.stderr, flush=True)


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print("hw-lab/run: error: %s (see hw-lab/run --help)" % message, file=sys.stderr)
        sys.exit(EXIT_USAGE)


def positive_int(limit):
    def conv(s):
        try:
            v = int(s, 10)
        except ValueError:
            raise argparse.ArgumentTypeError("'%s' is not a whole number" % s)
        if not 1 <= v <= limit:
            raise argparse.ArgumentTypeError("%d is out of range 1..%d" % (v, limit))
        return v
    return conv


def parse_args(argv):
    # the upload module (HTTP, certificates) is imported by the commands that may upload, not
    # at the top: `run trace` would pay for it before its program starts
    from . import upload as uploadlib
    p = Parser(prog="hw-lab/run", description=(
        "Measure this machine for vmemlab: probe (CPU, hypervisor, VMX/SVM/EPT/NPT, KVM "
        "parameters, THP) and benchmarks (cpuid_exit, memtouch, ptrchase, ctxswitch, "
        "kvm_exits); write one result JSON. `hw-lab/run trace --out FILE -- PROGRAM ARGS` "
        "records a program's memory accesses instead (hw-lab/run trace --help)."))
    p.add_argument("--quick", action="store_true", help="a short run (seconds)")
    p.add_argument("--only", action="append", metavar="NAME[:SUBCASE]",
                   help="run only this benchmark (repeatable); see --list")
    p.add_argument("--out", metavar="FILE", default=OUT_DEFAULT,
                   help="where to write the result (default: ./hwlab-result.json)")
    p.add_argument("--upload", metavar="URL", help="POST the result to a class server")
    p.add_argument("--class", dest="class_code", metavar="CODE",
                   help="class code for --upload (from your teacher)")
    p.add_argument("--from", dest="from_file", metavar="FILE",
                   help="upload this existing result file instead of measuring (with "
                        "--upload URL --class CODE)")
    p.add_argument("--name", metavar="NAME",
                   help="your display name in the class (optional, at most %d characters; "
                        "sent with --upload, not written into the result)" % uploadlib.NAME_MAX)
    p.add_argument("--mem-mib", type=positive_int(1 << 20), metavar="N",
                   help="memtouch size and largest ptrchase working set (default 1024, "
                        "quick 64)")
    p.add_argument("--kvm-iters", type=positive_int(1 << 20), metavar="N",
                   help="iterations of the kvm_exits port-I/O and cr3 cases")
    p.add_argument("--timeout", type=positive_int(86400), default=60, metavar="S",
                   help="hard limit in seconds for each KVM guest run (default 60)")
    p.add_argument("--no-build", action="store_true", help="do not run make first")
    p.add_argument("--bin", metavar="PATH", help="use this hwlab binary (default build/hwlab)")
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    p.add_argument("--version", action="version", version="hw-lab " + VERSION)
    a = p.parse_args(argv)
    if a.upload and not a.class_code:
        p.error("--upload needs --class CODE (the class code your teacher gave you)")
    if a.class_code and not a.upload:
        p.error("--class only makes sense with --upload URL")
    if a.name is not None and not a.upload:
        p.error("--name only makes sense with --upload URL")
    if a.from_file is not None:
        if not a.upload:
            p.error("--from FILE uploads an existing result: give --upload URL --class CODE")
        measuring = [f for f, on in (("--quick", a.quick), ("--only", a.only),
                                     ("--mem-mib", a.mem_mib), ("--kvm-iters", a.kvm_iters),
                                     ("--list", a.list), ("--bin", a.bin),
                                     ("--out", a.out != OUT_DEFAULT)) if on]
        if measuring:
            p.error("--from uploads without measuring; %s would have no effect: leave it out"
                    % ", ".join(measuring))
    try:
        if a.upload:
            uploadlib.check_url(a.upload)
            uploadlib.check_class(a.class_code)
            uploadlib.check_name(a.name)
    except uploadlib.UploadError as e:
        p.error(str(e))
    return a


def build(binary):
    if not os.path.exists(os.path.join(HERE, "Makefile")):
        return
    r = subprocess.run(["make", "-s", "-C", HERE, os.path.relpath(binary, HERE)],
                       stdout=sys.stderr, stderr=sys.stderr)
    if r.returncode != 0 and not os.path.exists(binary):
        say("build failed and there is no %s; is a C compiler installed? "
            "(Debian: apt-get install gcc make)" % binary)
        sys.exit(EXIT_BENCH_FAILED)


def listed(binary):
    r = subprocess.run([binary, "list"], capture_output=True, text=True)
    return r.stdout.split()


def run_bench(binary, args, only):
    cmd = [binary, "bench"]
    if args.quick:
        cmd.append("--quick")
    if only:
        cmd += ["--only", only]
    if args.mem_mib:
        cmd += ["--mem-mib", str(args.mem_mib)]
    if args.kvm_iters:
        cmd += ["--kvm-iters", str(args.kvm_iters)]
    cmd += ["--timeout", str(args.timeout)]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=sys.stderr)
    try:
        return json.loads(r.stdout), r.returncode
    except ValueError:
        say("%s produced no JSON (exit %d)" % (" ".join(cmd), r.returncode))
        return None, r.returncode or 1


def validate(doc):
    try:
        import jsonschema
    except ImportError:
        return "jsonschema is not installed: result not validated (apt-get install python3-jsonschema)"
    with open(SCHEMA) as f:
        schema = json.load(f)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=str)
    if errors:
        e = errors[0]
        raise ValueError("result does not match %s at %s: %s" % (
            os.path.relpath(SCHEMA), "/".join(map(str, e.absolute_path)) or "(top)", e.message))
    return None


def write_atomic(path, data):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".hwlab-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def headline(doc):
    for b in doc["benchmarks"]:
        if b["status"] != "ok":
            say("%-10s %s%s" % (b["name"], b["status"],
                                (": " + b["reason"]) if b.get("reason") else ""))
            continue
        for c in b.get("cases", []):
            for m in c.get("metrics", []):
                say("%-10s %-16s %-14s min %10.1f  median %10.1f %s" % (
                    b["name"], c["name"], m["name"], m["min"], m["median"], m["unit"]))


def send(args, data, where):
    """Upload the bytes, then print the receipt and how to delete with it (stdout)."""
    from . import upload as uploadlib
    try:
        info = uploadlib.upload(args.upload, args.class_code, data, version=VERSION, name=args.name)
    except uploadlib.UploadError as e:
        print("hw-lab/run: error: upload failed: %s (the result is still in %s)"
              % (e, where), file=sys.stderr)
        return EXIT_UPLOAD
    say("uploaded %s to %s (HTTP %d)%s" % (where, args.upload, info["status"], "".join(
        " %s=%s" % (k, info[k]) for k in ("id", "url", "message") if k in info)))
    print("\n".join(uploadlib.receipt_lines(args.upload, args.class_code, info)), flush=True)
    return EXIT_OK


def read_result(path):
    """An existing result file for --from: its exact bytes, after checking what it is."""
    try:
        with open(path, "rb") as f:
            data = f.read((4 << 20) + 1)
    except OSError as e:
        raise ValueError("cannot read --from %s: %s" % (path, e.strerror))
    if len(data) > 4 << 20:
        raise ValueError("--from %s is larger than 4 MiB: not a hw-lab result" % path)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError("--from %s is not JSON (%s); give a file that hw-lab/run wrote"
                         % (path, e))
    if not isinstance(doc, dict) or doc.get("format") != "vmemlab-hw-lab-result":
        raise ValueError("--from %s is not a hw-lab result (no \"format\": "
                         "\"vmemlab-hw-lab-result\"); give a file that hw-lab/run wrote" % path)
    try:
        validate(doc)
    except ValueError as e:
        raise ValueError("--from %s: %s" % (path, e))
    return data, doc


def upload_existing(args):
    try:
        data, doc = read_result(args.from_file)
    except ValueError as e:
        print("hw-lab/run: error: %s" % e, file=sys.stderr)
        return EXIT_USAGE
    if doc.get("class_code") not in (None, args.class_code):
        say("note: %s was measured for class %s; uploading it to class %s as asked "
            "(the file is sent unchanged)" % (args.from_file, doc["class_code"], args.class_code))
    say("uploading %s (%s run of %s, no new measurement)" % (
        args.from_file, doc.get("mode", "?"), doc.get("created_utc", "?")))
    return send(args, data, args.from_file)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.from_file is not None:
        return upload_existing(args)
    binary = os.path.abspath(args.bin or os.path.join(HERE, "build", "hwlab"))
    if not args.no_build and not args.bin:
        build(binary)
    if not os.path.exists(binary):
        say("no %s: run make -C hw-lab first" % binary)
        return EXIT_BENCH_FAILED
    names = listed(binary)
    if args.list:
        print("\n".join(names + list(modlib.NAMES)))
        return EXIT_OK
    names += list(modlib.NAMES)
    for o in args.only or []:
        if o.split(":", 1)[0] not in names:
            print("hw-lab/run: error: --only %s: no such benchmark on this machine; "
                  "built here: %s" % (o, ", ".join(names)), file=sys.stderr)
            return EXIT_USAGE
    why = check_writable(args.out)
    if why:
        print("hw-lab/run: error: " + why, file=sys.stderr)
        return EXIT_OUTPUT

    say("probing %s" % os.uname().nodename)
    probe = probelib.probe(binary)
    v = probe["virtualization"]
    say("%s, %s; %s; KVM here: %s" % (
        probe["arch"], probe["cpu"]["model_name"],
        "in a VM (%s)" % ", ".join(x for x in (v["hypervisor"] or "unknown hypervisor",
                                              v.get("platform")) if x)
        if v["in_vm"] else "bare metal as far as CPUID and DMI tell",
        probe["kvm"]["backend"]))

    timer, benches, rc = None, [], 0
    wanted = [o for o in (args.only or [None]) if o is None or o.split(":")[0] not in modlib.NAMES]
    for only in wanted:
        out, code = run_bench(binary, args, only)
        if out is None:
            return EXIT_BENCH_FAILED
        timer = timer or out["timer"]
        benches += out["benchmarks"]
        rc |= code
    if timer is None:   # only modules were asked for
        r = subprocess.run([binary, "timer"], capture_output=True, text=True)
        timer = json.loads(r.stdout)["timer"]
    mods = modlib.entries(probe, None if not args.only else
                          {o.split(":")[0] for o in args.only})
    benches += mods
    rc |= any(m["status"] == "error" for m in mods)

    doc = {
        "format": "vmemlab-hw-lab-result",
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "hw-lab", "version": VERSION},
        "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ"),
        "mode": "quick" if args.quick else "full",
        "probe": probe,
        "timer": timer,
        "benchmarks": benches,
    }
    modlib.annotate(doc)
    if args.class_code:
        doc["class_code"] = args.class_code
    try:
        note = validate(doc)
        if note:
            say(note)
    except ValueError as e:
        say("BUG: " + str(e))
        rc = 1
    data = (json.dumps(doc, indent=1, sort_keys=False) + "\n").encode()
    try:
        write_atomic(args.out, data)
    except OSError as e:
        print("hw-lab/run: error: cannot write --out %s: %s" % (args.out, e.strerror),
              file=sys.stderr)
        return EXIT_OUTPUT
    headline(doc)
    say("wrote %s" % os.path.abspath(args.out))
    if args.upload:
        code = send(args, data, args.out)
        if code:
            return code
    return EXIT_BENCH_FAILED if rc else EXIT_OK

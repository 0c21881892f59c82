#!/usr/bin/env python3
"""Lists the error and warning messages of a Python package's release, for reading.

Reads sdists (.tar.gz) and wheels (.whl) as PyPI serves them (`pip download
--no-deps PACKAGE==VERSION -d DIR`, into a cache outside the source tree) and
prints, for each Python file under the folders given, every message a run can
show: the first argument of `raise X(...)`, the message of `assert ..., msg`,
of `warnings.warn(...)` and of logger calls (warning, error, exception,
critical, and the frameworks' own: warning_once, log_dist, ...), with the
parts a run fills in written {} (extract-torch-messages.py's reading of
f-strings, `%` and `.format`). One line each: release, file:line, kind,
message. --grep keeps the messages that match a regular expression.

It is how the framework messages quoted in tests/data/logs/quoted/ were
found (deepspeed_*, megatron_*, sglang_*: each file's `# source:` names the
package, the file and the releases); nothing here is written to the tree.

Usage: scripts/list-python-messages.py ARCHIVE... --under deepspeed/comm
           [--under ...] [--grep 'nccl|process group']
"""

import argparse
import ast
import importlib.util
import os
import re
import sys
import tarfile
import zipfile

# The message readers of extract-torch-messages.py (one way to read a
# message expression for both).
_spec = importlib.util.spec_from_file_location(
    "extract_torch_messages", os.path.join(os.path.dirname(__file__), "extract-torch-messages.py"))
_torch = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_torch)

LOG_CALLS = {"warning", "warn", "error", "exception", "critical", "warning_once",
             "warning_rank0", "error_rank0", "log_dist", "print_rank_0"}


def messages(source):
    """(line, kind, message) of a Python file's raise, assert and log calls."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            f = node.exc.func
            cls = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            text = _torch.fmt_of(node.exc.args[0])
            if text:
                yield node.lineno, "raise " + cls, _torch.clean(text)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            text = _torch.fmt_of(node.msg)
            if text:
                yield node.lineno, "assert", _torch.clean(text)
        elif isinstance(node, ast.Call) and node.args:
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in LOG_CALLS:
                text = _torch.fmt_of(node.args[0])
                if text:
                    yield node.lineno, name, _torch.clean(text)


def python_files(archive):
    """(path in the package, source) of the .py files of an sdist or a wheel."""
    if archive.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if name.endswith(".py"):
                    yield name, z.read(name).decode("utf-8", "replace")
    else:
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith(".py"):
                    # An sdist's files lie under NAME-VERSION/.
                    yield m.name.split("/", 1)[-1], t.extractfile(m).read().decode(
                        "utf-8", "replace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("archives", nargs="+")
    ap.add_argument("--under", action="append", required=True,
                    help="a folder (or file) of the package to read")
    ap.add_argument("--grep", help="keep only the messages matching this regular expression")
    args = ap.parse_args()
    keep = re.compile(args.grep) if args.grep else None
    for archive in args.archives:
        release = re.sub(r"(\.tar\.gz|-py3.*|-cp\d.*)$", "", os.path.basename(archive))
        for path, source in python_files(archive):
            if not any(path.startswith(u) for u in args.under):
                continue
            for line, kind, text in messages(source):
                if keep is None or keep.search(text):
                    print(f"{release}\t{path}:{line}\t{kind}\t{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

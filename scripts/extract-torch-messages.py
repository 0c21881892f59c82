#!/usr/bin/env python3
"""Lists PyTorch's distributed error and warning messages, deduplicated.

Reads the torch wheels of several releases (PyPI's manylinux x86_64 wheels,
`pip download --no-deps torch==X`), each a zip that holds the release's
Python sources and its compiled C++ libraries, and writes one line per
distinct message: the first and last release that has it, where it comes
from, the subsystem that source file belongs to, and the message.

Two readers, one per kind of source a wheel ships:

- Python sources (torch/distributed/distributed_c10d.py, rendezvous.py,
  elastic/rendezvous/*.py, nn/parallel/distributed.py,
  distributed/algorithms/join.py) are parsed with `ast`: the first argument
  of every `raise X(...)` and of every `return X(...)` whose X is an
  exception class (with X), and of every
  `warnings.warn(...)` and `logger.warning/error/exception/critical(...)`
  that reports a failure (an error word: advice and deprecations are left
  out), with the parts a run fills in (f-string values,
  `%` and `.format` arguments, concatenated expressions) written `{}`. Of
  distributed_c10d.py only the functions that set up, check and tear down
  process groups are read (init_process_group and what it calls, new_group,
  the store barrier, destroy_process_group): the rest are argument checks of
  the collectives' Python API.
- C++ sources are not in a wheel; their messages are in the string tables
  of libtorch_cpu.so and libtorch_cuda.so, as fmt format strings ({}
  placeholders) or the literal pieces of c10::str. A string is taken when it
  carries the words of one of the named C++ sources (below, SO_SOURCES) and
  an error word, and reads as a message (words, not a symbol or a schema).
  A binary keeps no file names: the source column names the first source
  whose words the string carries, a claim by vocabulary, not a location; and
  a piece of c10::str is a message's fixed part, without what it is joined
  to. Needs binutils' `strings`.

Usage: scripts/extract-torch-messages.py WHEEL... > tests/data/torch_messages.tsv

The messages are facts quoted from PyTorch (BSD-3-Clause) for matching; the
catalogue's words for them (decoder/knowledge/message_catalogue.cc) are ours.
"""

import ast
import hashlib
import re
import subprocess
import sys
import tempfile
import zipfile

# Python sources: path in the wheel -> subsystem.
PY_SOURCES = {
    "torch/distributed/distributed_c10d.py": "c10d/init",
    "torch/distributed/rendezvous.py": "c10d/init",
    "torch/nn/parallel/distributed.py": "ddp",
    "torch/distributed/algorithms/join.py": "ddp",
}
PY_DIRS = {"torch/distributed/elastic/rendezvous/": "torchrun"}

# Functions of distributed_c10d.py that set up, check or tear down groups.
C10D_FUNCTIONS = re.compile(
    r"init_process_group|_new_process_group_helper|_store_based_barrier|new_group|"
    r"_new_group_with_tag|destroy_process_group|_get_default_group|_get_default_store|"
    r"_check_valid_timeout|_world_size|get_world_size|get_rank|_rank_not_in_group|"
    r"_shutdown_backend|_abort_process_group|_get_process_group_name|"
    r"_get_group_size|_check_single_backend|is_initialized|_create_process_group_wrapper|"
    r"_warn_not_in_group|_process_group_name|monitored_barrier|_get_pg_default_device|"
    r"split_group|new_subgroups\w*|Backend\.__new__|register_backend|_check_op")

LOG_METHODS = {"warning", "warn", "error", "exception", "critical"}

# C++ sources, by the words their messages carry: (source, subsystem, words).
SO_SOURCES = [
    ("torch/csrc/distributed/c10d/socket.cpp", "c10d/store",
     r"^(?:The (?:client |server )?socket|waitForInput)"),
    ("torch/csrc/distributed/c10d/TCPStore*.cpp", "c10d/store",
     r"TCPStore|UV Store|c10::Store|store server|clients joined"),
    ("torch/csrc/distributed/c10d/reducer.cpp", "ddp",
     r"Expected to (?:mark|have finished)|DistributedDataParallel|\bDDP\b|unused param|"
     r"variable ready|bucket view"),
    ("torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp, ProcessGroupGloo.cpp", "c10d",
     r"Detected mismatch between collectives|[Mm]onitored ?[Bb]arrier|CollectiveFingerPrint"),
    ("torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, NCCLUtils.*", "c10d/nccl",
     r"NCCL|[Ww]atchdog|WorkNCCL|[Hh]eartbeat|[Dd]esync|lagging ranks|Timeout at collective|"
     r"collective operation timeout"),
]
ERROR_WORDS = re.compile(
    r"fail|[Ee]rror|timed out|[Tt]imeout|Expected|mismatch|[Cc]annot|can't|[Ii]nvalid|refused|"
    r"[Uu]nable|exhausted|hang|stuck|abort|not (?:supported|support|allowed|initialized|yet|"
    r"listening|connected|able|found)|does not|never|lagging|missing|must ")
# A warning is kept when it reports a failure in the words explain reads as
# one (message_catalogue.cc's ErrorWords): advice and deprecations are not.
FAILURE_WORDS = re.compile(r"rror|[Ff]ailed|[Ff]ailure|refused|timed out|not supported|[Uu]nable|"
                           r"[Cc]annot")
# Not a message: a mangled or qualified symbol, an operator schema, a format of
# another library (oneDNN's verbose lines), a documentation string.
NOT_MESSAGE = re.compile(
    r"^_Z|^\*?N?St\d|::\w+\(|\) -> |__torch__|onednn_verbose|^[\w.:<>*&,]+$|pytorch\.wait_counter|"
    r"^\s*$")


def fmt_of(node):
    """The text of a message expression, with what a run fills in as {}."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fmt_of(node.left), fmt_of(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else "{}") + (right if right is not None else "{}")
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = fmt_of(node.left)
        return re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdifrx]", "{}", left) if left else None
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            node.func.attr == "format"):
        return fmt_of(node.func.value)
    if isinstance(node, ast.Call) and node.args:  # str(...), a wrapper around the text
        return fmt_of(node.args[0])
    return None


def message_args(call):
    """The message argument of a raise's exception or a warning/log call."""
    f = call.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    if isinstance(f, ast.Attribute) and name in LOG_METHODS:
        return call.args[:1]
    if name == "warn":
        return call.args[:1]
    return []


def py_messages(source, path):
    """(message, kind) of a Python file: raise, warnings.warn, logger calls."""
    tree = ast.parse(source)
    only = C10D_FUNCTIONS if path.endswith("distributed_c10d.py") else None
    out = []

    def visit(node, func):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            func = node.name
        if only is None or (func is not None and only.fullmatch(func)):
            # raise X(...), and return X(...) of the helpers that build an
            # exception for their caller to raise (rendezvous.py's _env_error).
            exc = node.exc if isinstance(node, ast.Raise) else (
                node.value if isinstance(node, ast.Return) else None)
            f = exc.func if isinstance(exc, ast.Call) else None
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if isinstance(node, ast.Return) and not re.search(r"(?:Error|Exception)$", name):
                exc = None
            if exc is not None and isinstance(exc, ast.Call) and exc.args:
                text = fmt_of(exc.args[0])
                cls = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                if text and cls:
                    out.append((text, "raise " + cls))
            elif isinstance(node, ast.Call):
                for a in message_args(node):
                    text = fmt_of(a)
                    # A warning is kept when it reports a failure: advice and
                    # deprecations are not what a broken job shows.
                    if text and FAILURE_WORDS.search(text):
                        out.append((text, "warn"))
        for child in ast.iter_child_nodes(node):
            visit(child, func)

    visit(tree, None)
    return out


def so_messages(data):
    """(message, source, subsystem) of a C++ library's string table."""
    out = []
    for raw in data.splitlines():
        s = raw.decode("ascii", "replace")
        if NOT_MESSAGE.search(s) or not ERROR_WORDS.search(s) or len(s.split()) < 3:
            continue
        for source, subsystem, words in SO_SOURCES:
            if re.search(words, s):
                out.append((s, source, subsystem))
                break
    return out


def clean(text):
    """One line, and printf-style conversions (a logger's %s) written {} as well."""
    text = re.sub(r"%[-+ #0]*\d*(?:\.\d+)?[sdifrx]", "{}", text)
    return " ".join(text.split())


def main():
    wheels = sys.argv[1:]
    if not wheels:
        print(__doc__, file=sys.stderr)
        return 2
    releases = []
    first, last, where = {}, {}, {}
    sums = []
    for wheel in wheels:
        release = re.search(r"torch-([\d.]+)", wheel).group(1)
        releases.append(release)
        h = hashlib.sha256()
        with open(wheel, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        sums.append(f"{wheel.rsplit('/', 1)[-1]} sha256={h.hexdigest()}")
        found = []
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                subsystem = PY_SOURCES.get(name)
                for d, sub in PY_DIRS.items():
                    if name.startswith(d) and name.endswith(".py"):
                        subsystem = sub
                if subsystem:
                    for text, kind in py_messages(z.read(name).decode("utf-8"), name):
                        found.append((clean(text), name, subsystem, kind))
            for lib in ("torch/lib/libtorch_cpu.so", "torch/lib/libtorch_cuda.so"):
                if lib not in z.namelist():
                    continue
                with tempfile.NamedTemporaryFile() as tmp, z.open(lib) as src:
                    for block in iter(lambda: src.read(1 << 24), b""):
                        tmp.write(block)
                    tmp.flush()
                    # binutils' strings: the printable runs of the file, one a line.
                    data = subprocess.run(["strings", "-n", "12", tmp.name], check=True,
                                          capture_output=True).stdout
                for text, source, subsystem in so_messages(data):
                    found.append((clean(text), source, subsystem, "so"))
        for text, source, subsystem, kind in found:
            if len(text) < 12:
                continue
            first.setdefault(text, release)
            last[text] = release
            where[text] = (source, subsystem, kind)
    print("# PyTorch's distributed error and warning messages, one per distinct text, written by")
    print("# scripts/extract-torch-messages.py from the torch wheels of PyPI (manylinux x86_64):")
    print("#   pip download --no-deps torch==VERSION; scripts/extract-torch-messages.py WHEEL... "
          "> tests/data/torch_messages.tsv")
    print("# Releases read: " + " ".join(releases))
    for s in sums:
        print(f"#   {s}")
    print("# Python sources (ast: raise, warnings.warn, logger calls; {} where a run fills in):")
    print("#   " + " ".join(list(PY_SOURCES) + [d + "*.py" for d in PY_DIRS]))
    print("# C++ sources (the string tables of libtorch_cpu.so and libtorch_cuda.so: fmt formats")
    print("# and c10::str pieces with the source's words and an error word):")
    for source, _, _ in SO_SOURCES:
        print(f"#   {source}")
    print(f"# {len(first)} distinct messages. Quoted from PyTorch (BSD-3-Clause) as facts to match")
    print("# against; ncclwatch's meanings and fixes are its own (decoder/knowledge/message_catalogue.cc).")
    print("# kind: 'raise CLASS' (Python), 'warn' (warnings.warn or a logger), 'so' (C++, compiled)")
    print("# first<TAB>last<TAB>subsystem<TAB>kind<TAB>source<TAB>message")
    order = {r: i for i, r in enumerate(releases)}
    for text in sorted(first, key=lambda t: (where[t][1], where[t][0], order[first[t]], t)):
        source, subsystem, kind = where[text]
        print(f"{first[text]}\t{last[text]}\t{subsystem}\t{kind}\t{source}\t{text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

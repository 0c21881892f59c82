#!/usr/bin/env python3
"""Lists every WARN format string of NCCL's releases, deduplicated.

Reads a bare clone of github.com/NVIDIA/nccl (the `fetch` tool's mirror, or
`git clone --bare`), finds each WARN(...) call under src/ of every release
tag from v2.4 on (and any extra refs given), and writes one line per distinct
format string: the first and last release that prints it, the file it is in
(in the last), and the format, with \\t, \\n and \\\\ escaped. The format is
NCCL's first argument to WARN with adjacent literals joined, <inttypes.h>
macros (PRIu64, ...) put back as their conversion, and a macro's stringified
argument (#call in CUDACHECK, SYSCHECK, ...) or a
macro's string argument as %s. Calls whose format is not
a literal (WARN(msg)) are counted in the header, not listed.

Usage: scripts/extract-nccl-warns.py GIT_DIR [--ref NAME=REF ...] > tests/data/nccl_warns.tsv

The format strings are facts quoted from NCCL's source, for matching; the
catalogue's words for them (decoder/logs/message_catalogue.cc) are ours.
"""

import argparse
import re
import subprocess
import sys

EXTENSIONS = (".cc", ".cu", ".h", ".cuh", ".c", ".cpp", ".hpp")

# <inttypes.h> macros as glibc on x86-64 defines them.
PRI = {
    "PRIu64": "lu", "PRId64": "ld", "PRIx64": "lx", "PRIX64": "lX", "PRIi64": "li",
    "PRIu32": "u", "PRId32": "d", "PRIx32": "x", "PRIX32": "X", "PRIi32": "i",
    "PRIu16": "u", "PRId16": "d", "PRIx16": "x", "PRIu8": "u", "PRIx8": "x",
    "PRIuPTR": "lu", "PRIxPTR": "lx", "PRIdPTR": "ld",
}


def git(git_dir, *args):
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                          capture_output=True).stdout


def release_tags(git_dir):
    """v2.4.x-y ... in version order, one per tag (every patch release)."""
    tags = []
    for t in git(git_dir, "tag", "-l", "v2.*").decode().split():
        m = re.fullmatch(r"v2\.(\d+)\.(\d+)-(\d+)", t)
        if m and int(m.group(1)) >= 4:
            tags.append(((2, int(m.group(1)), int(m.group(2)), int(m.group(3))), t))
    return [t for _, t in sorted(tags)]


def strip_comments(src):
    """Comments removed, strings and characters kept, line continuations removed."""
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if c == "/" and i + 1 < n and src[i + 1] == "/":
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif c == "/" and i + 1 < n and src[i + 1] == "*":
            j = src.find("*/", i + 2)
            out.append(" ")
            i = n if j < 0 else j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    # A backslash-newline is removed entirely (as the C preprocessor does), also
    # inside a string literal: "a \\<newline>  b" is "a   b".
    return "".join(out).replace("\\\n", "")


TOKEN = re.compile(r'\s+|(?:u8|[uUL])?"(?:[^"\\\n]|\\.)*"|#\s*\w+|\w+|.', re.S)
ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "\r", "0": "\0"}


def unescape(body):
    return re.sub(r"\\(.)", lambda m: ESCAPES.get(m.group(1), m.group(1)), body)


def first_argument(text, start, in_macro):
    """The format of the WARN call whose '(' is at start, or None if not a literal.
    In a macro's body, a name between literals is the macro's argument (a string): %s."""
    depth, parts, literal = 0, [], False
    for m in TOKEN.finditer(text, start):
        tok = m.group(0)
        if tok.isspace():
            continue
        if tok == "(":
            depth += 1
            if depth == 1:
                continue
        elif tok == ")":
            depth -= 1
            if depth == 0:
                break
        elif tok == "," and depth == 1:
            break
        if depth != 1:
            return None  # a call or cast inside the format: not a literal
        if tok.endswith('"'):
            parts.append(unescape(tok[tok.index('"') + 1:-1]))
            literal = True
        elif tok.startswith("#"):
            parts.append("%s")  # a macro's argument, stringified
        elif tok in PRI:
            parts.append(PRI[tok])
        elif in_macro and re.fullmatch(r"[A-Za-z_]\w*", tok):
            parts.append("%s")
        else:
            return None
    return "".join(parts) if literal else None


WARN_CALL = re.compile(r"(?<![\w.>])WARN\s*\(")


def warns_of(source):
    """(format or None) for each WARN call of a file."""
    text = strip_comments(source)
    found = []
    for m in WARN_CALL.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if re.match(r"\s*#\s*define\s+WARN\b", text[line_start:m.end()]):
            continue
        in_macro = re.match(r"\s*#\s*define\b", text[line_start:m.start()]) is not None
        found.append(first_argument(text, m.end() - 1, in_macro))
    return found


def escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("git_dir")
    ap.add_argument("--ref", action="append", default=[],
                    help="NAME=REF: a release not tagged (e.g. 2.31.0a7=<commit>)")
    args = ap.parse_args()
    releases = [(t[1:].removesuffix("-1"), t) for t in release_tags(args.git_dir)]
    for r in args.ref:
        name, ref = r.split("=", 1)
        releases.append((name, git(args.git_dir, "rev-parse", ref).decode().strip()))

    by_blob = {}  # blob sha -> formats (None for a non-literal call)
    first, last, where, nonliteral = {}, {}, {}, {}
    batch = subprocess.Popen(["git", "--git-dir", args.git_dir, "cat-file", "--batch"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def read_blob(sha):
        batch.stdin.write(sha.encode() + b"\n")
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        size = int(header[2])
        data = batch.stdout.read(size)
        batch.stdout.read(1)
        return data.decode("utf-8", "replace")

    for name, ref in releases:
        for entry in git(args.git_dir, "ls-tree", "-r", ref, "--", "src").decode().splitlines():
            meta, path = entry.split("\t", 1)
            _, kind, sha = meta.split()
            if kind != "blob" or not path.endswith(EXTENSIONS):
                continue
            if sha not in by_blob:
                by_blob[sha] = warns_of(read_blob(sha))
            for fmt in by_blob[sha]:
                if fmt is None:
                    nonliteral[name] = nonliteral.get(name, 0) + 1
                    continue
                first.setdefault(fmt, name)
                last[fmt] = name
                where[fmt] = path
    batch.stdin.close()
    batch.wait()

    head = git(args.git_dir, "rev-parse", releases[-1][1]).decode().strip()
    print("# Every WARN format string of NCCL's source, one per distinct string, written by")
    print("# scripts/extract-nccl-warns.py from github.com/NVIDIA/nccl (a bare clone):")
    print("#   scripts/extract-nccl-warns.py GIT_DIR " +
          " ".join(f"--ref {r}" for r in args.ref) + " > tests/data/nccl_warns.tsv")
    print("# Releases read (src/ of each, every tag v2.4.2-1 on, then the extra refs):")
    names = [n for n, _ in releases]
    for i in range(0, len(names), 12):
        print("#   " + " ".join(names[i:i + 12]))
    print(f"# The last release read is at commit {head}.")
    print(f"# {len(first)} distinct formats; WARN calls with a non-literal format (not listed): "
          f"{sum(nonliteral.values())} over all releases.")
    print("# The format strings are quoted from NCCL's source (BSD-3-Clause, Copyright NVIDIA")
    print("# CORPORATION) as facts to match against; ncclwatch's meanings and fixes for them are")
    print("# its own (decoder/logs/message_catalogue.cc). A macro's stringified argument (#call)")
    print("# or string argument is written %s, <inttypes.h> macros as their conversion; \\t \\n \\\\ are escaped.")
    print("# first<TAB>last<TAB>file (in the last)<TAB>format")
    order = {n: i for i, n in enumerate(names)}
    for fmt in sorted(first, key=lambda f: (order[first[f]], where[f], f)):
        print(f"{first[fmt]}\t{last[fmt]}\t{where[fmt]}\t{escape(fmt)}")


if __name__ == "__main__":
    sys.exit(main())

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

Releases the git history has no tag for (2.31 and 2.32 are on PyPI before
they are in the mirror) are read from their compiled library, libnccl.so.2 of
the nvidia-nccl-cu13 wheel (--lib NAME=PATH, after the refs, oldest first).
A string table alone does not say which strings are WARN formats: INFO, TRACE
and WARN formats lie side by side in .rodata. The call does: WARN(...) is a
call of NCCL's logger whose first argument, the level, is NCCL_LOG_WARN, and
whose format argument is the string. So the library's code is disassembled
(binutils' objdump, .text) and each string the code loads into a register is
followed along the code that comes after it (unconditional jumps taken, both
ways of a conditional one, through calls as far as the registers a call keeps)
to the logger calls where it is the format argument; the level is the
constant in the level register there. A format found this way that fits a
format read from the source (its %s standing for a macro's argument, now
expanded) is that format, printed in this release; any other is new, with the
file the call passes as __FILE__. --check-lib NAME=PATH reads the library of a
release that is also read from source, and the header says how the two
readings compare.

Usage: scripts/extract-nccl-warns.py GIT_DIR [--ref NAME=REF ...]
           [--lib NAME=LIBNCCL ...] [--check-lib NAME=LIBNCCL] > tests/data/nccl_warns.tsv

The format strings are facts quoted from NCCL's source and binaries, for
matching; the catalogue's words for them (decoder/knowledge/message_catalogue.cc)
are ours.
"""

import argparse
import hashlib
import re
import struct
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


# ------------------------------------------------------------------ binaries

# NCCL's loggers, by the start of their mangled names (clones such as
# .constprop.N included), and the register that carries the format in the
# x86-64 calling convention: rdi the level, then flags, file, ...
LOGGERS = (
    ("_Z20ncclDebugLogInternal", "r9"),  # (level, flags, file, func, line, fmt, ...): WARN's
    ("_ZL13ncclDebugLogV", "r9"),  # (level, flags, file, func, line, fmt, va_list)
    ("_Z12ncclDebugLog17", "r8"),  # (level, flags, filefunc, line, fmt, ...): plugins'
)
# ncclDebugLogLevel; 2.32 adds 6, printed "NCCL ATTN" (notices, some of them
# WARN formats of earlier releases).
LEVELS = {1: "VERSION", 2: "WARN", 3: "INFO", 4: "ABORT", 5: "TRACE", 6: "ATTN"}
NCCL_LOG_WARN = 2

# The 64-bit registers by every name of theirs; those a call may change.
REGISTERS = {}
for _canon, _names in {"ax": "rax eax ax al", "bx": "rbx ebx bx bl", "cx": "rcx ecx cx cl",
                       "dx": "rdx edx dx dl", "si": "rsi esi si sil", "di": "rdi edi di dil",
                       "bp": "rbp ebp bp bpl",
                       **{f"r{n}": f"r{n} r{n}d r{n}w r{n}b" for n in range(8, 16)}}.items():
    for _n in _names.split():
        REGISTERS[_n] = _canon
CALLER_SAVED = ("ax", "cx", "dx", "si", "di", "r8", "r9", "r10", "r11")

INSTRUCTION = re.compile(r"^\s*([0-9a-f]+):\t(\S+)\s*(.*)$")
BRANCH_TARGET = re.compile(r"^([0-9a-f]+) <([^>]*)>")
PREFIXES = ("bnd", "notrack", "data16", "rex.W", "cs", "ds")


class Elf:
    """The loadable segments of a little-endian ELF64 file, to read its strings."""

    def __init__(self, path):
        self.file = open(path, "rb")
        ident = self.file.read(64)
        if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
            raise SystemExit(f"{path}: not a little-endian ELF64 file")
        phoff, = struct.unpack_from("<Q", ident, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", ident, 0x36)
        self.file.seek(phoff)
        table = self.file.read(phentsize * phnum)
        self.segments = []  # (vaddr, file offset, size)
        for i in range(phnum):
            kind, _, offset, vaddr, _, size = struct.unpack_from("<IIQQQQ", table, i * phentsize)
            if kind == 1:  # PT_LOAD
                self.segments.append((vaddr, offset, size))

    def string(self, addr):
        """The NUL-terminated string at a virtual address, or None."""
        for vaddr, offset, size in self.segments:
            if vaddr <= addr < vaddr + size:
                self.file.seek(offset + addr - vaddr)
                raw = self.file.read(min(4096, vaddr + size - addr))
                end = raw.find(b"\0")
                return raw[:end].decode("utf-8", "replace") if end >= 0 else None
        return None


def split_operands(text):
    """AT&T operands, split at the commas outside parentheses (objdump's # comment dropped)."""
    out, depth, cur = [], 0, ""
    for c in text.split("#")[0].strip():
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += c
    return out + [cur.strip()] if cur.strip() else out


def disassemble(path):
    """(address, mnemonic, operands) of .text, None between functions."""
    code = []
    with subprocess.Popen(["objdump", "-d", "--no-show-raw-insn", "-j", ".text", path],
                          stdout=subprocess.PIPE, text=True) as p:
        for line in p.stdout:
            m = INSTRUCTION.match(line)
            if not m:
                if line.endswith(">:\n"):
                    code.append(None)  # a function starts: nothing flows into it
                continue
            mnemonic, rest = m.group(2), m.group(3)
            while mnemonic in PREFIXES and rest:
                mnemonic, _, rest = rest.partition(" ")
                rest = rest.strip()
            code.append((int(m.group(1), 16), mnemonic, rest))
    if p.returncode:
        raise SystemExit(f"objdump failed on {path}")
    return code


def written(mnemonic, rest):
    """(register, value) an instruction writes: ('imm', n), ('addr', a) for a
    lea of a rip-relative address, ('copy', register), or None (unknown); None
    when it writes no register this reader follows."""
    ops = split_operands(rest)
    if not ops or not ops[-1].startswith("%"):
        return None
    reg = REGISTERS.get(ops[-1][1:])
    if reg is None or mnemonic.startswith(("cmp", "test", "bt", "push")):
        return None
    if mnemonic.startswith("mov") and ops[0].startswith("$"):
        return reg, ("imm", int(ops[0][1:], 16))
    if mnemonic == "mov" and len(ops) == 2 and REGISTERS.get(ops[0][1:]):
        return reg, ("copy", REGISTERS[ops[0][1:]])
    if mnemonic.startswith("xor") and len(ops) == 2 and ops[0] == ops[-1]:
        return reg, ("imm", 0)
    if mnemonic.startswith("lea") and "(%rip)" in ops[0]:
        a = re.search(r"#\s*([0-9a-f]+)", rest)
        if a:
            return reg, ("addr", int(a.group(1), 16))
    return reg, None


def apply(state, effect):
    reg, value = effect
    state[reg] = state.get(value[1]) if value and value[0] == "copy" else value


def logger_register(name):
    for prefix, reg in LOGGERS:
        if name.startswith(prefix) and "+0x" not in name:
            return reg
    return None


def logger_calls(code, index, start, state, budget=20000, max_paths=64):
    """The logger calls reached from code[start] with the registers in state:
    (format register, registers at the call) for each."""
    found, todo, seen = [], [(start, dict(state))], set()
    while todo and len(seen) < budget:
        i, st = todo.pop()
        while i < len(code) and code[i] is not None and len(seen) < budget:
            addr, mnemonic, rest = code[i]
            key = (addr, tuple(sorted(st.items())))
            if key in seen:
                break
            seen.add(key)
            if mnemonic in ("call", "jmp") or re.fullmatch(r"j(?!mp)[a-z]+", mnemonic):
                t = BRANCH_TARGET.match(rest)
                reg = logger_register(t.group(2)) if t and mnemonic in ("call", "jmp") else None
                if reg:
                    found.append((reg, dict(st)))
                    break
                if mnemonic == "call":  # it returns; the registers it may change are lost
                    for r in CALLER_SAVED:
                        st.pop(r, None)
                    i += 1
                    continue
                j = index.get(int(t.group(1), 16)) if t else None
                if j is None:
                    break  # an indirect jump, or out of .text
                if mnemonic == "jmp":
                    i = j
                    continue
                if len(todo) < max_paths:
                    todo.append((j, dict(st)))
                i += 1
                continue
            if mnemonic.startswith(("ret", "ud2", "hlt")):
                break
            effect = written(mnemonic, rest)
            if effect:
                apply(st, effect)
            i += 1
    return found


def library_formats(path):
    """{format: {level: file}} of a libnccl.so.2's logger calls, and how many
    strings reached a logger with a level that is not a constant."""
    elf = Elf(path)
    code = disassemble(path)
    index = {ins[0]: k for k, ins in enumerate(code) if ins is not None}
    out, state, unknown_level = {}, {}, set()
    for k, ins in enumerate(code):
        if ins is None or ins[1] in ("call", "jmp") or ins[1].startswith("ret"):
            state = {}  # what flows past here is not followed by this linear pass
            continue
        effect = written(ins[1], ins[2])
        if not effect:
            continue
        apply(state, effect)
        value = state.get(effect[0])
        if not value or value[0] != "addr":
            continue
        text = elf.string(value[1])
        if not text or len(text) < 2:
            continue
        for reg, st in logger_calls(code, index, k + 1, state):
            if st.get(reg) != value:
                continue  # the string is not this call's format
            level = st.get("di")
            if not level or level[0] != "imm":
                unknown_level.add(text)
                continue
            where = st.get("dx")
            file = elf.string(where[1]) if where and where[0] == "addr" else None
            out.setdefault(text, {}).setdefault(level[1], file)
    return out, len(unknown_level - set(out))


def source_path(file):
    """The tsv's file of a call's __FILE__: relative to src/, or absolute for a
    file the build generates (.../build/obj/device/gensrc/...: build/obj/...)."""
    if not file:
        return "src/(unknown)"
    return file[file.rindex("/build/") + 1:] if "/build/" in file else "src/" + file


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def pattern_of(fmt):
    """A source format as a pattern for a compiled one: each %s is still %s, or
    has become the macro argument it stood for (a name or a stringified call,
    never with a % in it). None for a format with no words of its own."""
    parts = re.split(r"(%s)", fmt)
    if not "".join(p for p in parts if p != "%s").strip():
        return None
    return re.compile("".join("(?:%s|[^%]*)" if p == "%s" else re.escape(p) for p in parts), re.S)


class SourceFormats:
    """The formats read from source, to tell a compiled format that is one of them."""

    def __init__(self, formats):
        self.exact = set(formats)
        self.patterns = [(f, p) for f in formats if "%s" in f for p in [pattern_of(f)] if p]

    def find(self, text):
        if text in self.exact:
            return text
        fits = [f for f, p in self.patterns if p.fullmatch(text)]
        # The most specific: the one with the most words of its own.
        return max(fits, key=lambda f: len(f.replace("%s", ""))) if fits else None


def escape(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def read_libraries(libs, first, last, where, note):
    """Adds the WARN formats of each (name, libnccl.so.2), oldest first, to the
    formats read from source; notes what each gave for the header."""
    source = SourceFormats(list(first))
    for name, path in libs:
        formats, unknown = library_formats(path)
        warn = {t: by_level[NCCL_LOG_WARN] for t, by_level in formats.items()
                if NCCL_LOG_WARN in by_level}
        levels = {}
        for by_level in formats.values():
            for lv in by_level:
                levels[lv] = levels.get(lv, 0) + 1
        new = 0
        for text, file in warn.items():
            fmt = source.find(text) or text
            if fmt not in first:
                new += 1
                first[fmt] = name
                where[fmt] = source_path(None)
            if file:
                where[fmt] = source_path(file)
            last[fmt] = name
        note.append(f"#   {name}: {path.rsplit('/', 1)[-1]} sha256={sha256(path)}: " +
                    ", ".join(f"{levels[lv]} {LEVELS.get(lv, lv)}" for lv in sorted(levels)) +
                    f" formats; {new} WARN formats not read before; {unknown} strings reach the"
                    " logger with a level that is not a constant (not listed)")


def check_library(name, path, first, last, order):
    """Header lines comparing a release's source formats with its library's,
    and the library's WARN formats that no source format is ({format: file}):
    those of files the build generates, which the source reading cannot see."""
    alive = [f for f in first if order[first[f]] <= order[name] <= order[last[f]]]
    source = SourceFormats(alive)
    formats, _ = library_formats(path)
    warn = [t for t, by_level in formats.items() if NCCL_LOG_WARN in by_level]
    every = SourceFormats(list(first))
    unseen = {t: formats[t][NCCL_LOG_WARN] for t in warn if not every.find(t)}
    matched = {source.find(t) for t in warn} - {None}
    with open(path, "rb") as f:
        strings = [b.decode("utf-8", "replace") for b in f.read().split(b"\0") if len(b) >= 2]
    missing = [fmt for fmt in alive if fmt not in matched]

    def compiled_in(fmt):
        # Some string of the file is the format, or ends with it (the linker
        # keeps one copy of a string that ends another).
        piece = max(re.split(r"%[-+ #0-9.]*[a-zA-Z]+", fmt), key=len)
        whole = re.compile(re.escape(fmt) + r"\Z" if "%s" not in fmt else
                           (pattern_of(fmt) or re.compile(re.escape(fmt))).pattern + r"\Z", re.S)
        return any(whole.search(t) for t in strings if piece in t)

    absent = [fmt for fmt in missing if not compiled_in(fmt)]
    there = [fmt for fmt in missing if fmt not in absent]
    return unseen, [
        f"# Checked on {name}, read both ways ({path.rsplit('/', 1)[-1]} sha256={sha256(path)}):",
        f"#   its library gives {len(warn)} WARN formats, {sum(1 for t in warn if source.find(t))}"
        f" of them formats of its source; of the source's {len(alive)}, {len(matched)} are found,",
        f"#   {len(absent)} are not in the library's strings at all (compiled only on Windows, or"
        f" left out by the build), {len(there)} in them but not found as a WARN format"
        f"{':' if there else '.'}",
    ] + [f"#     {escape(fmt)}" for fmt in there] + [
        f"#   {len(unseen)} of its WARN formats are no source format: they are in files the build"
        f" generates ({', '.join(sorted(set(source_path(f) for f in unseen.values())))}),"
        f" listed from the library with {name} as their first release read."]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("git_dir")
    ap.add_argument("--ref", action="append", default=[],
                    help="NAME=REF: a release not tagged (e.g. 2.31.0a7=<commit>)")
    ap.add_argument("--lib", action="append", default=[],
                    help="NAME=PATH: a release read from its libnccl.so.2 (oldest first)")
    ap.add_argument("--check-lib", help="NAME=PATH: a release read from source, compared")
    args = ap.parse_args()
    releases = [(t[1:].removesuffix("-1"), t) for t in release_tags(args.git_dir)]
    for r in args.ref:
        name, ref = r.split("=", 1)
        releases.append((name, git(args.git_dir, "rev-parse", ref).decode().strip()))
    libs = [tuple(r.split("=", 1)) for r in args.lib]

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
    from_source = len(first)

    names = [n for n, _ in releases] + [n for n, _ in libs]
    order = {n: i for i, n in enumerate(names)}
    checked = []
    if args.check_lib:
        name, path = args.check_lib.split("=", 1)
        unseen, checked = check_library(name, path, first, last, order)
        for fmt, file in unseen.items():
            first[fmt] = last[fmt] = name
            where[fmt] = source_path(file)
    note = []
    read_libraries(libs, first, last, where, note)

    head = git(args.git_dir, "rev-parse", releases[-1][1]).decode().strip()
    print("# Every WARN format string of NCCL's source, one per distinct string, written by")
    print("# scripts/extract-nccl-warns.py from github.com/NVIDIA/nccl (a bare clone)" +
          (" and the libnccl.so.2 of later releases:" if libs else ":"))
    print("#   scripts/extract-nccl-warns.py GIT_DIR " +
          " ".join([f"--ref {r}" for r in args.ref] +
                   [f"--lib {n}=.../{n}/libnccl.so.2" for n, _ in libs] +
                   ([f"--check-lib {args.check_lib.split('=', 1)[0]}=.../libnccl.so.2"]
                    if args.check_lib else [])) + " > tests/data/nccl_warns.tsv")
    print("# Releases read (src/ of each, every tag v2.4.2-1 on, then the extra refs"
          + (", then the libraries):" if libs else "):"))
    for i in range(0, len(names), 12):
        print("#   " + " ".join(names[i:i + 12]))
    print(f"# The last release read from source is at commit {head}.")
    print(f"# {len(first)} distinct formats ({from_source} from source); WARN calls with a "
          f"non-literal format (not listed): {sum(nonliteral.values())} over all source releases.")
    if libs:
        print("# Libraries (PyPI's nvidia-nccl-cu13 wheels, Linux x86-64): the format arguments of")
        print("# their calls to NCCL's logger (ncclDebugLogInternal, ncclDebugLogV, ncclDebugLog),")
        print("# found by following each string the code loads to the call (objdump -d of .text),")
        print("# told apart by the constant level argument: WARN (2) listed, VERSION (1), INFO (3),")
        print("# TRACE (5) and 2.32's ATTN (6, printed 'NCCL ATTN') not. A compiled format that fits")
        print("# a source format (its %s now the macro's argument) counts as that format; the file")
        print("# of a new one is the __FILE__ its call passes. A format compiled only on other")
        print("# systems (os/windows*.cc) is in no library: its last is the last source release.")
        print("# A format 2.32 prints as ATTN instead of WARN ends at 2.31.2 here. Per library:")
        for line in note:
            print(line)
    for line in checked:
        print(line)
    print("# The format strings are quoted from NCCL (BSD-3-Clause, Copyright NVIDIA")
    print("# CORPORATION) as facts to match against; ncclwatch's meanings and fixes for them are")
    print("# its own (decoder/knowledge/message_catalogue.cc). A macro's stringified argument (#call)")
    print("# or string argument is written %s, <inttypes.h> macros as their conversion; \\t \\n \\\\ are escaped.")
    print("# first<TAB>last<TAB>file (in the last)<TAB>format")
    for fmt in sorted(first, key=lambda f: (order[first[f]], where[f], f)):
        print(f"{first[fmt]}\t{last[fmt]}\t{where[fmt]}\t{escape(fmt)}")


if __name__ == "__main__":
    sys.exit(main())

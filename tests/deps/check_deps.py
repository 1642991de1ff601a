#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every external command flowgate's files run comes from a package that
scripts/install-deps.sh installs.

    check_deps.py [--root DIR] [--install-deps FILE] [PATH...]

Reads the package list (the PKGS=( ... ) array) of install-deps.sh, then
every shell script, Makefile, Python file and meson.build under the given
paths (default: Makefile scripts tests bench/tools pktgen-scripts .ci xdp of
--root), lists the external commands they run, and for each one finds its
package: `dpkg -S` on the command's path.  A command passes when that
package is in the list, is installed as a dependency of a listed package,
or is part of every Debian root (Essential or Priority: required: what
`debootstrap --variant=minbase` installs).  Fails naming the command, the
file and line, and the package to add -- or says that no installed package
provides it at all.

Commands are found where a shell runs them: the first word of each simple
command (after `VAR=value` assignments), behind wrappers (`timeout 60 X`,
`ip netns exec NS X`, `env`, `exec`, `chroot DIR X`, `xargs X`, and the
file's own functions that run their arguments, such as
`nse() { ip netns exec "$1" "${@:2}"; }`); not inside comments, heredoc
bodies, or `command -v X` probes.  In Python files: the first string of a
list given to subprocess or to a local sh()/run() helper.  In meson.build
files: find_program('X') when X is not a file of the tree.

Commands that no Debian package provides (a CUDA toolkit, Pktgen-DPDK,
TRex) are listed in NOT_DEBIAN with what they are; the files that use them
check for them and say so.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

DEFAULT_PATHS = ["Makefile", "scripts", "tests", "bench/tools", "pktgen-scripts", ".ci", "xdp"]
STD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# not from Debian: optional, found by the files that use them
NOT_DEBIAN = {
    "nvcc": "CUDA toolkit (optional GPU build)",
    "nvidia-smi": "NVIDIA driver (device machine only)",
    "pktgen": "Pktgen-DPDK, built by the user (pktgen-scripts/README.md)",
    "t-rex-64": "TRex, installed by the user (pktgen-scripts/trex)",
}

SHELL_WORDS = set("""
if then else elif fi for in do done while until case esac function select time
coproc { } [[ ]] ! : . source alias bg bind break builtin caller cd command
compgen complete continue declare dirs disown echo enable eval exec exit export
false fc fg getopts hash help history jobs kill let local logout mapfile popd
printf pushd pwd read readarray readonly return set shift shopt suspend test [
times trap true type typeset ulimit umask unalias unset wait
""".split())

# wrapper -> how many words after it are its own before the command it runs
# (a callable for the ones whose options vary)
def _skip_opts(words, i, with_arg=()):
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in with_arg else 1
    return i


WRAPPERS = {
    "timeout": lambda w, i: _skip_opts(w, i, ("-s", "-k", "--signal", "--kill-after")) + 1,
    "env": lambda w, i: _skip_assign(w, _skip_opts(w, i, ("-u", "-C"))),
    "exec": lambda w, i: _skip_opts(w, i, ("-a",)),
    "nohup": lambda w, i: i,
    "setsid": lambda w, i: _skip_opts(w, i),
    "nice": lambda w, i: _skip_opts(w, i, ("-n",)),
    "stdbuf": lambda w, i: _skip_opts(w, i),
    "taskset": lambda w, i: _skip_opts(w, i) + 1,
    "chroot": lambda w, i: _skip_opts(w, i) + 1,
    "xargs": lambda w, i: _skip_opts(w, i, ("-n", "-P", "-I", "-d", "-L", "-s")),
    "sudo": lambda w, i: _skip_opts(w, i, ("-u", "-g")),
    "time": lambda w, i: _skip_opts(w, i),
}

ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
COMMAND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def _skip_assign(words, i):
    while i < len(words) and ASSIGN.match(words[i]):
        i += 1
    return i


def read_pkgs(install_deps):
    """The PKGS=( ... ) array of install-deps.sh, comments dropped."""
    text = open(install_deps).read()
    m = re.search(r"^PKGS=\(([^)]*)\)", text, re.M)
    if not m:
        raise SystemExit(f"deps: FAIL: no PKGS=( ... ) list in {install_deps}")
    body = "\n".join(line.split("#", 1)[0] for line in m.group(1).splitlines())
    return set(body.split())


# ---------------------------------------------------------------- shell ----
def strip_comment(line):
    """The line without its comment (a # outside quotes, at a word start)."""
    q = None
    for i, c in enumerate(line):
        if q:
            if c == "\\" and q == '"':
                continue
            if c == q:
                q = None
        elif c in "'\"":
            q = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t;|&("):
            return line[:i]
    return line


def open_quote(code):
    """True when a quote is still open at the end of @code (quotes inside
    $( ) within double quotes counted as bash does)."""
    stack, esc, i = [], False, 0
    while i < len(code):
        c, top = code[i], (stack[-1] if stack else None)
        nxt = code[i + 1] if i + 1 < len(code) else ""
        if esc:
            esc = False
        elif top == "'":
            if c == "'":
                stack.pop()
        elif c == "\\":
            esc = True
        elif c == "$" and nxt == "(":
            stack.append("$(")
            i += 1
        elif top == '"':
            if c == '"':
                stack.pop()
        elif c in "'\"":
            stack.append(c)
        elif c == "(" and top in ("$(", "("):
            stack.append("(")
        elif c == ")" and top in ("$(", "("):
            stack.pop()
        i += 1
    return any(x in ("'", '"') for x in stack)


def shell_lines(text):
    """(lineno, code) of a shell text: comments, heredoc bodies and
    continuation lines folded; quoted strings blanked except single words
    (so "$x" stays a word, "a b c" does not split into commands)."""
    out = []
    lines = text.splitlines()
    i = 0
    heredoc = []
    while i < len(lines):
        no, line = i + 1, lines[i]
        i += 1
        if heredoc:
            if line.strip() == heredoc[0] or (line.lstrip("\t") == heredoc[0]):
                heredoc.pop(0)
            continue
        code = strip_comment(line)
        while i < len(lines) and (code.rstrip().endswith("\\") or open_quote(code)
                                  or re.search(r"\w\+?=\([^)]*$", code)):
            if code.rstrip().endswith("\\"):
                code = code.rstrip()[:-1]
            # inside an open quote the next line is text, not code
            code += "\n" + (lines[i] if open_quote(code) else strip_comment(lines[i]))
            i += 1
        for m in re.finditer(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1", code):
            heredoc.append(m.group(2))
        code = re.sub(r"<<-?\s*(['\"]?)[A-Za-z_][A-Za-z0-9_]*\1", " ", code)
        code = re.sub(r"<<<\s*(\"[^\"]*\"|'[^']*'|\S+)", " ", code)
        out.append((no, code))
    return out


def _quoted(m):
    """A double-quoted string as one word: QARGS[N] for "$@" / "${@:N}",
    QVAR for other expansions, QUOTED for plain text."""
    a = re.fullmatch(r'"\$(?:@|\{@(?::(\d+))?\})"', m.group(0))
    if a:
        return f" QARGS{a.group(1) or ''} "
    return " QVAR " if "$" in m.group(0) else " QUOTED "


def split_commands(code):
    """Simple commands of one line: split at ; | & && || ( ) ` $( { } and
    the keywords that start a command list."""
    # quoted strings: keep a placeholder word so positions stay words
    code = re.sub(r"'[^']*'", " QUOTED ", code)
    code = re.sub(r"\"(?:[^\"\\]|\\.)*\"", _quoted, code)
    code = re.sub(r"(?<![\w\"])\$@", " QARGS ", code)
    code = re.sub(r"\$?\(\(.*?\)\)", " ARITH ", code, flags=re.S)
    code = re.sub(r"\[\[.*?\]\]", " TEST ", code, flags=re.S)
    code = re.sub(r"\b[A-Za-z_]\w*\+?=\([^)]*\)", " ", code)
    # case labels: "pat)" at a line start, after ;; or after "in"
    code = re.sub(r"(^|;;|\bin\b|\n)\s*[^\s;()]+\)", r"\1 ", code)
    # redirections (2>&1, >&2, &>/dev/null, > file) are no commands
    code = re.sub(r"\d*(?:&>>?|>>?&?|<&?)(?!\()\s*[^\s;&|()<>]*", " ", code)
    parts = re.split(r"\$\(|`|&&|\|\||[;|&(){}]", code)
    cmds = []
    for p in parts:
        words = p.split()
        # redirections are not words of the command
        words = [w for w in words if not re.match(r"^\d*[<>]", w)]
        while words and words[0] in ("if", "then", "else", "elif", "do", "while", "until", "!", "time"):
            words = words[1:]
        if words:
            cmds.append(words)
    return cmds


def function_bodies(lines):
    """name -> body of the file's shell functions (one-line or up to a
    closing brace alone on its line)."""
    bodies, name, acc = {}, None, []
    for _, code in lines:
        if name is None:
            m = re.match(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)\s*\{(.*)$", code)
            if not m:
                continue
            rest = m.group(2)
            if re.search(r"\}\s*$", rest):
                bodies[m.group(1)] = re.sub(r"\}\s*$", "", rest)
            else:
                name, acc = m.group(1), [rest]
        elif re.match(r"^\s*\}\s*$", code):
            bodies[name] = "\n".join(acc)
            name = None
        else:
            acc.append(code)
    return bodies


def wrapper_functions(lines):
    """The file's functions that run their arguments: name -> arguments of
    theirs before the command ("${@:2}": 1, "$@": 0)."""
    found = {}
    for name, body in function_bodies(lines).items():
        for line in body.splitlines():
            for words in split_commands(line):
                rest = command_words(words, {})
                if rest and rest[0].startswith("QARGS"):
                    n = rest[0][5:]
                    # "$@" after `shift N`: the function's first N words are its own
                    shifts = sum(int(x or 1) for x in re.findall(r"\bshift\b\s*(\d*)", body))
                    found[name] = int(n) - 1 if n else shifts
    return found


def command_words(words, wrappers):
    """The words from the command a simple command runs, behind assignments
    and wrappers; None when it runs none (a bare assignment)."""
    i = _skip_assign(words, 0)
    while i < len(words):
        w = words[i]
        if w in WRAPPERS:
            i = WRAPPERS[w](words, i + 1)
            continue
        if w == "ip" and words[i + 1:i + 3] == ["netns", "exec"]:
            i += 4
            continue
        if w in wrappers:
            i += 1 + wrappers[w]
            continue
        if w == "command" and i + 1 < len(words) and words[i + 1] in ("-v", "-V"):
            return None
        return words[i:]
    return None


def sourced_functions(path, text):
    """Functions of the files a script sources (`. "$ROOT/lib.sh"`,
    `source lib.sh`): a leading $VAR/ stands for any folder above the
    script's own, the repository's root among them."""
    names = set()
    # `. "$(dirname "$0")/REL"`: REL beside the script
    here = r"\$\(dirname \"\$(?:0|\{BASH_SOURCE\[0\]\})\"\)/"
    srcs = [(m.group(1), True) for m in
            re.finditer(r"^\s*(?:\.|source)\s+\"" + here + r"([^\"\s;]+)\"", text, re.M)]
    srcs += [(m.group(1), False) for m in
             re.finditer(r"^\s*(?:\.|source)\s+\"?([^\"\s;$]+|\$\{?\w+\}?/[^\"\s;]+)\"?", text, re.M)]
    for src, beside in srcs:
        rel = re.sub(r"^\$\{?\w+\}?/", "", src)
        d = os.path.dirname(os.path.abspath(path))
        if beside:
            rel = os.path.normpath(os.path.join(d, rel))
        while True:
            f = os.path.join(d, rel)
            if os.path.isfile(f):
                with open(f, errors="replace") as fh:
                    names |= set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)",
                                            fh.read(), re.M))
                break
            if os.path.dirname(d) == d:
                break
            d = os.path.dirname(d)
    return names


def shell_commands(path, text):
    lines = shell_lines(text)
    wrappers = wrapper_functions(lines)
    funcs = set(re.findall(r"^\s*(?:function\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*\(\)", text, re.M))
    funcs |= sourced_functions(path, text)
    for no, code in lines:
        for words in split_commands(code):
            rest = command_words(words, wrappers)
            if not rest:
                continue
            w = rest[0]
            if w in SHELL_WORDS or w in funcs or not COMMAND.match(w) or w in ("QUOTED", "QVAR", "ARITH", "TEST", "MAKEVAR") or w.startswith("QARGS"):
                continue
            yield w, no


def makefile_commands(path, text):
    recipe = []
    for no, line in enumerate(text.splitlines(), 1):
        if line.startswith("\t"):
            recipe.append((no, line.lstrip("\t").lstrip("@-+")))
        else:
            recipe.append((no, ""))
    fake = "\n".join(re.sub(r"\$[({]\w+[)}]", "MAKEVAR", c).replace("$$", "$") for _, c in recipe)
    for w, no in shell_commands(path, fake):
        yield w, no
    for no, line in recipe:   # CC=clang meson setup: the compiler runs too
        for m in re.finditer(r"\b(?:CC|CXX)=([a-z][\w.+-]*)", line):
            yield m.group(1), no


PY_CALL = re.compile(
    r"(?:subprocess\.\w+\(\s*\[|\bsh\(|\brun\(\s*\[|\bcheck_output\(\s*\[)\s*[\"']([A-Za-z0-9][\w.+-]*)[\"']")


def python_commands(path, text):
    for no, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith(("'", '"')) else line
        for m in PY_CALL.finditer(code):
            yield m.group(1), no
        for m in re.finditer(r"\[\s*\"ip\",\s*\"netns\",\s*\"exec\",\s*[^,\]]+,\s*\"([A-Za-z0-9][\w.+-]*)\"", code):
            yield m.group(1), no


def meson_commands(path, text):
    here = os.path.dirname(path)
    for no, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        for m in re.finditer(r"find_program\(\s*'([^']+)'", code):
            name = m.group(1)
            if "/" in name or os.path.exists(os.path.join(here, name)):
                continue
            yield name, no


def kind_of(path):
    base = os.path.basename(path)
    if base == "Makefile":
        return makefile_commands
    if base == "meson.build":
        return meson_commands
    if base.endswith(".py"):
        return python_commands
    if base.endswith(".sh"):
        return shell_commands
    try:
        first = open(path, errors="replace").readline()
    except OSError:
        return None
    if first.startswith("#!") and re.search(r"\b(ba)?sh\b", first):
        return shell_commands
    if first.startswith("#!") and "python" in first:
        return python_commands
    return None


def files_under(root, paths):
    for p in paths:
        full = os.path.join(root, p)
        if os.path.isfile(full):
            yield full
            continue
        for d, dirs, files in os.walk(full):
            dirs[:] = [x for x in dirs if not x.startswith(("build", "__pycache__")) and x not in ("fuzz_seeds", "results")]
            for f in sorted(files):
                yield os.path.join(d, f)


# --------------------------------------------------------------- dpkg ------
class Dpkg:
    """Installed packages: owner of a path, dependencies, base set."""

    def __init__(self):
        out = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Package}\t${Status}\t${Essential}\t${Priority}\t${Depends}, ${Pre-Depends}\n"],
            capture_output=True, text=True, check=True).stdout
        self.deps, self.base = {}, set()
        for line in out.splitlines():
            name, status, ess, prio, deps = (line.split("\t") + [""] * 5)[:5]
            if not status.endswith(" installed"):
                continue
            alts = []
            for d in deps.split(","):
                names = [re.sub(r"[\s(:].*", "", a.strip()) for a in d.split("|") if a.strip()]
                if names:
                    alts.append(names)
            self.deps[name] = alts
            if ess == "yes" or prio == "required":
                self.base.add(name)

    def closure(self, pkgs):
        """pkgs and what they pull in (first installed alternative)."""
        seen, todo = set(), [p for p in pkgs]
        while todo:
            p = todo.pop()
            if p in seen or p not in self.deps:
                seen.add(p)
                continue
            seen.add(p)
            for alts in self.deps[p]:
                inst = [a for a in alts if a in self.deps]
                if inst:
                    todo.append(inst[0])
        return seen

    @staticmethod
    def owners(paths):
        """path -> packages owning it, through one `dpkg -S` call (each
        path also tried under /usr-merge's other name)."""
        cands = {}
        for path in paths:
            alt = {path, os.path.realpath(path)}
            for c in list(alt):
                for x, y in (("/usr/bin/", "/bin/"), ("/usr/sbin/", "/sbin/")):
                    if c.startswith(x):
                        alt.add(y + c[len(x):])
                    elif c.startswith(y):
                        alt.add(x + c[len(y):])
            for c in alt:
                cands.setdefault(c, set()).add(path)
        r = subprocess.run(["dpkg", "-S", *sorted(cands)], capture_output=True, text=True)
        out = {p: set() for p in paths}
        for line in r.stdout.splitlines():
            if ": " not in line or line.startswith("diversion"):
                continue
            pk, f = line.split(": ", 1)
            for path in cands.get(f.strip(), ()):
                out[path] |= {p.strip().split(":")[0] for p in pk.split(",")}
        return out


def check(root, install_deps, paths, dpkg=None):
    """-> list of problem sentences (empty: every command is provided)."""
    pkgs = read_pkgs(install_deps)
    dpkg = dpkg or Dpkg()
    provided = dpkg.closure(pkgs)
    uses = {}
    for f in files_under(root, paths):
        fn = kind_of(f)
        if fn is None:
            continue
        try:
            text = open(f, errors="replace").read()
        except OSError:
            continue
        for cmd, no in fn(f, text):
            uses.setdefault(cmd, []).append(f"{os.path.relpath(f, root)}:{no}")
    local = set()
    for f in files_under(root, paths):   # the tree's own scripts, run by name
        local.add(os.path.basename(f))
    problems, ok = [], {}
    paths = {c: shutil.which(c, path=STD_PATH) for c in uses if c not in NOT_DEBIAN and c not in local}
    owned = dpkg.owners([p for p in paths.values() if p])
    for cmd in sorted(paths):
        where = uses[cmd]
        path = paths[cmd]
        if path is None:
            problems.append(f"`{cmd}` (run at {', '.join(where[:3])}) is not installed here, "
                            f"and no package in {os.path.relpath(install_deps, root)}'s list provides it")
            continue
        owners = owned[path]
        if not owners:
            problems.append(f"`{cmd}` (run at {', '.join(where[:3])}) is {path}, which no Debian package "
                            f"owns: add its package to install-deps, or to NOT_DEBIAN in {__file__} if it is none")
            continue
        if owners & (provided | dpkg.base):
            ok[cmd] = sorted(owners & (provided | dpkg.base))[0]
            continue
        problems.append(f"`{cmd}` (run at {', '.join(where[:3])}) comes from package "
                        f"{'/'.join(sorted(owners))}, which {os.path.relpath(install_deps, root)} does not install")
    return problems, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--install-deps", help="default: ROOT/scripts/install-deps.sh")
    ap.add_argument("paths", nargs="*", default=DEFAULT_PATHS)
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command and its package")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    inst = a.install_deps or os.path.join(root, "scripts", "install-deps.sh")
    if not shutil.which("dpkg"):
        print("deps: not a Debian system (no dpkg): skipped")
        return 77
    problems, ok = check(root, inst, a.paths)
    if a.verbose:
        for c, p in sorted(ok.items()):
            print(f"  {c:24s} {p}")
    for p in problems:
        print("deps: FAIL:", p)
    if problems:
        return 1
    print(f"deps: ok: {len(ok)} external commands, each from a package install-deps installs "
          f"(or one every Debian root has)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

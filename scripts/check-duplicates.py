#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""No run of MIN (6) or more lines is shared between xdp/ and the rest of
the tree: the same lines, or the same shape with other names, strings and
numbers (issue 36).  Each piece of knowledge has one home; the XDP twin
takes it from pkt/, conntrack/, control/ instead of a copy.

Lines are compared after normalizing: comments, blank lines, lone
punctuation, #include / import lines and preprocessor guards are passed
over; white space is folded; every identifier that is not a keyword
becomes `a`, every number `0`, every string or character literal `""`.  A
run is a stretch of MIN or more consecutive kept lines of an xdp/ file
whose normalized text stands in the same order in a file outside xdp/.

A run of which half the lines or more are thin (two words at most:
`return rc;`, `a++;`, a field; an X-macro entry `X(a, "b")`, a string
continued, an enumerator, a constant, a row of a data table) says nothing of a shared piece of
knowledge and is not counted.

Files: those git tracks (else every file) with a source ending, generated
files aside (none are tracked: skeletons and vmlinux.h are built).
Run by meson (test 'duplicates_xdp', suite unit).

    usage: check-duplicates.py SOURCE_ROOT [--min N] [--side DIR]
           check-duplicates.py --self-test
"""
import os
import re
import subprocess
import sys
import tempfile

MIN = 6
# Known, counted and bounded: (xdp file, other file) -> (runs allowed, why).
# A new run between the two, or any run elsewhere, still fails.
KNOWN = {}   # none today
EXTS = (".c", ".h", ".cu", ".cuh", ".py", ".sh")
KEYWORDS = set("""
auto break case char const continue default do double else enum extern float
for goto if inline int long register restrict return short signed sizeof
static struct switch typedef union unsigned void volatile while bool true
false NULL __u8 __u16 __u32 __u64 __be16 __be32 uint8_t uint16_t uint32_t
uint64_t int8_t int16_t int32_t int64_t size_t ssize_t
and as assert class def del elif except finally from global in is lambda
None nonlocal not or pass raise try with yield True False self
then fi esac done local function
""".split())
TOKEN = re.compile(r'''
    (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<num>\b0[xX][0-9a-fA-F]+[uUlL]*\b|\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[uUlLfF]*\b)
  | (?P<id>[A-Za-z_][A-Za-z_0-9]*)
  | (?P<ws>\s+)
  | (?P<op>.)
''', re.X)


def strip_comments(text, ext):
    """Comments out, line count kept."""
    if ext in (".py", ".sh"):
        out = []
        for line in text.split("\n"):
            s = line.lstrip()
            out.append("" if s.startswith("#") else line)
        return "\n".join(out)

    def blank(m):
        t = m.group(0)
        if t.startswith("/"):
            return re.sub(r"[^\n]", " ", t)
        return t
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                  blank, text, flags=re.S)


def normalize(line):
    out = []
    for m in TOKEN.finditer(line):
        k = m.lastgroup
        t = m.group(0)
        if k == "ws":
            continue
        if k == "str":
            out.append('""')
        elif k == "num":
            out.append("0")
        elif k == "id":
            out.append(t if t in KEYWORDS else "a")
        else:
            out.append(t)
    return " ".join(out)


SKIP = re.compile(r'^\s*(#\s*(include|ifn?def|endif|pragma|else)\b|import\s|from\s+\S+\s+import\s)')


ENTRY = re.compile(r'^(?:a \( a , "" \)(?: \\)?|"" ,?|a(?: = -? ?0)? ,?|# a a -? ?0|'
                   r'\{ (?:(?:a|""|0|NULL)(?: ,)? )+\} ,?)$')


def thin(n):
    """A line that says little on its own: two words at most (names,
    numbers, strings, keywords: `return rc;`, `a++;`, a field), an X-macro
    entry `X(a, "b")`, a string continued, an enumerator, a constant, a
    row of data `{ "name", a, NULL, 'c' },`."""
    return (sum(1 for t in n.split() if t[0].isalnum() or t[0] in '_"') <= 2
            or ENTRY.match(n) is not None)


def counted(key):
    """A run counts when more than half its lines are not thin."""
    return 2 * sum(1 for x in key if not thin(x)) > len(key)


def lines_of(path):
    """[(normalized, line number)] of the kept lines of @path."""
    ext = os.path.splitext(path)[1]
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return []
    text = strip_comments(text, ext)
    out = []
    for no, line in enumerate(text.split("\n"), 1):
        if SKIP.match(line):
            continue
        n = normalize(line)
        if not n or re.fullmatch(r"[(){}\[\];,\\]+", n.replace(" ", "")):
            continue
        out.append((n, no))
    return out


def files_of(root):
    try:
        names = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard"],
                               capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d, dirs, fs in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith((".", "build"))]
            names += [os.path.relpath(os.path.join(d, f), root) for f in fs]
    return sorted(n for n in names if n.endswith(EXTS) and os.path.isfile(os.path.join(root, n)))


def runs(root, side="xdp", mn=MIN):
    """[(side file, a, b, other file, c, d)]: shared runs of @mn or more."""
    index = {}
    mine = []
    for f in files_of(root):
        ls = lines_of(os.path.join(root, f))
        if f.startswith(side + "/"):
            mine.append((f, ls))
            continue
        for i in range(len(ls) - mn + 1):
            key = tuple(x[0] for x in ls[i:i + mn])
            index.setdefault(key, []).append((f, ls, i))
    found = []
    for f, ls in mine:
        i = 0
        while i <= len(ls) - mn:
            key = tuple(x[0] for x in ls[i:i + mn])
            hits = index.get(key)
            if not hits:
                i += 1
                continue
            best = None
            for g, gl, j in hits:
                k = mn
                while i + k < len(ls) and j + k < len(gl) and ls[i + k][0] == gl[j + k][0]:
                    k += 1
                if best is None or k > best[0]:
                    best = (k, g, gl, j)
            k, g, gl, j = best
            if not counted([x[0] for x in ls[i:i + k]]):
                i += 1
                continue
            found.append((f, ls[i][1], ls[i + k - 1][1], g, gl[j][1], gl[j + k - 1][1]))
            i += k
    return found


def check(root, side, mn, known=None):
    found = runs(root, side, mn)
    known = KNOWN if known is None else known
    for pair, (allowed, why) in known.items():
        mine = [r for r in found if (r[0], r[3]) == pair]
        if 0 < len(mine) <= allowed:
            print(f"known: {pair[0]} ~ {pair[1]}: {len(mine)} run(s): {why}")
            found = [r for r in found if (r[0], r[3]) != pair]
    for f, a, b, g, c, d in found:
        print(f"{f}:{a}-{b} ~ {g}:{c}-{d}")
    if found:
        print(f"check-duplicates: {len(found)} run(s) of {mn}+ lines shared between {side}/ "
              "and the rest of the tree: give the knowledge one home", file=sys.stderr)
        return 1
    print(f"check-duplicates: no run of {mn}+ lines shared between {side}/ and the rest")
    return 0


SELF_A = '''
static int op_apply(const struct cfg *cfg, char *err, size_t errlen, void *ctx)
{
	struct dp *dp = ctx;   /* a comment */
	struct cfg next;
	int rc;

	pthread_mutex_lock(&dp->lock);
	rc = in_force(dp, cfg, &next, err, errlen);
	if (rc > 0) {
		snprintf(err, errlen, "needs a restart");
		rc = -95;
	}
	pthread_mutex_unlock(&dp->lock);
	return rc;
}
'''
# the same shape: other names, strings, numbers, comments, spacing
SELF_B = '''
static int xop_apply(const struct xcfg *c, char *e, size_t n, void *arg)
{
	struct xd *d = arg;
	struct xcfg tmp;
	int r;
	// elsewhere
	pthread_mutex_lock(&d->cfg_lock);
	r = xin_force(d, c, &tmp, e, n);
	if (r > 0) {
		snprintf(e, n, "a restart");
		r = -1;
	}
	pthread_mutex_unlock(&d->cfg_lock);
	return r;
}
'''
SELF_THIN = '''
	X(a, "one") \\
	X(b, "two") \\
	X(c, "three") \\
	X(d, "four") \\
	X(e, "five") \\
	X(f, "six") \\
	X(g, "seven")
'''


def self_test():
    ok = True

    def tree(files):
        d = tempfile.mkdtemp(prefix="fg-dup-")
        for name, text in files.items():
            os.makedirs(os.path.join(d, os.path.dirname(name)), exist_ok=True)
            open(os.path.join(d, name), "w").write(text)
        return d

    def expect(what, cond):
        nonlocal ok
        print(("ok   " if cond else "FAIL ") + what)
        ok = ok and cond

    d = tree({"dataplane/a.c": SELF_A, "xdp/b.c": SELF_B})
    r = runs(d)
    expect("a planted same-shape copy is caught", len(r) == 1 and r[0][0] == "xdp/b.c")
    d = tree({"dataplane/a.c": SELF_A, "xdp/b.c": SELF_A})
    expect("a planted verbatim copy is caught", len(runs(d)) == 1)
    cut = SELF_A.replace("\trc = in_force", "\tdp->gen++;\n\trc = in_force")
    d = tree({"dataplane/a.c": SELF_A, "xdp/b.c": cut.replace("\treturn rc;", "\tdp->gen++;\n\treturn rc;")})
    expect("a copy cut below six lines is not", runs(d) == [])
    d = tree({"dataplane/a.c": SELF_A, "dataplane/b.c": SELF_A, "xdp/c.c": "int x;\n"})
    expect("copies outside xdp/ are another matter", runs(d) == [])
    d = tree({"dataplane/a.h": SELF_THIN, "xdp/b.h": SELF_THIN})
    expect("thin X-macro entries are not a piece of knowledge", runs(d) == [])
    d = tree({"dataplane/a.c": SELF_A, "xdp/b.c": SELF_B})
    expect("the check fails on a planted copy", check(d, "xdp", MIN) == 1)
    expect("a known pair passes", check(d, "xdp", MIN, {("xdp/b.c", "dataplane/a.c"): (1, "t")}) == 0)
    d = tree({"dataplane/a.c": SELF_A + "\nint pad;\n" + SELF_A, "xdp/b.c": SELF_B + "\nchar *q = strdup(s);\n" + SELF_B})
    expect("a known pair with one run more fails",
           check(d, "xdp", MIN, {("xdp/b.c", "dataplane/a.c"): (1, "t")}) == 1)
    return 0 if ok else 1


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    mn, side = MIN, "xdp"
    args = argv[2:]
    while args:
        if args[0] == "--min":
            mn = int(args[1])
        elif args[0] == "--side":
            side = args[1].rstrip("/")
        args = args[2:]
    return check(argv[1], side, mn)


if __name__ == "__main__":
    sys.exit(main(sys.argv))

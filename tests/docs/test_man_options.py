#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""man-options (issue 36): every option a shipped binary's --help prints is
in its man page, and so is every command it lists.

    test_man_options.py BUILD_DIR SOURCE_DIR

Generic on purpose: it parses what the binaries print, not a list kept
here, so a new option or command fails this test until its man page
describes it.
- options: every `--long` and `-x` token of the help text (the help's own
  examples, EAL's options in flowgate's, included);
- commands: fgctl's (`service add`, `flows watch`, ...), fg-decap's
  (`attach`, ...), flowgate-bench's benchmarks (one `.SS` each, and every
  benchmark's own --help is read too);
- --version prints "NAME VERSION";
- flowgate.conf(5) names every statement keyword of docs/CONFIG.md's
  reference table and every conntrack state (conntrack/ct.h), the
  `timeout STATE` words.
The XDP binaries are checked where they are built (libbpf, clang, bpftool).
"""
import os
import re
import subprocess
import sys

# binaries whose --version is not there yet (none: issue 38 gave the XDP pair theirs)
OPT = re.compile(r"(?<![\w/.-])(--[a-z0-9][a-z0-9-]*|-[A-Za-z])(?![\w-])")


def man_text(path):
    """The page's text with roff's escapes and font changes taken out."""
    t = open(path).read()
    t = re.sub(r"\\f(\[[^]]*\]|.)", "", t)      # font changes
    t = t.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
    t = re.sub(r"\\\((..)", "", t)              # special characters
    return t


def words(text):
    return re.sub(r"[\s\"]+", " ", text)


def has_opt(text, opt):
    return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text) is not None


def run(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


class Check:
    def __init__(self):
        self.errs = []
        self.n = 0

    def expect(self, cond, what):
        self.n += 1
        if not cond:
            self.errs.append(what)
            print("FAIL:", what)


def check_options(c, name, page, text, helptext):
    opts = sorted(set(OPT.findall(helptext)))
    missing = [o for o in opts if not has_opt(text, o)]
    c.expect(not missing, f"{page}: options {name} --help prints but the page does not "
             f"name: {' '.join(missing)}")
    print(f"{name}: {len(opts)} options of --help in {os.path.basename(page)}"
          + (f", {len(missing)} missing" if missing else ""))


def fgctl_commands(helptext):
    cmds = set()
    for line in helptext.splitlines():
        m = re.match(r"^  ([a-z]+)( [a-z|]+)?(?=\s|$)", line)
        if m:
            cmds.add(m.group(1) + (m.group(2) or ""))
    return sorted(cmds)


def check_binary(c, src, name, path, page, help_argvs, commands=None, version=True):
    if not os.access(path, os.X_OK):
        return False
    helptext = ""
    for argv in help_argvs:
        rc, out = run([path] + argv)
        c.expect(rc == 0, f"{name} {' '.join(argv)}: exit {rc}")
        helptext += out + "\n"
    pagepath = os.path.join(src, "man", page)
    c.expect(os.path.exists(pagepath), f"{name}: no man page man/{page}")
    if not os.path.exists(pagepath):
        return True
    text = man_text(pagepath)
    check_options(c, name, pagepath, text, helptext)
    if commands:
        flat = words(text)
        cmds = commands(helptext)
        missing = [x for x in cmds if x not in flat]
        c.expect(not missing, f"man/{page}: commands {name} --help lists but the page "
                 f"does not: {missing}")
        print(f"{name}: {len(cmds)} commands in {page}")
    if version:
        rc, out = run([path, "--version"])
        ok = rc == 0 and re.match(re.escape(name) + r" \d", out) is not None
        c.expect(ok, f"{name} --version: exit {rc}, printed {out.strip()[:80]!r}")
    return True


def check_conf(c, src):
    page = os.path.join(src, "man", "flowgate.conf.5")
    text = words(man_text(page))
    doc = open(os.path.join(src, "docs", "CONFIG.md")).read()
    ref = doc[doc.index("## Reference"):]
    ref = ref[:ref.index("\n\n", ref.index("\n|"))]     # the statement table
    kws = set()
    for line in ref.splitlines():
        cols = line.split("|")
        if len(cols) < 4 or not line.startswith("|"):
            continue
        for span in re.findall(r"`([^`]*)`", cols[2]):
            kws.update(w for w in re.findall(r"\b[a-z][a-z0-9_]*(?:-[a-z0-9]+)*\b", span))
    ct_h = open(os.path.join(src, "conntrack", "ct.h")).read()
    m = re.search(r"#define CT_STATE_LIST\(X\)(.*?)\n\n", ct_h, re.S)
    states = {s.lower() for s in re.findall(r"X\((\w+)\)", m.group(1))} if m else set()
    c.expect(len(kws) > 20 and len(states) > 10,
             f"CONFIG.md reference / CT_STATE_LIST not found ({len(kws)}, {len(states)})")
    missing = sorted(k for k in kws | states
                     if re.search(r"(?<![\w-])" + re.escape(k) + r"(?![\w-])", text) is None)
    c.expect(not missing, f"man/flowgate.conf.5 does not name: {missing}")
    print(f"flowgate.conf: {len(kws)} keywords of docs/CONFIG.md, {len(states)} conntrack "
          f"states in flowgate.conf.5")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    build, src = sys.argv[1], sys.argv[2]
    c = Check()
    bench = os.path.join(build, "bench", "flowgate-bench")
    benches = []
    if os.access(bench, os.X_OK):
        _, out = run([bench, "--help"])
        m = re.search(r"benchmarks:(.*)", out)
        # "gpu(not built)": listed, not in this build (no CUDA)
        listed = re.sub(r"\(not built\)", " (not-built)", m.group(1)) if m else ""
        toks = listed.split()
        benches = [t for i, t in enumerate(toks)
                   if t != "(not-built)" and (i + 1 >= len(toks) or toks[i + 1] != "(not-built)")]
        c.expect(len(benches) >= 5, f"flowgate-bench --help lists {benches}")
    built = {
        "flowgate": check_binary(c, src, "flowgate", os.path.join(build, "dataplane", "flowgate"),
                                 "flowgate.8", [["--help"]]),
        "fgctl": check_binary(c, src, "fgctl", os.path.join(build, "control", "fgctl"),
                              "fgctl.8", [["--help"]], fgctl_commands),
        "flowgate-bench": check_binary(
            c, src, "flowgate-bench", bench, "flowgate-bench.1",
            [["--help"]] + [[b, "--help"] for b in benches],
            lambda _: [f".SS {b}" for b in benches]),
        "flowgate-xdp": check_binary(c, src, "flowgate-xdp",
                                     os.path.join(build, "xdp", "flowgate-xdp"),
                                     "flowgate-xdp.8", [["--help"]]),
        "fg-decap": check_binary(
            c, src, "fg-decap", os.path.join(build, "xdp", "fg-decap"), "fg-decap.8",
            [["--help"]],
            lambda h: sorted({f"fg-decap {w}" for w in
                              re.findall(r"^(?:usage:)?\s*fg-decap ([a-z]+)", h, re.M)})),
    }
    for b in ("flowgate", "fgctl", "flowgate-bench"):
        c.expect(built[b], f"{b} is not built in {build}")
    for b in ("flowgate-xdp", "fg-decap"):
        if not built[b]:
            print(f"{b}: not built here (XDP needs libbpf, clang, bpftool): not checked")
    check_conf(c, src)
    print(f"man-options: {'FAIL' if c.errs else 'ok'} ({c.n} checks)")
    return 1 if c.errs else 0


if __name__ == "__main__":
    sys.exit(main())

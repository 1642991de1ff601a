#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Cases for check_deps.py: a fake tree (one file) and a fake install-deps
package list each; the checker must pass when every command's package is in
the list and fail, naming the command and the file, when one is removed.

Uses commands install-deps installs anyway (curl: package curl, ip:
iproute2), so it runs wherever `make test` runs."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_deps  # noqa: E402

BASE = "iproute2 curl"

# (description, file name, file text, packages listed, expected: None = pass,
#  else (command, line) the failure must name)
CASES = [
    ("shell: every package listed", "scripts/a.sh",
     "#!/usr/bin/env bash\nip link show\ncurl -s http://x\n", BASE, None),
    ("shell: curl's package removed", "scripts/a.sh",
     "#!/usr/bin/env bash\nip link show\ncurl -s http://x\n", "iproute2", ("curl", 3)),
    ("the ethtool bug: command behind a local wrapper function", "scripts/setup.sh",
     '#!/usr/bin/env bash\nnse() { ip netns exec "$1" "${@:2}"; }\n'
     'nooffload() { nse "$1" curl -K "$2" >/dev/null 2>&1 || true; }\n', "iproute2", ("curl", 3)),
    ("behind timeout and ip netns exec", "tests/e2e/t.sh",
     '#!/usr/bin/env bash\nip netns exec "$P-c" timeout 60 curl -s x\n', "iproute2", ("curl", 2)),
    ("after a pipe, in $( ), after &&", "tests/e2e/t.sh",
     '#!/usr/bin/env bash\nx=$(echo a | grep a) && echo "$(date)" || curl x\n', "iproute2", ("curl", 2)),
    ("multi-line command with a continuation", "scripts/m.sh",
     '#!/usr/bin/env bash\necho start; \\\n  curl \\\n  -s x\n', "iproute2", ("curl", 2)),
    ("not run: comment, heredoc body, quoted text, command -v probe", "scripts/n.sh",
     "#!/usr/bin/env bash\n# curl is not run here\ncat <<'EOF'\ncurl in a heredoc\nEOF\n"
     "echo 'curl in quotes'\ncommand -v curl >/dev/null || echo no curl\n", "iproute2", None),
    ("a case label is no command", "scripts/c.sh",
     '#!/usr/bin/env bash\ncase "$1" in\n  curl) echo x ;;\n  *) ip link ;;\nesac\n', "iproute2", None),
    ("Makefile recipe", "Makefile",
     "all:\n\t@curl -s x\n\t$(NINJA) -C build\n", "iproute2", ("curl", 2)),
    ("Python subprocess list", "tests/daemon/t.py",
     'import subprocess\nsubprocess.run(["curl", "-s", "x"])\n', "iproute2", ("curl", 2)),
    ("Python: command behind ip netns exec", "tests/daemon/t.py",
     'cmd = ["ip", "netns", "exec", ns, "curl", "-s"]\n', "iproute2", ("curl", 1)),
    ("a command no package provides", "scripts/x.sh",
     "#!/usr/bin/env bash\nfg-no-such-tool-4711 --help\n", BASE, ("fg-no-such-tool-4711", 2)),
]


def run_case(dpkg, desc, name, text, pkgs, want):
    with tempfile.TemporaryDirectory(prefix="fg-deps-case.") as root:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        inst = os.path.join(root, "install-deps.sh")
        with open(inst, "w") as f:
            f.write(f"#!/usr/bin/env bash\nPKGS=({pkgs})\n")
        problems, _ = check_deps.check(root, inst, [name], dpkg)
    if want is None:
        return [f"expected a pass, got: {problems}"] if problems else []
    cmd, line = want
    hit = [p for p in problems if f"`{cmd}`" in p and f"{name}:{line}" in p]
    if not hit:
        return [f"expected a failure naming `{cmd}` at {name}:{line}, got: {problems}"]
    return []


def main():
    if not check_deps.shutil.which("dpkg"):
        print("not a Debian system: skipped")
        return 77
    dpkg = check_deps.Dpkg()
    bad = 0
    for desc, name, text, pkgs, want in CASES:
        errs = run_case(dpkg, desc, name, text, pkgs, want)
        print(f"{'FAIL' if errs else 'ok  '} {desc}")
        for e in errs:
            print("     ", e)
        bad += bool(errs)
    print(f"{len(CASES) - bad}/{len(CASES)} cases passed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

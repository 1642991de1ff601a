# SPDX-License-Identifier: BSD-3-Clause
# What the namespace end-to-end tests (tests/e2e/*.sh, tests/xdp/*.sh) do
# alike; sourced (not run) after `set -uo pipefail`:
#
#   . "$(dirname "$0")/../e2e/e2e_lib.sh"
#   e2e_begin NAME KIND USAGE "$@"
#
# e2e_begin sets
#   E2E    the test's name, the first word of its messages
#   BUILD  the build directory (the script's first argument), absolute
#   HERE   the source tree
#   P      KIND + the script's PID: everything the run creates (namespaces
#          and what is in them, run dir, EAL prefix) is named after it, so a
#          run killed by meson's timeout is cleaned by the next one's sweep
#          (scripts/netns-teardown.sh)
#   RUN    /tmp/flowgate-$P, the run's directory

e2e_begin() { # NAME KIND USAGE BUILD_DIR [ARG...]
	E2E=$1
	[ -n "${4:-}" ] || { echo "usage: $3" >&2; exit 1; }
	BUILD=$(cd "$4" && pwd)
	HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	P=$2$$
	RUN=/tmp/flowgate-$P
}

e2e_need_root() { # WHY: skips (77) unless root
	[ "$(id -u)" = 0 ] || { echo "$E2E: needs root ($1)"; exit 77; }
}

e2e_need_tools() { # TOOL...: each installed, or the test fails
	local t
	for t; do
		command -v "$t" >/dev/null || { echo "$E2E: FAIL: $t is not installed (scripts/install-deps.sh installs it)"; exit 1; }
	done
}

e2e_sweep() { # removes what killed runs left, makes this run's directory
	"$HERE/scripts/netns-teardown.sh" --sweep
	mkdir -p "$RUN"
}

# for the test's cleanup (trap EXIT):
e2e_term_pidfile() { # FILE: SIGTERM to the process whose PID FILE holds (if any), half a second for it
	if [ -f "$1" ]; then kill -TERM "$(cat "$1")" 2>/dev/null; sleep 0.5; fi
}

e2e_teardown() { # the run's directory kept (copied) with FG_E2E_KEEP set; its network and files removed
	if [ -n "${FG_E2E_KEEP:-}" ]; then cp -a "$RUN" "/tmp/flowgate-kept-$P"; echo "$E2E: logs kept in /tmp/flowgate-kept-$P"; fi
	"$HERE/scripts/netns-teardown.sh" "$P"
}

e2e_network() { # [-q]: scripts/netns-setup.sh's network, named after P (-q: its progress not shown)
	[ -x "$BUILD/xdp/fg-decap" ] || { echo "$E2E: FAIL: no $BUILD/xdp/fg-decap (the worker-side decap; ninja -C $BUILD xdp/fg-decap)"; exit 1; }
	if [ "${1:-}" = -q ]; then exec 3>/dev/null; else exec 3>&1; fi
	"$HERE/scripts/netns-setup.sh" "$P" "$BUILD/xdp/fg-decap" >&3 \
		|| { echo "$E2E: FAIL: network setup (the line above says which step)"; exit 1; }
	exec 3>&-
}

e2e_stubs_start() { # the HTTP stubs gpu1..3 in the backend namespaces (RUN/bN.log, RUN/stubN.out)
	local i
	for i in 1 2 3; do
		: > "$RUN/b$i.log"
		ip netns exec "$P-b$i" python3 "$HERE/tests/e2e/http_stub.py" --name "gpu$i" \
			--log "$RUN/b$i.log" > "$RUN/stub$i.out" 2>&1 &
	done
}

e2e_stubs_wait() { # until each stub listens (python starts slowly on a busy machine: a 30-s guard)
	local i
	for i in 1 2 3; do
		for _ in $(seq 300); do grep -q listening "$RUN/stub$i.out" && break; sleep 0.1; done
		grep -q listening "$RUN/stub$i.out" || { echo "$E2E: FAIL: the HTTP stub of $P-b$i does not listen"; exit 1; }
	done
}

# Config text for a balancer on lb0 of netns-setup.sh's network (the
# flowgate-xdp tests' config files):
e2e_conf_lb0() { # [6]: port lb0 (MAC, address) and the backends' neighbour entries (6: IPv6 too)
	local i
	echo "port lb0 {"
	echo "    mac 02:00:00:99:00:01;"
	echo "    local 10.99.0.1;"
	if [ "${1:-}" = 6 ]; then echo "    local fd99::1;"; fi
	echo "}"
	for i in 1 2 3; do echo "neighbour 10.99.0.1$i 02:00:00:99:00:1$i port lb0;"; done
	if [ "${1:-}" = 6 ]; then
		for i in 1 2 3; do echo "neighbour fd99::1$i 02:00:00:99:00:1$i port lb0;"; done
	fi
}

e2e_conf_service() { # NAME VIP:PORT MODE W1 W2 W3 [6]: a TCP service over backends 1..3 (6: their IPv6 addresses)
	local i w=("$4" "$5" "$6") b
	echo "service $1 $2/tcp {"
	echo "    mode $3;"
	for i in 1 2 3; do
		b=10.99.0.1$i
		if [ "${7:-}" = 6 ]; then b="[fd99::1$i]"; fi
		echo "    backend $b weight ${w[i - 1]};"
	done
	echo "}"
}

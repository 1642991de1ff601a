#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 14: flowgate under a real systemd, as its unit runs it (Type=notify,
# watchdog): started (READY=1), reloaded with SIGHUP (the changed file is
# applied), stopped (the control socket removed, "stopped cleanly").
#
#   systemd_live.sh BUILD_DIR
#
# A transient unit (systemd-run) on net_null with --no-huge, so nothing is
# installed on the host.  Skips (77) where systemd is not PID 1 (containers,
# the chroot of `make test-clean-root`): there the `install` test checks
# the unit with systemd-analyze verify and service-daemon checks the notify
# protocol on a fake $NOTIFY_SOCKET.
set -euo pipefail
build=$(cd "$1" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (systemd-run --system)"; exit 77; }
[ -d /run/systemd/system ] || {
	echo "SKIP: systemd is not PID 1 here; see the install and service-daemon tests"; exit 77; }
unit=fgsvc$$
work=$(mktemp -d /tmp/fgsvc-systemd.XXXXXX)
cleanup() {
	systemctl stop "$unit" >/dev/null 2>&1 || true
	systemctl reset-failed "$unit" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
fgctl() { timeout 30 "$build/control/fgctl" -s "$work/fg.sock" "$@"; }

cat > "$work/flowgate.conf" <<'CONF'
port net_null0 {
    local 10.200.0.2;
    gateway 10.200.0.1;
}
neighbour 10.200.0.1 02:00:00:00:00:aa port net_null0;
service web 10.100.0.1:80/tcp {
    backend 10.200.0.11;
}
CONF
# systemd-run waits for the start job: for Type=notify, until READY=1
timeout 120 systemd-run --unit "$unit" --service-type=notify -p NotifyAccess=main \
	-p WatchdogSec=10s -p TimeoutStartSec=60s \
	"$build/dataplane/flowgate" -l 0,1 --no-huge -m 256 --file-prefix "$unit" \
	--no-pci --vdev=net_null0 -- -c "$work/flowgate.conf" -s "$work/fg.sock" --mbufs 4095 \
	|| bad "systemd-run: the unit did not start"
[ "$(systemctl is-active "$unit")" = active ] || bad "unit not active after READY=1"
fgctl ping >/dev/null || bad "no control socket once the unit is active"

sed -i 's/backend 10.200.0.11;/backend 10.200.0.11;\n    backend 10.200.0.12;/' "$work/flowgate.conf"
systemctl kill -s HUP "$unit"
for _ in $(seq 100); do fgctl config show 2>/dev/null | grep -q 10.200.0.12 && break; sleep 0.1; done
fgctl config show | grep -q 10.200.0.12 || bad "SIGHUP did not apply the changed file"
[ "$(systemctl is-active "$unit")" = active ] || bad "unit not active after the reload"

sleep 12   # longer than WatchdogSec: the worker's progress keeps it alive
[ "$(systemctl is-active "$unit")" = active ] || bad "watchdog killed a healthy flowgate"

systemctl stop "$unit"
[ -e "$work/fg.sock" ] && bad "control socket left after systemctl stop"
journalctl -u "$unit" --no-pager 2>/dev/null | grep -q "flowgate: stopped cleanly" \
	|| bad "no 'stopped cleanly' in the journal"
[ $fail -eq 0 ] && echo "systemd: start (notify), reload (SIGHUP), watchdog, stop: ok"
exit $fail

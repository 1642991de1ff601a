#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 14: `meson install --destdir` puts every service file in place.
#
#   test_install.sh BUILD_DIR
#
# - flowgate (sbin), fgctl, flowgate-bench (bin), the example configuration
#   (/etc/flowgate/flowgate.conf whatever the prefix, and the doc copy),
#   /etc/default/flowgate, the systemd unit in /lib/systemd/system, man
#   pages flowgate(8), fgctl(8), flowgate.conf(5), flowgate-bench(1), and
#   with the XDP build (fg-decap installed) flowgate-xdp(8), fg-decap(8), and
#   flowgate-xdp (sbin) with its unit;
# - the installed binaries run (--version), the installed config passes
#   `fgctl config check`;
# - a second install keeps an edited /etc/flowgate/flowgate.conf;
# - the man pages have no groff warnings (man --warnings);
# - the unit passes `systemd-analyze verify` (its ExecStart pointed at the
#   installed binary), and names Type=notify, ExecReload and no memory
#   option (the daemon's --in-memory default).
set -euo pipefail
build=$(cd "$1" && pwd)
dest=$(mktemp -d /tmp/fg-install.XXXXXX)
trap 'rm -rf "$dest"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest.log" 2>&1 \
	|| { cat "$dest.log"; rm -f "$dest.log"; echo "FAIL: meson install"; exit 1; }
rm -f "$dest.log"
intro() { meson introspect "$build" --buildoptions | python3 -c "
import json, sys
o = {x['name']: x['value'] for x in json.load(sys.stdin)}
p = o['prefix']
v = o['$1']
print(v if v.startswith('/') else p + '/' + v)"; }
prefix=$(intro prefix) sbindir=$(intro sbindir) bindir=$(intro bindir)
mandir=$(intro mandir) datadir=$(intro datadir)
# issue 40: /etc whatever the prefix, as flowgate(8) and the package say
sysconfdir=/etc
unit=$(cd "$dest" && find . -name flowgate.service | head -1)
xunit=$(cd "$dest" && find . -name flowgate-xdp.service | head -1)

echo "installed under $prefix (destdir $dest):"
(cd "$dest" && find . -type f | sort | sed 's/^\./  /')
for f in "$sbindir/flowgate" "$bindir/fgctl" "$bindir/flowgate-bench" \
	 "$sysconfdir/flowgate/flowgate.conf" "$sysconfdir/default/flowgate" \
	 "$datadir/doc/flowgate/examples/flowgate.conf" /lib/systemd/system/flowgate.service \
	 "$mandir/man8/flowgate.8" "$mandir/man8/fgctl.8" "$mandir/man5/flowgate.conf.5" \
	 "$mandir/man1/flowgate-bench.1"; do
	[ -f "$dest$f" ] || bad "not installed: $f"
done
pages="$mandir/man8/flowgate.8 $mandir/man8/fgctl.8 $mandir/man5/flowgate.conf.5 $mandir/man1/flowgate-bench.1"
if [ -f "$dest$bindir/fg-decap" ]; then
	for f in "$mandir/man8/flowgate-xdp.8" "$mandir/man8/fg-decap.8"; do
		[ -f "$dest$f" ] || bad "not installed: $f"
	done
	pages="$pages $mandir/man8/flowgate-xdp.8 $mandir/man8/fg-decap.8"
fi
[ -n "$unit" ] || bad "no flowgate.service installed"
xdp=0
if [ -x "$build/xdp/flowgate-xdp" ]; then
	xdp=1
	for f in "$sbindir/flowgate-xdp" "$mandir/man8/flowgate-xdp.8"; do
		[ -f "$dest$f" ] || bad "not installed: $f"
	done
	[ -n "$xunit" ] || bad "no flowgate-xdp.service installed"
	"$dest$sbindir/flowgate-xdp" --version | grep -q "^flowgate-xdp [0-9]" \
		|| bad "installed flowgate-xdp --version"
fi

"$dest$sbindir/flowgate" --version | grep -q "^flowgate [0-9]" || bad "installed flowgate --version"
"$dest$bindir/fgctl" --version | grep -q "^fgctl [0-9]" || bad "installed fgctl --version"
"$dest$bindir/flowgate-bench" --version | grep -q "^flowgate-bench [0-9]" \
	|| bad "installed flowgate-bench --version"
"$dest$bindir/fgctl" config check "$dest$sysconfdir/flowgate/flowgate.conf" >/dev/null \
	|| bad "the installed example config fails fgctl config check"

# an operator's edit survives a re-install
echo "# edited by the operator" >> "$dest$sysconfdir/flowgate/flowgate.conf"
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null 2>&1 || bad "second install"
grep -q "edited by the operator" "$dest$sysconfdir/flowgate/flowgate.conf" \
	|| bad "a re-install overwrote /etc/flowgate/flowgate.conf"

for m in $pages; do
	[ -f "$dest$m" ] || continue
	w=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z \
		"$dest$m" 2>&1 >/dev/null) || bad "man $m failed"
	[ -z "$w" ] || bad "man --warnings $m: $w"
done

if [ -n "$unit" ]; then
	u="$dest/$unit"
	grep -q '^Type=notify$' "$u" || bad "unit: not Type=notify"
	grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$u" || bad "unit: no ExecReload=SIGHUP"
	grep -q "^ExecStart=$sbindir/flowgate .* -c $sysconfdir/flowgate/flowgate.conf" "$u" \
		|| bad "unit: ExecStart does not run $sbindir/flowgate -c $sysconfdir/flowgate/flowgate.conf"
	if grep -E '^ExecStart=.*(--in-memory|--huge-unlink|--file-prefix)' "$u"; then
		bad "unit: names a memory option (the daemon's --in-memory default is the point)"
	fi
	# verify with the paths pointed into the destdir (the binaries exist there)
	v="$dest/flowgate-verify.service"
	sed -e "s#$sbindir/flowgate#$dest$sbindir/flowgate#g" "$u" > "$v"
	# Documentation=man:... must resolve to the installed pages
	out=$(MANPATH="$dest$mandir" systemd-analyze verify "$v" 2>&1) || bad "systemd-analyze verify: $out"
	echo "$out" | grep -i flowgate-verify && bad "systemd-analyze verify warns: $out"
fi
if [ "$xdp" = 1 ] && [ -n "$xunit" ]; then
	u="$dest/$xunit"
	grep -q '^Type=notify$' "$u" || bad "xdp unit: not Type=notify"
	grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$u" || bad "xdp unit: no ExecReload=SIGHUP"
	grep -q '^WatchdogSec=' "$u" || bad "xdp unit: no WatchdogSec"
	grep -q "^ExecStart=$sbindir/flowgate-xdp -c $sysconfdir/flowgate/flowgate.conf -i " "$u" \
		|| bad "xdp unit: ExecStart does not run $sbindir/flowgate-xdp -c $sysconfdir/flowgate/flowgate.conf -i IFACE"
	v="$dest/flowgate-xdp-verify.service"
	sed -e "s#$sbindir/flowgate-xdp#$dest$sbindir/flowgate-xdp#g" "$u" > "$v"
	out=$(MANPATH="$dest$mandir" systemd-analyze verify "$v" 2>&1) || bad "systemd-analyze verify (xdp): $out"
	echo "$out" | grep -i flowgate-xdp-verify && bad "systemd-analyze verify warns (xdp): $out"
fi
[ $fail -eq 0 ] && echo "install: ok"
exit $fail

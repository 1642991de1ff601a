#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Checks the Debian packages `make deb` built (issue 40).
#
#   scripts/deb-check.sh [--install] DIR
#
# DIR holds flowgate_V_ARCH.deb, flowgate-xdp_..., flowgate-bench_... and
# flowgate_V_ARCH.changes of the version in debian/changelog.
# - file lists (dpkg-deb -c): each package holds what it should, under the
#   paths flowgate(8) names (FILES), nothing under /usr/local;
# - conffiles: /etc/flowgate/flowgate.conf and /etc/default/flowgate;
# - the unit runs /usr/sbin/flowgate -c /etc/flowgate/flowgate.conf;
# - Depends (dpkg-shlibdeps, and the DPDK drivers debian/rules adds);
# - lintian on the .changes: no error (E:) line;
# - with --install (root, flowgate not installed): apt-get install
#   ./flowgate_*.deb, flowgate --version, the unit neither enabled nor
#   running, then apt-get purge: nothing of it left.
# Every step is bounded in time (timeout); exit 0 only when all hold.
set -euo pipefail
install=0
[[ ${1:-} == --install ]] && { install=1; shift; }
dir=$(cd "${1:?usage: deb-check.sh [--install] DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
ver=$(cd "$src" && dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

deb() { echo "$dir/${1}_${ver}_${arch}.deb"; }
for p in flowgate flowgate-xdp flowgate-bench; do
	[[ -f $(deb "$p") ]] || { echo "FAIL: no $(deb "$p") (run make deb)"; exit 1; }
done

# the paths flowgate(8) names under FILES, but the runtime ones (/run)
mapfile -t man_files < <(sed -n '/^\.SH FILES/,/^\.SH /p' "$src/man/flowgate.8" |
	sed -n 's/^\.I \(\/[^ ]*\)$/\1/p' | grep -v '^/run/')
((${#man_files[@]} >= 3)) || bad "flowgate.8 FILES names ${#man_files[@]} paths: ${man_files[*]}"
want_flowgate=(/usr/sbin/flowgate /usr/bin/fgctl /usr/share/man/man8/flowgate.8.gz
	/usr/share/man/man8/fgctl.8.gz /usr/share/man/man5/flowgate.conf.5.gz
	/usr/share/doc/flowgate/examples/flowgate.conf "${man_files[@]}")
want_xdp=(/usr/sbin/flowgate-xdp /usr/bin/fg-decap /usr/share/man/man8/flowgate-xdp.8.gz
	/lib/systemd/system/flowgate-xdp.service
	/usr/share/man/man8/fg-decap.8.gz)
want_bench=(/usr/bin/flowgate-bench /usr/share/man/man1/flowgate-bench.1.gz)
check_list() {  # package, wanted paths...
	local p=$1 list
	shift
	list=$(timeout 60 dpkg-deb -c "$(deb "$p")" | awk '{print $6}' | sed 's#^\.##; s#/$##')
	for f in "$@"; do
		grep -qx -- "$f" <<<"$list" || bad "$p: no $f"
	done
	if grep -q '^/usr/local' <<<"$list"; then bad "$p: installs under /usr/local"; fi
	echo "$p: $(grep -vc '/$' <<<"$list") entries"
}
check_list flowgate "${want_flowgate[@]}"
check_list flowgate-xdp "${want_xdp[@]}"
check_list flowgate-bench "${want_bench[@]}"

conff=$(timeout 60 dpkg-deb -I "$(deb flowgate)" conffiles 2>/dev/null || true)
for f in /etc/flowgate/flowgate.conf /etc/default/flowgate; do
	grep -qx "$f" <<<"$conff" || bad "flowgate: $f is not a conffile (conffiles: $conff)"
done
unit=$(timeout 60 dpkg-deb --fsys-tarfile "$(deb flowgate)" | tar -xO ./lib/systemd/system/flowgate.service)
grep -q '^ExecStart=/usr/sbin/flowgate .* -c /etc/flowgate/flowgate.conf' <<<"$unit" \
	|| bad "unit: ExecStart does not run /usr/sbin/flowgate -c /etc/flowgate/flowgate.conf"
grep -q '^EnvironmentFile=-/etc/default/flowgate$' <<<"$unit" \
	|| bad "unit: no EnvironmentFile=-/etc/default/flowgate"
dep=$(dpkg-deb -f "$(deb flowgate)" Depends)
for d in libc6 librte-eal librte-ethdev librte-mempool-ring librte-net-af-packet; do
	grep -q "$d" <<<"$dep" || bad "flowgate Depends lacks $d: $dep"
done
echo "flowgate Depends: $dep"
grep -q libbpf <<<"$(dpkg-deb -f "$(deb flowgate-xdp)" Depends)" || bad "flowgate-xdp Depends lacks libbpf"

changes="$dir/flowgate_${ver}_${arch}.changes"
echo "lintian $changes:"
lout=$(timeout 600 lintian "$changes" 2>&1) || true
echo "$lout" | sed 's/^/  /'
if grep -q '^E: ' <<<"$lout"; then bad "lintian reports errors"; fi

if ((install)); then
	[[ $(id -u) -eq 0 ]] || bad "--install needs root"
	if dpkg-query -W -f='${Status}' flowgate 2>/dev/null | grep -q 'installed'; then
		bad "flowgate is installed already: not touching it"
	elif [[ -e /run/flowgate ]]; then
		bad "/run/flowgate exists (a flowgate runs here?): purge would remove it; not installing"
	elif ((!fail)); then
		export DEBIAN_FRONTEND=noninteractive
		timeout 600 apt-get install -y -qq "$(deb flowgate)" >/dev/null || bad "apt-get install"
		/usr/sbin/flowgate --version | grep -q "^flowgate $ver " || bad "installed flowgate --version"
		for f in "${man_files[@]}" /usr/bin/fgctl; do [[ -e $f ]] || bad "installed: no $f"; done
		/usr/bin/fgctl config check /etc/flowgate/flowgate.conf >/dev/null 2>&1 \
			|| bad "the installed /etc/flowgate/flowgate.conf fails fgctl config check"
		if [[ -d /run/systemd/system ]]; then
			systemctl is-enabled flowgate >/dev/null 2>&1 && bad "flowgate.service enabled on install"
			systemctl is-active flowgate >/dev/null 2>&1 && bad "flowgate.service running after install"
		fi
		mapfile -t owned < <(dpkg -L flowgate | grep -v '^/\.$')
		timeout 600 apt-get purge -y -qq flowgate >/dev/null || bad "apt-get purge"
		dpkg-query -W -f='${Status}' flowgate 2>/dev/null | grep -q 'installed' \
			&& bad "flowgate still installed after purge"
		for f in "${owned[@]}"; do
			# directories (/usr/bin, /etc/default, /lib -> usr/lib ...) are
			# shared and stay; no file or link of the package may
			[[ -d $f ]] && continue
			if [[ -e $f || -L $f ]]; then bad "left after purge: $f"; fi
		done
		[[ -e /etc/flowgate ]] && bad "left after purge: /etc/flowgate"
		[[ -e /run/flowgate ]] && bad "left after purge: /run/flowgate"
		echo "install / purge: done"
	fi
fi
[[ $fail -eq 0 ]] && echo "deb-check: ok"
exit $fail

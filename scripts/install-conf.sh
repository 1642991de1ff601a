#!/bin/sh
# meson install script: install-conf.sh SRC DEST
# Installs SRC as DEST (under $DESTDIR when meson install --destdir) unless
# DEST already exists: an operator's configuration is never overwritten.
set -eu
src=$1
dest=${DESTDIR:-}$2
if [ -e "$dest" ]; then
	echo "flowgate: keeping the existing $dest (not overwritten)"
	exit 0
fi
mkdir -p "$(dirname "$dest")"
install -m 0644 "$src" "$dest"
echo "flowgate: installed the example configuration as $dest"

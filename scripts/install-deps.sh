#!/bin/sh
# Installs the Debian packages squashkit needs to build and test, when missing.
# As root: installs them with apt-get. Otherwise: prints the exact command to run.
PKGS="build-essential make gcc pkg-config libzstd-dev liblzma-dev zlib1g-dev liblz4-dev liblzo2-dev libfuse3-dev fuse3
check libssl-dev libxxhash-dev libcurl4-openssl-dev libarchive-dev libarchive-tools squashfs-tools squashfs-tools-ng squashfuse attr python3 util-linux kmod time
nginx-light iproute2 curl iptables"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then
	echo "install-deps: installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || exit 1
	apt-get install -y -qq --no-install-recommends $missing || exit 1
else
	echo "install-deps: missing packages; run as root:" >&2
	echo "  apt-get install -y$missing" >&2
	exit 1
fi

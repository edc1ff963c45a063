#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Installs the Debian packages squashkit needs to build and test, when missing.
# As root: installs them with apt-get. Otherwise: prints the exact command to run.
PKGS="build-essential make gcc pkg-config libzstd-dev liblzma-dev zlib1g-dev liblz4-dev liblzo2-dev libfuse3-dev fuse3
check libssl-dev libxxhash-dev libcurl4-openssl-dev libarchive-dev libarchive-tools squashfs-tools squashfs-tools-ng squashfuse attr python3 util-linux kmod time
nginx-light iproute2 curl iptables man-db groff-base mandoc"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
# The s3:// test (t_88) runs s3rver, an S3 server from npm: node and npm from Debian when there
# is no npm yet (a nodejs that brings its own npm is kept), then s3rver from the npm registry.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
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
fi
S3RVER_VERSION=3.7.1
if ! command -v s3rver >/dev/null 2>&1 && ! [ -x "$(npm prefix -g 2>/dev/null)/bin/s3rver" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "install-deps: npm install -g s3rver@$S3RVER_VERSION"
		npm install -g --no-audit --no-fund "s3rver@$S3RVER_VERSION" >/dev/null || exit 1
	else
		echo "install-deps: s3rver is missing; run as root: npm install -g s3rver@$S3RVER_VERSION" >&2
		exit 1
	fi
fi
exit 0

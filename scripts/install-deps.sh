#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Installs the Debian packages squashkit needs, when missing:
#   install-deps.sh build   the libraries and tools to build (make deps)
#   install-deps.sh test    the tools the tests use as oracles and servers (make check-deps)
# As root: installs them with apt-get. Otherwise: prints the command to run and exits 1.
set -u
what=${1:-build}
# Required: a C toolchain, pkg-config and the libraries every build links. Optional features
# (see the Makefile's HAVE_*): libfuse3, libcurl, libarchive, liblzo2, liblz4.
BUILD_PKGS="build-essential make gcc pkg-config libzstd-dev liblzma-dev zlib1g-dev libxxhash-dev
libssl-dev libfuse3-dev fuse3 libcurl4-openssl-dev libarchive-dev liblz4-dev liblzo2-dev"
# The tests: Check for the unit tests, clang and g++ for the warning and header checks, the peers
# (oracles), servers and network tools of the integration tests, veritysetup (cryptsetup-bin) and
# openssl for the dm-verity tree and its signature, man page linters, debootstrap for the
# fresh-system build test.
TEST_PKGS="check clang g++ squashfs-tools squashfs-tools-ng squashfuse libarchive-tools attr
python3 util-linux kmod time nginx-light iproute2 curl iptables man-db groff-base mandoc
debootstrap binutils cryptsetup-bin openssl xfsprogs btrfs-progs"
case $what in
build) PKGS=$BUILD_PKGS ;;
test) PKGS="$BUILD_PKGS $TEST_PKGS" ;;
*) echo "usage: install-deps.sh build|test" >&2; exit 2 ;;
esac

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
# The s3:// test runs s3rver, an S3 server from npm: node and npm from Debian when there is no
# npm yet (a nodejs that brings its own npm is kept).
[ "$what" = test ] && ! command -v npm >/dev/null 2>&1 && missing="$missing nodejs npm"
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
[ "$what" = test ] || exit 0

# The tests compare with squashfs-tools 4.7 (Debian 12 has 4.5.1, which lacks the options they
# compare): built from the peers' sources in shared/anchors beside this repository, or in
# /work/shared/anchors for a clone elsewhere (SQK_ANCHORS_SH names another build.sh); build.sh
# puts them in /opt/anchors, where the tests look first (under a minute). Without those
# sources, or not as root, the tests that need 4.7 skip and say so.
ANCHORS_SH=${SQK_ANCHORS_SH:-$(cd "$(dirname "$0")/.." && pwd)/../shared/anchors/build.sh}
[ -f "$ANCHORS_SH" ] || [ -n "${SQK_ANCHORS_SH:-}" ] || ANCHORS_SH=/work/shared/anchors/build.sh
if ! [ -x /opt/anchors/squashfs-tools/bin/mksquashfs ]; then
	if [ "$(id -u)" = 0 ] && [ -f "$ANCHORS_SH" ]; then
		echo "install-deps: building squashfs-tools 4.7 into /opt/anchors ($ANCHORS_SH)"
		sh "$ANCHORS_SH" >/dev/null ||
			echo "install-deps: warning: $ANCHORS_SH failed; the tests that need squashfs-tools 4.7 skip" >&2
	else
		echo "install-deps: no squashfs-tools 4.7 in /opt/anchors (and $ANCHORS_SH not run):" \
			"the tests that need it skip" >&2
	fi
fi

# s3rver serves one test (t_88); when npm's registry cannot be reached that test skips and
# says so, the rest of the suite does not depend on it.
S3RVER_VERSION=3.7.1
if ! command -v s3rver >/dev/null 2>&1 && ! [ -x "$(npm prefix -g 2>/dev/null)/bin/s3rver" ]; then
	if [ "$(id -u)" = 0 ]; then
		echo "install-deps: npm install -g s3rver@$S3RVER_VERSION"
		npm install -g --no-audit --no-fund "s3rver@$S3RVER_VERSION" >/dev/null ||
			echo "install-deps: warning: s3rver could not be installed; the s3:// test will skip" >&2
	else
		echo "install-deps: s3rver is missing; run as root: npm install -g s3rver@$S3RVER_VERSION" >&2
		exit 1
	fi
fi
exit 0

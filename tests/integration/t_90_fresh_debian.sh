#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# A fresh Debian 12 (a debootstrap chroot, with this tree as a clone has it): the README's first
# command installs only what building needs, builds and runs the demo with npm's registry out of
# reach; as a normal user `make` builds with nothing more, and so does a build without the
# optional features, whose commands then say what is missing. The minimal base system is kept
# in SQK_FRESH_CACHE (default /var/cache/squashkit-tests) between runs; nothing else is.
. "$(dirname "$0")/lib.sh"
need_root
need_cmd debootstrap chroot tar git
TOP=$(cd "$IT_DIR/../.." && pwd)
CACHE=${SQK_FRESH_CACHE:-/var/cache/squashkit-tests}
BASE=$CACHE/bookworm-minbase.tar
MIRROR=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
MIRROR=${MIRROR:-http://deb.debian.org/debian}

if [ ! -s "$BASE" ] || [ -n "$(find "$BASE" -mtime +30 2>/dev/null)" ]; then
	mkdir -p "$CACHE"
	D=$(mktemp -d "$CACHE/bootstrap.XXXXXX")
	chmod 755 "$D" # the chroot's / (mktemp's 0700 would shut its users out)
	debootstrap --variant=minbase bookworm "$D" "$MIRROR" >"$TMP/debootstrap.log" 2>&1 ||
		{ rm -rf "$D"; tail -n 20 "$TMP/debootstrap.log" >&2; skip "debootstrap of bookworm from $MIRROR failed"; }
	tar -C "$D" -cf "$BASE.tmp" . && mv "$BASE.tmp" "$BASE"
	rm -rf "$D"
fi
CH=$(scratch fresh)/root
mkdir -p "$CH"
tar -C "$CH" -xf "$BASE" || fail "cannot unpack $BASE"
chmod 755 "$CH" # also for a base cached with a 0700 root by an earlier version of this test
cp /etc/resolv.conf "$CH/etc/resolv.conf"
mount -t proc proc "$CH/proc" || fail "cannot mount /proc in the chroot"
trap 'umount "$CH/proc" 2>/dev/null' EXIT
in_root() { chroot "$CH" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }
as_user() { chroot --userspec=4242:4242 "$CH" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/home/u "$@"; }
in_root useradd -m -u 4242 -U u || fail "useradd in the chroot failed"
# the tree as a clone has it: the tracked files, with this checkout's changes
mkdir -p "$CH/home/u/squashkit"
git -C "$TOP" ls-files -z | (cd "$TOP" && tar --null -T - -cf -) | tar -C "$CH/home/u/squashkit" -xf - ||
	fail "cannot copy the tree"
in_root chown -R u:u /home/u/squashkit

# 1. the README's first command (sudo: root with SUDO_USER), npm's registry pointing nowhere
in_root sh -c 'cd /home/u/squashkit && SUDO_USER=u npm_config_registry=http://127.0.0.1:9/ \
	sh scripts/quickstart.sh /usr/share/doc /tmp/demo.sqsh' >"$TMP/quick.log" 2>&1 ||
	{ tail -n 40 "$TMP/quick.log" >&2; fail "scripts/quickstart.sh failed on a fresh Debian 12"; }
grep -q "^quickstart: sqk ls lists [1-9][0-9]* entries" "$TMP/quick.log" ||
	{ tail -n 20 "$TMP/quick.log" >&2; fail "the demo listed no entries"; }
grep -q "fuse=yes remote=yes tar=yes lzo=yes lz4=yes" "$TMP/quick.log" ||
	fail "the quick start did not build every feature: $(grep '^squashkit' "$TMP/quick.log")"
info "$(grep '^quickstart: sqk ls' "$TMP/quick.log")"
for tool in npm node unsquashfs squashfuse nginx checkmk; do
	! in_root sh -c "command -v $tool" >/dev/null || fail "the quick start installed $tool, a test tool"
done
[ "$(stat -c %u "$CH/home/u/squashkit/build/bin/sqk")" = 4242 ] ||
	fail "the quick start built as root, not as the user who ran sudo"

# 2. as the user: make, with only the build dependencies
as_user sh -c 'cd /home/u/squashkit && make clean && make -j2' >"$TMP/make.log" 2>&1 ||
	{ tail -n 30 "$TMP/make.log" >&2; fail "make as a normal user failed"; }
as_user /home/u/squashkit/build/bin/sqk cat /tmp/demo.sqsh debian-archive-keyring/copyright 2>/dev/null |
	cmp -s - "$CH/usr/share/doc/debian-archive-keyring/copyright" ||
	fail "the user's build does not read the demo image back"

# 3. as the user, without the optional features: it builds, and each says what it needs
as_user sh -c 'cd /home/u/squashkit && make -j2 OPT=-O0 BUILD=build-min HAVE_REMOTE=0 HAVE_TAR=0 HAVE_LZO=0' \
	>"$TMP/min.log" 2>&1 || { tail -n 30 "$TMP/min.log" >&2; fail "make HAVE_REMOTE=0 HAVE_TAR=0 HAVE_LZO=0 failed"; }
grep -q "remote=no tar=no lzo=no" "$TMP/min.log" || fail "no summary of the features left out"
MIN=/home/u/squashkit/build-min/bin/sqk
expect_says() { # WHAT PATTERN CMD...
	local what=$1 pat=$2
	shift 2
	if out=$(as_user "$@" 2>&1); then
		fail "$what: succeeded without its feature"
	fi
	grep -q "$pat" <<<"$out" || fail "$what does not say what is missing: $out"
	info "$what: $(head -n 1 <<<"$out")"
}
expect_says "sqk ls URL" "HAVE_REMOTE=0" $MIN ls http://127.0.0.1:9/demo.sqsh
expect_says "sqk tar" "HAVE_TAR=0.*libarchive" $MIN tar -o /tmp/x.tar /tmp/demo.sqsh
expect_says "sqk mkimage -comp lzo" "HAVE_LZO=0.*liblzo2" $MIN mkimage -comp lzo /home/u/squashkit/docs /tmp/x.sqsh
exit 0

#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Signing images (issue 30, point 2): keys from `openssl genpkey -algorithm ed25519` and from
# `sqk keygen` (modes, the .pub equal to openssl's -pubout, the key id, no overwrite without
# --force); `sqk sign` appends a block whose first E bytes are the unsigned image's, byte for
# byte, and whose entries an independent parser decodes and `openssl pkeyutl -verify` accepts
# over the message docs/format.md gives; signing again with a key replaces its entry, another key
# adds one, --remove takes them out down to the unsigned bytes; `sqk mkimage --sign` writes the
# bytes of `sqk mkimage` then `sqk sign` at the same time; the kernel, unsquashfs and squashfuse
# (and sqk extract) read a signed image as the unsigned one; a damaged image, one without
# integrity data, a cut one, a damaged signature block and bad keys (mode, RSA, EC, encrypted,
# public) are refused naming the file and the reason, the image unchanged; a sign that fails
# for lack of space leaves the image as it was and no temporary file.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd openssl python3 cmp
W=$(scratch sign)
# the signed time: SOURCE_DATE_EPOCH, given to each sign (it would clamp the image's mtimes too)
T0=1700000000

$MKTREE "$W/src" || fail "mktree failed"

# files in the folder of an image, for "no temporary left"
entries() { ls -A "$1" | LC_ALL=C sort | tr '\n' ' '; }

# expect_fail RC NEEDLE CMD...: CMD exits RC and its stderr holds NEEDLE
expect_fail() {
	local want=$1 needle=$2
	shift 2
	run_capture fail "$@"
	[ "$RC" = "$want" ] || { show_err; fail "$* exited $RC, expected $want"; }
	grep -qF -- "$needle" "$ERR_FILE" || { show_err; fail "$*: no '$needle' in the message"; }
}

# 1. Keys: OpenSSL's and sqk keygen's.
K=$W/keys
mkdir -p "$K"
openssl genpkey -algorithm ed25519 -out "$K/ossl.key" 2>/dev/null || fail "openssl genpkey failed"
chmod 600 "$K/ossl.key"
openssl pkey -in "$K/ossl.key" -pubout -out "$K/ossl.key.pub" || fail "openssl pkey -pubout failed"
run_capture keygen "$SQK" keygen "$K/sqk.key"
[ "$RC" = 0 ] || { show_err; fail "sqk keygen exited $RC"; }
[ "$(stat -c %a "$K/sqk.key")" = 600 ] || fail "sqk keygen: private key mode $(stat -c %a "$K/sqk.key")"
[ "$(stat -c %a "$K/sqk.key.pub")" = 644 ] || fail "sqk keygen: public key mode $(stat -c %a "$K/sqk.key.pub")"
head -n 1 "$K/sqk.key" | grep -qx -- '-----BEGIN PRIVATE KEY-----' || fail "sqk keygen: not PKCS#8 PEM"
openssl pkey -in "$K/sqk.key" -pubout | cmp -s - "$K/sqk.key.pub" ||
	fail "openssl pkey -pubout of sqk keygen's key differs from its .pub"
# the key id: the first 8 bytes of SHA-256 of the raw public key (the SPKI's last 32 bytes)
keyid() {
	openssl pkey -pubin -in "$1" -outform DER | tail -c 32 | sha256sum | cut -c 1-16
}
SQK_ID=$(keyid "$K/sqk.key.pub")
OSSL_ID=$(keyid "$K/ossl.key.pub")
grep -qx "key id       $SQK_ID" "$OUT_FILE" || fail "sqk keygen printed $(cat "$OUT_FILE"), id is $SQK_ID"
info "sqk keygen: key $SQK_ID, mode 0600 and 0644, .pub = openssl pkey -pubout"
cp "$K/sqk.key" "$W/sqk.key.before"
expect_fail 1 "exists: not replaced" "$SQK" keygen "$K/sqk.key"
cmp -s "$K/sqk.key" "$W/sqk.key.before" || fail "sqk keygen without --force changed the key"
[ "$(entries "$K")" = "ossl.key ossl.key.pub sqk.key sqk.key.pub " ] ||
	fail "sqk keygen left $(entries "$K")"
must "$SQK" keygen --force "$K/other.key"
must "$SQK" keygen --force "$K/other.key"
cmp -s "$K/sqk.key" "$W/sqk.key.before" || fail "sqk keygen --force of another key changed this one"

# 2. An image, signed: the first E bytes do not change; the block is what format.md says.
sqk_build -q "$W/src" "$W/img.sqsh"
cp "$W/img.sqsh" "$W/orig.sqsh"
# ref UNSIGNED: E and the root digest of the trailer ending it, which signatures must cover
ref() {
	E=$(stat -c %s "$1")
	root=$(python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print(d[-88:-56].hex())' "$1")
}
ref "$W/orig.sqsh"

# check_block IMAGE "KEYID:TIME:COMMENT"...: an independent decoder of the block (docs/format.md)
# and openssl's verdict on each signature over the message it rebuilds
check_block() {
	local img=$1 d=$W/blk n=0 want
	shift
	rm -rf "$d"
	mkdir -p "$d"
	python3 - "$img" "$E" "$root" "$d" <<'PY' || fail "$img: the signature block does not decode"
import hashlib, os, struct, sys
img, E, root, d = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4]
data = open(img, 'rb').read()
F = len(data)
foot = data[-64:]
assert foot[:8] == b'SQKSIGS1' and foot[56:] == b'SQKSIGS1', 'magics'
ver, count, L, e = struct.unpack_from('<IIQQ', foot, 8)
assert ver == 1 and 1 <= count <= 64 and not any(foot[32:56]), (ver, count)
assert e == E, 'image end %d, expected %d' % (e, E)
assert L % 4096 == 0 and F - L == E, 'block of %d bytes at %d' % (L, F - L)
at = F - L
for i in range(count):
    ln, alg = struct.unpack_from('<II', data, at)
    pub = data[at + 8:at + 40]
    t, clen, z = struct.unpack_from('<QII', data, at + 40)
    sig = data[at + 56:at + 120]
    comment = data[at + 120:at + 120 + clen]
    assert alg == 1 and z == 0 and ln == (120 + clen + 7) // 8 * 8, (ln, alg, z, clen)
    assert not any(data[at + 120 + clen:at + ln]), 'entry padding'
    msg = (b'SQKSIG1\0' + pub + root + struct.pack('<QQI', E, t, clen) + comment)
    der = bytes.fromhex('302a300506032b6570032100') + pub
    open(os.path.join(d, '%d.msg' % i), 'wb').write(msg)
    open(os.path.join(d, '%d.sig' % i), 'wb').write(sig)
    open(os.path.join(d, '%d.der' % i), 'wb').write(der)
    open(os.path.join(d, '%d.txt' % i), 'w').write('%s:%d:%s\n' % (
        hashlib.sha256(pub).hexdigest()[:16], t, comment.decode()))
    at += ln
assert at + 64 <= F and not any(data[at:F - 64]), 'gap'
assert (at - (F - L) + 64 + 4095) // 4096 * 4096 == L, 'block longer than its entries need'
open(os.path.join(d, 'count'), 'w').write('%d\n' % count)
PY
	[ "$(cat "$d/count")" = $# ] || fail "$img: $(cat "$d/count") signatures, expected $#"
	for want in "$@"; do
		[ "$(cat "$d/$n.txt")" = "$want" ] || fail "$img: entry $n is $(cat "$d/$n.txt"), expected $want"
		openssl pkeyutl -verify -pubin -keyform DER -inkey "$d/$n.der" -rawin -in "$d/$n.msg" \
			-sigfile "$d/$n.sig" >/dev/null 2>&1 ||
			fail "$img: openssl does not verify signature $n ($want)"
		n=$((n + 1))
	done
}

# prefix_same IMAGE: its first E bytes are the unsigned image's
prefix_same() {
	cmp -s -n "$E" "$1" "$W/orig.sqsh" || fail "$1: the first $E bytes changed"
}

run_capture sign1 env SOURCE_DATE_EPOCH=$T0 "$SQK" sign --key "$K/ossl.key" --comment "v1.0 café" \
	"$W/img.sqsh"
[ "$RC" = 0 ] || { show_err; fail "sqk sign exited $RC"; }
grep -q "signed by key $OSSL_ID at 1700000000 " "$OUT_FILE" || fail "sqk sign printed: $(cat "$OUT_FILE")"
prefix_same "$W/img.sqsh"
[ "$(stat -c %s "$W/img.sqsh")" = $((E + 4096)) ] || fail "signed image of $(stat -c %s "$W/img.sqsh") bytes"
[ "$(stat -c %a "$W/img.sqsh")" = "$(stat -c %a "$W/orig.sqsh")" ] || fail "sqk sign changed the mode"
check_block "$W/img.sqsh" "$OSSL_ID:1700000000:v1.0 café"
info "signed with an openssl key: the first $E bytes unchanged, a 4096-byte block openssl verifies"
# the same key again: its entry replaced, still one
must "$SQK" sign --key "$K/ossl.key" --comment v2 --time 1700000100 "$W/img.sqsh"
prefix_same "$W/img.sqsh"
check_block "$W/img.sqsh" "$OSSL_ID:1700000100:v2"
# another key: a second entry after it
must env SOURCE_DATE_EPOCH=$T0 "$SQK" sign -k "$K/sqk.key" "$W/img.sqsh"
prefix_same "$W/img.sqsh"
check_block "$W/img.sqsh" "$OSSL_ID:1700000100:v2" "$SQK_ID:1700000000:"
cp "$W/img.sqsh" "$W/two.sqsh"
info "re-signing replaces the key's entry; a second key adds one"
[ "$(entries "$W")" = "blk img.sqsh keys orig.sqsh sqk.key.before src two.sqsh " ] ||
	fail "sqk sign left files behind: $(entries "$W")"

# 3. mkimage --sign: the bytes of mkimage then sqk sign (SOURCE_DATE_EPOCH is the signed time).
export SOURCE_DATE_EPOCH=$T0
sqk_build -q --sign "$K/ossl.key" --sign "$K/sqk.key" --sign-comment rel "$W/src" "$W/a.sqsh"
sqk_build -q "$W/src" "$W/b.sqsh"
ref "$W/b.sqsh"
must "$SQK" sign --key "$K/ossl.key" --comment rel "$W/b.sqsh"
must "$SQK" sign --key "$K/sqk.key" --comment rel "$W/b.sqsh"
cmp -s "$W/a.sqsh" "$W/b.sqsh" || fail "mkimage --sign differs from mkimage then sqk sign"
check_block "$W/a.sqsh" "$OSSL_ID:$T0:rel" "$SQK_ID:$T0:rel"
ref "$W/orig.sqsh"
sqk_build --sign "$K/sqk.key" "$W/src" "$W/c.sqsh"
grep -q "^signed     by key $SQK_ID " "$TMP/build.out" || fail "no signed line: $(cat "$TMP/build.out")"
unset SOURCE_DATE_EPOCH
info "mkimage --sign KEY --sign KEY2 = mkimage, then sqk sign with each, byte for byte"
rm -f "$W/b.sqsh" "$W/c.sqsh"

# 4. Other readers read the signed image as the unsigned one.
if [ "$(id -u)" = 0 ] && [ -e /dev/loop-control ] && grep -qw squashfs /proc/filesystems; then
	mount_sq "$W/two.sqsh" "$W/kmnt"
	tree_equal "kernel mount of the signed image" "$W/src" "$W/kmnt"
	umount_sq "$W/kmnt"
else
	info "no kernel squashfs mounts here; skipped that part"
fi
need_cmd unsquashfs
extract "$W/two.sqsh" "$W/ux"
tree_equal "unsquashfs of the signed image" "$W/src" "$W/ux"
rm -rf "$W/ux"
squashfuse_equal "$W/two.sqsh" "$W/src" "$W/sfmnt"
must "$SQK" extract "$W/two.sqsh" "$W/sx"
tree_equal "sqk extract of the signed image" "$W/src" "$W/sx"
rm -rf "$W/sx"

# 5. Images that are not signed, each left as it was, no temporary file left.
D=$W/bad
mkdir -p "$D"
cp "$W/orig.sqsh" "$D/flip.sqsh"
python3 - "$D/flip.sqsh" <<'PY' || fail "cannot corrupt the image"
import sys
p = sys.argv[1]
d = bytearray(open(p, 'rb').read())
d[20000] ^= 0x40
open(p, 'wb').write(d)
PY
cp "$D/flip.sqsh" "$D/flip.before"
expect_fail 1 "chunk 0 (bytes 0..65536) does not match its digest" "$SQK" sign -k "$K/sqk.key" "$D/flip.sqsh"
cmp -s "$D/flip.sqsh" "$D/flip.before" || fail "a refused sign changed the damaged image"
sqk_build -q --no-checksums "$W/src" "$D/plain.sqsh"
expect_fail 1 "plain.sqsh has no integrity data" "$SQK" sign -k "$K/sqk.key" "$D/plain.sqsh"
head -c -1 "$W/orig.sqsh" >"$D/cut.sqsh"
expect_fail 1 "neither an integrity trailer nor a signature block" "$SQK" sign -k "$K/sqk.key" "$D/cut.sqsh"
cp "$W/two.sqsh" "$D/badblock.sqsh"
printf 'X' | dd of="$D/badblock.sqsh" bs=1 seek=$((E + 4096 - 64)) conv=notrunc 2>/dev/null
cp "$D/badblock.sqsh" "$D/badblock.before"
expect_fail 1 "the signature block at the end of the file is damaged" "$SQK" sign -k "$K/sqk.key" "$D/badblock.sqsh"
cmp -s "$D/badblock.sqsh" "$D/badblock.before" || fail "a refused sign changed the image"
[ "$(entries "$D")" = "badblock.before badblock.sqsh cut.sqsh flip.before flip.sqsh plain.sqsh " ] ||
	fail "refused signs left files behind: $(entries "$D")"
info "damaged, unprotected, cut images and a damaged block: refused, unchanged"

# 6. Bad keys: refused with exit 2, naming the file and the reason, before the image is read.
cp "$K/ossl.key" "$K/open.key"
chmod 644 "$K/open.key"
openssl genpkey -algorithm rsa -pkeyopt rsa_keygen_bits:2048 -out "$K/rsa.key" 2>/dev/null
openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:P-256 -out "$K/ec.key" 2>/dev/null
openssl genpkey -algorithm ed25519 -aes256 -pass pass:secret -out "$K/enc.key" 2>/dev/null
chmod 600 "$K/rsa.key" "$K/ec.key" "$K/enc.key"
cp "$W/img.sqsh" "$W/img.before"
expect_fail 2 "$K/open.key: mode 0644: a private key must not be readable" "$SQK" sign -k "$K/open.key" "$W/img.sqsh"
expect_fail 2 "chmod 600" "$SQK" sign -k "$K/open.key" "$W/img.sqsh"
expect_fail 2 "$K/rsa.key: a private RSA key, not Ed25519" "$SQK" sign -k "$K/rsa.key" "$W/img.sqsh"
expect_fail 2 "$K/ec.key: a private EC key, not Ed25519" "$SQK" sign -k "$K/ec.key" "$W/img.sqsh"
expect_fail 2 "$K/enc.key: an encrypted private key" "$SQK" sign -k "$K/enc.key" "$W/img.sqsh"
expect_fail 2 "$K/sqk.key.pub: a public key, not a private key" "$SQK" sign -k "$K/sqk.key.pub" "$W/img.sqsh"
expect_fail 2 "$K/none.key: cannot open" "$SQK" sign -k "$K/none.key" "$W/img.sqsh"
expect_fail 2 "--sign $K/rsa.key: a private RSA key" "$SQK" mkimage -q --sign "$K/rsa.key" "$W/src" "$W/no.sqsh"
expect_fail 2 "--sign needs integrity data" "$SQK" mkimage -q --sign "$K/sqk.key" --no-checksums "$W/src" "$W/no.sqsh"
[ ! -e "$W/no.sqsh" ] || fail "a refused mkimage --sign wrote an image"
expect_fail 2 "bad --comment" "$SQK" sign -k "$K/sqk.key" --comment "$(printf 'a\nb')" "$W/img.sqsh"
cmp -s "$W/img.sqsh" "$W/img.before" || fail "a refused sign changed the image"
info "bad keys (mode, RSA, EC, encrypted, public, missing) refused with exit 2, naming the file"

# 7. A sign that fails half-way (no space for the copy): the image as it was, no temporary.
if [ "$(id -u)" = 0 ]; then
	T=$W/tiny
	mkdir -p "$T"
	at_exit "umount '$T' 2>/dev/null"
	mount -t tmpfs -o size=$((E * 3 / 2)) tmpfs "$T" || fail "cannot mount a small tmpfs"
	cp "$W/orig.sqsh" "$T/img.sqsh"
	used=$(df --output=used "$T" | tail -n 1)
	expect_fail 1 "No space left on device" "$SQK" sign -k "$K/sqk.key" "$T/img.sqsh"
	grep -qF "img.sqsh unchanged" "$ERR_FILE" || { show_err; fail "no 'unchanged' in the message"; }
	cmp -s "$T/img.sqsh" "$W/orig.sqsh" || fail "a failed sign changed the image"
	[ "$(entries "$T")" = "img.sqsh " ] || fail "a failed sign left $(entries "$T")"
	[ "$(df --output=used "$T" | tail -n 1)" = "$used" ] || fail "a failed sign left space in use"
	umount "$T"
	info "no space for the copy: the image unchanged, no temporary file, no space held"
else
	info "not root: the tmpfs-full case did not run"
fi

# 8. --remove: by key id, by public key file; the last one removed gives the unsigned bytes.
must "$SQK" sign --remove "$OSSL_ID" "$W/img.sqsh"
check_block "$W/img.sqsh" "$SQK_ID:1700000000:"
expect_fail 1 "has no signature by key $OSSL_ID" "$SQK" sign --remove "$K/ossl.key.pub" "$W/img.sqsh"
must "$SQK" sign --remove "$K/sqk.key.pub" "$W/img.sqsh"
cmp -s "$W/img.sqsh" "$W/orig.sqsh" || fail "removing every signature did not give the unsigned image"
info "--remove by id and by .pub; the last removal gives back the unsigned bytes"

# 9. The sanitized build signs too (no report).
if san_start; then
	export SOURCE_DATE_EPOCH=$T0
	cp "$W/orig.sqsh" "$W/san.sqsh"
	san_sqk sansign sign -k "$K/ossl.key" --comment san "$W/san.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "sanitized sqk sign exited $RC"; }
	san_sqk sansign sign -k "$K/sqk.key" "$W/san.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "sanitized sqk sign exited $RC"; }
	check_block "$W/san.sqsh" "$OSSL_ID:1700000000:san" "$SQK_ID:1700000000:"
	san_sqk sanmk mkimage -q --sign "$K/ossl.key" "$W/src" "$W/sanmk.sqsh"
	[ "$RC" = 0 ] || { show_err; fail "sanitized sqk mkimage --sign exited $RC"; }
	[ "$(tail -c 8 "$W/sanmk.sqsh")" = SQKSIGS1 ] || fail "sanitized mkimage --sign: no block"
	san_sqk sanbad sign -k "$K/sqk.key" "$D/flip.sqsh"
	[ "$RC" = 1 ] || { show_err; fail "sanitized sqk sign of a damaged image exited $RC"; }
	info "the sanitized sqk signs and refuses without a report"
	unset SOURCE_DATE_EPOCH
fi
exit 0

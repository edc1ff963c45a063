#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Signed images trusted by key (issue 30, points 2 and 4), locally and through nginx:
#  1. --trust with a key from `openssl genpkey` and one from `sqk keygen`: a signed image reads
#     (content compared), its reads checked with SHA-256 (the fast checksums unused); an image
#     signed by another key, an unsigned one and one without integrity data are refused at open,
#     nothing on stdout, the message naming the key ids found; --trust-dir; two signatures with
#     one of them trusted; a public key that is not Ed25519 (RSA) and a private key given as
#     --trust are refused naming the file
#  2. tampering: a flipped byte in a signature, a changed signed comment, a signature block moved
#     from another image: refused, sqk info and sqk verify (--json too) say INVALID / valid false
#  3. remote (nginx): trusted and untrusted keys as locally; rollback: after an image signed at
#     T2 was accepted from a URL, one signed at T1 < T2 there is refused (exit 1, "rollback"),
#     accepted with --allow-rollback, and without a disk cache; a newer one is accepted
#  4. sqkfuse -o trust= (local and remote): mounts and serves a trusted image, refuses to mount
#     an untrusted one (exit 1, the reason on stderr); through a remote mount, a wrong key, a
#     tampered or moved signature and a rollback are refused
#  5. signatures with dm-verity: mkimage --verity=append --sign, sqk sign of an image with an
#     appended or a sidecar tree: trusted reads (local and http), sqk verify checks both, and
#     veritysetup still accepts the tree after signing
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd openssl python3 cmp
W=$(scratch trust)
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}

mkdir -p "$W/src/d" "$W/src2" "$W/k" "$W/kdir"
head -c 200000 /dev/urandom >"$W/src/d/f"
echo hello >"$W/src/g"
echo other >"$W/src2/g"
openssl genpkey -algorithm ed25519 -out "$W/k/a.key" 2>/dev/null || fail "openssl genpkey"
chmod 600 "$W/k/a.key"
openssl pkey -in "$W/k/a.key" -pubout -out "$W/k/a.pub" || fail "openssl pkey -pubout"
"$SQK" keygen "$W/k/b" >/dev/null || fail "sqk keygen b"
"$SQK" keygen "$W/k/c" >/dev/null || fail "sqk keygen c"
openssl genpkey -algorithm rsa -pkeyopt rsa_keygen_bits:2048 -out "$W/k/rsa.key" 2>/dev/null
openssl pkey -in "$W/k/rsa.key" -pubout -out "$W/k/rsa.pub" || fail "openssl rsa pubout"
id_of() { "$SQK" info "$1" | sed -n 's/^  key \([0-9a-f]\{16\}\) .*/\1/p' | head -1; }

export SOURCE_DATE_EPOCH=1700000000
sqk_build "$W/src" "$W/a.sqsh" --sign "$W/k/a.key" --sign-comment "v1"
sqk_build "$W/src" "$W/ab.sqsh" --sign "$W/k/a.key" --sign "$W/k/b"
sqk_build "$W/src" "$W/plain.sqsh"
sqk_build "$W/src2" "$W/other.sqsh" --sign "$W/k/a.key"
sqk_build --no-checksums "$W/src" "$W/none.sqsh"
unset SOURCE_DATE_EPOCH
IDA=$(id_of "$W/a.sqsh")
[ -n "$IDA" ] || fail "sqk info shows no key id for a.sqsh"

# ok_read IMG ARGS...: sqk cat of g reads "hello"
ok_read() {
	local img=$1
	shift
	run_capture ok "$SQK" cat "$@" "$img" g
	[ "$RC" = 0 ] && [ "$(cat "$OUT_FILE")" = hello ] || { show_err; fail "cat $* $img: not read"; }
}
# refused NEEDLE IMG ARGS...: sqk cat refuses at open, stdout empty, stderr holds NEEDLE
refused() {
	local needle=$1 img=$2
	shift 2
	run_capture no "$SQK" cat "$@" "$img" d/f
	[ "$RC" != 0 ] || fail "cat $* $img: read an image it must refuse"
	[ ! -s "$OUT_FILE" ] || fail "cat $* $img: wrote bytes of a refused image"
	grep -qF -- "$needle" "$ERR_FILE" || { show_err; fail "cat $* $img: no '$needle'"; }
}

# ---- 1. local ----------------------------------------------------------------------------
ok_read "$W/a.sqsh" --trust "$W/k/a.pub"
"$SQK" info --trust "$W/k/a.pub" "$W/a.sqsh" >"$W/info.txt" || fail "info --trust"
grep -q "XXH3-64 for verified reads (not used by this open)" "$W/info.txt" ||
	fail "a trusted open still uses the fast checksums"
grep -q "key $IDA .* valid, trusted  \"v1\"" "$W/info.txt" || fail "info: not 'valid, trusted v1'"
refused "signatures found: $IDA (valid, not trusted)" "$W/a.sqsh" --trust "$W/k/c.pub"
refused "not signed" "$W/plain.sqsh" --trust "$W/k/a.pub"
refused "no integrity data" "$W/none.sqsh" --trust "$W/k/a.pub"
cp "$W/k/c.pub" "$W/k/a.pub" "$W/kdir/"
ok_read "$W/a.sqsh" --trust-dir "$W/kdir"
ok_read "$W/ab.sqsh" --trust "$W/k/b.pub"
ok_read "$W/ab.sqsh" --trust "$W/k/c.pub" --trust "$W/k/b.pub"
refused "rsa.pub" "$W/a.sqsh" --trust "$W/k/rsa.pub"
refused "a.key" "$W/a.sqsh" --trust "$W/k/a.key"
mkdir -p "$W/empty"
refused "empty" "$W/a.sqsh" --trust-dir "$W/empty"
ok_read "$W/a.sqsh"  # no trust asked: reads as any image
# trusted keys verify reads even with --no-verify: a flipped byte of d/f's raw data is caught
python3 - "$W/a.sqsh" "$W/src/d/f" "$W/flip.sqsh" <<'PY' || fail "cannot flip a byte of d/f"
import sys
img = bytearray(open(sys.argv[1], "rb").read()); f = open(sys.argv[2], "rb").read()
at = img.find(f[100000:100064]); assert at > 0
img[at + 5] ^= 0x21
open(sys.argv[3], "wb").write(img)
PY
run_capture nv "$SQK" cat --no-verify --trust "$W/k/a.pub" "$W/flip.sqsh" d/f
[ "$RC" != 0 ] && grep -q "integrity check failed" "$ERR_FILE" ||
	{ show_err; fail "--trust --no-verify read a flipped byte"; }

# ---- 2. tampering ------------------------------------------------------------------------
# patch IMG OUT WHAT: OUT is IMG with its (first) signature's WHAT changed
patch() {
	python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], "rb").read())
L = struct.unpack_from("<Q", d, len(d) - 48)[0]
S = len(d) - L
if sys.argv[3] == "sig":
    d[S + 56 + 10] ^= 1
elif sys.argv[3] == "comment":
    assert d[S + 120:S + 122] == b"v1"
    d[S + 121] = ord("2")
open(sys.argv[2], "wb").write(d)
PY
}
patch "$W/a.sqsh" "$W/badsig.sqsh" sig || fail "patch sig"
patch "$W/a.sqsh" "$W/badcom.sqsh" comment || fail "patch comment"
# the signature block of other.sqsh (same key) after a.sqsh's image
python3 - "$W/a.sqsh" "$W/other.sqsh" "$W/moved.sqsh" <<'PY' || fail "moving a block"
import struct, sys
a = open(sys.argv[1], "rb").read(); o = open(sys.argv[2], "rb").read()
La = struct.unpack_from("<Q", a, len(a) - 48)[0]; Lo = struct.unpack_from("<Q", o, len(o) - 48)[0]
Ea = struct.unpack_from("<Q", a, len(a) - 40)[0]; Eo = struct.unpack_from("<Q", o, len(o) - 40)[0]
assert Ea == len(a) - La and Eo == len(o) - Lo
blk = bytearray(o[-Lo:])
struct.pack_into("<Q", blk, Lo - 40, Ea)  # a footer consistent with a.sqsh
open(sys.argv[3], "wb").write(a[:Ea] + bytes(blk))
PY
for t in badsig badcom moved; do
	refused "$IDA (INVALID, trusted)" "$W/$t.sqsh" --trust "$W/k/a.pub"
	"$SQK" info "$W/$t.sqsh" | grep -q "key $IDA .* INVALID" || fail "info $t: not INVALID"
	run_capture vj "$SQK" verify --json --trust "$W/k/a.pub" "$W/$t.sqsh"
	[ "$RC" = 4 ] || { show_err; fail "verify --trust of $t: exit $RC, want 4"; }
	grep -q "\"key_id\": \"$IDA\".*\"valid\": false, \"trusted\": true" "$OUT_FILE" ||
		fail "verify --json $t: the signature is not valid false, trusted true"
	grep -q '"trusted": false' "$OUT_FILE" || fail "verify --json $t: not trusted false"
done
run_capture vg "$SQK" verify --trust "$W/k/a.pub" "$W/a.sqsh"
[ "$RC" = 0 ] && grep -q "key $IDA .* valid, trusted" "$OUT_FILE" || { show_err; fail "verify --trust of a good image"; }

# ---- 3. remote ---------------------------------------------------------------------------
if have_feature remote && { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; }; then
	mkdir -p "$W/www" "$W/cache"
	cp "$W/a.sqsh" "$W/www/a.sqsh"
	http_serve "$W/www"
	U=$HTTP_URL
	ok_read "$U/a.sqsh" --trust "$W/k/a.pub" --cache-size 0
	refused "(valid, not trusted)" "$U/a.sqsh" --trust "$W/k/c.pub" --cache-size 0
	# rollback: T2 accepted, then T1 < T2 at the same URL
	cp "$W/plain.sqsh" "$W/t2.sqsh"
	"$SQK" sign -q --key "$W/k/a.key" --time 2000000000 "$W/t2.sqsh" || fail "sign t2"
	cp "$W/plain.sqsh" "$W/t1.sqsh"
	"$SQK" sign -q --key "$W/k/a.key" --time 1900000000 "$W/t1.sqsh" || fail "sign t1"
	cp "$W/plain.sqsh" "$W/t3.sqsh"
	"$SQK" sign -q --key "$W/k/a.key" --time 2100000000 "$W/t3.sqsh" || fail "sign t3"
	cp "$W/t2.sqsh" "$W/www/r.sqsh"
	ok_read "$U/r.sqsh" --trust "$W/k/a.pub" --cache-dir "$W/cache"
	ls "$W/cache/trusted/" | grep -q . || fail "no rollback record in the cache folder"
	cp "$W/t1.sqsh" "$W/www/r.sqsh"
	refused "rollback" "$U/r.sqsh" --trust "$W/k/a.pub" --cache-dir "$W/cache"
	ok_read "$U/r.sqsh" --trust "$W/k/a.pub" --cache-dir "$W/cache" --allow-rollback
	refused "rollback" "$U/r.sqsh" --trust "$W/k/a.pub" --cache-dir "$W/cache"
	ok_read "$U/r.sqsh" --trust "$W/k/a.pub" --cache-size 0
	cp "$W/t3.sqsh" "$W/www/r.sqsh"
	ok_read "$U/r.sqsh" --trust "$W/k/a.pub" --cache-dir "$W/cache"
	cp "$W/t2.sqsh" "$W/www/r.sqsh"
	refused "older than the image signed at 2100000000" "$U/r.sqsh" --trust "$W/k/a.pub" \
		--cache-dir "$W/cache"
	# signatures are fetched with the tail: info over http shows them
	"$SQK" info --cache-size 0 "$U/a.sqsh" | grep -q "key $IDA .* valid" ||
		fail "info over http shows no signature"
else
	info "remote part skipped (no remote feature or nginx)"
fi

# ---- 5. signatures and dm-verity together -------------------------------------------------
# an appended tree between the integrity data and the signatures; signing after the build keeps
# the tree valid (it covers [0, E) only), as it keeps a sidecar valid
sqk_build "$W/src" "$W/va.sqsh" --verity=append --sign "$W/k/a.key"
cp "$W/va.sqsh" "$W/vb.sqsh"
sqk_build "$W/src" "$W/vc.sqsh" --verity=append
"$SQK" sign -q --key "$W/k/b" "$W/vc.sqsh" || fail "sqk sign of an image with an appended tree"
sqk_build "$W/src" "$W/vs.raw" --verity --sign "$W/k/a.key"
"$SQK" sign -q --key "$W/k/b" "$W/vs.raw" || fail "sqk sign of an image with a sidecar tree"
ok_read "$W/va.sqsh" --trust "$W/k/a.pub"
ok_read "$W/vc.sqsh" --trust "$W/k/b.pub"
ok_read "$W/vs.raw" --trust "$W/k/b.pub" --trust "$W/k/a.pub"
for v in vc vs; do
	run_capture vv "$SQK" verify --trust "$W/k/b.pub" "$W/$v.$( [ $v = vs ] && echo raw || echo sqsh)"
	[ "$RC" = 0 ] || { show_err; fail "verify of $v: exit $RC"; }
	grep -q "dm-verity: .*0 bad" "$OUT_FILE" || fail "verify of $v: the tree was not checked"
	grep -q "valid, trusted" "$OUT_FILE" || fail "verify of $v: the signature not shown trusted"
done
if command -v veritysetup >/dev/null; then
	E=$("$SQK" verify "$W/vc.sqsh" | sed -n 's/.*dm-verity: appended at \([0-9]*\),.*/\1/p')
	[ -n "$E" ] || fail "verify does not say where the appended tree is"
	veritysetup verify "$W/vc.sqsh" "$W/vc.sqsh" "$(cat "$W/vc.sqsh.roothash")" \
		--hash-offset="$E" || fail "veritysetup refuses the tree of a signed image"
	veritysetup verify "$W/vs.raw" "$W/vs.verity" "$(cat "$W/vs.roothash")" ||
		fail "veritysetup refuses the sidecar of an image signed after its build"
fi
# on a block device larger than the image (a partition): the tree and the signatures are found
# forward from the image, as its integrity data is
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null; then
	cp "$W/vc.sqsh" "$W/part.img"
	truncate -s $(($(stat -c %s "$W/vc.sqsh") + 1048576)) "$W/part.img"
	if LOOP=$(losetup -f --show -r "$W/part.img" 2>/dev/null); then
		at_exit "losetup -d $LOOP"
		ok_read "$LOOP" --trust "$W/k/b.pub"
		refused "(valid, not trusted)" "$LOOP" --trust "$W/k/c.pub"
	fi
fi
if [ -n "${U:-}" ]; then
	cp "$W/vc.sqsh" "$W/www/vc.sqsh"
	ok_read "$U/vc.sqsh" --trust "$W/k/b.pub" --cache-size 0
	refused "(valid, not trusted)" "$U/vc.sqsh" --trust "$W/k/a.pub" --cache-size 0
fi

# ---- 4. sqkfuse ----------------------------------------------------------------------------
if have_feature fuse && [ -e /dev/fuse ] && [ -x "$SQKFUSE" ]; then
	fuse_mount "$W/a.sqsh" "$W/m1" -o "trust=$W/k/c.pub,trust=$W/k/a.pub"
	cmp -s "$W/m1/d/f" "$W/src/d/f" || fail "sqkfuse -o trust: d/f differs"
	fuse_umount "$W/m1"
	mkdir -p "$W/m2" "$W/m5"
	run_capture fm "$SQKFUSE" "$W/a.sqsh" "$W/m2" -f -o "trust=$W/k/c.pub"
	[ "$RC" = 1 ] || { show_err; fail "sqkfuse -o trust= of an untrusted image: exit $RC"; }
	grep -q "no valid signature by a trusted key" "$ERR_FILE" || { show_err; fail "sqkfuse: no reason"; }
	mountpoint -q "$W/m2" && fail "an untrusted image was mounted"
	if [ -n "${U:-}" ]; then
		fuse_mount "$U/a.sqsh" "$W/m3" -o "trust_dir=$W/kdir,cache_size=0"
		cmp -s "$W/m3/d/f" "$W/src/d/f" || fail "remote sqkfuse -o trust_dir: d/f differs"
		fuse_umount "$W/m3"
		cp "$W/ab.sqsh" "$W/www/ab.sqsh"
		fuse_mount "$U/ab.sqsh" "$W/m4" -o "trust=$W/k/b.pub,cache_size=0"
		cmp -s "$W/m4/d/f" "$W/src/d/f" || fail "remote mount, one of two keys trusted"
		fuse_umount "$W/m4"
		# refused through a remote mount: wrong key, tampered, moved, rollback
		for t in a:c badsig:a badcom:a moved:a r:a; do
			img=${t%%:*} key=${t##*:}
			[ "$img" = r ] || cp "$W/$img.sqsh" "$W/www/$img.sqsh"
			run_capture rm "$SQKFUSE" "$U/$img.sqsh" "$W/m5" -f \
				-o "trust=$W/k/$key.pub,cache_dir=$W/cache"
			[ "$RC" = 1 ] || { show_err; fail "remote mount of $img trusting $key: exit $RC"; }
			grep -q "no valid signature\|rollback" "$ERR_FILE" || { show_err; fail "remote mount of $img: no reason"; }
			mountpoint -q "$W/m5" && fail "remote $img was mounted"
		done
		grep -q "rollback" "$ERR_FILE" || { show_err; fail "remote mount: the rollback not named"; }
		fuse_mount "$U/r.sqsh" "$W/m6" -o "trust=$W/k/a.pub,cache_dir=$W/cache,allow_rollback"
		[ "$(cat "$W/m6/g")" = hello ] || fail "remote mount with allow_rollback"
		fuse_umount "$W/m6"
	fi
else
	info "sqkfuse part skipped"
fi
echo ok

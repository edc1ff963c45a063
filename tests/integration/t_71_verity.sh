#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# dm-verity in the pass that writes the image (sqk mkimage --verity), checked by veritysetup in
# user space (this kernel has no device-mapper: a dm-verity mount is not tested): the sidecars
# foo.verity and foo.roothash (systemd's names for foo.raw) pass `veritysetup verify`, and so
# does the tree appended with --verity=append at the --hash-offset printed; one flipped byte of
# the image fails both and `sqk verify` (exit 4, naming the data block); `veritysetup dump` shows
# the salt and data blocks; two builds give the same root hash, --verity-salt is the salt; the
# image is byte for byte the one built without --verity; the .p7s is the PKCS#7 signature of the
# root hash's hex digits that `openssl smime -verify` / `openssl cms -verify` accept with the
# certificate (RSA and ECDSA), and a key that does not match, or an Ed25519 key, is refused
# before anything is written; a failed build leaves no file; the image with an appended tree
# mounts with the kernel, extracts with unsquashfs and sqk, identical to the source.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd veritysetup openssl python3 cmp
W=$(scratch verity)
export SOURCE_DATE_EPOCH=1700000000

python3 - "$W/src" <<'PY'
import os, random, sys
r = random.Random(69)
d = sys.argv[1]
os.makedirs(os.path.join(d, 'sub'))
open(os.path.join(d, 'raw.bin'), 'wb').write(r.randbytes(3 << 20))
open(os.path.join(d, 'sub', 'text.txt'), 'wb').write(b''.join(b'line %d\n' % i for i in range(50000)))
for i in range(40):
    open(os.path.join(d, 'sub', 'f%02d' % i), 'wb').write(r.randbytes(r.randrange(1, 9000)))
PY

# field NAME FILE: the value of "NAME: value" in veritysetup dump's output FILE
field() {
	sed -n "s/^$1:[[:space:]]*//p" "$2" | head -n 1
}

# 1. The sidecars, named as systemd looks for them, and veritysetup's verdict on them.
O=$W/o
mkdir -p "$O"
sqk_build "$W/src" "$O/foo.raw" --verity
[ "$(ls "$O")" = "$(printf 'foo.raw\nfoo.roothash\nfoo.verity')" ] ||
	fail "expected foo.raw, foo.roothash, foo.verity; got: $(ls "$O" | tr '\n' ' ')"
grep -qx '[0-9a-f]\{64\}' "$O/foo.roothash" && [ "$(stat -c %s "$O/foo.roothash")" = 65 ] ||
	fail "foo.roothash is not 64 lower-case hex digits and a newline: $(od -c "$O/foo.roothash" | head -3)"
root=$(cat "$O/foo.roothash")
grep -q "root hash $root in $O/foo.roothash" "$TMP/build.out" ||
	fail "the summary does not name the root hash: $(grep verity "$TMP/build.out")"
run_capture vs veritysetup verify "$O/foo.raw" "$O/foo.verity" "$root"
[ "$RC" = 0 ] || { show_err; fail "veritysetup verify refused the sidecar"; }
veritysetup dump "$O/foo.verity" >"$TMP/dump" || fail "veritysetup dump failed"
size=$(stat -c %s "$O/foo.raw")
[ "$(field 'Data blocks' "$TMP/dump")" = $((size / 4096)) ] ||
	fail "dump: $(field 'Data blocks' "$TMP/dump") data blocks, the image has $((size / 4096))"
salt=$(sed -n 's/^verity .*, salt \([0-9a-f-]*\)$/\1/p' "$TMP/build.out")
[ ${#salt} = 64 ] && [ "$(field Salt "$TMP/dump")" = "$salt" ] ||
	fail "dump's salt '$(field Salt "$TMP/dump")', the summary's '$salt'"
[ "$(field 'Hash type' "$TMP/dump")" = 1 ] && [ "$(field 'Hash algorithm' "$TMP/dump")" = sha256 ] &&
	[ "$(field 'Data block size' "$TMP/dump")" = 4096 ] || fail "dump: $(cat "$TMP/dump")"
info "sidecar: root $root, $((size / 4096)) data blocks, salt $salt"

# the image itself is the one built without --verity, and other names get the suffix appended
sqk_build "$W/src" "$W/plain.sqsh"
cmp -s "$O/foo.raw" "$W/plain.sqsh" || fail "--verity changed the image's bytes"
sqk_build "$W/src" "$W/img.sqsh" --verity
[ -f "$W/img.sqsh.verity" ] && [ -f "$W/img.sqsh.roothash" ] || fail "no img.sqsh.verity / .roothash"
cmp -s "$W/img.sqsh.roothash" "$O/foo.roothash" || fail "the same image, another root hash"

# 2. Reproducible: a second build gives the same tree; another SOURCE_DATE_EPOCH another salt.
sqk_build "$W/src" "$W/again.raw" --verity
cmp -s "$W/again.roothash" "$O/foo.roothash" && cmp -s "$W/again.verity" "$O/foo.verity" ||
	fail "two builds of the same tree give different trees"
SOURCE_DATE_EPOCH=1700000001 sqk_build "$W/src" "$W/later.raw" --verity
cmp -s "$W/later.roothash" "$O/foo.roothash" && fail "another image time, the same root hash"

# 3. --verity-salt: the salt veritysetup reads, and none.
sqk_build "$W/src" "$W/salted.raw" --verity --verity-salt 00112233aAbB
veritysetup dump "$W/salted.verity" >"$TMP/dump" || fail "veritysetup dump failed"
[ "$(field Salt "$TMP/dump")" = 00112233aabb ] || fail "salt $(field Salt "$TMP/dump"), asked 00112233aabb"
must veritysetup verify "$W/salted.raw" "$W/salted.verity" "$(cat "$W/salted.roothash")"
cmp -s "$W/salted.roothash" "$O/foo.roothash" && fail "another salt, the same root hash"
sqk_build "$W/src" "$W/nosalt.raw" --verity --verity-salt -
veritysetup dump "$W/nosalt.verity" >"$TMP/dump" || fail "veritysetup dump failed"
[ "$(field Salt "$TMP/dump")" = - ] || fail "--verity-salt -: salt $(field Salt "$TMP/dump")"
must veritysetup verify "$W/nosalt.raw" "$W/nosalt.verity" "$(cat "$W/nosalt.roothash")"

# 4. sqk verify reports the tree; a flipped byte fails veritysetup and sqk verify.
run_capture sv "$SQK" verify "$O/foo.raw"
[ "$RC" = 0 ] || { cat "$OUT_FILE" >&2; fail "sqk verify of the good image exited $RC"; }
grep -q "dm-verity: sidecar $O/foo.verity, $((size / 4096)) data blocks checked, 0 bad, root hash matches $O/foo.roothash" "$OUT_FILE" ||
	fail "sqk verify does not report the tree: $(cat "$OUT_FILE")"
"$SQK" verify --json "$O/foo.raw" >"$TMP/v.json" || fail "sqk verify --json exited $?"
python3 - "$TMP/v.json" "$root" <<'PY' || fail "sqk verify --json: bad verity object"
import json, sys
v = json.load(open(sys.argv[1]))["verity"]
assert v["where"] == "sidecar" and v["root_hash"] == sys.argv[2], v
assert v["root_hash_ok"] is True and v["bad_data_blocks"] == 0 and v["bad_hash_blocks"] == 0, v
PY
B=$W/bad
mkdir -p "$B"
cp "$O/foo.raw" "$O/foo.verity" "$O/foo.roothash" "$B/"
python3 - "$B/foo.raw" <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:  # a byte of data block 100
    f.seek(100 * 4096 + 1234)
    b = f.read(1)
    f.seek(100 * 4096 + 1234)
    f.write(bytes([b[0] ^ 0x20]))
PY
run_capture vbad veritysetup verify "$B/foo.raw" "$B/foo.verity" "$root"
[ "$RC" != 0 ] || fail "veritysetup verify accepted the image with a flipped byte"
grep -qi "verification failed" "$ERR_FILE" || { show_err; fail "veritysetup did not say why"; }
run_capture sbad "$SQK" verify "$B/foo.raw"
[ "$RC" = 4 ] || { cat "$OUT_FILE" >&2; fail "sqk verify of the flipped image exited $RC, not 4"; }
grep -q "error in dm-verity (bytes 409600..413696): data block 100 does not match" "$OUT_FILE" ||
	fail "sqk verify does not name data block 100: $(cat "$OUT_FILE")"
"$SQK" verify --json "$B/foo.raw" >"$TMP/v.json"
python3 - "$TMP/v.json" <<'PY' || fail "sqk verify --json: the flipped block"
import json, sys
j = json.load(open(sys.argv[1]))
v = j["verity"]
assert v["bad_data_blocks"] == 1 and v["first_bad_data_block"] == 100, v
assert any(f["region"] == "dm-verity" for f in j["findings"]), j["findings"]
PY
# a root hash file that is not the tree's
cp "$W/salted.roothash" "$B/foo.roothash"
cp "$O/foo.raw" "$B/foo.raw"
run_capture sroot "$SQK" verify "$B/foo.raw"
[ "$RC" = 4 ] && grep -q "root hash .* differs from $(cat "$W/salted.roothash") in" "$OUT_FILE" ||
	{ cat "$OUT_FILE" >&2; fail "sqk verify: a wrong root hash file not reported (exit $RC)"; }

# 5. --verity=append: the tree after the image, at the offset printed.
A=$W/a
mkdir -p "$A"
sqk_build "$W/src" "$A/app.sqsh" --verity=append
E=$(sed -n 's/.*--hash-offset=\([0-9]*\).*/\1/p' "$TMP/build.out")
[ -n "$E" ] && [ "$E" = "$size" ] || fail "--hash-offset '$E', the image's end is $size"
[ ! -e "$A/app.sqsh.verity" ] || fail "--verity=append wrote app.sqsh.verity"
cmp -s "$A/app.sqsh.roothash" "$O/foo.roothash" || fail "the appended tree has another root hash"
cmp -s -n "$E" "$A/app.sqsh" "$O/foo.raw" || fail "the image before the appended tree differs"
must veritysetup verify "$A/app.sqsh" "$A/app.sqsh" "$root" --hash-offset="$E"
veritysetup dump "$A/app.sqsh" --hash-offset="$E" >"$TMP/dump" || fail "veritysetup dump (appended) failed"
[ "$(field 'Data blocks' "$TMP/dump")" = $((E / 4096)) ] || fail "appended: $(cat "$TMP/dump")"
run_capture sva "$SQK" verify "$A/app.sqsh"
[ "$RC" = 0 ] && grep -q "dm-verity: appended at $E, $((E / 4096)) data blocks checked, 0 bad, root hash matches" "$OUT_FILE" ||
	{ cat "$OUT_FILE" >&2; fail "sqk verify of the appended image (exit $RC)"; }
cp "$A/app.sqsh" "$B/app.sqsh"
printf 'x' | dd of="$B/app.sqsh" bs=1 seek=$((37 * 4096 + 5)) conv=notrunc status=none
run_capture abad veritysetup verify "$B/app.sqsh" "$B/app.sqsh" "$root" --hash-offset="$E"
[ "$RC" != 0 ] || fail "veritysetup verify accepted the appended image with a flipped byte"
run_capture sabad "$SQK" verify "$B/app.sqsh"
[ "$RC" = 4 ] && grep -q "data block 37 does not match" "$OUT_FILE" ||
	{ cat "$OUT_FILE" >&2; fail "sqk verify of the flipped appended image (exit $RC)"; }

# 6. Signed: the .p7s of the root hash text, checked by openssl with the certificate.
K=$W/keys
mkdir -p "$K"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$K/rsa.key" -out "$K/rsa.crt" -days 3 \
	-subj /CN=sqk-verity-test 2>/dev/null || fail "openssl req (RSA) failed"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$K/ec.key" \
	-out "$K/ec.crt" -days 3 -subj /CN=sqk-verity-ec 2>/dev/null || fail "openssl req (EC) failed"
openssl genpkey -algorithm ed25519 -out "$K/ed.key" || fail "openssl genpkey failed"
S=$W/s
mkdir -p "$S"
sqk_build "$W/src" "$S/s.raw" --verity --verity-cert "$K/rsa.crt" --verity-key "$K/rsa.key"
[ -s "$S/s.roothash.p7s" ] || fail "no s.roothash.p7s"
cmp -s "$S/s.roothash" "$O/foo.roothash" || fail "signing changed the root hash"
printf '%s' "$root" >"$K/content"
run_capture smime openssl smime -verify -binary -inform DER -in "$S/s.roothash.p7s" \
	-content "$K/content" -CAfile "$K/rsa.crt" -purpose any -out /dev/null
[ "$RC" = 0 ] || { show_err; fail "openssl smime -verify refused the signature"; }
run_capture smime2 openssl smime -verify -binary -inform DER -in "$S/s.roothash.p7s" \
	-content "$W/salted.roothash" -CAfile "$K/rsa.crt" -purpose any -out /dev/null
[ "$RC" != 0 ] || fail "openssl smime -verify accepted the signature over another root hash"
sqk_build "$W/src" "$S/e.raw" --verity --verity-cert "$K/ec.crt" --verity-key "$K/ec.key"
run_capture cms openssl cms -verify -binary -inform DER -in "$S/e.roothash.p7s" \
	-content "$K/content" -CAfile "$K/ec.crt" -purpose any -out /dev/null
[ "$RC" = 0 ] || { show_err; fail "openssl cms -verify refused the ECDSA signature"; }
dir_state "$S" >"$TMP/state"
for bad in "$K/rsa.crt $K/ec.key does not match the certificate" \
	"$K/rsa.crt $K/ed.key is an Ed25519 key" "$K/ed.key $K/ed.key cannot read the X.509"; do
	set -- $bad
	run_capture badkey "$SQK" mkimage "$W/src" "$S/x.raw" --verity --verity-cert "$1" --verity-key "$2"
	[ "$RC" = 1 ] || fail "--verity-cert $1 --verity-key $2: exit $RC"
	grep -q "$(basename "$2")\|$(basename "$1")" "$ERR_FILE" && grep -q "${*:3}" "$ERR_FILE" ||
		{ show_err; fail "--verity-cert $1 --verity-key $2: the message does not say why"; }
done
assert_dir_state "$S" "$TMP/state" "refused keys"
# a build without signing removes the older signature, which would not match
sqk_build "$W/src" "$S/s.raw" --verity
[ ! -e "$S/s.roothash.p7s" ] || fail "the older s.roothash.p7s was left beside the new image"
grep -q "removed '$S/s.roothash.p7s'" "$TMP/build.err" || fail "no note of the removal"

# 7. A failed build leaves nothing: the image's writes fail past 1 MiB (RLIMIT_FSIZE).
F=$W/f
mkdir -p "$F"
run_capture fsize bash -c "trap '' XFSZ; ulimit -f 1024; exec \"\$0\" mkimage \"\$1\" \"\$2\" --verity" \
	"$SQK" "$W/src" "$F/f.raw"
[ "$RC" = 1 ] || { show_err; fail "a build past RLIMIT_FSIZE exited $RC"; }
[ -z "$(ls -A "$F")" ] || fail "a failed build left: $(ls -A "$F")"

# 8. The appended image reads everywhere: the kernel, unsquashfs, sqk.
$MKTREE "$W/rich" || fail "mktree failed"
SOURCE_DATE_EPOCH= sqk_build "$W/rich" "$A/rich.sqsh" --verity=append # mtimes kept
E=$(sed -n 's/.*--hash-offset=\([0-9]*\).*/\1/p' "$TMP/build.out")
must veritysetup verify "$A/rich.sqsh" "$A/rich.sqsh" "$(cat "$A/rich.sqsh.roothash")" --hash-offset="$E"
must "$SQK" extract "$A/rich.sqsh" "$W/sx"
tree_equal "sqk extract (appended tree)" "$W/rich" "$W/sx"
rm -rf "$W/sx"
if command -v unsquashfs >/dev/null; then
	extract "$A/rich.sqsh" "$W/ux"
	tree_equal "unsquashfs (appended tree)" "$W/rich" "$W/ux"
	rm -rf "$W/ux"
fi
if [ "$(id -u)" = 0 ] && [ -e /dev/loop-control ] && grep -qw squashfs /proc/filesystems; then
	mount_sq "$A/rich.sqsh" "$W/kmnt"
	tree_equal "kernel mount (appended tree)" "$W/rich" "$W/kmnt"
	umount_sq "$W/kmnt"
else
	info "no kernel squashfs mounts here; skipped that part"
fi
info "dm-verity: sidecar, appended, signed and refused as expected"

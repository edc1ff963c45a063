#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The digest tree (integrity trailer version 2, sqk mkimage --digest-tree), on an image of about
# 60 MB of incompressible files with 4 KiB chunks (several groups of 4096 chunk digests):
#  1. the layout, checked independently here: chunk digests, group digests G[g] = SHA-256 of
#     group g's chunk digests, zero padding, the trailer's version 2 fields, root = SHA-256 of
#     the trailer (root zeroed) and the group digests; sqk info (text and --json) says "tree"
#     and the group count; without --digest-tree the same tree is flat (version 1)
#  2. the kernel (loop mount) and unsquashfs give the source back; sqk verify passes
#  3. a byte flipped inside group 2's chunk digests: sqk verify fails naming group 2, its chunks
#     and the image bytes they cover; sqk cat of a file in group 0 still reads right, one in
#     group 2 fails naming the group
#  4. remote (nginx on 127.0.0.1, bytes from its access log): opening and reading one file
#     fetches the tail from the group digests on (not the chunk digest array), one range
#     request per digest group it needs (exactly that group's bytes: the file's, and the last
#     one for the metadata tables unless the tail request held it), and the file's chunks;
#     reading every file gives the right bytes and fetches each group at most once (exactly
#     once when the tail did not bring it); a second read with a warm disk cache fetches no
#     group; without the groups on disk, the cached chunks are checked once their group comes:
#     a wrong cached chunk (another chunk's file, taken before its group arrived) is refused
#     and fetched again alone, two swapped group files are both refused and fetched again; the
#     damaged image on the server: a file of group 2 fails naming the group, a file of group 0
#     reads right; a 404 for group 2's request fails the read, logged naming the group
#  5. sqkfuse over the URL: 8 concurrent cold readers of files of one group make one request
#     for its digests; through a mount of the damaged image a file of group 2 gives EIO (twice,
#     the group requested again each time: a failure is not kept), logged naming the group,
#     while a file of group 0 reads right
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_cmd python3 cmp
DIR=$(cd "$(dirname "$0")" && pwd)
W=$(scratch tree)

# 56 files of exactly 1 MiB (8 blocks, no tails) of random bytes, and a few small ones
mkdir -p "$W/src/d" "$W/src/s" "$W/www"
for i in $(seq -w 1 56); do
	head -c 1048576 /dev/urandom >"$W/src/d/f$i"
done
for i in 1 2 3; do
	head -c $((i * 3000)) /dev/urandom >"$W/src/s/small$i"
done
IMG=$W/www/img.sqk
# gzip: sqfs_patch.py (the layout check) reads gzip metadata
sqk_build -c gzip --digest-tree --checksum-chunk 4K "$W/src" "$IMG"
SIZE=$(stat -c %s "$IMG")

# ---- 1. the layout, independently; which group each file lies in --------------------------
python3 - "$DIR" "$IMG" "$W/groups" "$W/layout" <<'PY' || fail "the digest tree's layout is wrong"
import hashlib, struct, sys
sys.path.insert(0, sys.argv[1])
from sqfs_patch import Image
data = open(sys.argv[2], "rb").read()
t = data[-128:]
assert t[:8] == b"SQKINTG1" and t[120:] == b"SQKINTG1", "trailer magics"
ver, cs, cov, hat, n = struct.unpack_from("<IIQQQ", t, 8)
gc, z, gat, ng = struct.unpack_from("<IIQQ", t, 72)
assert ver == 2, "version %d, expected 2 (a tree)" % ver
assert cs == 4096 and hat == cov and n == (cov + cs - 1) // cs, (cs, cov, hat, n)
assert gc == 4096 and z == 0 and gat == cov + 32 * n and ng == (n + gc - 1) // gc, (gc, z, gat, ng)
assert ng >= 4, "only %d groups" % ng
assert t[96:120] == bytes(24), "reserved bytes not zero"
end = gat + 32 * ng
assert len(data) == (end + 128 + 4095) // 4096 * 4096, "the trailer does not end the file"
assert data[end:len(data) - 128] == bytes(len(data) - 128 - end), "padding not zero"
for k in range(n):
    assert hashlib.sha256(data[k * cs:min((k + 1) * cs, cov)]).digest() == data[cov + 32 * k:cov + 32 * k + 32], "chunk digest %d" % k
for g in range(ng):
    a, b = cov + 32 * g * gc, cov + 32 * min((g + 1) * gc, n)
    assert hashlib.sha256(data[a:b]).digest() == data[gat + 32 * g:gat + 32 * g + 32], "group digest %d" % g
root = hashlib.sha256(t[:40] + bytes(32) + t[72:] + data[gat:end]).digest()
assert root == t[40:72], "root digest"
im = Image(sys.argv[2])
bs = im.sb["block_size"]
with open(sys.argv[3], "w") as o:
    for i in range(1, 57):
        p = "d/f%02d" % i
        d = im.lookup(p)
        s, e = d["blocks"], d["blocks"] + d["size"]  # stored raw: size bytes of blocks
        g0, g1 = s // cs // gc, (e - 1) // cs // gc
        if g0 == g1:
            o.write("%s %d %d %d\n" % (p, g0, s, e))
# the metadata tables: from the inode table to bytes_used
meta_group = (im.sb["bytes_used"] - 1) // cs // gc
with open(sys.argv[4], "w") as o:
    o.write("%d %d %d %d %d\n" % (cov, gat, ng, n, meta_group))
    for g in range(ng):
        o.write("%d %d\n" % (cov + 32 * g * gc, cov + 32 * min((g + 1) * gc, n)))
print("  layout: %d chunks, %d groups of %d, groups at %d, file %d bytes" % (n, ng, gc, gat, len(data)))
PY
read -r COV GAT NG NCH META_G < <(head -n 1 "$W/layout")
info "digest tree: $NG groups; the metadata tables in group $META_G"
pick() { awk -v g="$1" '$2 == g { print $1; exit }' "$W/groups"; }
F0=$(pick 0)
F2=$(pick 2)
[ -n "$F0" ] && [ -n "$F2" ] || fail "no file wholly inside group 0 or group 2: $(cat "$W/groups")"

sqk_t sqk info --json "$IMG"
[ "$RC" = 0 ] || { show_err; fail "sqk info --json exited $RC"; }
python3 - "$OUT_FILE" "$NG" <<'PY' || fail "sqk info --json does not describe the tree"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["digest_layout"] == "tree", j.get("digest_layout")
assert j["digest_groups"] == int(sys.argv[2]), j.get("digest_groups")
assert j["digests_per_group"] == 4096, j.get("digests_per_group")
assert j["integrity"] == "ok" and j["integrity_chunk_size"] == 4096, j
assert j["damaged_digest_groups"] == 0, j.get("damaged_digest_groups")
PY
"$SQK" info "$IMG" | grep -q "^digest layout: *tree: $NG groups of 4096 digests" ||
	fail "sqk info does not show the tree: $("$SQK" info "$IMG" | grep -i digest)"
sqk_build -c gzip --checksum-chunk 4K "$W/src" "$W/flat.sqk"
"$SQK" info --json "$W/flat.sqk" | grep -q '"digest_layout": "flat"' ||
	fail "an image without --digest-tree (digests under 4 MiB) is not flat"
python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read()[-128:]; sys.exit(struct.unpack_from("<I", d, 8)[0] != 1)' "$W/flat.sqk" ||
	fail "the flat image's trailer is not version 1"
info "sqk info: tree of $NG groups; without --digest-tree: flat (version 1)"

# ---- 2. other readers, and sqk verify ----------------------------------------------------------
need_kernel_mount
mount_sq "$IMG" "$W/mnt"
tree_equal "kernel mount" "$W/src" "$W/mnt"
umount_sq "$W/mnt"
if command -v unsquashfs >/dev/null; then
	extract "$IMG" "$W/x"
	tree_equal "unsquashfs" "$W/src" "$W/x"
	rm -rf "$W/x"
else
	info "no unsquashfs here: not compared"
fi
sqk_t sqk verify "$IMG"
[ "$RC" = 0 ] || { show_err; fail "sqk verify of the tree image exited $RC"; }
grep -q "clean" "$OUT_FILE" "$ERR_FILE" || fail "sqk verify did not say clean: $(cat "$OUT_FILE" "$ERR_FILE")"
info "sqk verify: clean"

# ---- 3. group 2's chunk digests damaged --------------------------------------------------------
BAD=$W/www/bad.sqk
read -r G2S G2E <<<"$(sed -n 4p "$W/layout")" # the line after the header is group 0
python3 - "$IMG" "$BAD" "$G2S" <<'PY' || fail "cannot damage the image"
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[int(sys.argv[3]) + 32 * 100 + 7] ^= 0x40  # chunk digest 100 of group 2
open(sys.argv[2], "wb").write(d)
PY
K0=$((2 * 4096)) K1=$((3 * 4096 - 1))
[ $K1 -lt "$NCH" ] || K1=$((NCH - 1))
sqk_t sqk verify "$BAD"
[ "$RC" != 0 ] || fail "sqk verify passed an image whose digest group 2 is damaged"
grep -q "digest group 2 (chunks $K0..$K1, image bytes $((K0 * 4096))..$(((K1 + 1) * 4096 - 1))" "$OUT_FILE" "$ERR_FILE" ||
	fail "sqk verify does not name group 2, its chunks and bytes: $(cat "$OUT_FILE" "$ERR_FILE")"
info "sqk verify of the damaged image: exit $RC, names group 2 (chunks $K0..$K1)"
sqk_t sqk cat "$BAD" "$F0"
[ "$RC" = 0 ] || { show_err; fail "sqk cat of $F0 (group 0) failed on the image with group 2 damaged"; }
cmp -s "$OUT_FILE" "$W/src/$F0" || fail "sqk cat of $F0 (group 0) gave wrong bytes"
sqk_t sqk cat "$BAD" "$F2"
[ "$RC" != 0 ] || fail "sqk cat of $F2 (group 2) succeeded though its digests are damaged"
grep -q "digest group 2" "$ERR_FILE" || fail "the failed read does not name the group: $(cat "$ERR_FILE")"
info "local reads: $F0 (group 0) right, $F2 (group 2) refused naming the group"
# sqk info: the open logs the bad group and reads on; what it prints says the data is damaged
sqk_t sqk info --json "$BAD"
[ "$RC" = 0 ] || { show_err; fail "sqk info --json of the image with group 2 damaged exited $RC"; }
python3 - "$OUT_FILE" "$NG" <<'PY' || fail "sqk info --json does not say that a digest group is damaged"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["integrity"] == "corrupt", j.get("integrity")
assert j["damaged_digest_groups"] == 1, j.get("damaged_digest_groups")
assert j["digest_layout"] == "tree" and j["digest_groups"] == int(sys.argv[2]) and j["root_hash"], j
PY
grep -q "digest group 2 " "$ERR_FILE" || fail "sqk info does not log the damaged group: $(cat "$ERR_FILE")"
sqk_t sqk info "$BAD"
grep -q "^integrity: *corrupt: 1 of $NG digest groups damaged" "$OUT_FILE" ||
	fail "sqk info does not say that a digest group is damaged: $(grep -i integrity "$OUT_FILE")"
sqk_t sqk info --json --no-verify "$BAD"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["integrity"] == "corrupt" and j["damaged_digest_groups"] == 1, j' "$OUT_FILE" ||
	fail "sqk info --json --no-verify does not count the damaged group"
info "sqk info of the damaged image: integrity corrupt, 1 damaged digest group (also with --no-verify)"

# the last chunk's digest damaged: its group holds the fast checksum block's footer, which is
# then not used, the message naming the group
"$SQK" info "$IMG" | grep -q "XXH3-64 for verified reads" || fail "the image has no fast checksums"
python3 - "$IMG" "$W/bad3.sqk" "$((COV + 32 * (NCH - 1)))" <<'PY' || fail "cannot damage the image"
import sys
d = bytearray(open(sys.argv[1], "rb").read())
d[int(sys.argv[3])] ^= 0x01
open(sys.argv[2], "wb").write(d)
PY
sqk_t sqk info "$W/bad3.sqk"
want="fast checksum block ending at image offset $COV not used (chunk $((NCH - 1)) cannot be verified: its digest group $((NG - 1)) is damaged)"
grep -qF "$want" "$ERR_FILE" || fail "no '$want': $(cat "$ERR_FILE")"
info "the last group damaged: the fast checksum block is not used, naming group $((NG - 1))"

# ---- 4. remote ----------------------------------------------------------------------------
if ! have_feature remote; then
	info "4. and 5. (remote) not run: built with HAVE_REMOTE=0"
	exit 0
fi
# g404.sqk: the image, but the request for group 2's digests answers 404
ln "$IMG" "$W/www/g404.sqk"
HTTP_SERVER_CONF="location = /g404.sqk { if (\$http_range = \"bytes=$G2S-$((G2E - 1))\") { return 404; } }"
http_serve "$W/www"
unset HTTP_SERVER_CONF
URL=$HTTP_URL/img.sqk

# ranges_check MARK WHAT EXACT...: the groups fetched after MARK: each request inside the
# digests is exactly one group's bytes, fetched at most once; EXACT lists groups that must be
# fetched exactly once; no request spans the chunk digest array; prints the tail request's
# start and the groups fetched.
ranges_check() {
	http_log_ranges "$1" >"$W/log.$2"
	python3 - "$W/log.$2" "$W/layout" "$SIZE" "$2" "${@:3}" <<'PY'
import sys
log, lay, size, what = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
exact = [int(x) for x in sys.argv[5:]]
lines = open(lay).read().split("\n")
cov, gat, ng, n, meta = map(int, lines[0].split())
groups = [tuple(map(int, l.split())) for l in lines[1:1 + ng]]
tail, fetched = None, {}
for l in open(log):
    f = l.split()
    if f[1] == "/":
        continue  # http_serve's readiness probe
    r = f[3][len("range="):]
    assert r.startswith("bytes="), "a request without a range: " + l
    a, b = r[len("bytes="):].split("-")
    # a suffix range (the open's tail, asked with the first bytes): the last b bytes
    a, b = (size - int(b), size) if a == "" else (int(a), int(b) + 1)
    if b == size:
        assert tail is None, "two tail requests: " + l
        tail = a
        assert a > cov, "%s: the tail request starts at %d, in the image (the digests start at %d)" % (what, a, cov)
        assert a <= gat, "%s: the tail request starts at %d, past the group digests (%d)" % (what, a, gat)
        continue
    if b <= cov:
        continue  # chunks
    assert a >= cov and b <= gat, "%s: request %d-%d overlaps the digests and something else" % (what, a, b)
    assert (a, b) in groups, "%s: request %d-%d is not one group's digests" % (what, a, b)
    g = groups.index((a, b))
    assert g not in fetched, "%s: group %d fetched twice" % (what, g)
    fetched[g] = True
for g in exact:
    assert g in fetched, "%s: group %d was not fetched (fetched: %s)" % (what, g, sorted(fetched))
print("%s %s" % (tail if tail is not None else -1, " ".join(str(g) for g in sorted(fetched))))
PY
}
# whether the tail request (starting at $1) brought group $2 whole
in_tail() {
	local s
	s=$(sed -n "$(($2 + 2))p" "$W/layout" | cut -d' ' -f1)
	[ "$1" -ge 0 ] && [ "$1" -le "$s" ]
}

mark=$(http_log_mark)
sqk_t sqk cat --cache-dir "$W/c1" "$URL" "$F0"
[ "$RC" = 0 ] || { show_err; fail "sqk cat of $F0 over the URL exited $RC"; }
cmp -s "$OUT_FILE" "$W/src/$F0" || fail "sqk cat of $F0 over the URL gave wrong bytes"
out=$(ranges_check "$mark" one 0) || fail "reading one file: wrong digest requests"
read -r TAIL got <<<"$out"
want="0"
if [ "$META_G" != 0 ] && ! in_tail "$TAIL" "$META_G"; then want="0 $META_G"; fi
[ "$got" = "$want" ] || fail "reading $F0 fetched digest groups '$got', expected '$want' (tail from $TAIL)"
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
dig=$((GAT - COV))
[ "$nbytes" -lt $((1048576 + 2 * 65536 + 131072 * 2 + 4 * 65536 + dig / 2)) ] ||
	fail "reading one 1 MiB file fetched $nbytes bytes (the chunk digests alone are $dig)"
info "one file over the URL: $nreq requests, $nbytes bytes; tail from $TAIL (groups at $GAT, digests at $COV); digest groups fetched: $got"

mark=$(http_log_mark)
all=$(cd "$W/src" && find d s -type f | LC_ALL=C sort)
# shellcheck disable=SC2086
sqk_t sqk cat --cache-dir "$W/c2" "$URL" $all
[ "$RC" = 0 ] || { show_err; fail "sqk cat of every file over the URL exited $RC"; }
# shellcheck disable=SC2086
(cd "$W/src" && cat $all) | cmp -s - "$OUT_FILE" || fail "sqk cat of every file over the URL differs"
out=$(ranges_check "$mark" all) || fail "reading every file: wrong digest requests"
read -r TAIL got <<<"$out"
for g in $(seq 0 $((NG - 1))); do
	in_tail "$TAIL" "$g" && continue
	case " $got " in *" $g "*) ;; *) fail "reading every file did not fetch group $g (fetched: $got)" ;; esac
done
info "every file over the URL: right bytes; each digest group fetched once ($got; tail from $TAIL)"

mark=$(http_log_mark)
sqk_t sqk cat --cache-dir "$W/c1" "$URL" "$F0"
[ "$RC" = 0 ] || { show_err; fail "a warm sqk cat of $F0 exited $RC"; }
cmp -s "$OUT_FILE" "$W/src/$F0" || fail "a warm sqk cat of $F0 gave wrong bytes"
out=$(ranges_check "$mark" warm) || fail "warm read: wrong digest requests"
read -r TAIL got <<<"$out"
[ -z "$got" ] || fail "with a warm disk cache, reading $F0 fetched digest groups '$got'"
info "warm disk cache: no digest group fetched"

# the groups are cached under keys above every chunk number (2^63 + g); without them, the file's
# chunks still come from the disk cache, checked once their group arrives: only that group is
# fetched (and the open's tail), no chunk of the file
ng=$(find "$W/c1" -type f -name '80000000000000*' | wc -l)
[ "$ng" -ge 1 ] || fail "no digest group in the disk cache (keys 8000000000000000 + g): $(ls -R "$W/c1" | head)"
find "$W/c1" -type f -name '80000000000000*' -delete
mark=$(http_log_mark)
sqk_t sqk cat --cache-dir "$W/c1" "$URL" "$F0"
[ "$RC" = 0 ] || { show_err; fail "sqk cat of $F0 with its chunks but not its group cached exited $RC"; }
cmp -s "$OUT_FILE" "$W/src/$F0" || fail "sqk cat of $F0 with its chunks but not its group cached gave wrong bytes"
out=$(ranges_check "$mark" nogroup 0) || fail "chunks cached, groups not: wrong digest requests"
read -r TAIL got <<<"$out"
[ "$got" = 0 ] || [ "$got" = "0 $META_G" ] || fail "chunks cached, groups not: fetched groups '$got'"
read -r nreq nbytes <<<"$(http_log_bytes "$mark")"
[ "$nbytes" -lt 1048576 ] || fail "chunks cached, groups not: $nbytes bytes fetched (the file's chunks again?)"
info "groups dropped from the disk cache ($ng): the cached chunks are checked once group 0 arrives ($nreq requests, $nbytes bytes)"

# a wrong chunk in the disk cache, taken from it before its group is in: chunk KB+1's slot
# overwritten with chunk KB's (its header and XXH3 stay valid, its SHA-256 does not match) and
# the groups dropped. Through the proxy, gated to delay every request once armed, so that the
# chunks of F1's first block come from the disk before group 1 arrives: the deferred check
# refuses chunk KB+1 and fetches it again, alone. The bytes are right and the server sees a
# request for exactly that chunk (a disk cache served unchecked gives wrong bytes).
F1=$(pick 1)
[ -n "$F1" ] || fail "no file wholly inside group 1"
proxy_start
PMODE="delay=300,gated"
PURL=$PROXY_URL/_f/$PMODE/img.sqk
sqk_t sqk cat --cache-dir "$W/c7" "$PURL" "$F1"
[ "$RC" = 0 ] || { show_err; fail "sqk cat of $F1 through the proxy exited $RC"; }
cmp -s "$OUT_FILE" "$W/src/$F1" || fail "sqk cat of $F1 through the proxy gave wrong bytes"
read -r F1S F1E < <(awk -v p="$F1" '$1 == p { print $3, $4 }' "$W/groups")
KB=$(((F1S + 4095) / 4096 + 1)) # in F1's first block
[ $(((KB + 2) * 4096)) -le "$F1E" ] || fail "$F1 ($F1S..$F1E) is too short for chunks $KB and $((KB + 1))"
# cslot get K | copy K K2: chunk K's slot in the unit files of $W/c7 (reader/remote/http_cache.c):
# its data to stdout, or its header and data over chunk K2's slot
cslot() {
	python3 - "$W/c7" "$@" <<'PY'
import glob, os, struct, sys
d, op, ks = sys.argv[1], sys.argv[2], [int(k) for k in sys.argv[3:]]
def slot(k):
    for f in glob.glob(d + "/*/u*"):
        with open(f, "rb") as fh:
            h = fh.read(16)
        csize, per = struct.unpack("<II", h[4:12]) if h[:4] == b"SQKU" else (0, 0)
        if per and int(os.path.basename(f)[1:], 16) == k // per:
            area = (16 * (per + 1) + 4095) // 4096 * 4096
            return f, 16 * (1 + k % per), area + k % per * csize
    sys.exit("chunk %d is not in the disk cache %s" % (k, d))
f, h, at = slot(ks[0])
with open(f, "rb") as fh:
    fh.seek(h)
    hdr = fh.read(16)
    n = struct.unpack("<I", hdr[4:8])[0]
    fh.seek(at)
    data = fh.read(n)
if hdr[:4] != b"SQKC" or len(data) != n:
    sys.exit("chunk %d: an empty or short slot in %s" % (ks[0], f))
if op == "get":
    sys.stdout.buffer.write(data)
else:
    f2, h2, at2 = slot(ks[1])
    with open(f2, "r+b") as fh:
        fh.seek(at2)
        fh.write(data)
        fh.seek(h2)
        fh.write(hdr)
PY
}
# bad_chunk_cat WHERE [BEFORE [AFTER]]: chunk KB+1's slot made wrong, the groups dropped, BEFORE
# run; sqk cat of F1 through the gated proxy (mark in $mark), AFTER run: the bytes are right and
# the server saw exactly one request for that chunk (WHERE names the cache in messages)
want="range=bytes=$(((KB + 1) * 4096))-$(((KB + 2) * 4096 - 1)) "
bad_chunk_cat() {
	local n
	cslot copy "$KB" $((KB + 1)) || fail "chunks $KB and $((KB + 1)) of $F1 are not in the disk cache"
	find "$W/c7" -type f -name '80000000000000*' -delete
	[ -z "${2:-}" ] || "$2"
	proxy_arm "$PMODE"
	mark=$(http_log_mark)
	sqk_t sqk cat --cache-dir "$W/c7" "$PURL" "$F1"
	proxy_disarm "$PMODE"
	[ -z "${3:-}" ] || "$3"
	[ "$RC" = 0 ] || { show_err; fail "sqk cat of $F1 with chunk $((KB + 1)) wrong in $1 exited $RC"; }
	cmp -s "$OUT_FILE" "$W/src/$F1" ||
		fail "sqk cat of $F1 with chunk $((KB + 1)) wrong in $1 gave wrong bytes: the cached chunk was not checked"
	n=$(http_log_ranges "$mark" | grep -c -- "$want")
	[ "$n" = 1 ] || fail "a wrong chunk $((KB + 1)) in $1 was requested $n times ('$want'): $(http_log_ranges "$mark")"
}
bad_chunk_cat "the disk cache"
out=$(ranges_check "$mark" badchunk 1) || fail "a wrong chunk in the disk cache: wrong digest requests"
# chunk requests besides the open's probe (bytes 0-65535, asked for at every open)
chunks=$(http_log_ranges "$mark" | awk -v cov="$COV" '$2 == "/" || $4 !~ /^range=bytes=/ { next }
	{ split(substr($4, 13), r, "-"); if (r[1] > 0 && r[2] + 1 <= cov) n++ } END { print n + 0 }')
[ "$chunks" = 1 ] || fail "a wrong chunk in the disk cache: $chunks chunk requests after the probe, expected 1 (the wrong chunk's): $(http_log_ranges "$mark")"
cmp -s <(cslot get $((KB + 1))) <(tail -c +$(((KB + 1) * 4096 + 1)) "$IMG" | head -c 4096) ||
	fail "the refetched chunk $((KB + 1)) was not put back in the disk cache"
info "a wrong chunk $((KB + 1)) in the disk cache: refused once group 1 arrived, fetched again alone, right bytes"

# the same in a cache folder that cannot be written (mounted read-only: the wrong entry cannot
# be removed): the chunk asked for again is fetched from the server, not taken from the disk
# again (that went round for ever)
c7_ro() {
	mount --bind "$W/c7" "$W/c7" || fail "cannot bind-mount $W/c7"
	at_exit "umount '$W/c7' 2>/dev/null"
	mount -o remount,ro,bind "$W/c7" || fail "cannot make $W/c7 read-only"
}
c7_rw() { umount "$W/c7" || fail "cannot unmount $W/c7"; }
bad_chunk_cat "a read-only disk cache" c7_ro c7_rw
info "a wrong chunk $((KB + 1)) in a read-only disk cache: fetched again once, right bytes"

# two groups' files swapped in the disk cache (each file valid, each holding the other group's
# digests): both are refused and fetched again, and the right ones kept
gfile() { find "$W/c2" -type f -name "$(printf '80000000000000%02x' "$1")"; }
! in_tail "$TAIL" 0 && ! in_tail "$TAIL" 1 || fail "groups 0 and 1 came with the tail (from $TAIL)"
g0=$(gfile 0) g1=$(gfile 1)
[ -f "$g0" ] && [ -f "$g1" ] || fail "groups 0 and 1 are not in the disk cache ('$g0', '$g1')"
[ "$(stat -c %s "$g0")" = "$(stat -c %s "$g1")" ] || fail "the files of groups 0 and 1 differ in size"
mv "$g0" "$W/gswap" && mv "$g1" "$g0" && mv "$W/gswap" "$g1"
mark=$(http_log_mark)
sqk_t sqk cat --cache-dir "$W/c2" "$URL" "$F0" "$F1"
[ "$RC" = 0 ] || { show_err; fail "sqk cat of $F0 $F1 with groups 0 and 1 swapped in the disk cache exited $RC"; }
cat "$W/src/$F0" "$W/src/$F1" | cmp -s - "$OUT_FILE" ||
	fail "sqk cat of $F0 $F1 with groups 0 and 1 swapped in the disk cache gave wrong bytes"
out=$(ranges_check "$mark" swapped 0 1) || fail "groups swapped in the disk cache: not both fetched again"
for g in 0 1; do
	read -r gs ge <<<"$(sed -n "$((g + 2))p" "$W/layout")"
	cmp -s <(tail -c +17 "$(gfile $g)") <(tail -c +$((gs + 1)) "$IMG" | head -c $((ge - gs))) ||
		fail "group $g's file in the disk cache does not hold group $g's digests after the refetch"
done
info "groups 0 and 1 swapped in the disk cache: both refused and fetched again ($out), right bytes"

sqk_t sqk info --json --cache-dir "$W/c3" "$URL"
[ "$RC" = 0 ] || { show_err; fail "sqk info --json over the URL exited $RC"; }
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["digest_layout"] == "tree" and isinstance(j["http_digest_groups"], int), j' "$OUT_FILE" ||
	fail "sqk info --json over the URL: no tree layout or http_digest_groups"

BURL=$HTTP_URL/bad.sqk
sqk_t sqk cat --cache-dir "$W/c4" "$BURL" "$F2"
[ "$RC" != 0 ] || fail "sqk cat of $F2 (group 2 damaged on the server) succeeded"
grep -q "digest group 2 (bytes $G2S-$((G2E - 1)))" "$ERR_FILE" ||
	fail "the failed remote read does not name group 2 and its bytes: $(cat "$ERR_FILE")"
sqk_t sqk cat --cache-dir "$W/c4" "$BURL" "$F0"
[ "$RC" = 0 ] || { show_err; fail "sqk cat of $F0 (group 0) from the damaged image exited $RC"; }
cmp -s "$OUT_FILE" "$W/src/$F0" || fail "sqk cat of $F0 (group 0) from the damaged image gave wrong bytes"
info "remote, group 2 damaged: $F2 refused naming the group, $F0 right"
sqk_t sqk cat --cache-dir "$W/c8" "$HTTP_URL/g404.sqk" "$F2"
[ "$RC" != 0 ] || fail "sqk cat of $F2 succeeded though its digest group's request answers 404"
grep -q "bytes $G2S-$((G2E - 1)): HTTP status 404" "$ERR_FILE" || fail "the 404 is not logged: $(cat "$ERR_FILE")"
grep -q "g404.sqk: digest group 2 (bytes $G2S-$((G2E - 1))) could not be fetched: " "$ERR_FILE" ||
	fail "the failed group request does not name group 2: $(cat "$ERR_FILE")"
info "remote, group 2's request answering 404: $F2 fails, naming the group"

# ---- 5. sqkfuse over the URL: concurrent cold readers of one group, and EIO for a bad one ----
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null || [ ! -x "$SQKFUSE" ]; then
	info "no /dev/fuse, fusermount3 or sqkfuse: the mount checks did not run"
	exit 0
fi
G1=$(awk '$2 == 1 { print $1 }' "$W/groups" | head -n 8)
[ "$(echo "$G1" | wc -l)" -ge 4 ] || fail "fewer than 4 files wholly inside group 1"
mark=$(http_log_mark)
fuse_mount "$URL" "$W/m" -o "cache_dir=$W/c5,stats=$W/stats5.json"
pids=""
for f in $G1; do
	cmp -s "$W/src/$f" "$W/m/$f" >"$W/cmp.$(basename "$f")" 2>&1 &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p" || fail "a concurrent read of a group 1 file through the mount differs"
done
fuse_umount "$W/m"
out=$(ranges_check "$mark" mount 1) || fail "concurrent readers: wrong digest requests"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["http_digest_groups"] >= 1, j' \
	"$W/stats5.json" || fail "sqkfuse stats= does not count the digest groups: $(cat "$W/stats5.json")"
info "$(echo "$G1" | wc -l) concurrent cold readers of group 1 through sqkfuse: right bytes, one request for the group ($out)"

mark=$(http_log_mark)
fuse_mount "$BURL" "$W/m" -o "cache_dir=$W/c6"
cmp -s "$W/src/$F0" "$W/m/$F0" || fail "through the mount of the damaged image, $F0 (group 0) differs"
for try in 1 2; do
	if cat "$W/m/$F2" >/dev/null 2>"$W/eio.err"; then
		fail "through the mount of the damaged image, $F2 (group 2) read (try $try)"
	fi
	grep -q "Input/output error" "$W/eio.err" ||
		fail "reading $F2 through the mount did not give EIO (try $try): $(cat "$W/eio.err")"
done
cmp -s "$W/src/$F0" "$W/m/$F0" || fail "after the failed reads, $F0 (group 0) differs"
fuse_umount "$W/m"
grep -q "digest group 2" "$TMP/fuse.err" || fail "sqkfuse did not log the damaged group: $(tail -n 5 "$TMP/fuse.err")"
n2=$(http_log_ranges "$mark" | grep -c "range=bytes=$G2S-$((G2E - 1)) ")
[ "$n2" -ge 2 ] || fail "the damaged group was requested $n2 times for two reads: a failed group is not tried again"
info "mount of the damaged image: $F2 gives EIO twice, logged naming the group, the group requested again ($n2 requests); $F0 reads right"

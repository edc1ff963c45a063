#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# Each input that is not a readable SquashFS 4.0 image gets its own message, the same from every
# command (ls, cat, info, verify, extract, tar, sqkfuse, sqk mount): an empty file, files of other
# formats (random bytes, zeros, gzip, tar, ELF), SquashFS 1.0/2.0/2.1/3.0/3.1 superblocks in both
# byte orders (crafted) and a real 3.1 image (util-linux's libblkid test case, fixtures/), a
# truncated sqk image, a directory, a FIFO (named, not waited on), an unsupported URL scheme.
# Each message is the command's only line on stderr; remote images (nginx) get the same lines. info --json and verify --json print JSON with an "error" field for every
# failure (usage errors after --json included) and keep their exit codes.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd python3 gzip tar xz

SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
W=$(scratch diag)
cd "$W" || fail "cd $W"

# ---- the inputs, with the message each must get ----------------------------------------------
: >empty
python3 -c 'import random, sys; sys.stdout.buffer.write(random.Random(7).randbytes(8192))' >random
head -c 8192 /dev/zero >zeros
echo "some text" | gzip -c >text.gz
echo "a file" >member && tar cf archive.tar member
cp "$SQK" elf
mkdir adir
mkfifo fifo
mkdir -p src/d && head -c 300000 /dev/urandom >src/d/big && echo small >src/small
sqk_build src good.sqsh
USED=$(python3 -c 'import struct,sys; print(struct.unpack_from("<Q", open(sys.argv[1],"rb").read(96), 40)[0])' good.sqsh)
CUT=$((USED / 2))
head -c "$CUT" good.sqsh >cut.sqsh
(head -c 8192 /dev/zero && cat good.sqsh) >padded.sqsh   # an image at offset 8192
# SquashFS 1.x-3.x superblocks: magic, then six u32 (inodes, bytes_used_2, uid_start_2,
# guid_start_2, inode_table_start_2, directory_table_start_2), then s_major and s_minor (u16) at
# 28 and 30; big-endian images have the magic "sqsh" and big-endian fields.
python3 - <<'EOF' || fail "cannot craft the old superblocks"
import struct
for major, minor in ((1, 0), (2, 0), (2, 1), (3, 0), (3, 1)):
    for bo, magic, tag in (('<', b'hsqs', 'le'), ('>', b'sqsh', 'be')):
        sb = bytearray(4096)
        sb[0:4] = magic
        struct.pack_into(bo + 'IIIIIIHH', sb, 4, 5, 4096, 100, 200, 300, 400, major, minor)
        open('v%d.%d-%s.sqsh' % (major, minor, tag), 'wb').write(sb)
EOF
xz -dc "$IT_DIR/fixtures/squashfs3.1-le.img.xz" >real3.sqsh || fail "cannot unpack the fixture"

# CASES: file|message|verify exit status
CASES="empty|'empty' is empty: not a SquashFS image|8
random|'random' is not a SquashFS image (no SquashFS magic)|8
zeros|'zeros' is not a SquashFS image: its first 4096 bytes are zero|8
text.gz|'text.gz' is not a SquashFS image: it is gzip data|8
archive.tar|'archive.tar' is not a SquashFS image: it is a tar archive|8
elf|'elf' is not a SquashFS image: it is an ELF file|8
adir|'adir' is a directory|8
fifo|'fifo' is a FIFO: not a SquashFS image|8
cut.sqsh|cut.sqsh: truncated image: file is $CUT bytes, the superblock says $USED|4
real3.sqsh|real3.sqsh: SquashFS 3.1 image: only 4.0 is supported|8
padded.sqsh|'padded.sqsh' is not a SquashFS image at offset 0: its integrity data covers an image at offset 8192 (--offset 8192)|8
ftp://example.org/x.sqsh|ftp://example.org/x.sqsh: unsupported URL scheme; http, https and s3 are|8"
for v in 1.0 2.0 2.1 3.0 3.1; do
	CASES="$CASES
v$v-le.sqsh|v$v-le.sqsh: SquashFS $v image: only 4.0 is supported|8
v$v-be.sqsh|v$v-be.sqsh: SquashFS $v image, big-endian: only 4.0 is supported|8"
done

# only_line NAME WANT: stderr of the last run_capture NAME is exactly the line WANT.
only_line() {
	local got
	got=$(cat "$ERR_FILE")
	[ "$got" = "$2" ] || { show_err; fail "$1: stderr is not exactly '$2'"; }
}

# json_error WHAT WANT-ERROR WANT-RC: the last run_capture printed one JSON object whose "error"
# is WANT-ERROR (empty: any non-empty error) and exited WANT-RC.
json_error() {
	[ "$RC" = "$3" ] || { show_err; fail "$1: exit $RC, expected $3"; }
	python3 - "$OUT_FILE" "$2" <<'EOF' || { cat "$OUT_FILE" >&2; fail "$1: no JSON with the error"; }
import json, sys
j = json.load(open(sys.argv[1]))
assert isinstance(j.get('error'), str) and j['error'], j
assert not sys.argv[2] or j['error'] == sys.argv[2], (j['error'], sys.argv[2])
EOF
}

n=0
while IFS='|' read -r f msg vrc; do
	for c in ls cat info extract tar; do
		case $c in
		cat) run_capture "$c" "$SQK" cat "$f" /small ;;
		extract) run_capture "$c" "$SQK" extract "$f" "$W/out.$n" ;;
		tar) run_capture "$c" "$SQK" tar "$f" -o "$W/out.$n.tar" ;;
		*) run_capture "$c" "$SQK" "$c" "$f" ;;
		esac
		[ "$RC" = 1 ] || { show_err; fail "sqk $c $f: exit $RC, expected 1"; }
		only_line "sqk $c $f" "sqk $c: $msg"
	done
	[ ! -e "$W/out.$n" ] && [ ! -e "$W/out.$n.tar" ] || fail "$f: extract or tar left output"
	run_capture infoj "$SQK" info --json "$f"
	json_error "sqk info --json $f" "$msg" 1
	run_capture verify "$SQK" verify "$f"
	[ "$RC" = "$vrc" ] || { show_err; fail "sqk verify $f: exit $RC, expected $vrc"; }
	if [ "$vrc" = 8 ]; then
		only_line "sqk verify $f" "sqk verify: $msg"
		run_capture verifyj "$SQK" verify --json "$f"
		json_error "sqk verify --json $f" "$msg" 8
	else
		# a damaged image (not "not an image"): a finding of the checker, exit 4
		grep -qF "image does not open: ${msg#*: }" "$OUT_FILE" ||
			{ cat "$OUT_FILE" >&2; fail "sqk verify $f: no finding '${msg#*: }'"; }
		run_capture verifyj "$SQK" verify --json "$f"
		[ "$RC" = 4 ] || fail "sqk verify --json $f: exit $RC, expected 4"
		python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["errors"] == 1 and sys.argv[2] in j["findings"][0]["msg"], j' \
			"$OUT_FILE" "${msg#*: }" || fail "sqk verify --json $f: not the finding"
	fi
	n=$((n + 1))
done <<<"$CASES"
info "$n inputs: ls, cat, info, extract, tar and verify print their one precise line; --json too"

# sqkfuse and sqk mount: the mount fails with that line (the background start is the default)
if [ -e /dev/fuse ] && [ -x "$SQKFUSE" ] && [ "$(id -u)" = 0 ]; then
	mkdir -p "$W/mnt"
	at_exit "mountpoint -q '$W/mnt' && fusermount3 -u '$W/mnt'"
	m=0
	while IFS='|' read -r f msg _; do
		run_capture fuse timeout 30 "$SQKFUSE" "$f" "$W/mnt" -f
		[ "$RC" != 0 ] && [ "$RC" != 124 ] || { show_err; fail "sqkfuse -f $f: exit $RC"; }
		grep -qxF "sqkfuse: $msg" "$ERR_FILE" || { show_err; fail "sqkfuse -f $f: no '$msg'"; }
		[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "sqkfuse -f $f: more than the line"; }
		run_capture mount timeout 30 "$SQK" mount "$f" "$W/mnt"
		[ "$RC" != 0 ] && [ "$RC" != 124 ] || { show_err; fail "sqk mount $f: exit $RC"; }
		grep -qF "$msg" "$ERR_FILE" || { show_err; fail "sqk mount $f: no '$msg'"; }
		[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "sqk mount $f: more than the line"; }
		mountpoint -q "$W/mnt" && fail "$f got mounted"
		m=$((m + 1))
	done <<<"$CASES"
	info "$m inputs: sqkfuse -f and sqk mount fail with the same line"
else
	info "sqkfuse not run (no /dev/fuse, no sqkfuse or not root)"
fi

# an sqk image whose magic is damaged is not "another format": its integrity data says it was an
# image; verified reads name the chunk, --no-verify the field, verify reports both (exit 4)
cp good.sqsh damaged.sqsh
printf 'X' | dd of=damaged.sqsh bs=1 seek=0 conv=notrunc 2>/dev/null
run_capture dmg "$SQK" ls damaged.sqsh
[ "$RC" = 1 ] && grep -q "integrity check failed at image offset 0" "$ERR_FILE" ||
	{ show_err; fail "sqk ls of a damaged magic: not the integrity failure"; }
run_capture dmg2 "$SQK" ls --no-verify damaged.sqsh
[ "$RC" = 1 ] && grep -q "bad superblock: magic 0x73717358, version 4.0" "$ERR_FILE" ||
	{ show_err; fail "sqk ls --no-verify of a damaged magic: not the bad superblock"; }
run_capture dmg3 "$SQK" verify damaged.sqsh
[ "$RC" = 4 ] && grep -q "integrity error in superblock" "$OUT_FILE" ||
	{ cat "$OUT_FILE" >&2; fail "sqk verify of a damaged magic: exit $RC, no integrity error"; }
run_capture pad "$SQK" ls --offset 8192 padded.sqsh
[ "$RC" = 0 ] || { show_err; fail "sqk ls --offset 8192 of the padded image: exit $RC"; }

# the same lines for remote images (served by nginx when it is installed)
if ! have_feature remote; then
	info "remote images not run: built with HAVE_REMOTE=0"
elif command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; then
	mkdir -p www && cp empty random text.gz v3.0-be.sqsh cut.sqsh www/
	http_serve "$W/www"
	while IFS='|' read -r f msg; do
		u=$HTTP_URL/$f
		msg=${msg//URL/$u}
		run_capture rls "$SQK" ls "$u"
		[ "$RC" = 1 ] || { show_err; fail "sqk ls $u: exit $RC"; }
		only_line "sqk ls $u" "sqk ls: $msg"
		run_capture rinfo "$SQK" info --json "$u"
		json_error "sqk info --json $u" "$msg" 1
	done <<'LIST'
random|'URL' is not a SquashFS image (no SquashFS magic)
text.gz|'URL' is not a SquashFS image: it is gzip data
v3.0-be.sqsh|URL: SquashFS 3.0 image, big-endian: only 4.0 is supported
LIST
	# an empty file: the server cannot answer a range of it (nginx: 200, no body)
	run_capture rempty "$SQK" ls "$HTTP_URL/empty"
	[ "$RC" = 1 ] && [ "$(wc -l <"$ERR_FILE")" = 1 ] &&
		grep -q "^sqk ls: $HTTP_URL/empty: .*the file is empty: not a SquashFS image$" "$ERR_FILE" ||
		{ show_err; fail "sqk ls of a remote empty file: exit $RC, not the one line"; }
	run_capture rvempty "$SQK" verify --json "$HTTP_URL/empty"
	json_error "sqk verify --json URL/empty" "" 8
	grep -q "the file is empty" "$OUT_FILE" || fail "sqk verify --json URL/empty: not the message"
	run_capture rcut "$SQK" ls "$HTTP_URL/cut.sqsh"
	only_line "sqk ls URL/cut.sqsh" \
		"sqk ls: $HTTP_URL/cut.sqsh: truncated image: file is $CUT bytes, the superblock says $USED"
	run_capture rv "$SQK" verify "$HTTP_URL/v3.0-be.sqsh"
	[ "$RC" = 8 ] || { show_err; fail "sqk verify of a remote 3.0 image: exit $RC"; }
	only_line "sqk verify URL" \
		"sqk verify: $HTTP_URL/v3.0-be.sqsh: SquashFS 3.0 image, big-endian: only 4.0 is supported"
	info "remote images: the same lines"
else
	info "remote images not run (no nginx)"
fi

# a good image still works, and an offset names itself
run_capture ok "$SQK" ls good.sqsh
[ "$RC" = 0 ] || { show_err; fail "sqk ls of the good image: exit $RC"; }
run_capture off "$SQK" ls --offset 4096 empty
[ "$RC" = 1 ] || { show_err; fail "sqk ls --offset of an empty file: exit $RC"; }
grep -qxF "sqk ls: 'empty' at offset 4096 is empty: not a SquashFS image" "$ERR_FILE" ||
	{ show_err; fail "sqk ls --offset: the offset is not named"; }

# --json: usage errors, a missing file (exit codes as without --json)
run_capture j1 "$SQK" info --json --bogus good.sqsh
json_error "sqk info --json --bogus" "unknown option '--bogus'; sqk info --help lists the options" 2
run_capture j2 "$SQK" info --json
json_error "sqk info --json (no image)" "" 2
run_capture j3 "$SQK" info --json good.sqsh good.sqsh
json_error "sqk info --json (two images)" "" 2
run_capture j4 "$SQK" info --offset nope --json good.sqsh
json_error "sqk info --offset nope --json" "bad --offset 'nope'" 2
run_capture j5 "$SQK" info --json missing.sqsh
json_error "sqk info --json missing" "missing.sqsh: cannot open image: no such file or directory" 1
run_capture j6 "$SQK" verify --json --bogus good.sqsh
json_error "sqk verify --json --bogus" "unknown option '--bogus'; sqk verify --help lists the options" 16
run_capture j7 "$SQK" verify --json
json_error "sqk verify --json (no image)" "" 16
run_capture j8 "$SQK" verify -j 0 --json good.sqsh
json_error "sqk verify -j 0 --json" "bad argument '0' for -j (1..256) (see --help)" 16
run_capture j9 "$SQK" verify --json missing.sqsh
json_error "sqk verify --json missing" "missing.sqsh: cannot open image: No such file or directory" 8
run_capture j10 "$SQK" verify --json --header 'secret-no-colon' good.sqsh
json_error "sqk verify --json --header" "bad --header: need 'Name: value'" 16
grep -q secret-no-colon "$OUT_FILE" "$ERR_FILE" && fail "a bad header was printed"
# a missing file without --json: the message, no stale errno
run_capture v1 "$SQK" verify missing.sqsh
[ "$RC" = 8 ] || fail "sqk verify missing: exit $RC"
only_line "sqk verify missing" "sqk verify: missing.sqsh: cannot open image: No such file or directory"
if [ -e /dev/null ]; then
	run_capture v2 "$SQK" verify /dev/null
	[ "$RC" = 8 ] || fail "sqk verify /dev/null: exit $RC"
	grep -qxE "sqk verify: '/dev/null' is not a regular file( or a block device)?" "$ERR_FILE" ||
		{ show_err; fail "sqk verify /dev/null: not named a character device"; }
	[ "$(wc -l <"$ERR_FILE")" = 1 ] || { show_err; fail "sqk verify /dev/null: more lines"; }
fi
info "--json failures print JSON with an error; verify of a character device names it"

# mkimage --reuse OLD says what OLD is, as the reading commands do, and builds nothing
: >empty-old
run_capture r1 "$SQK" mkimage -q src reused.sqsh --reuse empty-old
[ "$RC" = 1 ] || fail "mkimage --reuse of an empty file: exit $RC"
only_line "mkimage --reuse empty" "sqk mkimage: --reuse: cannot open 'empty-old': 'empty-old' is empty: not a SquashFS image; no image written"
run_capture r2 "$SQK" mkimage -q src reused.sqsh --reuse real3.sqsh
[ "$RC" = 1 ] || fail "mkimage --reuse of a 3.1 image: exit $RC"
only_line "mkimage --reuse 3.1" "sqk mkimage: --reuse: cannot open 'real3.sqsh': real3.sqsh: SquashFS 3.1 image: only 4.0 is supported; no image written"
[ ! -e reused.sqsh ] || fail "a failed --reuse left reused.sqsh"
info "mkimage --reuse names what OLD is"

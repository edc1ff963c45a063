#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# sqk mkimage --tar: the external sort of an archive's entries (mkimage/runs.c). Entries that are
# not directories are records sorted in runs of a quarter of --mem; a small --mem spills runs to
# an unnamed temporary file in $TMPDIR and merges them, a large one sorts one run in memory.
#  1. a shuffled archive of 40,000 entries (tar_make.py shuffled: implied parents listed late or
#     never, paths listed again with every kind of replacement, hard links to files, symlinks,
#     devices and links, link names and targets replaced) gives the same image bytes with
#     --mem 1M (runs merged) as with --mem 64M (one run), from a file and from stdin;
#  2. that image lists (unsquashfs -lln) exactly the tree the generator's own model of the
#     extraction gives, and verifies;
#  3. the spill is real: an archive of 30,000 empty entries (no file tails to spill) needs a
#     temporary file for 'sorted entries' at --mem 1M ($TMPDIR missing: the build fails naming
#     it) and none at --mem 64M; both images are the same bytes;
#  4. pseudo definitions on top (m on files and on hard-link names whose target was a record,
#     l to records, new entries) give the same bytes at both budgets, and take effect;
#  5. what the sort finds only at the end still fails as before: a hard link to a path no entry
#     had (in a directory of records), an entry under a path a file held.
. "$(dirname "$0")/lib.sh"
need_sqk
need_feature tar
need_cmd python3 unsquashfs cmp
LLS="python3 $IT_DIR/tar_lls.py"
MAKE="python3 $IT_DIR/tar_make.py"
Z="-c zstd -l 1"
W=$(scratch tarsort)

same() {
	cmp "$1" "$2" >"$TMP/cmp.out" 2>&1 || { cat "$TMP/cmp.out" >&2; fail "$3: images differ"; }
}

# ---- 1. runs merged = one run ------------------------------------------------------------------
$MAKE shuffled "$W/s.tar" || fail "tar_make.py shuffled failed"
[ "$(wc -l <"$W/s.tar.lls")" -gt 25000 ] || fail "the shuffled archive's model lists too little"
sqk_build -q $Z --mem 64M --tar "$W/s.tar" "$W/one.sqsh"
sqk_build -q $Z --mem 1M --tar "$W/s.tar" "$W/runs.sqsh"
same "$W/one.sqsh" "$W/runs.sqsh" "--mem 1M (runs) vs --mem 64M (one run)"
"$SQK" mkimage -q $Z --mem 1M --tar - "$W/stdin.sqsh" <"$W/s.tar" 2>"$TMP/stdin.err" ||
	{ cat "$TMP/stdin.err" >&2; fail "build from stdin failed"; }
same "$W/one.sqsh" "$W/stdin.sqsh" "from stdin"
info "40,000 shuffled entries: the same bytes with runs merged and in one run"

# ---- 2. the image is the extraction ------------------------------------------------------------
$LLS "$W/runs.sqsh" >"$W/runs.lls" || fail "unsquashfs -lln of the image failed"
diff "$W/s.tar.lls" "$W/runs.lls" >"$TMP/lls.diff" ||
	{ head -n 20 "$TMP/lls.diff" >&2; fail "the image's tree is not the archive's extraction"; }
"$SQK" verify "$W/runs.sqsh" >"$TMP/verify.out" 2>&1 || fail "sqk verify of the merged image failed"
info "its listing is the generator's model of the extraction ($(wc -l <"$W/runs.lls") entries)"

# ---- 3. the spill is real ----------------------------------------------------------------------
python3 - "$W/empty.tar" <<'EOF' || fail "writing empty.tar failed"
import random, sys, tarfile
r = random.Random(26)
names = ['d%02d/f%05d' % (i % 50, i) for i in range(30000)]
r.shuffle(names)
with tarfile.open(sys.argv[1], 'w') as t:
    for n in names:
        t.addfile(tarfile.TarInfo(n))
EOF
run_capture nospill env TMPDIR="$W/none" "$SQK" mkimage -q $Z --mem 64M --tar "$W/empty.tar" \
	"$W/e_one.sqsh"
[ "$RC" = 0 ] || { show_err; fail "--mem 64M needed a temporary file for 30,000 entries"; }
run_capture spill env TMPDIR="$W/none" "$SQK" mkimage -q $Z --mem 1M --tar "$W/empty.tar" \
	"$W/e_runs.sqsh"
[ "$RC" = 1 ] || fail "--mem 1M built 30,000 entries without a temporary file (exit $RC)"
grep -q "temporary file in '$W/none' for sorted entries" "$ERR_FILE" ||
	{ show_err; fail "the failure does not name the sorted entries' temporary file"; }
[ ! -e "$W/e_runs.sqsh" ] || fail "an image was left behind"
sqk_build -q $Z --mem 1M --tar "$W/empty.tar" "$W/e_runs.sqsh"
same "$W/e_one.sqsh" "$W/e_runs.sqsh" "30,000 empty entries, --mem 1M vs 64M"
[ "$("$SQK" ls -R "$W/e_runs.sqsh" | grep -c /f)" = 30000 ] || fail "not 30,000 files listed"
info "--mem 1M spills the sort to \$TMPDIR, --mem 64M does not; same bytes"

# ---- 4. pseudo definitions on top --------------------------------------------------------------
# hard-link names (h*) whose targets were records, files, directories, new entries
grep -E '^/[^ ]*/h[0-9]+ -r' "$W/s.tar.lls" | head -n 5 | cut -d' ' -f1 >"$W/hl"
grep -E '^/[^ ]*/f[0-9]+ -r' "$W/s.tar.lls" | head -n 5 | cut -d' ' -f1 >"$W/files"
[ "$(wc -l <"$W/hl")" = 5 ] && [ "$(wc -l <"$W/files")" = 5 ] || fail "too few names to define on"
{
	sed 's/$/ m 600 7 8/' "$W/hl"
	sed 's/$/ M 1234567 640 9 9/' "$W/files"
	sed 's|\(.*\)|\1.lnk l \1|' "$W/files"
	echo "d3/newdev c 644 0 0 4 5"
	echo "d3 d 700 1 2"
} >"$W/pseudo"
sqk_build -q $Z --mem 64M --pseudo "$W/pseudo" --tar "$W/s.tar" "$W/p_one.sqsh"
sqk_build -q $Z --mem 1M --pseudo "$W/pseudo" --tar "$W/s.tar" "$W/p_runs.sqsh"
same "$W/p_one.sqsh" "$W/p_runs.sqsh" "pseudo definitions, --mem 1M vs 64M"
$LLS "$W/p_runs.sqsh" >"$W/p.lls" || fail "unsquashfs -lln failed"
while read -r p; do
	grep -q "^$p -rw------- 7/8 " "$W/p.lls" || fail "'$p m 600 7 8' did not apply"
done <"$W/hl"
while read -r p; do
	grep -q "^$p -rw-r----- 9/9 .* 1970-01-15 06:56$" "$W/p.lls" || fail "'$p M ...' did not apply"
	grep -q "^$p.lnk -rw-r----- 9/9 " "$W/p.lls" || fail "'$p.lnk l $p' is not its hard link"
done <"$W/files"
grep -q "^/d3/newdev crw-r--r-- 0/0 4,5 " "$W/p.lls" || fail "d3/newdev is missing"
grep -q "^/d3 drwx------ 1/2 - " "$W/p.lls" || fail "'d3 d 700 1 2' did not apply"
info "pseudo definitions on the sorted entries: same bytes, applied"

# ---- 5. errors the merge finds -----------------------------------------------------------------
python3 - "$W" <<'EOF' || fail "writing the bad archives failed"
import io, sys, tarfile
def f(t, name, data=b'x'):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    t.addfile(ti, io.BytesIO(data))
with tarfile.open(sys.argv[1] + '/nolink.tar', 'w') as t:
    f(t, 'a/one')
    ti = tarfile.TarInfo('b/link')
    ti.type, ti.linkname = tarfile.LNKTYPE, 'a/two'
    t.addfile(ti)
with tarfile.open(sys.argv[1] + '/notdir.tar', 'w') as t:
    f(t, 'a/file')
    f(t, 'a/file/under')
EOF
run_capture nolink "$SQK" mkimage -q $Z --mem 1M --tar "$W/nolink.tar" "$W/bad.sqsh"
[ "$RC" = 1 ] || fail "a hard link to a path no entry had: exit $RC"
grep -q "'b/link': hard link to 'a/two', which is not an earlier entry" "$ERR_FILE" ||
	{ show_err; fail "wrong message for the hard link to nothing"; }
run_capture notdir "$SQK" mkimage -q $Z --mem 1M --tar "$W/notdir.tar" "$W/bad.sqsh"
[ "$RC" = 1 ] || fail "an entry under a file: exit $RC"
grep -q "'a/file' is not a directory" "$ERR_FILE" || { show_err; fail "wrong message for a/file/under"; }
[ ! -e "$W/bad.sqsh" ] || fail "an image was left behind"
info "a hard link to nothing and an entry under a file are refused"
exit 0

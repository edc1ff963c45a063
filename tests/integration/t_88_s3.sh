#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# s3:// images against real S3 servers on 127.0.0.1:
#  1. s3rver (npm): an image built by sqk mkimage, uploaded with a signed PUT (also under a key
#     with spaces and non-ASCII letters): sqk ls -lR gives what it gives on the local file, sqk cat
#     the bytes of the source, sqk verify passes, sqkfuse mounts it (endpoint from
#     $AWS_ENDPOINT_URL) identical to the source; --s3-endpoint works without the variable; a
#     missing key is named 404 NoSuchKey, a missing bucket NoSuchBucket, an unknown access key
#     403 InvalidAccessKeyId "check credentials".
#     s3rver 3.x does not verify V4 signatures (a wrong secret is served: checked and reported
#     below), hence:
#  2. s3sig.py, a server that checks every request's Signature V4 (its own SigV4 code, checked
#     against AWS's published example at start): ls -lR / cat / verify / sqkfuse with a session
#     token, a region of its own and a secret holding '/' and '+'; every request it logged was
#     signed (host, x-amz-content-sha256, x-amz-date, x-amz-security-token) and served. A wrong
#     secret: 403 SignatureDoesNotMatch "check credentials", nonzero exit; the wrong region: the
#     server's region named; credentials and region from profiles of the shared files; no
#     credentials: said so; unsigned requests (--no-sign-request, -o no_sign_request) refused on a
#     private bucket, served on a public one; a clock 1 h off: RequestTimeTooSkewed named.
#  3. a retry is signed anew: the probe answered 503 after 3 s once, with a server that refuses
#     dates more than 2 s old: the retry carries a fresh date and the open succeeds.
#  4. no secret (secret key, session token) in any output, --json, stats= or the disk cache.
. "$(dirname "$0")/lib.sh"
need_root
need_sqk
need_feature remote
need_cmd python3 curl fusermount3 mountpoint
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
	skip "node/npm are not installed (scripts/install-deps.sh installs them)"
[ -e /dev/fuse ] || skip "no /dev/fuse"
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
[ -x "$SQKFUSE" ] || fail "sqkfuse not found at $SQKFUSE"
S3RVER=$(command -v s3rver 2>/dev/null) || S3RVER=$(npm prefix -g 2>/dev/null)/bin/s3rver
[ -x "$S3RVER" ] || fail "s3rver is not installed (scripts/install-deps.sh: npm install -g s3rver)"
S3SIG="python3 $IT_DIR/s3sig.py"
export XDG_CACHE_HOME=$TMP/xdg-cache
W=$(scratch s3)
SECRET='sqk/Secret+Key0123456789abcdefghijklmnop'
TOKEN='sqkSessionToken/with+plus=='
KEY_ODD='dir/my image ü.sqsh'
KEY_ODD_ENC='dir/my%20image%20%C3%BC.sqsh'

# a clean AWS environment: no variable of the caller's, HOME without ~/.aws
for v in AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_SECURITY_TOKEN AWS_PROFILE \
	AWS_DEFAULT_PROFILE AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 \
	AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE; do
	unset "$v"
done
export HOME=$W/home
mkdir -p "$HOME"

# sqk_refused NAME PATTERN ARGS...: sqk ARGS fails (exit != 0) with PATTERN (grep -E) in stderr.
sqk_refused() {
	local name=$1 pat=$2
	shift 2
	sqk_t "$name" "$@"
	[ "$RC" != 0 ] || fail "$name: sqk $* succeeded"
	grep -qE -- "$pat" "$ERR_FILE" || { show_err; fail "$name: stderr does not say '$pat'"; }
	info "$name: $(grep -E -- "$pat" "$ERR_FILE" | head -n 1)"
}
# wait_port_file FILE PID: the server wrote its port.
wait_port_file() {
	local i
	for i in $(seq 100); do
		[ -s "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || fail "the server (pid $2) exited: $(cat "$W"/*.log 2>/dev/null | tail -5)"
		sleep 0.1
	done
	fail "the server did not start"
}
# s3sig_start NAME ARGS...: an s3sig.py server with its root in $W/root; sets SIG_URL, SIG_LOG.
s3sig_start() {
	local name=$1
	shift
	SIG_LOG=$W/$name.jsonl
	rm -f "$W/$name.port" "$SIG_LOG"
	$S3SIG --root "$W/root" --port-file "$W/$name.port" --log "$SIG_LOG" --lifetime 600 "$@" \
		>"$W/$name.log" 2>&1 &
	local pid=$!
	at_exit "kill $pid 2>/dev/null"
	wait_port_file "$W/$name.port" $pid
	SIG_URL=http://127.0.0.1:$(cat "$W/$name.port")
	SIG_PID=$pid
}

# ---- the image --------------------------------------------------------------------------------
mkdir -p "$W/src/docs/sub dir" "$W/src/data"
python3 - "$W/src" <<'EOF'
import os, random, sys
r = random.Random(88)
root = sys.argv[1]
for i, size in enumerate([0, 1, 4095, 65536, 70000, 1 << 20, 3 << 20, (5 << 20) + 17]):
    with open(os.path.join(root, "data", "f%d.bin" % i), "wb") as f:
        f.write(r.randbytes(size))
for i in range(40):
    with open(os.path.join(root, "docs", "sub dir", "note %02d ü.txt" % i), "w") as f:
        f.write(("line %d of note %d\n" % (i, i)) * (i * 50 + 1))
os.symlink("../data/f1.bin", os.path.join(root, "docs", "link"))
EOF
sqk_build "$W/src" "$W/img.sqsh"
LOCAL=$W/img.sqsh
sqk_ok local_ls ls -lR "$LOCAL"
cp "$OUT_FILE" "$W/local_ls.txt"
CATFILE=data/f7.bin

# ---- 1. s3rver ---------------------------------------------------------------------------------
S3RVER_PORT=$(free_port)
"$S3RVER" --directory "$W/s3rver" --address 127.0.0.1 --port "$S3RVER_PORT" --silent \
	--configure-bucket bkt >"$W/s3rver.log" 2>&1 &
S3RVER_PID=$!
at_exit "kill $S3RVER_PID 2>/dev/null"
EP=http://127.0.0.1:$S3RVER_PORT
for i in $(seq 100); do
	curl -s -o /dev/null "$EP/" && break
	kill -0 "$S3RVER_PID" 2>/dev/null || fail "s3rver exited: $(tail -5 "$W/s3rver.log")"
	sleep 0.2
done
info "s3rver $("$S3RVER" --version) on $EP"
put() { # put ENDPOINT KEY_ENCODED FILE ID SECRET
	curl -sS -f -X PUT -T "$3" --user "$4:$5" --aws-sigv4 "aws:amz:us-east-1:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$1/bkt/$2" -o /dev/null ||
		fail "upload of $2 to $1 failed"
}
put "$EP" img.sqsh "$LOCAL" S3RVER S3RVER
put "$EP" "$KEY_ODD_ENC" "$LOCAL" S3RVER S3RVER

# does s3rver check V4 signatures? a GET signed with a wrong secret
code=$(curl -s -o /dev/null -w '%{http_code}' --user S3RVER:wrong-secret \
	--aws-sigv4 aws:amz:us-east-1:s3 -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$EP/bkt/img.sqsh")
if [ "$code" = 200 ]; then
	S3RVER_CHECKS_SIG=0
	info "s3rver serves a request signed with a wrong secret (HTTP $code): it does not check V4 signatures; s3sig.py does below"
else
	S3RVER_CHECKS_SIG=1
	info "s3rver refuses a wrong secret (HTTP $code)"
fi

export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_ENDPOINT_URL=$EP
sqk_ok rv_ls ls -lR s3://bkt/img.sqsh
cmp -s "$OUT_FILE" "$W/local_ls.txt" || { diff "$W/local_ls.txt" "$OUT_FILE" | head; fail "s3rver: ls -lR differs from the local image's"; }
sqk_ok rv_ls_odd ls -lR "s3://bkt/$KEY_ODD"
cmp -s "$OUT_FILE" "$W/local_ls.txt" || fail "s3rver: ls -lR of '$KEY_ODD' differs"
sqk_ok rv_cat cat s3://bkt/img.sqsh "$CATFILE"
cmp "$OUT_FILE" "$W/src/$CATFILE" || fail "s3rver: sqk cat $CATFILE differs from the source"
sqk_ok rv_cat_odd cat "s3://bkt/$KEY_ODD" "docs/sub dir/note 07 ü.txt"
cmp "$OUT_FILE" "$W/src/docs/sub dir/note 07 ü.txt" || fail "s3rver: cat through '$KEY_ODD' differs"
sqk_ok rv_verify verify s3://bkt/img.sqsh
sqk_ok rv_info info --json s3://bkt/img.sqsh
grep -q 's3://bkt/img.sqsh' "$OUT_FILE" || fail "info --json does not name s3://bkt/img.sqsh"
info "s3rver: ls -lR, cat, verify, info --json through s3://bkt/img.sqsh and '$KEY_ODD'"
unset AWS_ENDPOINT_URL
sqk_ok rv_opt ls --s3-endpoint "$EP" s3://bkt/img.sqsh
export AWS_ENDPOINT_URL=$EP
sqk_refused rv_404 'HTTP status 404 \(NoSuchKey\): no such object' ls s3://bkt/no-such.sqsh
sqk_refused rv_nobucket 'NoSuchBucket' ls s3://nobucket/img.sqsh
AWS_ACCESS_KEY_ID=UNKNOWNKEY sqk_refused rv_badkey '403 \(InvalidAccessKeyId\).*check credentials' \
	ls s3://bkt/img.sqsh
if [ "$S3RVER_CHECKS_SIG" = 1 ]; then
	AWS_SECRET_ACCESS_KEY=wrong sqk_refused rv_badsecret '403.*check credentials' ls s3://bkt/img.sqsh
fi

mark=$(date +%s)
fuse_mount "s3://bkt/$KEY_ODD" "$W/mnt"
tree_equal "sqkfuse on s3rver" "$W/src" "$W/mnt"
fuse_umount "$W/mnt"
cp "$TMP/fuse.err" "$W/fuse_rv.err"
unset AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY

# ---- 2. s3sig.py: every signature checked -------------------------------------------------------
mkdir -p "$W/root/bkt/dir" "$W/root/pub"
cp "$LOCAL" "$W/root/bkt/img.sqsh"
cp "$LOCAL" "$W/root/bkt/$KEY_ODD"
cp "$LOCAL" "$W/root/pub/img.sqsh"
s3sig_start sig --access-key AKIDSQKTEST --secret "$SECRET" --token "$TOKEN" \
	--region eu-central-1 --public pub
export AWS_ACCESS_KEY_ID=AKIDSQKTEST AWS_SECRET_ACCESS_KEY=$SECRET AWS_SESSION_TOKEN=$TOKEN
export AWS_REGION=eu-central-1 AWS_ENDPOINT_URL_S3=$SIG_URL AWS_ENDPOINT_URL=http://127.0.0.1:9/
sqk_ok sig_ls ls -lR s3://bkt/img.sqsh
cmp -s "$OUT_FILE" "$W/local_ls.txt" || fail "s3sig: ls -lR differs from the local image's"
sqk_ok sig_cat cat "s3://bkt/$KEY_ODD" "$CATFILE"
cmp "$OUT_FILE" "$W/src/$CATFILE" || fail "s3sig: sqk cat $CATFILE differs from the source"
sqk_ok sig_verify verify s3://bkt/img.sqsh
fuse_mount s3://bkt/img.sqsh "$W/mnt" -o "stats=$W/stats.json"
tree_equal "sqkfuse on s3sig" "$W/src" "$W/mnt"
fuse_umount "$W/mnt"
cp "$TMP/fuse.err" "$W/fuse_sig.err"
unset AWS_ENDPOINT_URL_S3 AWS_ENDPOINT_URL
fuse_mount s3://bkt/img.sqsh "$W/mnt" -o "s3_endpoint=$SIG_URL"
cmp "$W/mnt/$CATFILE" "$W/src/$CATFILE" || fail "sqkfuse -o s3_endpoint: $CATFILE differs"
fuse_umount "$W/mnt"
export AWS_ENDPOINT_URL=$SIG_URL
python3 - "$SIG_LOG" <<'EOF' || fail "s3sig: not every request was signed and served"
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    n += 1
    if e["status"] not in (200, 206):
        sys.exit("refused: %s" % line)
    if e["signed"] != ["host", "x-amz-content-sha256", "x-amz-date", "x-amz-security-token"]:
        sys.exit("signed headers %s" % e["signed"])
    if not e["range"] or "," in e["range"]:
        sys.exit("not one range: %s" % line)
if n < 10:
    sys.exit("only %d requests logged" % n)
print("  s3sig: %d requests, each signed (host, x-amz-content-sha256, x-amz-date, x-amz-security-token) and checked" % n)
EOF

AWS_SECRET_ACCESS_KEY=not-the-secret sqk_refused sig_badsecret \
	'HTTP status 403 \(SignatureDoesNotMatch\): access denied or signature mismatch: check credentials' \
	cat s3://bkt/img.sqsh "$CATFILE"
[ ! -s "$OUT_FILE" ] || fail "a refused sqk cat wrote to stdout"
AWS_SESSION_TOKEN=other-token sqk_refused sig_badtoken '403 \(InvalidToken\)' ls s3://bkt/img.sqsh
AWS_REGION=us-east-1 sqk_refused sig_region 'region eu-central-1, not us-east-1: set AWS_REGION=eu-central-1' \
	ls s3://bkt/img.sqsh
sqk_refused sig_404 'HTTP status 404 \(NoSuchKey\): no such object' ls s3://bkt/dir/missing.sqsh
sqk_refused sig_nobucket 'no such object: there is no bucket' ls s3://other/img.sqsh
AWS_SECRET_ACCESS_KEY= sqk_refused sig_partial 'AWS_SECRET_ACCESS_KEY is not set' ls s3://bkt/img.sqsh

# credentials and region from profiles of the shared files
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION
mkdir -p "$W/aws"
printf '[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n\n[ci]\naws_access_key_id = AKIDSQKTEST\naws_secret_access_key = %s\naws_session_token = %s\n' \
	"$SECRET" "$TOKEN" >"$W/aws/creds"
printf '[default]\nregion = us-west-2\n[profile ci]\nregion = eu-central-1\n' >"$W/aws/config"
export AWS_SHARED_CREDENTIALS_FILE=$W/aws/creds AWS_CONFIG_FILE=$W/aws/config
AWS_PROFILE=ci sqk_ok sig_profile cat s3://bkt/img.sqsh "$CATFILE"
cmp "$OUT_FILE" "$W/src/$CATFILE" || fail "s3sig: cat with profile 'ci' differs"
sqk_refused sig_default_profile "403 \(InvalidAccessKeyId\).*profile 'default'" ls s3://bkt/img.sqsh
AWS_PROFILE=nosuch sqk_refused sig_nocreds "no AWS credentials found.*profile 'nosuch'" ls s3://bkt/img.sqsh
unset AWS_SHARED_CREDENTIALS_FILE AWS_CONFIG_FILE
sqk_refused sig_nocreds2 'no AWS credentials found.*--no-sign-request' ls s3://bkt/img.sqsh
info "credentials: the environment, profile 'ci' of a credentials file, region from its config"

# unsigned requests: a public bucket serves them, a private one does not
export AWS_REGION=eu-central-1
sqk_ok sig_public cat --no-sign-request s3://pub/img.sqsh "$CATFILE"
cmp "$OUT_FILE" "$W/src/$CATFILE" || fail "s3sig: unsigned cat from the public bucket differs"
sqk_refused sig_private 'HTTP status 403 \(AccessDenied\): access denied to an unsigned request' \
	ls --no-sign-request s3://bkt/img.sqsh
fuse_mount s3://pub/img.sqsh "$W/mnt" -o no_sign_request
cmp "$W/mnt/$CATFILE" "$W/src/$CATFILE" || fail "sqkfuse -o no_sign_request: $CATFILE differs"
fuse_umount "$W/mnt"
kill "$SIG_PID"

# a clock off by an hour
export AWS_ACCESS_KEY_ID=AKIDSQKTEST AWS_SECRET_ACCESS_KEY=$SECRET AWS_SESSION_TOKEN=$TOKEN
s3sig_start skew --access-key AKIDSQKTEST --secret "$SECRET" --region eu-central-1 --clock-offset 3600
export AWS_ENDPOINT_URL=$SIG_URL
sqk_refused sig_skew 'RequestTimeTooSkewed\): the clock of this machine is more than 15 minutes off' \
	ls s3://bkt/img.sqsh
kill "$SIG_PID"

# ---- 3. a retry is signed anew ------------------------------------------------------------------
s3sig_start retry --access-key AKIDSQKTEST --secret "$SECRET" --region eu-central-1 \
	--max-skew 2 --fail-first 1 --fail-range 'bytes=0-' --hold 3
export AWS_ENDPOINT_URL=$SIG_URL
sqk_ok sig_retry ls -lR s3://bkt/img.sqsh
cmp -s "$OUT_FILE" "$W/local_ls.txt" || fail "retry: ls -lR differs"
python3 - "$SIG_LOG" <<'EOF' || fail "retry: the retried probe was not signed anew"
import json, sys
probe = [json.loads(l) for l in open(sys.argv[1]) if '"bytes=0-' in l]
if len(probe) != 2 or probe[0]["status"] != 503 or probe[1]["status"] != 206:
    sys.exit("probe requests: %s" % probe)
if probe[0]["amz_date"] == probe[1]["amz_date"]:
    sys.exit("the retry reused x-amz-date %s" % probe[0]["amz_date"])
print("  retry: 503 after 3 s signed at %s, the retry at %s (a date 2 s old is refused)"
      % (probe[0]["amz_date"], probe[1]["amz_date"]))
EOF
kill "$SIG_PID"

# ---- 4. no secret anywhere ----------------------------------------------------------------------
for s in "$SECRET" "$TOKEN"; do
	if grep -r -a -l -F -- "$s" "$TMP"/*.out "$TMP"/*.err "$W"/*.err "$W/stats.json" \
		"$XDG_CACHE_HOME" >"$TMP/leak" 2>/dev/null; then
		fail "a secret appears in $(tr '\n' ' ' <"$TMP/leak")"
	fi
done
[ -s "$W/stats.json" ] || fail "sqkfuse wrote no stats"
info "no secret key or session token in outputs, stats or the disk cache"

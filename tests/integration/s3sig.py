#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A small S3 server for the s3:// tests that checks AWS Signature V4 (s3rver does not: it only
looks the access key up). Path-style requests /BUCKET/KEY on 127.0.0.1 are served from
ROOT/BUCKET/KEY (GET with one Range, HEAD, PUT), each one verified with its own SigV4 code
(independent of squashkit's; --selftest checks it against AWS's published GET Object example):

  403 InvalidAccessKeyId / SignatureDoesNotMatch / InvalidToken / RequestTimeTooSkewed /
      AccessDenied (unsigned, bucket not --public),
  400 AuthorizationHeaderMalformed (<Region> names the server's region) for another region,
  404 NoSuchBucket / NoSuchKey, as S3 answers them (XML error documents).

The signature must cover host, x-amz-date and x-amz-content-sha256 (x-amz-security-token too
with --token). --fail-first N --fail-range PREFIX: the first N requests whose Range starts with
PREFIX are held --hold seconds and answered 503 SlowDown (a retry must come with a fresh date:
with --max-skew small, one that reuses the old date is refused). --clock-offset shifts the
server's clock. Each request is logged as one JSON line to --log. The port is written to
--port-file once listening.

  python3 s3sig.py --selftest
  python3 s3sig.py --root DIR --port-file F --access-key AK --secret SK [--region R] ...
"""
import argparse
import datetime
import hashlib
import hmac
import json
import os
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def s3_encode(raw: bytes, keep_slash: bool) -> str:
    out = []
    for c in raw:
        if c in UNRESERVED or (keep_slash and c == 0x2F):
            out.append(chr(c))
        else:
            out.append("%%%02X" % c)
    return "".join(out)


def canon_value(v: str) -> str:
    return re.sub(r"[ \t]+", " ", v.strip())


def canonical_request(method, raw_path, raw_query, headers, signed, payload_hash):
    """headers: dict lower-name -> list of values; signed: sorted list of lower names."""
    uri = s3_encode(urllib.parse.unquote_to_bytes(raw_path), True)
    params = []
    if raw_query:
        for p in raw_query.split("&"):
            k, _, v = p.partition("=")
            params.append((s3_encode(urllib.parse.unquote_to_bytes(k), False),
                           s3_encode(urllib.parse.unquote_to_bytes(v), False)))
    query = "&".join("%s=%s" % kv for kv in sorted(params))
    lines = "".join("%s:%s\n" % (n, ",".join(canon_value(v) for v in headers.get(n, [])))
                    for n in signed)
    return "\n".join([method, uri, query, lines, ";".join(signed), payload_hash])


def signature(secret, amz_date, region, service, creq):
    date = amz_date[:8]
    sts = "\n".join(["AWS4-HMAC-SHA256", amz_date,
                     "%s/%s/%s/aws4_request" % (date, region, service),
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()


def selftest():
    """AWS S3 API docs, 'Signature Calculations for the Authorization Header: Transferring
    Payload in a Single Chunk', GET Object example."""
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    hdrs = {"host": ["examplebucket.s3.amazonaws.com"], "range": ["bytes=0-9"],
            "x-amz-content-sha256": [empty], "x-amz-date": ["20130524T000000Z"]}
    creq = canonical_request("GET", "/test.txt", "", hdrs, sorted(hdrs), empty)
    sig = signature("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "20130524T000000Z", "us-east-1",
                    "s3", creq)
    want = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    if sig != want:
        sys.exit("s3sig selftest: signature %s, AWS's example says %s" % (sig, want))
    print("s3sig selftest: ok")


AUTH_RE = re.compile(r"AWS4-HMAC-SHA256\s+Credential=([^,\s]+)\s*,\s*SignedHeaders=([^,\s]+)"
                     r"\s*,\s*Signature=([0-9a-f]{64})\s*$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "s3sig"

    def log_message(self, fmt, *args):
        pass

    # ---- answers ----
    def answer(self, status, body=b"", headers=(), code=None):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        self.record(status, code)

    def error(self, status, code, message, extra=""):
        body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>%s</Code>"
                "<Message>%s</Message>%s<RequestId>s3sig</RequestId></Error>"
                % (code, message, extra)).encode()
        self.answer(status, body, [("Content-Type", "application/xml")], code)

    def record(self, status, code):
        cfg = self.server.cfg
        if not cfg.log:
            return
        entry = {"method": self.command, "path": self.path,
                 "range": self.headers.get("Range"),
                 "amz_date": self.headers.get("x-amz-date"),
                 "signed": getattr(self, "signed", None), "status": status, "code": code,
                 "t": time.time()}
        with self.server.lock, open(cfg.log, "a") as f:
            f.write(json.dumps(entry) + "\n")

    # ---- checks ----
    def headers_dict(self):
        d = {}
        for k, v in self.headers.items():
            d.setdefault(k.lower(), []).append(v)
        return d

    def check_auth(self, bucket):
        """None when the request may go on, else it has been answered."""
        cfg = self.server.cfg
        self.signed = None
        auth = self.headers.get("Authorization")
        if auth is None:
            if bucket in cfg.public:
                return None
            self.error(403, "AccessDenied", "Access Denied")
            return False
        m = AUTH_RE.match(auth)
        if not m:
            self.error(400, "AuthorizationHeaderMalformed", "bad Authorization header")
            return False
        cred, signed, sig = m.group(1).split("/"), m.group(2).split(";"), m.group(3)
        self.signed = signed
        if len(cred) != 5 or cred[3] != "s3" or cred[4] != "aws4_request":
            self.error(400, "AuthorizationHeaderMalformed", "bad credential scope")
            return False
        if cred[0] != cfg.access_key:
            self.error(403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does "
                       "not exist in our records.")
            return False
        if cred[2] != cfg.region:
            self.error(400, "AuthorizationHeaderMalformed", "the region '%s' is wrong; "
                       "expecting '%s'" % (cred[2], cfg.region),
                       "<Region>%s</Region>" % cfg.region)
            return False
        need = ["host", "x-amz-date", "x-amz-content-sha256"]
        if cfg.token:
            need.append("x-amz-security-token")
        missing = [n for n in need if n not in signed or self.headers.get(n) is None]
        if missing or signed != sorted(signed):
            self.error(403, "AccessDenied", "headers not signed or not sorted: %s"
                       % ",".join(missing))
            return False
        if cfg.token and self.headers.get("x-amz-security-token") != cfg.token:
            self.error(403, "InvalidToken", "The provided token is malformed or otherwise "
                       "invalid.")
            return False
        amz_date = self.headers.get("x-amz-date")
        try:
            t = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
        except ValueError:
            self.error(403, "AccessDenied", "bad x-amz-date")
            return False
        if cred[1] != amz_date[:8]:
            self.error(403, "SignatureDoesNotMatch", "scope date is not the request date")
            return False
        if abs(time.time() + cfg.clock_offset - t) > cfg.max_skew:
            self.error(403, "RequestTimeTooSkewed", "The difference between the request time "
                       "and the current time is too large.")
            return False
        raw_path, _, raw_query = self.path.partition("?")
        creq = canonical_request(self.command, raw_path, raw_query, self.headers_dict(), signed,
                                 self.headers.get("x-amz-content-sha256"))
        want = signature(cfg.secret, amz_date, cred[2], "s3", creq)
        if not hmac.compare_digest(want, sig):
            self.error(403, "SignatureDoesNotMatch", "The request signature we calculated "
                       "does not match the signature you provided. Check your key and signing "
                       "method.")
            return False
        return None

    def fail_first(self):
        cfg = self.server.cfg
        rng = self.headers.get("Range") or ""
        if not cfg.fail_first or not rng.startswith(cfg.fail_range):
            return False
        with self.server.lock:
            n = self.server.failed.get(rng, 0)
            if n >= cfg.fail_first:
                return False
            self.server.failed[rng] = n + 1
        time.sleep(cfg.hold)
        self.error(503, "SlowDown", "Please reduce your request rate.")
        return True

    # ---- objects ----
    def locate(self):
        raw_path = self.path.partition("?")[0]
        parts = urllib.parse.unquote_to_bytes(raw_path).decode("utf-8", "surrogateescape")
        bucket, _, key = parts.lstrip("/").partition("/")
        return bucket, key

    def handle_req(self):
        bucket, key = self.locate()
        if self.check_auth(bucket) is not None:
            return
        if self.fail_first():
            return
        root = self.server.cfg.root
        bdir = os.path.join(root, bucket)
        if not bucket or "/" in bucket or bucket.startswith(".") or not os.path.isdir(bdir):
            self.error(404, "NoSuchBucket", "The specified bucket does not exist",
                       "<BucketName>%s</BucketName>" % bucket)
            return
        path = os.path.normpath(os.path.join(bdir, key))
        if not path.startswith(bdir + os.sep):
            self.error(400, "InvalidArgument", "bad key")
            return
        if self.command == "PUT":
            n = int(self.headers.get("Content-Length", "0"))
            data = self.rfile.read(n)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            self.answer(200, b"", [("ETag", '"%s"' % hashlib.md5(data).hexdigest())])
            return
        if not os.path.isfile(path):
            self.error(404, "NoSuchKey", "The specified key does not exist.",
                       "<Key>%s</Key>" % key)
            return
        self.serve(path)

    def serve(self, path):
        st = os.stat(path)
        size = st.st_size
        etag = '"%x-%x"' % (int(st.st_mtime_ns), size)
        lastmod = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(st.st_mtime))
        hdrs = [("ETag", etag), ("Last-Modified", lastmod), ("Accept-Ranges", "bytes")]
        rng = self.headers.get("Range")
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng or "")
        if rng is not None and (not m or m.group(1) == m.group(2) == ""):
            self.error(400, "InvalidArgument", "one range only")
            return
        with open(path, "rb") as f:
            if not m:
                self.answer(200, f.read(), hdrs)
                return
            if m.group(1) == "":  # a suffix range: the last N bytes, as S3 serves it
                a, b = max(size - int(m.group(2)), 0), size - 1
            else:
                a = int(m.group(1))
                b = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if a >= size or a > b:
                self.error(416, "InvalidRange", "The requested range is not satisfiable")
                return
            f.seek(a)
            body = f.read(b - a + 1)
        self.answer(206, body, hdrs + [("Content-Range", "bytes %d-%d/%d" % (a, b, size))])

    do_GET = do_HEAD = do_PUT = handle_req


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--root")
    ap.add_argument("--port-file")
    ap.add_argument("--access-key")
    ap.add_argument("--secret")
    ap.add_argument("--token")
    ap.add_argument("--region", default="us-east-1")
    ap.add_argument("--public", action="append", default=[])
    ap.add_argument("--max-skew", type=float, default=900)
    ap.add_argument("--clock-offset", type=float, default=0)
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--fail-range", default="bytes=")
    ap.add_argument("--hold", type=float, default=0)
    ap.add_argument("--log")
    ap.add_argument("--lifetime", type=float, default=900, help="exit after this many seconds")
    cfg = ap.parse_args()
    if cfg.selftest:
        selftest()
        return
    selftest()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    srv.cfg = cfg
    srv.lock = threading.Lock()
    srv.failed = {}
    stop = threading.Timer(cfg.lifetime, srv.shutdown)
    stop.daemon = True
    stop.start()
    with open(cfg.port_file + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    os.rename(cfg.port_file + ".tmp", cfg.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    main()

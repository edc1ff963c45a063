#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""faultproxy.py --upstream HOST:PORT --port-file FILE [--quiet]

A small HTTP/1.1 reverse proxy for fault injection in the remote-image tests (python3 stdlib
only). It listens on 127.0.0.1 at a free port, writes that port to FILE once it accepts
connections, serves each client connection on its own thread (keep-alive on the client side) and
opens one upstream connection per request.

A request for /_f/MODE/rest/of/path is forwarded upstream as /rest/of/path with the faults MODE
names; any other path passes through untouched. MODE is one or more comma-separated items:

  delay=MS      wait MS milliseconds before answering each request
  bodydelay=MS  send the headers at once, then wait MS milliseconds before the body (a caching
                proxy filling the whole file before it serves a range); on every response
  trickle=BPS   send the headers at once, then the body at BPS bytes a second
  hang          read the request and never answer (the socket stays open until the client
                closes it); hangx=N: only the first N requests hang
  503           answer every request 503 with a small body; 503x=N: only the first N
  drop          forward, send the headers (the full Content-Length) and half of the body, then
                close the connection (a response without a body, e.g. to HEAD, is closed
                before its headers); dropx=N: only the first N requests
  corrupt@OFF   in every response whose byte range (Content-Range on 206, the whole body on 200)
                includes absolute file offset OFF, flip that byte (xor 0xff); repeatable
  norange       remove Range (and If-Range) before forwarding: upstream answers 200, full body
  wrongsize     from the second response of this MODE on, rewrite the total of Content-Range
                (bytes A-B/TOTAL or bytes */TOTAL) to TOTAL+4096
  newetag       a server whose ETag changes from answer to answer (the same bytes): If-Match is
                removed before forwarding and its ETag is the answer's; every other answer gets
                a new ETag
  noetag        remove ETag from every answer (a proxy that drops it; Last-Modified stays)
  alt=NAME      every second request (the 2nd, 4th, ...) goes upstream for the file NAME in the
                same folder instead: two mirrors behind a round-robin balancer
  tag=WORD      no effect: only makes a MODE string (and so its counters) distinct
  gated         the other items of this MODE have no effect until GET /_arm/MODE (and again
                none after GET /_disarm/MODE): e.g. a mount opens cleanly, then its reads hang

State (counters) is kept per MODE string, so tests using different MODE strings do not
interfere. An item limited to N (hangx, 503x, dropx) counts its own injections: with
"503x=2,dropx=1" the first two requests answer 503 and the third is dropped. Items are applied in
the order delay, hang, 503, then the request is forwarded (norange), then wrongsize, corrupt and
drop shape the response.

GET /_stats returns JSON: {"MODE": {"requests": N, "faults": N, "bytes": N, "items": {ITEM: N},
"armed": BOOL}} with "-" for requests without a fault prefix; GET /_reset clears all state. Each request is
logged on stderr unless --quiet: "MODE METHOD PATH range=RANGE #N: asked" when it arrives (N
counts the MODE's requests in their order of arrival), and one line more when it ends.
"""
import argparse
import http.client
import http.server
import json
import os
import re
import select
import socket
import socketserver
import sys
import threading
import time

HOP_BY_HOP = {'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate',
              'proxy-authorization', 'te', 'trailer', 'trailers', 'transfer-encoding', 'upgrade'}
CHUNK = 65536


class ModeError(Exception):
    pass


class Mode:
    """The parsed items of one MODE string and its counters."""

    def __init__(self, text):
        self.text = text
        self.delay_ms = 0
        self.bodydelay_ms = 0
        self.trickle = 0
        self.alt = None
        self.hang = None       # None: off, -1: always, N: first N
        self.e503 = None
        self.drop = None
        self.corrupt = []
        self.norange = False
        self.wrongsize = False
        self.newetag = False
        self.noetag = False
        self.gated = False
        self.armed = False
        self.requests = 0
        self.responses = 0
        self.faults = 0
        self.bytes = 0
        self.items = {}
        for item in text.split(','):
            self._parse(item.strip())

    def _parse(self, item):
        def count(v):
            if not re.fullmatch(r'[0-9]+', v):
                raise ModeError('bad count in %r' % item)
            return int(v)
        if item.startswith('delay='):
            self.delay_ms = count(item[6:])
        elif item.startswith('bodydelay='):
            self.bodydelay_ms = count(item[10:])
        elif item.startswith('trickle='):
            self.trickle = count(item[8:])
        elif item == 'hang':
            self.hang = -1
        elif item.startswith('hangx='):
            self.hang = count(item[6:])
        elif item == '503':
            self.e503 = -1
        elif item.startswith('503x='):
            self.e503 = count(item[5:])
        elif item == 'drop':
            self.drop = -1
        elif item.startswith('dropx='):
            self.drop = count(item[6:])
        elif item.startswith('corrupt@'):
            self.corrupt.append(count(item[8:]))
        elif item == 'norange':
            self.norange = True
        elif item == 'wrongsize':
            self.wrongsize = True
        elif item == 'newetag':
            self.newetag = True
        elif item == 'noetag':
            self.noetag = True
        elif item.startswith('alt='):
            self.alt = item[4:]
            if not re.fullmatch(r'[A-Za-z0-9._-]+', self.alt):
                raise ModeError('bad file name in %r' % item)
        elif item.startswith('tag='):
            pass
        elif item == 'gated':
            self.gated = True
        else:
            raise ModeError('unknown fault item %r' % item)

    def active(self):
        """Whether the fault items apply now (caller holds the lock)."""
        return not self.gated or self.armed

    def hit(self, name):
        """Record one injection of item NAME (caller holds the lock)."""
        self.items[name] = self.items.get(name, 0) + 1
        self.faults += 1

    def take(self, attr, name):
        """Whether limited item ATTR applies to this request; records it (caller holds the lock)."""
        limit = getattr(self, attr)
        if limit is None:
            return False
        if limit >= 0 and self.items.get(name, 0) >= limit:
            return False
        self.hit(name)
        return True

    def stats(self):
        return {'requests': self.requests, 'faults': self.faults, 'bytes': self.bytes,
                'items': dict(self.items), 'armed': self.armed}


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.modes = {}

    def get(self, text):
        with self.lock:
            m = self.modes.get(text)
            if m is None:
                m = Mode(text if text != '-' else 'tag=-')  # '-': no faults
                m.text = text
                self.modes[text] = m
            return m


STATE = State()
ARGS = None


def log(msg):
    if not ARGS.quiet:
        sys.stderr.write('faultproxy: %s\n' % msg)
        sys.stderr.flush()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'faultproxy'

    def log_message(self, fmt, *args):  # the default per-request log: replaced by ours
        pass

    # every method goes through the same path
    def do_GET(self):
        self.handle_any()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_OPTIONS = do_GET

    def reply(self, code, body, ctype='text/plain'):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)

    def drain_body(self):
        n = int(self.headers.get('Content-Length') or 0)
        return self.rfile.read(n) if n > 0 else b''

    def wait_client_close(self):
        """Keep the connection open, answering nothing, until the client closes it."""
        self.close_connection = True
        sock = self.connection
        try:
            while True:
                r, _, _ = select.select([sock], [], [], 1.0)
                if r:
                    if not sock.recv(65536):
                        return
        except OSError:
            return

    def handle_any(self):
        path = self.path
        if path in ('/_stats', '/_reset'):
            self.drain_body()
            if path == '/_reset':
                with STATE.lock:
                    STATE.modes.clear()
                return self.reply(200, '{}\n', 'application/json')
            with STATE.lock:
                st = {k: m.stats() for k, m in STATE.modes.items()}
            return self.reply(200, json.dumps(st, indent=1, sort_keys=True) + '\n',
                              'application/json')

        for verb in ('/_arm/', '/_disarm/'):
            if path.startswith(verb):
                self.drain_body()
                try:
                    m = STATE.get(path[len(verb):])
                except ModeError as e:
                    return self.reply(400, 'faultproxy: %s\n' % e)
                with STATE.lock:
                    m.armed = verb == '/_arm/'
                log('%s%s' % (verb, m.text))
                return self.reply(200, json.dumps(m.stats()) + '\n', 'application/json')

        mode_text = '-'
        if path.startswith('/_f/'):
            rest = path[4:]
            mode_text, slash, tail = rest.partition('/')
            path = '/' + tail
            if not mode_text:
                return self.reply(400, 'empty fault mode\n')
        try:
            mode = STATE.get(mode_text)
        except ModeError as e:
            self.drain_body()
            return self.reply(400, 'faultproxy: %s\n' % e)

        body = self.drain_body()
        rng = self.headers.get('Range', '-')
        with STATE.lock:
            mode.requests += 1
            seq = mode.requests
            active = mode.active()
            hang = active and mode.take('hang', 'hang')
            e503 = active and not hang and mode.take('e503', '503')
        what = '%s %s %s range=%s' % (mode_text, self.command, path, rng)
        log('%s #%d: asked' % (what, seq))

        if mode.delay_ms and active:
            time.sleep(mode.delay_ms / 1000.0)
            with STATE.lock:
                mode.hit('delay')
        if hang:
            log('%s #%d: hang' % (what, seq))
            self.wait_client_close()
            log('%s #%d: hung request closed by the client' % (what, seq))
            return
        if e503:
            log('%s #%d: 503' % (what, seq))
            return self.reply(503, 'faultproxy: injected 503\n')

        if mode.alt and active and seq % 2 == 0:
            path = path.rpartition('/')[0] + '/' + mode.alt
            with STATE.lock:
                mode.hit('alt')
            what += ' -> ' + path

        # forward
        headers = {}
        for k, v in self.headers.items():
            lk = k.lower()
            if lk in HOP_BY_HOP or lk == 'host':
                continue
            if mode.norange and active and lk in ('range', 'if-range'):
                continue
            if mode.newetag and active and lk == 'if-match':
                continue
            headers[k] = v
        if mode.norange and active and 'Range' in self.headers:
            with STATE.lock:
                mode.hit('norange')
        headers['Host'] = ARGS.upstream
        headers['Connection'] = 'close'
        uhost, _, uport = ARGS.upstream.rpartition(':')
        try:
            up = http.client.HTTPConnection(uhost, int(uport), timeout=120)
            up.request(self.command, path, body=body or None, headers=headers)
            resp = up.getresponse()
        except OSError as e:
            log('%s #%d: upstream error %s' % (what, seq, e))
            return self.reply(502, 'faultproxy: upstream error: %s\n' % e)

        etag = None
        if mode.newetag and active:
            etag = self.headers.get('If-Match') or '"new-%d"' % seq
            with STATE.lock:
                mode.hit('newetag')
        try:
            self.relay(mode, seq, what, resp, active, etag)
        finally:
            up.close()

    def relay(self, mode, seq, what, resp, active, etag=None):
        out = []
        clen = None
        crange = None
        for k, v in resp.getheaders():
            lk = k.lower()
            if lk in HOP_BY_HOP:
                continue
            if etag and lk == 'etag':
                v = etag
            if lk == 'etag' and active and mode.noetag:
                with STATE.lock:
                    mode.hit('noetag')
                continue
            if lk == 'content-length':
                clen = int(v)
            if lk == 'content-range':
                crange = v
            out.append([k, v])
        has_body = self.command != 'HEAD' and resp.status not in (204, 304) and \
            not 100 <= resp.status < 200
        data = None
        if has_body and clen is None:  # not from nginx's static files; buffer it
            data = resp.read()
            clen = len(data)
            out.append(['Content-Length', str(clen)])

        with STATE.lock:
            mode.responses += 1
            first = mode.responses == 1
            rewrite = active and mode.wrongsize and not first and crange is not None
            drop = active and mode.take('drop', 'drop')
        notes = []
        if rewrite:
            for h in out:
                if h[0].lower() == 'content-range':
                    m = re.fullmatch(r'\s*bytes\s+([0-9]+-[0-9]+|\*)/([0-9]+)\s*', h[1])
                    if m:
                        h[1] = 'bytes %s/%d' % (m.group(1), int(m.group(2)) + 4096)
                        notes.append('wrongsize %s -> %s' % (crange, h[1]))
                        with STATE.lock:
                            mode.hit('wrongsize')

        # absolute file offset of the body's first byte, for corrupt@
        start = None
        if mode.corrupt and active and has_body:
            if resp.status == 200:
                start = 0
            elif resp.status == 206 and crange:
                m = re.fullmatch(r'\s*bytes\s+([0-9]+)-([0-9]+)/.*', crange)
                if m:
                    start = int(m.group(1))

        if drop and not has_body:  # nothing to cut short: close before the headers
            self.close_connection = True
            log('%s #%d: %d dropped before the headers (no body)' % (what, seq, resp.status))
            return

        self.send_response_only(resp.status, resp.reason)
        for k, v in out:
            self.send_header(k, v)
        if drop:
            self.send_header('Connection', 'close')
        self.end_headers()
        if has_body and active and mode.bodydelay_ms:
            try:
                self.wfile.flush()
            except OSError:
                pass
            time.sleep(mode.bodydelay_ms / 1000.0)
            with STATE.lock:
                mode.hit('bodydelay')
            notes.append('body after %d ms' % mode.bodydelay_ms)

        if not has_body:
            log('%s #%d: %d %s' % (what, seq, resp.status, ' '.join(notes)))
            return

        limit = clen // 2 if drop else clen
        sent = 0
        flipped = 0
        step = CHUNK
        if active and mode.trickle:
            step = max(1, mode.trickle // 10)
            with STATE.lock:
                mode.hit('trickle')
            notes.append('trickled at %d bytes/s' % mode.trickle)
        try:
            while sent < limit:
                if step != CHUNK:
                    self.wfile.flush()
                    time.sleep(0.1)
                if data is not None:
                    buf = data[sent:min(limit, sent + step)]
                else:
                    buf = resp.read(min(step, limit - sent))
                if not buf:
                    break
                if start is not None:
                    b = None
                    for off in mode.corrupt:
                        i = off - start - sent
                        if 0 <= i < len(buf):
                            if b is None:
                                b = bytearray(buf)
                            b[i] ^= 0xff
                            flipped += 1
                    if b is not None:
                        buf = bytes(b)
                self.wfile.write(buf)
                sent += len(buf)
        except OSError as e:
            notes.append('client went away (%s)' % e)
            self.close_connection = True
        with STATE.lock:
            mode.bytes += sent
            if flipped:
                mode.hit('corrupt')
        if flipped:
            notes.append('corrupted %d byte(s)' % flipped)
        if drop:
            notes.append('dropped after %d of %d bytes' % (sent, clen))
            self.close_connection = True
            try:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif sent < clen:  # upstream ended early: the client must not wait for the rest
            self.close_connection = True
        log('%s #%d: %d %s' % (what, seq, resp.status, ' '.join(notes)))


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main():
    global ARGS
    ap = argparse.ArgumentParser(description='fault-injecting HTTP reverse proxy')
    ap.add_argument('--upstream', required=True, help='HOST:PORT of the real server')
    ap.add_argument('--port-file', required=True, help='file to write the listening port to')
    ap.add_argument('--listen', default='127.0.0.1', help='address to listen on')
    ap.add_argument('--quiet', action='store_true', help='no per-request log lines')
    ARGS = ap.parse_args()
    host, _, port = ARGS.upstream.rpartition(':')
    if not host or not port.isdigit():
        ap.error('--upstream must be HOST:PORT')
    srv = Server((ARGS.listen, 0), Handler)
    port = srv.server_address[1]
    tmp = ARGS.port_file + '.tmp'
    with open(tmp, 'w') as f:
        f.write('%d\n' % port)
    os.rename(tmp, ARGS.port_file)
    log('listening on %s:%d, upstream %s' % (ARGS.listen, port, ARGS.upstream))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == '__main__':
    main()

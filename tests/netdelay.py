#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""netdelay.py QNUM DELAY_MS READY_FILE PARENT_PID

A fixed one-way packet delay without netem (kernels without sch_netem), python3 stdlib only.
Holds every packet of NFQUEUE queue QNUM for DELAY_MS milliseconds, then accepts it, in arrival
order (as `netem delay`), talking nfnetlink_queue directly. Creates READY_FILE once the queue
is bound and configured (the kernel acknowledged both); exits 1 with a message on stderr when
it cannot (no NFQUEUE support). Exits when process PARENT_PID is gone (checked every second),
so a killed test cannot leave it behind; SIGTERM ends it at once.

Run it as root inside the network namespace whose packets it delays (queues are per network
namespace), start it first, and only then queue the packets, e.g. for 10 ms each way on lo
(20 ms round trips):

    ip netns exec NS python3 tests/netdelay.py 0 10 /tmp/ready $$ &
    # ... wait for /tmp/ready ...
    ip netns exec NS iptables -t raw -A PREROUTING -i lo -j NFQUEUE --queue-num 0 --queue-bypass

raw PREROUTING sees loopback packets on their receive side, after the sender's socket has let
go of them (as netem does): TCP small queues do not throttle the sender. --queue-bypass lets
packets through undelayed when this helper is not running. Used by ns_add_delay in
tests/integration/lib.sh and by tests/bench/bench_remote.sh.
"""
import os, select, socket, struct, sys, time

if len(sys.argv) != 5:
    sys.stderr.write('usage: %s\n' % __doc__.split('\n')[0])
    sys.exit(2)
qnum, delay, ready, parent = int(sys.argv[1]), float(sys.argv[2]) / 1000.0, sys.argv[3], int(sys.argv[4])
NFQ = 3 << 8                                     # NFNL_SUBSYS_QUEUE
PACKET, CONFIG, VERDICT_BATCH = NFQ | 0, NFQ | 2, NFQ | 3
NLM_F_REQUEST, NLM_F_ACK, NLMSG_ERROR = 1, 4, 2
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)   # NETLINK_NETFILTER
s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)               # SO_RCVBUFFORCE
s.setsockopt(270, 5, 1)                                     # SOL_NETLINK, NETLINK_NO_ENOBUFS
s.bind((0, 0))
seq = 0
pending, head, check = [], 0, 0.0   # (release time, packet id), released up to head
setup_done = False
acks = {}                           # seq of a message sent with NLM_F_ACK -> its error (0: ok)


def attr(t, v):
    return struct.pack('=HH', 4 + len(v), t) + v + b'\0' * (-len(v) % 4)


def send(mtype, attrs, flags=NLM_F_REQUEST):
    global seq
    seq += 1
    body = struct.pack('=BBH', 0, 0, socket.htons(qnum)) + b''.join(attrs)
    s.send(struct.pack('=IHHII', 16 + len(body), mtype, flags, seq, 0) + body)
    return seq


def receive():
    """Reads every waiting message: queued packets go to pending, acks and errors to acks."""
    while True:
        try:
            buf = s.recv(1 << 20, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        now = time.monotonic()
        off = 0
        while off + 16 <= len(buf):
            ln, mt = struct.unpack_from('=IH', buf, off)
            if ln < 16:
                break
            if mt == PACKET:
                a = off + 20
                while a + 4 <= off + ln:
                    al, at = struct.unpack_from('=HH', buf, a)
                    if al < 4:
                        break
                    if at & 0x7fff == 1:                              # NFQA_PACKET_HDR
                        pending.append((now + delay, struct.unpack_from('!I', buf, a + 4)[0]))
                        break
                    a += (al + 3) & ~3
            elif mt == NLMSG_ERROR and ln >= 36:
                err = struct.unpack_from('=i', buf, off + 16)[0]
                acks[struct.unpack_from('=I', buf, off + 28)[0]] = err  # the request's seq
                if err and setup_done:
                    sys.stderr.write('nfqueue error %d\n' % err)
            off += (ln + 3) & ~3


# bind the queue, then copy only the metadata (the packet id) of each packet; the kernel acks both
want = [send(CONFIG, [attr(1, struct.pack('!BBH', 1, 0, 0))], NLM_F_REQUEST | NLM_F_ACK),  # CMD_BIND
        send(CONFIG, [attr(2, struct.pack('!IB', 0, 1)),                    # COPY_META
                      attr(3, struct.pack('!I', 1 << 20)),                  # queue maxlen
                      attr(4, struct.pack('!I', 5)), attr(5, struct.pack('!I', 5))],  # FAIL_OPEN | GSO
             NLM_F_REQUEST | NLM_F_ACK)]
end = time.monotonic() + 5.0
while any(w not in acks for w in want) and time.monotonic() < end:
    if select.select([s], [], [], 0.1)[0]:
        receive()
for w in want:
    if acks.get(w) != 0:
        sys.exit('netdelay: cannot bind NFQUEUE queue %d: %s (no nfnetlink_queue in this kernel, or '
                 'another process has the queue)' % (qnum, 'no answer' if w not in acks else os.strerror(-acks[w])))
setup_done = True
open(ready, 'w').close()
while True:
    now = time.monotonic()
    if now >= check:
        check = now + 1.0
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            sys.exit(0)
    timeout = 1.0 if head == len(pending) else max(0.0, pending[head][0] - now)
    if select.select([s], [], [], timeout)[0]:
        receive()
    now = time.monotonic()
    last = None
    while head < len(pending) and pending[head][0] <= now:
        last = pending[head][1]
        head += 1
    if last is not None:
        send(VERDICT_BATCH, [attr(2, struct.pack('!II', 1, last))])        # NF_ACCEPT, ids <= last
        if head > 4096:
            del pending[:head]
            head = 0

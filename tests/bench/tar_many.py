#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Streams a ustar archive of N small files to standard output, never storing it: the tree of
bench_many.sh (s0/ holds files 0 .. SMALL-1, s1/ the rest, in directories dNNNNNN of PER files
fNNNNNNN, each a few dozen bytes naming its path and number, all distinct), in the order an
external sort finds hardest: the directories first, then the files interleaved across all
directories (file 0 of each directory, then file 1 of each...), so no directory's entries come
together.

    tar_many.py N [SMALL [PER]]      # SMALL defaults to N / 10, PER to 1000
"""
import sys

MTIME = 1700000000


def octal(v, width):
    return b"%0*o\0" % (width - 1, v)


def template(typeflag, mode):
    h = bytearray(512)
    h[100:108] = octal(mode, 8)
    h[108:116] = octal(0, 8)
    h[116:124] = octal(0, 8)
    h[136:148] = octal(MTIME, 12)
    h[148:156] = b" " * 8
    h[156:157] = typeflag
    h[257:265] = b"ustar\x0000"
    return h


def header(tpl, name, size):
    h = bytearray(tpl)
    h[0:len(name)] = name
    h[124:136] = octal(size, 12)
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h)


def main():
    n = int(sys.argv[1])
    small = int(sys.argv[2]) if len(sys.argv) > 2 else n // 10
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    out = sys.stdout.buffer
    dtpl, ftpl = template(b"5", 0o755), template(b"0", 0o644)
    ndirs = (n + per - 1) // per
    part = lambda i: b"s0" if i < small else b"s1"
    buf = [header(dtpl, b"s0/", 0), header(dtpl, b"s1/", 0)]
    for d in range(ndirs):
        for p in sorted({part(d * per), part(min(n, (d + 1) * per) - 1)}):
            buf.append(header(dtpl, b"%s/d%06d/" % (p, d), 0))
    out.write(b"".join(buf))
    zeros = [b"\0" * k for k in range(512)]
    for j in range(per):
        buf = []
        for d in range(ndirs):
            i = d * per + j
            if i >= n:
                continue
            rel = b"%s/d%06d" % (part(i), d)
            name = b"%s/f%07d" % (rel, i)
            data = b"%s: file %d of %d\n" % (name, i, n)
            buf.append(header(ftpl, name, len(data)))
            buf.append(data + zeros[-len(data) % 512])
            if len(buf) >= 4096:
                out.write(b"".join(buf))
                buf = []
        out.write(b"".join(buf))
    out.write(b"\0" * 10240)


if __name__ == "__main__":
    main()

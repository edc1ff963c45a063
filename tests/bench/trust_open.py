#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
# Open cost of a trusted-key check: `sqk ls IMG /` with and without --trust KEY.pub, alternated,
# N runs; medians and means. Usage: trust_open.py SQK IMG KEY.pub N
import subprocess, sys, time, statistics
sqk, img, pub, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def run(args):
    t = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t
a, b = [], []
for i in range(n):
    a.append(run([sqk, "ls", img, "/"]))
    b.append(run([sqk, "ls", "--trust", pub, img, "/"]))
ma, mb = statistics.median(a), statistics.median(b)
print("without --trust: median %.2f ms, mean %.2f ms" % (ma * 1e3, statistics.mean(a) * 1e3))
print("with --trust:    median %.2f ms, mean %.2f ms" % (mb * 1e3, statistics.mean(b) * 1e3))
print("difference: median %+.2f ms, mean %+.2f ms" % ((mb - ma) * 1e3, (statistics.mean(b) - statistics.mean(a)) * 1e3))

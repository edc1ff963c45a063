# SPDX-License-Identifier: BSD-2-Clause
"""Simulates remote fetch policies over a recorded app start (issue 16's analysis, not a test).

Input: the image file and the trace of the start on a local mount (sqkfuse IMAGE MNT
-o trace=FILE: every file whose data was read, in first-read order). The layout comes from the
image's own tables (sqsh_layout.py). Output: for each policy, the serial round trips the
program waits for one after another and the bytes served, with an estimated time
    local sqkfuse start + round trips x RTT [+ bytes of waited-for fetches / link rate]
and, with --rate, at least all bytes served / link rate.

The model of the program (single-threaded, as the Python start is):
- the traced files are read one after another, in trace order;
- a shared object (a name with ".so") is read as ld.so does: its first block (the ELF header,
  a read at offset 0), then page faults at random; today's policy fetches it whole from its
  second out-of-sequence read, so a multi-block .so costs up to 3 waits and all its bytes;
- any other file is read whole, in order: its data blocks, then its tail in a fragment block;
- a read waits one round trip when a chunk it needs is neither cached nor asked for at an
  earlier step (a background fetch issued at step s is there from step s + 1: the program's own
  CPU time between reads, which this ignores, only helps it);
- chunks are the integrity chunks (64 KiB): a cold read fetches the chunks covering the stored
  block it needs (one request), as reader/remote/ does; a file's stream fetches ahead after
  256 KiB read (RA_START), windows of 2 MiB doubling to 64 MiB, within its own blocks.

Policies:
  today           as above (reader/lib/stream.c, reader/remote/), with the walk: 8 files with
                  data blocks read whole, each starting within 4 blocks of the end of the one
                  before, turn on readahead across files (to the end of the image or of the
                  hint range) for the walk's files and for fragment reads
  dirK            today + once K distinct files of a directory were read, the data (blocks and
                  fragment blocks) of all its other regular files is fetched in the background
  dirKfrag, pkgKfrag  the same, fetching only the siblings' fragment blocks (small files, tails)
  pkgK            the same for a package subtree (lib/python3/dist-packages/X,
                  lib/python3.11/X; other files: their directory)
  unitN           cold demand reads fetch the aligned N-byte units around what they need
                  (crosses files: breaks t_87's laziness bound as written)
  fileN           cold demand reads of a file fetch up to N bytes of its own blocks from there
                  (stays inside the file: passes t_87)
  sowhole         a .so fetched whole at its first read (one wait instead of up to three)
  hint            today + the image's prefetch hint ranges (--hint: sqk info --json's output)
                  fetched at open, there from the first read
  oracle          every chunk of the traced files fetched at open in parallel: a prefetch list
                  for the plain image (what the ordered image's hint gives, without reordering)
Combinations: "dir2+file1M" etc.

"waits" is the number of serial round trips (open included); the columns after it split the
waits on cold chunks by the kind of file read (waits on a background fetch issued at the same
step count in the total only). "% image" is of the image file.

Checked against tests/bench/app_components.sh runs (20 ms RTT, 2026-12-02): the plain image,
today: model 903 waits, 88.9 MB; nginx 890 requests, 880 serial (gaps >= one RTT), 89.4 MB.
The ordered image with its hint: model 2 waits, 62.0 MB; nginx 63 requests, 62.1 MB, the start
as fast as locally. The ordered image with -o noprefetch: nginx 125 requests, 103 serial, 62.1
MB; the model brackets it (369 waits, or 57 with --so-read-whole): how far the walk runs
depends on whether the kernel reads a mapped .so whole, which the trace does not record.

    python3 app_policy.py IMAGE TRACE [--rtt 0.020] [--local S] [--rate MB/s] [--baseline S]
                          [--hint INFO.json] [--so-read-whole] [POLICY...]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sqsh_layout  # noqa: E402

CH = 65536
RA_START = 256 << 10
RA_MIN = 2 << 20
RA_MAX = 64 << 20
RA_SLACK = 8 << 20
WALK_FILES = 8
WALK_GAP_BLOCKS = 4
OPEN_BYTES = 65536  # the probe at open; the tail (digests) and metadata tables are added


def is_so(path):
    return ".so" in path.rsplit("/", 1)[-1]


def pkg_root(path):
    parts = path.split("/")
    if parts[:3] == ["lib", "python3", "dist-packages"] and len(parts) > 4:
        return "/".join(parts[:4])
    if parts[:2] == ["lib", "python3.11"] and len(parts) > 3 and parts[2] != "lib-dynload":
        return "/".join(parts[:3])
    return "/".join(parts[:-1])


class Sim:
    def __init__(self, lay, trace, policy):
        self.lay, self.trace = lay, trace
        self.step = 0                 # serial round trips so far
        self.have = {}                # chunk -> step from which it is there
        self.bytes = 0
        self.demand_bytes = 0         # of them, fetched by reads that wait (serial transfers)
        self.requests = 0
        self.dir_k = self.pkg_k = 0
        self.unit = self.fileunit = 0
        self.oracle = False
        self.sowhole = False
        self.sib_frag_only = False
        self.hint = False
        self.hint_ranges = []
        self.kind = None
        self.waits_by = {}
        for p in policy.split("+"):
            if p.endswith("frag") and p[:3] in ("dir", "pkg"):
                self.sib_frag_only = True
                p = p[:-4]
            if p.startswith("dir"):
                self.dir_k = int(p[3:])
            elif p.startswith("pkg"):
                self.pkg_k = int(p[3:])
            elif p.startswith("unit"):
                self.unit = parse_size(p[4:])
            elif p.startswith("file"):
                self.fileunit = parse_size(p[4:])
            elif p == "sowhole":
                self.sowhole = True
            elif p == "hint":
                self.hint = True
            elif p == "oracle":
                self.oracle = True
            elif p != "today":
                raise SystemExit("unknown policy " + p)
        self.walk_run = self.walk_start = self.walk_end = 0
        self.walk_on = False
        self.so_whole_read = False
        self.walk_streams = []   # [next, ra_end, window, got]
        self.seen_dir, self.seen_pkg = {}, {}
        self.done_dir, self.done_pkg = set(), set()
        self.members_dir, self.members_pkg = {}, {}
        for p in lay.files:
            self.members_dir.setdefault(p.rsplit("/", 1)[0] if "/" in p else "", []).append(p)
            self.members_pkg.setdefault(pkg_root(p), []).append(p)

    # ---- fetching ----
    def fetch(self, a, b, when):
        """Ask for the chunks of image bytes [a, b) not yet asked for; there from step when.
        Returns the bytes requested."""
        k0, k1 = a // CH, (b + CH - 1) // CH
        new = [k for k in range(k0, k1) if k not in self.have]
        if not new:
            return False
        n = 0
        for k in new:
            self.have[k] = when
            n += min(CH, self.lay.size - k * CH)
        self.bytes += n
        self.requests += 1
        return n

    def background(self, a, b):
        self.fetch(a, b, self.step + 1)

    def demand(self, a, b, f=None, walk=False):
        """A read the program waits for needs image bytes [a, b) (of file f); walk: the read
        may be fetched ahead across files (a walk in image order is on)."""
        if walk and self.walk_on:
            self.walk_ahead(a, b)
        k0, k1 = a // CH, (b + CH - 1) // CH
        missing = [k for k in range(k0, k1) if self.have.get(k, 1 << 60) > self.step]
        if not missing:
            return 0
        asked = [k for k in missing if k in self.have]
        cold = [k for k in missing if k not in self.have]
        if not cold:
            # only in flight, asked at this very step: the same round trip
            self.step = max(self.have[k] for k in asked)
            return 0
        lo, hi = a, b
        if self.unit:
            lo, hi = lo // self.unit * self.unit, (hi + self.unit - 1) // self.unit * self.unit
        if self.fileunit and f is not None and f.data_end > f.blocks_start and f.blocks_start <= a < f.data_end:
            hi = max(hi, min(f.data_end, a + self.fileunit))
        self.wait()
        self.demand_bytes += self.fetch(lo, min(hi, self.lay.size), self.step)
        return hi - lo

    # ---- the walk through the image in its own order (reader/lib/stream.c) ----
    def walk_first_read(self, f):
        bs = self.lay.block_size
        if self.walk_run and self.walk_start <= f.blocks_start < self.walk_end:
            return "aside"
        if self.walk_run and 0 <= f.blocks_start - self.walk_end <= WALK_GAP_BLOCKS * bs:
            return "in"
        self.walk_run, self.walk_on = 0, False
        return "out"

    def walk_read_whole(self, f, state):
        if state == "aside":
            return
        self.walk_run = self.walk_run + 1 if state == "in" and self.walk_run else 1
        if self.walk_run == 1:
            self.walk_start = f.blocks_start
        self.walk_end = f.data_end
        if self.walk_run >= WALK_FILES:
            self.walk_on = True

    def walk_limit(self, pos):
        for st, ln in self.hint_ranges:
            if st <= pos < st + ln:
                return st + ln
        return self.lay.size

    def walk_ahead(self, a, b):
        """http_plan_ahead (reader/remote/ahead.c) for the walk's streams (told apart by position)."""
        for t in self.walk_streams:
            if a + CH >= t[0] and a <= max(t[1], t[0]) + RA_SLACK:
                break
        else:
            self.walk_streams = (self.walk_streams + [[b, b, 0, b - a]])[-8:]
            return
        t[3] += b - a
        t[0] = max(t[0], b)
        if t[3] < RA_START:
            return
        t[2] = min(RA_MAX, t[2] * 2) if t[2] else RA_MIN
        t[1] = max(t[1], t[0])
        lim = self.walk_limit(a)
        if t[1] - t[0] >= t[2] // 2 or t[1] >= lim:
            return
        lo, t[1] = t[1], min(lim, t[0] + t[2])
        self.background(lo, t[1])

    def wait(self):
        self.step += 1
        self.waits_by[self.kind] = self.waits_by.get(self.kind, 0) + 1

    # ---- the program ----
    def consume(self, path):
        for key, seen, done, members, k in (
                (path.rsplit("/", 1)[0] if "/" in path else "", self.seen_dir, self.done_dir, self.members_dir, self.dir_k),
                (pkg_root(path), self.seen_pkg, self.done_pkg, self.members_pkg, self.pkg_k)):
            if not k or key in done:
                continue
            seen[key] = seen.get(key, 0) + 1
            if seen[key] >= k:
                done.add(key)
                for m in members[key]:
                    mf = self.lay.files[m]
                    for a, b in mf.ranges():
                        if self.sib_frag_only and mf.frag and a != mf.frag[0]:
                            continue  # only the fragment blocks of the siblings
                        if self.sib_frag_only and not mf.frag:
                            continue
                        self.background(a, b)

    def read_file(self, f, so):
        blocks = f.blocks
        state = self.walk_first_read(f) if blocks else None
        inwalk = state == "in"
        if so and self.sowhole and blocks:
            # a shared object fetched whole at its first read: one wait
            if self.have.get(blocks[0][0] // CH, 1 << 60) > self.step:
                self.wait()
                self.demand_bytes += self.fetch(f.blocks_start, f.data_end, self.step)
        elif so and len(blocks) >= 2:
            # header read, one random fault, then the whole file from the second one
            self.demand(blocks[0][0], blocks[0][0] + blocks[0][1], f)
            mid = blocks[len(blocks) // 2]
            self.demand(mid[0], mid[0] + mid[1], f)
            self.step_whole(f)
        else:
            got, ra_end, window = 0, f.blocks_start, 0
            for off, ln in blocks:
                self.demand(off, off + ln, f, walk=inwalk)
                got += ln
                if got < RA_START or got < 2 * CH:
                    continue
                window = min(RA_MAX, window * 2) if window else RA_MIN
                nxt = off + ln
                ra_end = max(ra_end, nxt)
                if ra_end - nxt < window // 2 and ra_end < f.data_end:
                    a, ra_end = ra_end, min(f.data_end, nxt + window)
                    self.background(a, ra_end)
        if f.frag:
            self.demand(f.frag[0], f.frag[0] + f.frag[1], f, walk=True)
        if blocks and (not so or self.so_whole_read):
            self.walk_read_whole(f, state)

    def step_whole(self, f):
        """The second random read: the whole file asked for; the fault waits for its part."""
        mid = f.blocks[-1]
        if self.have.get(mid[0] // CH, 1 << 60) <= self.step:
            return
        self.wait()
        self.demand_bytes += self.fetch(f.blocks_start, f.data_end, self.step)

    def run(self):
        lay = self.lay
        # open: the probe, the tail (digests, trailer), the metadata tables (fetched whole)
        self.fetch(0, OPEN_BYTES, 0)
        self.fetch(lay.inode_table, lay.size, 0)
        self.step = 2  # two round trips at open (probe, then tail + tables)
        if self.hint:
            # the image's prefetch hint, fetched at open in parallel (sqk_image_prefetch)
            for st, ln in self.hint_ranges:
                self.fetch(st, st + ln, self.step)
        if self.oracle:
            for p in self.trace:
                f = lay.files.get(p)
                if f:
                    for a, b in f.ranges():
                        self.fetch(a, b, self.step)
        for p in self.trace:
            f = lay.files.get(p)
            if f is None:
                continue
            self.kind = ("so" if is_so(p) else "pyc" if p.endswith(".pyc") else "other") + \
                ("-blocks" if f.blocks else "-frag")
            self.consume(p)
            self.read_file(f, is_so(p))
        return self.step, self.bytes, self.requests


def parse_size(s):
    m = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * m[s[-1]] if s[-1] in m else int(s)


def needed_bytes(lay, trace, g=CH):
    ks = set()
    for p in trace:
        f = lay.files.get(p)
        if f:
            for a, b in f.ranges():
                ks.update(range(a // g, (b + g - 1) // g))
    exact = set()
    for p in trace:
        f = lay.files.get(p)
        if f:
            for a, b in f.ranges():
                exact.add((a, b))
    return len(ks) * g, sum(b - a for a, b in exact)


DEFAULT = ["today", "sowhole", "dir2", "dir3", "dir4", "pkg2", "pkg3", "pkg4", "dir2frag", "pkg2frag", "pkg2frag+sowhole", "unit256K", "unit1M",
           "file256K", "file1M", "dir2+file1M", "pkg2+file1M", "dir2+unit256K", "pkg2+unit1M", "oracle"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("image")
    ap.add_argument("trace")
    ap.add_argument("--rtt", type=float, default=0.020, help="seconds (20 ms)")
    ap.add_argument("--local", type=float, default=None, help="the start on a local sqkfuse mount, s")
    ap.add_argument("--rate", type=float, default=None, help="link rate, MB/s, for the bytes bound")
    ap.add_argument("--baseline", type=float, default=None, help="curl + loop mount + start, s")
    ap.add_argument("--hint", default=None, help="sqk info --json output of the image (its prefetch_hint)")
    ap.add_argument("--so-read-whole", action="store_true",
                    help="count a mapped .so as read whole for the walk (brackets the measured walk "
                         "on an ordered image without its hint; no effect on the plain image)")
    ap.add_argument("policies", nargs="*")
    a = ap.parse_intermixed_args()
    lay = sqsh_layout.Layout(a.image)
    trace = [bytes(line.rstrip("\n"), "latin-1").decode("unicode_escape").encode("latin-1")
             .decode("utf-8", "surrogateescape") for line in open(a.trace, encoding="latin-1")]
    missing = [p for p in trace if p not in lay.files]
    chunks, exact = needed_bytes(lay, trace)
    print("image %d bytes, %d files; trace %d files (%d not regular files in the image), "
          "%d directories, %d package roots" % (
              lay.size, len(lay.files), len(trace), len(missing),
              len({p.rsplit("/", 1)[0] for p in trace}), len({pkg_root(p) for p in trace})))
    print("the traced files' stored bytes: %.1f MB exact, %.1f MB in 64 KiB chunks (%.1f%% of the image)" % (
        exact / 1e6, chunks / 1e6, 100.0 * chunks / lay.size))
    print("  in chunks of " + ", ".join("%d KiB %.1f%%" % (g >> 10, 100.0 * needed_bytes(lay, trace, g)[0] / lay.size)
                                     for g in (4096, 16384, 32768, 65536, 262144, 1 << 20)))
    print("waits: serial round trips at open (2) and of reads; by the kind of file read (blocks: has data blocks;"
          " frag: in a fragment block only)")
    hdr = "%-16s %7s %8s %9s %8s" % ("policy", "waits", "requests", "served MB", "% image")
    if a.local is not None:
        hdr += " %9s" % "est. s"
        if a.baseline:
            hdr += " %6s" % "ratio"
    print(hdr)
    for pol in a.policies or DEFAULT:
        sim = Sim(lay, trace, pol)
        sim.so_whole_read = a.so_read_whole
        if a.hint:
            import json
            sim.hint_ranges = [(h["start"], h["length"]) for h in json.load(open(a.hint))["prefetch_hint"] or []]
        waits, served, reqs = sim.run()
        line = "%-16s %7d %8d %9.1f %7.1f%%" % (pol, waits, reqs, served / 1e6, 100.0 * served / lay.size)
        if a.local is not None:
            t = a.local + waits * a.rtt
            if a.rate:
                t = max(t + sim.demand_bytes / 1e6 / a.rate, served / 1e6 / a.rate)
            line += " %9.2f" % t
            if a.baseline:
                line += " %6.2f" % (t / a.baseline)
        print(line + "   " + " ".join("%s %d" % kv for kv in sorted(sim.waits_by.items())))


if __name__ == "__main__":
    main()

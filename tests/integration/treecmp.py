#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""treecmp.py A B [options]: compare two directory trees exhaustively.

A is the source (expected), B the tree under test (a mount or an extraction). Compared for every
relative path: presence, file type, permission bits (incl. setuid/setgid/sticky), uid, gid, mtime
(seconds), size and content of regular files, device major/minor, symlink targets, xattrs (every
namespace, without following symlinks), hard-link groups (the partition of non-directories by
inode must be equal and st_nlink must equal the group size) and directory link counts.

Options:
  --no-xattrs           do not compare xattrs
  --b-no-xattrs         B must have no xattrs at all (image built with --no-xattrs)
  --xattr-prefix P      only compare xattrs whose name starts with P (repeatable)
  --ignore-root-attrs   do not compare the attributes of the roots themselves
  --no-hardlinks        do not compare inode partitions / nlink (e.g. a FUSE mount w/o inode nos)
  --exclude GLOB        paths of A (relative, fnmatch) left out of the comparison, with their
                        subtrees (repeatable)
  --mtime T             every mtime in B must be T
  --clamp-mtime T       B's mtime must be min(mtime in A, T)
  --uid N / --gid N     every uid/gid in B must be N

Sparse files: data regions of A are found with SEEK_DATA/SEEK_HOLE; holes of A are checked to be
zero in B, skipping B's own holes with SEEK_DATA when B supports it, else reading B in big
chunks (a 5 GiB sparse file on a squashfs mount reads in a few seconds).
Exit 0 when identical, 1 on any difference, 2 on usage errors.
"""
import errno
import fnmatch
import os
import stat
import sys

CHUNK = 8 << 20
ZERO = bytes(CHUNK)


def usage(msg):
    sys.stderr.write('treecmp: %s\n' % msg)
    sys.exit(2)


def parse_args(argv):
    o = {'xattrs': True, 'b_no_xattrs': False, 'root_attrs': True, 'hardlinks': True,
         'exclude': [], 'xprefix': [], 'mtime': None, 'clamp': None, 'uid': None, 'gid': None}
    pos = []
    it = iter(argv)
    for a in it:
        if a == '--no-xattrs':
            o['xattrs'] = False
        elif a == '--b-no-xattrs':
            o['xattrs'] = False
            o['b_no_xattrs'] = True
        elif a == '--ignore-root-attrs':
            o['root_attrs'] = False
        elif a == '--no-hardlinks':
            o['hardlinks'] = False
        elif a == '--xattr-prefix':
            try:
                o['xprefix'].append(os.fsencode(next(it)))
            except StopIteration:
                usage('--xattr-prefix needs a value')
        elif a in ('--exclude', '--mtime', '--clamp-mtime', '--uid', '--gid'):
            try:
                v = next(it)
            except StopIteration:
                usage('%s needs a value' % a)
            if a == '--exclude':
                o['exclude'].append(os.fsencode(v))
            else:
                o[{'--clamp-mtime': 'clamp'}.get(a, a[2:])] = int(v)
        elif a.startswith('--'):
            usage('unknown option %s' % a)
        else:
            pos.append(a)
    if len(pos) != 2:
        usage('usage: treecmp.py A B [options]')
    return pos[0], pos[1], o


class Cmp:
    def __init__(self, a, b, o):
        self.a = os.fsencode(a)
        self.b = os.fsencode(b)
        self.o = o
        self.ndiff = 0
        self.count = 0

    def diff(self, rel, msg):
        self.ndiff += 1
        if self.ndiff <= 500:
            shown = rel.decode('utf-8', 'backslashreplace') if rel else '.'
            print('DIFF %r: %s' % (shown, msg))
        elif self.ndiff == 501:
            print('... further differences not shown')

    def excluded(self, rel):
        return any(fnmatch.fnmatchcase(rel, g) for g in self.o['exclude'])

    def walk(self, top):
        """Relative path -> lstat for every entry under top (top itself is b'')."""
        out = {b'': os.lstat(top)}
        stack = [b'']
        while stack:
            rel = stack.pop()
            full = os.path.join(top, rel) if rel else top
            try:
                names = os.listdir(full)
            except OSError as e:
                self.diff(rel, 'cannot list %s: %s' % (full, e))
                continue
            for n in names:
                r = os.path.join(rel, n) if rel else n
                if top == self.a and self.excluded(r):
                    continue
                st = os.lstat(os.path.join(top, r))
                out[r] = st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(r)
        return out

    def run(self):
        ta = self.walk(self.a)
        tb = self.walk(self.b)
        for r in sorted(set(ta) - set(tb)):
            self.diff(r, 'missing in B (%s)' % kind(ta[r].st_mode))
        for r in sorted(set(tb) - set(ta)):
            self.diff(r, 'unexpected in B (%s)' % kind(tb[r].st_mode))
        common = sorted(set(ta) & set(tb))
        subdirs_a = count_subdirs(ta)
        subdirs_b = count_subdirs(tb)
        for r in common:
            self.count += 1
            self.entry(r, ta[r], tb[r], subdirs_a.get(r, 0), subdirs_b.get(r, 0))
        if self.o['hardlinks']:
            self.links(ta, tb, common)
        return self.ndiff

    def entry(self, r, sa, sb, nsub_a, nsub_b):
        fa = os.path.join(self.a, r) if r else self.a
        fb = os.path.join(self.b, r) if r else self.b
        ta, tb = stat.S_IFMT(sa.st_mode), stat.S_IFMT(sb.st_mode)
        if ta != tb:
            self.diff(r, 'type %s vs %s' % (kind(sa.st_mode), kind(sb.st_mode)))
            return
        attrs = self.o['root_attrs'] or r != b''
        if attrs:
            self.attrs(r, sa, sb)
        if stat.S_ISREG(sa.st_mode):
            if sa.st_size != sb.st_size:
                self.diff(r, 'size %d vs %d' % (sa.st_size, sb.st_size))
            else:
                self.content(r, fa, fb, sa.st_size)
        elif stat.S_ISLNK(sa.st_mode):
            la, lb = os.readlink(fa), os.readlink(fb)
            if la != lb:
                self.diff(r, 'symlink target %r vs %r' % (la[:80], lb[:80]))
            if sb.st_size != len(lb):
                self.diff(r, 'symlink st_size %d but target has %d bytes' % (sb.st_size, len(lb)))
        elif stat.S_ISCHR(sa.st_mode) or stat.S_ISBLK(sa.st_mode):
            ma, mb = (os.major(sa.st_rdev), os.minor(sa.st_rdev)), \
                (os.major(sb.st_rdev), os.minor(sb.st_rdev))
            if ma != mb:
                self.diff(r, 'device %d:%d vs %d:%d' % (ma + mb))
        elif stat.S_ISDIR(sa.st_mode) and attrs and self.o['hardlinks']:
            # the usual convention 2 + subdirectories; only checked where A follows it
            if sa.st_nlink == 2 + nsub_a and sb.st_nlink != 2 + nsub_b:
                self.diff(r, 'directory nlink %d, expected %d' % (sb.st_nlink, 2 + nsub_b))
        if self.o['xattrs'] and attrs:
            xa, xb = xattrs(fa), xattrs(fb)
            if self.o['xprefix']:
                xa = {k: v for k, v in xa.items() if k.startswith(tuple(self.o['xprefix']))}
                xb = {k: v for k, v in xb.items() if k.startswith(tuple(self.o['xprefix']))}
            if xa != xb:
                for k in sorted(set(xa) | set(xb)):
                    va, vb = xa.get(k), xb.get(k)
                    if va != vb:
                        self.diff(r, 'xattr %s: %s vs %s' % (k.decode(errors='replace'),
                                                             short(va), short(vb)))
        if self.o['b_no_xattrs']:
            xb = xattrs(fb)
            if xb:
                self.diff(r, 'B has xattrs %s but none were expected' %
                          sorted(k.decode(errors='replace') for k in xb))

    def attrs(self, r, sa, sb):
        pa, pb = stat.S_IMODE(sa.st_mode), stat.S_IMODE(sb.st_mode)
        if pa != pb and not stat.S_ISLNK(sa.st_mode):
            self.diff(r, 'mode %04o vs %04o' % (pa, pb))
        uid = sa.st_uid if self.o['uid'] is None else self.o['uid']
        gid = sa.st_gid if self.o['gid'] is None else self.o['gid']
        if uid != sb.st_uid:
            self.diff(r, 'uid %d vs %d' % (uid, sb.st_uid))
        if gid != sb.st_gid:
            self.diff(r, 'gid %d vs %d' % (gid, sb.st_gid))
        mt = int(sa.st_mtime)
        if self.o['mtime'] is not None:
            mt = self.o['mtime']
        elif self.o['clamp'] is not None:
            mt = min(mt, self.o['clamp'])
        if mt != int(sb.st_mtime):
            self.diff(r, 'mtime %d vs %d' % (mt, int(sb.st_mtime)))

    def content(self, r, fa, fb, size):
        try:
            with open(fa, 'rb', buffering=0) as a, open(fb, 'rb', buffering=0) as b:
                msg = compare_files(a, b, size)
        except OSError as e:
            msg = 'read error: %s' % e
        if msg:
            self.diff(r, msg)

    def links(self, ta, tb, common):
        ga, gb = {}, {}
        for r in common:
            if not stat.S_ISDIR(ta[r].st_mode):
                ga.setdefault((ta[r].st_dev, ta[r].st_ino), []).append(r)
                gb.setdefault((tb[r].st_dev, tb[r].st_ino), []).append(r)
        part_a = {r: tuple(sorted(g)) for g in ga.values() for r in g}
        part_b = {r: tuple(sorted(g)) for g in gb.values() for r in g}
        seen = set()
        for r in common:
            if r not in part_a or part_a[r] in seen:
                continue
            seen.add(part_a[r])
            if part_a[r] != part_b[r]:
                self.diff(r, 'hard-link group %s vs %s' % (fmt_group(part_a[r]),
                                                          fmt_group(part_b[r])))
        for r in common:
            if r in part_b:
                want = len(part_a[r])
                if ta[r].st_nlink == want and tb[r].st_nlink != want:
                    self.diff(r, 'nlink %d, expected %d' % (tb[r].st_nlink, want))
                elif tb[r].st_nlink != len(part_b[r]):
                    self.diff(r, 'nlink %d but %d names share the inode in B' %
                              (tb[r].st_nlink, len(part_b[r])))


def compare_files(a, b, size):
    """None when equal, else a message. Walks A's data regions; checks B is zero elsewhere."""
    pos = 0
    for start, end in data_regions(a, size):
        if start > pos:
            m = check_zero(b, pos, start)
            if m:
                return m
        m = compare_range(a, b, start, end)
        if m:
            return m
        pos = end
    if pos < size:
        m = check_zero(b, pos, size)
        if m:
            return m
    # nothing past the end either
    b.seek(size)
    if b.read(1):
        return 'B has data past st_size'
    return None


def data_regions(f, size):
    fd = f.fileno()
    if size < (1 << 20):
        yield (0, size)
        return
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:
                return
            yield (pos, size)
            return
        end = os.lseek(fd, start, os.SEEK_HOLE)
        yield (start, min(end, size))
        pos = end


def compare_range(a, b, start, end):
    a.seek(start)
    b.seek(start)
    pos = start
    while pos < end:
        n = min(CHUNK, end - pos)
        da = read_full(a, n)
        db = read_full(b, n)
        if len(da) != n:
            return 'A read short at %d' % pos
        if da != db:
            if len(db) != n:
                return 'B read short at %d (%d of %d bytes)' % (pos, len(db), n)
            i = next(i for i in range(n) if da[i] != db[i])
            return 'content differs at offset %d (%#x)' % (pos + i, pos + i)
        pos += n
    return None


def check_zero(b, start, end):
    """Every byte of B in [start, end) must be zero."""
    fd = b.fileno()
    pos = start
    while pos < end:
        try:
            d = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as e:
            if e.errno == errno.ENXIO:   # only a hole up to EOF
                return None
            d = pos
        if d >= end:
            return None
        try:
            h = min(os.lseek(fd, d, os.SEEK_HOLE), end)
        except OSError:
            h = end
        if h <= d:
            h = end
        b.seek(d)
        p = d
        while p < h:
            n = min(CHUNK, h - p)
            buf = read_full(b, n)
            if len(buf) != n:
                return 'B read short at %d (%d of %d bytes)' % (p, len(buf), n)
            if buf != ZERO[:n]:
                i = next(i for i in range(n) if buf[i])
                return 'B has non-zero byte at %d (%#x) where A has a hole' % (p + i, p + i)
            p += n
        try:
            os.posix_fadvise(fd, d, h - d, os.POSIX_FADV_DONTNEED)
        except (OSError, AttributeError):
            pass
        pos = h
    return None


def read_full(f, n):
    parts = []
    got = 0
    while got < n:
        d = f.read(n - got)
        if not d:
            break
        parts.append(d)
        got += len(d)
    return b''.join(parts)


def xattrs(path):
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError as e:
        if e.errno in (errno.ENOTSUP, errno.EOPNOTSUPP):
            return {}
        raise
    out = {}
    for n in names:
        try:
            out[os.fsencode(n)] = os.getxattr(path, n, follow_symlinks=False)
        except OSError as e:
            out[os.fsencode(n)] = ('<error %s>' % e).encode()
    return out


def count_subdirs(tree):
    n = {}
    for r, st in tree.items():
        if r and stat.S_ISDIR(st.st_mode):
            parent = os.path.dirname(r)
            n[parent] = n.get(parent, 0) + 1
    return n


def kind(mode):
    for test, name in ((stat.S_ISREG, 'file'), (stat.S_ISDIR, 'dir'), (stat.S_ISLNK, 'symlink'),
                       (stat.S_ISCHR, 'chardev'), (stat.S_ISBLK, 'blockdev'),
                       (stat.S_ISFIFO, 'fifo'), (stat.S_ISSOCK, 'socket')):
        if test(mode):
            return name
    return 'unknown %o' % mode


def short(v):
    if v is None:
        return '<absent>'
    return repr(v[:60]) + ('...(%d bytes)' % len(v) if len(v) > 60 else '')


def fmt_group(g):
    return '[' + ', '.join(x.decode('utf-8', 'backslashreplace') for x in g) + ']'


def main():
    a, b, o = parse_args(sys.argv[1:])
    for d in (a, b):
        if not os.path.isdir(d):
            usage('%s is not a directory' % d)
    c = Cmp(a, b, o)
    nd = c.run()
    print('treecmp: %d entries compared, %d difference%s' % (c.count, nd, '' if nd == 1 else 's'))
    return 1 if nd else 0


if __name__ == '__main__':
    sys.exit(main())

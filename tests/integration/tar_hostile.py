#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Writes the hostile and odd tar archives of t_27_hostile_tar.sh (made here, never stored).

  tar_hostile.py deep LEVELS OUT     one file ("foo.txt") LEVELS directories deep, named by one
                                     GNU long name, its directories implied (node-tar's
                                     excessively-deep.tar has 222,371 in a pax path)
  tar_hostile.py chain DEPTH OUT     directories d/d/... each listed (GNU long names), the
                                     deepest entry, a file "f" holding "deep\\n", at DEPTH
  tar_hostile.py trailing KIND OUT   a small archive (two end blocks and record padding), then:
                                     nuls (408 zero bytes, tar-split's extranils), block (one
                                     block of 0xAB), text (a line of text), lone (one zero block
                                     then a block of zeros ending in a newline: plexus archiver)
  tar_hostile.py hardlinks OUT       a, b and c one file (b, c links to a), then a, c again as
                                     regular files; d and e (e a link to d), then e, d again
  tar_hostile.py mtimes OUT          files with mtimes -1, 2^33, 0, 2^32-1 (pax records)
  tar_hostile.py pseudo DEPTH OUT    --pseudo definitions of directories p/p/... DEPTH deep
  tar_hostile.py fcmp A B            compares two trees deeper than PATH_MAX allows to name
                                     (walked by directory fds): the relative paths, types,
                                     permissions, sizes, contents and mtimes; prints the
                                     entries and the deepest level; exit 1 on a difference
"""
import hashlib
import io
import os
import stat
import sys
import tarfile


def add(t, name, data=None, **kw):
    ti = tarfile.TarInfo(name)
    ti.mtime = kw.pop('mtime', 1700000000)
    for k, v in kw.items():
        setattr(ti, k, v)
    if data is not None:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
    else:
        t.addfile(ti)


def deep(levels, out):
    with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as t:
        add(t, 'a/' * levels + 'foo.txt', b'deep\n')


def chain(depth, out):
    with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as t:
        for k in range(1, depth):
            add(t, '/'.join(['d'] * k), type=tarfile.DIRTYPE, mode=0o755)
        add(t, '/'.join(['d'] * (depth - 1) + ['f']), b'deep\n', mode=0o644)


def small():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as t:
        add(t, 'dir', type=tarfile.DIRTYPE, mode=0o755)
        add(t, 'dir/file', b'content\n', mode=0o644)
        add(t, 'top', b'top\n' * 300, mode=0o600)
    return buf.getvalue()


def trailing(kind, out):
    data = small()
    if kind == 'nuls':
        data += b'\0' * 408
    elif kind == 'block':
        data += b'\xab' * 512
    elif kind == 'text':
        data += b'this is not a tar header\n'
    elif kind == 'lone':
        # the entries, one zero block, a block of zeros but its last byte (no record padding)
        end = len(data.rstrip(b'\0'))
        end += -end % 512
        data = data[:end] + b'\0' * 512 + b'\0' * 511 + b'\n'
    else:
        sys.exit('unknown kind ' + kind)
    with open(out, 'wb') as f:
        f.write(data)


def hardlinks(out):
    with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as t:
        add(t, 'a', b'old a\n')
        add(t, 'b', type=tarfile.LNKTYPE, linkname='a')
        add(t, 'c', type=tarfile.LNKTYPE, linkname='a')
        add(t, 'a', b'new a\n')
        add(t, 'c', b'new c\n')
        add(t, 'd', b'old d\n')
        add(t, 'e', type=tarfile.LNKTYPE, linkname='d')
        add(t, 'e', b'new e\n')
        add(t, 'd', b'new d\n')
        add(t, 'f', b'old f\n')
        add(t, 'g', type=tarfile.LNKTYPE, linkname='f')
        add(t, 'f', b'new f\n')
        add(t, 'h', type=tarfile.LNKTYPE, linkname='f')


def mtimes(out):
    with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:
        add(t, 'before-1970', b'x\n', mtime=-1)
        add(t, 'after-2106', b'y\n', mtime=2**33)
        add(t, 'zero', b'z\n', mtime=0)
        add(t, 'last', b'l\n', mtime=2**32 - 1)


def pseudo(depth, out):
    with open(out, 'w') as f:
        for k in range(1, depth + 1):
            f.write('/'.join(['p'] * k) + ' d 755 0 0\n')


def entry(n, dfd):
    st = os.stat(n, dir_fd=dfd, follow_symlinks=False)
    h = ''
    if stat.S_ISREG(st.st_mode):
        fd = os.open(n, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
        with os.fdopen(fd, 'rb') as f:
            h = hashlib.sha256(f.read()).hexdigest()
    elif stat.S_ISLNK(st.st_mode):
        h = os.readlink(n, dir_fd=dfd)
    return st, (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                0 if stat.S_ISDIR(st.st_mode) else st.st_size, h, int(st.st_mtime))


def tree(top):
    """{relative path: (type, perm, size, sha256 or target, mtime)}, walked by directory fds
    without recursion (os.fwalk recurses once per level)."""
    got = {}
    stack = [(os.open(top, os.O_RDONLY | os.O_DIRECTORY), '')]
    while stack:
        dfd, rel = stack.pop()
        subdirs = []
        for n in sorted(os.listdir(dfd)):
            r = rel + n
            st, got[r] = entry(n, dfd)
            if stat.S_ISDIR(st.st_mode):
                subdirs.append((os.open(n, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW,
                                        dir_fd=dfd), r + '/'))
        os.close(dfd)
        stack.extend(subdirs)
    return got


def fcmp(a, b):
    ta, tb = tree(a), tree(b)
    bad = 0
    for r in sorted(set(ta) | set(tb)):
        if ta.get(r) != tb.get(r):
            bad += 1
            if bad <= 5:
                print('differs: %s...%s (%d levels): %s vs %s' % (r[:40], r[-40:],
                      r.count('/') + 1, ta.get(r), tb.get(r)))
    deepest = max((r.count('/') + 1 for r in ta), default=0)
    print('%d entries, deepest at level %d, %d differ' % (len(ta), deepest, bad))
    sys.exit(1 if bad else 0)


def main(a):
    if a[0] == 'deep':
        deep(int(a[1]), a[2])
    elif a[0] == 'chain':
        chain(int(a[1]), a[2])
    elif a[0] == 'trailing':
        trailing(a[1], a[2])
    elif a[0] == 'hardlinks':
        hardlinks(a[1])
    elif a[0] == 'mtimes':
        mtimes(a[1])
    elif a[0] == 'pseudo':
        pseudo(int(a[1]), a[2])
    elif a[0] == 'fcmp':
        fcmp(a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == '__main__':
    main(sys.argv[1:])

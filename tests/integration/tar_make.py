#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tar_make.py KIND OUT: writes the crafted tar archive KIND to OUT for t_22_tar_in.sh, with
Python's tarfile (which needs no root for owners or device nodes).

  implied    only a/b/c.txt and x/y/z.txt, then the directory x listed after its contents
  devices    appends to the existing archive OUT a char device 300:70000 owned 1234:99 and a
             block device 8:17 owned 4000000000:3000000000
  hostile    ../../etc/evil, /abs/path, ./a/../../b, ok/../../../ok2, a symlink to
             ../../../etc/passwd (targets are kept as they are) and a hard link named
             ../../etc/hl to ../../etc/evil
  xattrs     pax SCHILY.xattr user./trusted./security. (and a system. ACL, not storable),
             LIBARCHIVE.xattr (base64, binary value), and the same name twice, as bsdtar writes
  threefiles first.bin (3000 bytes), second.bin (300000), third.txt (100), GNU format: headers
             at 0, 3584 and 304128
  crosslink  y/link_to_a, a hard link to x/fa (an entry of another archive, concatenated before)
  selflink   a file 'a', then a hard link 'a' to 'a'
  shuffled   40,000 entries in random order (seed 19) for the external sort: files under
             directories implied before they are listed (or never), paths listed again
             (file by file, by symlink or device, an empty directory by a file, a file by a
             directory, a directory's new attributes), hard links to files, symlinks, devices
             and other links, link names and link targets replaced, xattrs, equal contents
"""
import base64
import io
import random
import stat
import sys
import tarfile
import time


def add(t, name, data=None, **kw):
    ti = tarfile.TarInfo(name)
    ti.mtime = kw.pop('mtime', 1000000)
    for k, v in kw.items():
        setattr(ti, k, v)
    if data is None:
        t.addfile(ti)
    else:
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))


def implied(out):
    with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:
        add(t, 'a/b/c.txt', b'hello\n', mode=0o640, uid=7, gid=8, mtime=1000000)
        add(t, 'x/y/z.txt', b'zz\n', mode=0o644, mtime=2000000)
        add(t, 'x', type=tarfile.DIRTYPE, mode=0o700, uid=5, gid=6, mtime=999999)


def devices(out):
    with tarfile.open(out, 'a') as t:
        add(t, 'd/dev_c', type=tarfile.CHRTYPE, devmajor=300, devminor=70000, mode=0o620,
            uid=1234, gid=99, mtime=5)
        add(t, 'd/dev_b', type=tarfile.BLKTYPE, devmajor=8, devminor=17, mode=0o660,
            uid=4000000000, gid=3000000000, mtime=5)


def hostile(out):
    with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:
        add(t, '../../etc/evil', b'evil\n')
        add(t, '/abs/path', b'abs\n')
        add(t, './a/../../b', b'b\n')
        add(t, 'ok/../../../ok2', b'ok2\n')
        add(t, 'lnk', type=tarfile.SYMTYPE, linkname='../../../etc/passwd', mode=0o777)
        add(t, '../../etc/hl', type=tarfile.LNKTYPE, linkname='../../etc/evil')


def xattrs(out):
    with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:
        ti = tarfile.TarInfo('f')
        ti.pax_headers = {'SCHILY.xattr.user.a': 'va', 'SCHILY.xattr.trusted.b': 'vb',
                          'SCHILY.xattr.security.c': 'vc',
                          'SCHILY.xattr.system.posix_acl_access': 'x'}
        ti.size = 3
        t.addfile(ti, io.BytesIO(b'abc'))
        ti = tarfile.TarInfo('g')
        b64 = base64.b64encode(b'\x00\x01\xff').decode().rstrip('=')
        ti.pax_headers = {'LIBARCHIVE.xattr.user.bin': b64, 'SCHILY.xattr.user.twice': 'same',
                          'LIBARCHIVE.xattr.user.twice': base64.b64encode(b'same').decode()}
        t.addfile(ti)


def threefiles(out):
    r = random.Random(1)
    with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as t:
        for name, n in (('first.bin', 3000), ('second.bin', 300000), ('third.txt', 100)):
            add(t, name, r.randbytes(n))


def crosslink(out):
    with tarfile.open(out, 'w') as t:
        add(t, 'y/link_to_a', type=tarfile.LNKTYPE, linkname='x/fa')


def selflink(out):
    with tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as t:
        add(t, 'a', b'abc')
        add(t, 'a', type=tarfile.LNKTYPE, linkname='a')


def shuffled(out, n=40000):
    """Also writes OUT.lls: the tree an extraction gives, as tar_lls.py lists an image."""
    r = random.Random(19)
    dirs = ['d%d' % i for i in range(40)]
    dirs += ['%s/s%d' % (r.choice(dirs), i) for i in range(200)]
    dirs += ['%s/t%d' % (r.choice(dirs), i) for i in range(400)]
    nondir = {}   # path -> its inode (a dict; hard links share it) for what is not a directory
    dstate = {}   # directory path -> (mode, uid, mtime); implied: never listed
    empty = []    # explicit empty directories (never given entries)
    count = [0]

    def parents(path):
        parts = path.split('/')
        for i in range(1, len(parts)):
            dstate.setdefault('/'.join(parts[:i]), (0o755, 0, 0))

    def put_dir(t, d, mode):
        count[0] += 1
        uid, mtime = r.choice((0, 5)), 2000000 + r.randrange(100)
        add(t, d, type=tarfile.DIRTYPE, mode=mode, mtime=mtime, uid=uid)
        parents(d)
        dstate[d] = (mode, uid, mtime)

    def put(t, name, kind='f', data=None, target=None):
        count[0] += 1
        parents(name)
        if kind == 'h':
            add(t, name, type=tarfile.LNKTYPE, linkname=target)
            nondir[name] = nondir[target]
            return
        if kind == 'f' and data is None:
            data = r.choice((b'', b'same content\n', b'x' * r.randrange(1, 300),
                             (name + '\n').encode() * r.randrange(1, 5)))
        kw = {'mode': 0o777 if kind == 'l' else r.choice((0o644, 0o600, 0o755)),
              'mtime': 1000000 + r.randrange(1000), 'uid': r.choice((0, 1000, 1001))}
        if kind == 'f' and r.random() < 0.05:
            kw['pax_headers'] = {'SCHILY.xattr.user.k%d' % r.randrange(3): 'v%d' % r.randrange(4)}
        ino = dict(kw, kind=kind, size=len(data or b''))
        if kind == 'l':
            ino['target'] = r.choice(('x', '../y', 'a/b/c'))
            ino['size'] = len(ino['target'])
            add(t, name, type=tarfile.SYMTYPE, linkname=ino['target'], **kw)
        elif kind == 'c':
            ino['size'] = '%d,3' % r.randrange(1, 9)
            add(t, name, type=tarfile.CHRTYPE, devmajor=int(ino['size'][0]), devminor=3, **kw)
        elif kind == 'p':
            add(t, name, type=tarfile.FIFOTYPE, **kw)
        else:
            add(t, name, data, **kw)
        nondir[name] = ino

    with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:
        while count[0] < n:
            op = r.random()
            if op < 0.55:
                put(t, '%s/f%d' % (r.choice(dirs), count[0]), r.choice('ffffffffflcp'))
            elif op < 0.65 and nondir:
                put(t, r.choice(list(nondir)[-500:]), r.choice('fffflc'))
            elif op < 0.75 and nondir:
                target = r.choice(list(nondir)[-2000:])
                put(t, '%s/h%d' % (r.choice(dirs), count[0]), 'h', target=target)
            elif op < 0.80:
                put_dir(t, r.choice(dirs), r.choice((0o755, 0o700, 0o750)))
            elif op < 0.83:
                empty.append('%s/e%d' % (r.choice(dirs), count[0]))
                put_dir(t, empty[-1], 0o711)
            elif op < 0.85 and empty:
                e = empty.pop(r.randrange(len(empty)))
                del dstate[e]
                put(t, e)
            elif op < 0.87 and nondir:
                g = r.choice([p for p in list(nondir)[-300:] if '/h' not in p] or [None])
                if g:
                    del nondir[g]
                    put_dir(t, g, 0o705)
                    dirs.append(g)
            elif op < 0.872:
                put(t, '%s/big%d' % (r.choice(dirs), count[0]),
                    data=r.randbytes(r.randrange(1, 300000)))
    day = lambda m: time.strftime('%Y-%m-%d %H:%M', time.gmtime(m))
    rows = ['/ drwxr-xr-x 0/0 - %s' % day(0)]  # implied: the --default-* attributes
    for d, (mode, uid, mtime) in dstate.items():
        rows.append('/%s %s %d/0 - %s' % (d, stat.filemode(stat.S_IFDIR | mode), uid, day(mtime)))
    types = {'f': stat.S_IFREG, 'l': stat.S_IFLNK, 'c': stat.S_IFCHR, 'p': stat.S_IFIFO}
    for p, i in nondir.items():
        name = '/%s -> %s' % (p, i['target']) if i['kind'] == 'l' else '/' + p
        rows.append('%s %s %d/0 %s %s' % (name, stat.filemode(types[i['kind']] | i['mode']),
                                          i['uid'], i['size'], day(i['mtime'])))
    with open(out + '.lls', 'wb') as f:
        f.write(b''.join(x.encode() + b'\n' for x in sorted(rows, key=str.encode)))


KINDS = {f.__name__: f for f in (implied, devices, hostile, xattrs, threefiles, crosslink,
                                 selflink, shuffled)}
if len(sys.argv) != 3 or sys.argv[1] not in KINDS:
    sys.exit('usage: tar_make.py %s OUT' % '|'.join(KINDS))
KINDS[sys.argv[1]](sys.argv[2])

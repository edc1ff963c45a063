#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# mktree.sh [--small] [--no-sparse] [--no-special] DIR
#
# Builds the "rich" source tree used by the integration tests in DIR (created; must not exist or
# be empty). Needs root (devices, owners, trusted. xattrs) and a filesystem with user./trusted./
# security. xattrs and sparse files (ext4 under /var/tmp is fine).
#   --small      skip the multi-MiB files and the 3000-entry directory shrinks to 300
#   --no-sparse  skip the 5 GiB sparse file
#   --no-special skip devices, fifo and socket (for trees read by an unprivileged user)
# Everything is deterministic except the random data (fixed seeds) and nothing else.
set -eu
SMALL=0 SPARSE=1 SPECIAL=1
while [ $# -gt 1 ]; do
	case $1 in
	--small) SMALL=1 ;;
	--no-sparse) SPARSE=0 ;;
	--no-special) SPECIAL=0 ;;
	*) echo "mktree.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ $# = 1 ] || { echo "usage: mktree.sh [--small] [--no-sparse] [--no-special] DIR" >&2; exit 2; }
mkdir -p "$1"
exec python3 - "$1" "$SMALL" "$SPARSE" "$SPECIAL" <<'EOF'
import os, sys, random, socket, stat

root = os.fsencode(sys.argv[1])
small, sparse, special = (sys.argv[i] == '1' for i in (2, 3, 4))
os.umask(0o022)
T0 = 1600000000              # base mtime (2020-09-13)
FUTURE = 4000000000          # 2096: in the future, still fits squashfs's u32 mtime

def P(*parts):
    return os.path.join(root, *[p if isinstance(p, bytes) else os.fsencode(p) for p in parts])

def mkdir(*parts):
    os.makedirs(P(*parts), exist_ok=True)
    return P(*parts)

def write(path, data, mode=None, mtime=None):
    with open(path, 'wb') as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path

rng = random.Random(1234)

def rand(n):
    return rng.randbytes(n)

def text(n, seed):
    # Text-like, compressible but not trivially (words from a small vocabulary).
    r = random.Random(seed)
    words = [b'squash', b'block', b'inode', b'fragment', b'xattr', b'directory', b'table',
             b'the', b'of', b'and', b'compress', b'zstd', b'lorem', b'ipsum', b'%d' % seed]
    out = bytearray()
    while len(out) < n:
        line = b' '.join(r.choice(words) for _ in range(r.randint(3, 14)))
        out += line + b'\n'
    return bytes(out[:n])

# --- regular files of edge sizes --------------------------------------------------------
mkdir('files')
for n in (0, 1, 4095, 4096, 4097, 65536, 131071, 131072, 131073, 262144, 262145, 1048576 + 7):
    write(P('files', 'size_%d' % n), rand(n))
write(P('files', 'text_small'), text(5000, 1))
write(P('files', 'zeros_300k'), bytes(300000))         # all-zero blocks: stored sparse
# a block that repeats inside one file, then a tail
write(P('files', 'repeat_blocks'), (rand(1) * 131072) * 3 + b'tail')
# holes in the middle of a small file, and a file ending in a hole
with open(P('files', 'holes_small'), 'wb') as f:
    f.write(rand(1000)); f.seek(400000); f.write(rand(5000)); f.truncate(1000000)
if not small:
    write(P('files', 'text_3m'), text(3 * 1048576 + 333, 2))
    write(P('files', 'random_4m'), rand(4 * 1048576 + 17))
    write(P('files', 'mixed_2m'), text(1048576, 3) + rand(1048576) + bytes(200000) + b'end')

# --- duplicates -------------------------------------------------------------------------
mkdir('dup', 'a'); mkdir('dup', 'b')
big = rand(400000)
sm = rand(3000)
write(P('dup', 'a', 'big1'), big)
write(P('dup', 'b', 'big2'), big)
write(P('dup', 'big3_same_prefix'), big[:262144] + b'different tail')
write(P('dup', 'a', 'small1'), sm)
write(P('dup', 'b', 'small2'), sm)
write(P('dup', 'small3'), sm)
write(P('dup', 'empty1'), b'')
write(P('dup', 'empty2'), b'')

# --- sparse file over 4 GiB -------------------------------------------------------------
if sparse:
    mkdir('sparse')
    with open(P('sparse', 'big5g'), 'wb') as f:
        f.truncate(5 << 30)
        for off in (0, 1 << 20, (1 << 30) + 123, (4 << 30) - 1000, (4 << 30) + 65536,
                    (5 << 30) - 4000):
            f.seek(off)
            f.write(rand(3000))

# --- symlinks ---------------------------------------------------------------------------
mkdir('links')
os.symlink(b'../files/size_1', P('links', 'rel'))
os.symlink(b'/etc/passwd', P('links', 'abs'))
os.symlink(b'does/not/exist', P('links', 'dangling'))
os.symlink(b'../files', P('links', 'to_dir'))
os.symlink(b'a' * 1 + b'/'.join([b'd' * 99] * 40)[:3998] + b'z', P('links', 'long4000'))
os.symlink(b'x', P('links', 'short'))
os.lchown(P('links', 'short'), 4242, 4343)

# --- special files ----------------------------------------------------------------------
if special:
    mkdir('dev')
    os.mknod(P('dev', 'char_300_70000'), stat.S_IFCHR | 0o640, os.makedev(300, 70000))
    os.mknod(P('dev', 'null_like'), stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(P('dev', 'block_8_1'), stat.S_IFBLK | 0o660, os.makedev(8, 1))
    os.mknod(P('dev', 'block_259_65536'), stat.S_IFBLK | 0o600, os.makedev(259, 65536))
    os.mknod(P('dev', 'char_4095_1048575'), stat.S_IFCHR | 0o600, os.makedev(4095, 1048575))
    os.mkfifo(P('dev', 'fifo'), 0o644)
    os.mkfifo(P('dev', 'fifo_owned'), 0o600)
    os.chown(P('dev', 'fifo_owned'), 100000, 70000)
    os.chown(P('dev', 'block_8_1'), 0, 6)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(P('dev', 'sock'))
    s.close()
    os.chmod(P('dev', 'sock'), 0o755)

# --- hard links -------------------------------------------------------------------------
mkdir('hl', 'a'); mkdir('hl', 'b', 'c')
write(P('hl', 'a', 'one'), rand(200000))
os.link(P('hl', 'a', 'one'), P('hl', 'b', 'c', 'two'))
os.link(P('hl', 'a', 'one'), P('hl', 'three'))
write(P('hl', 'small_x'), b'hard linked small file\n')
os.link(P('hl', 'small_x'), P('hl', 'b', 'small_y'))
write(P('hl', 'empty_x'), b'')
os.link(P('hl', 'empty_x'), P('hl', 'a', 'empty_y'))
os.chown(P('hl', 'a', 'one'), 100000, 100000)

# --- xattrs -----------------------------------------------------------------------------
xd = mkdir('xattr')
common = {
    b'user.mime_type': b'text/plain',
    b'user.comment': b'same set on several files',
    b'trusted.tag': b'\x00\x01\x02binary\xff',
    b'security.test': b'sec-label',
}
for i in range(4):
    f = write(P('xattr', 'same_%d' % i), b'content %d\n' % i)
    for k, v in common.items():
        os.setxattr(f, k, v)
f = write(P('xattr', 'big_value'), b'x')
os.setxattr(f, b'user.big', bytes(range(256)) * 2)          # 512 bytes: out of line
os.setxattr(f, b'trusted.big', b'T' * 3000)
os.setxattr(f, b'security.big', b'S' * 200)
f = write(P('xattr', 'big_value_again'), b'y')
os.setxattr(f, b'user.big', bytes(range(256)) * 2)          # same big value: shared
f = write(P('xattr', 'many'), b'z')
for i in range(40):
    os.setxattr(f, b'user.k%02d' % i, b'v' * i)
f = write(P('xattr', 'empty_value'), b'')
os.setxattr(f, b'user.empty', b'')
os.setxattr(xd, b'user.on_dir', b'directory attr')
os.setxattr(xd, b'trusted.on_dir', b'dir trusted')
os.symlink(b'same_0', P('xattr', 'link'))
os.setxattr(P('xattr', 'link'), b'trusted.on_link', b'symlink attr', follow_symlinks=False)
if special:
    os.mkfifo(P('xattr', 'fifo'))
    os.setxattr(P('xattr', 'fifo'), b'trusted.on_fifo', b'fifo attr')
os.setxattr(root, b'user.on_root', b'root attr')

# --- big directory, deep nesting, names -------------------------------------------------
nbig = 300 if small else 3000
bd = mkdir('bigdir')
for i in range(nbig):
    # varied name lengths so directory headers and the index get exercised
    name = b'entry_%05d_' % i + b'n' * (i % 37)
    if i % 10 == 0:
        os.mkdir(os.path.join(bd, name))
    else:
        write(os.path.join(bd, name), b'%d\n' % i if i % 3 else b'')
d = mkdir('deep')
for i in range(60):
    d = os.path.join(d, b'level%02d' % i)
    os.mkdir(d)
write(os.path.join(d, b'bottom.txt'), b'60 levels down\n')

mkdir('names')
write(P('names', 'x' * 255), b'long name\n')
write(P('names', 'héllo wörld'), b'utf8\n')
write(P('names', '日本語のファイル名'), b'utf8 cjk\n')
write(P('names', '🎉 emoji'), b'utf8 emoji\n')
write(P('names', b'latin1-\xe9\xff'), b'not utf8\n')
write(P('names', 'with\nnewline'), b'newline\n')
write(P('names', ' leading space'), b'space\n')
write(P('names', '-dash'), b'dash\n')
write(P('names', '*star?[x]'), b'glob chars\n')
mkdir('names', 'ディレクトリ')
write(P('names', 'ディレクトリ', 'é' * 127), b'254-byte utf8 name\n')

# --- modes and owners -------------------------------------------------------------------
mkdir('modes')
for name, mode in (('setuid', 0o4755), ('setgid', 0o2755), ('suid_sgid_sticky', 0o7777),
                   ('none', 0o000), ('readonly', 0o444), ('private', 0o600),
                   ('exec', 0o711), ('odd', 0o1604)):
    write(P('modes', name), name.encode())
    os.chmod(P('modes', name), mode)
for name, mode in (('sticky_dir', 0o1777), ('setgid_dir', 0o2775), ('closed_dir', 0o700),
                   ('noperm_dir', 0o000)):
    os.mkdir(P('modes', name))
    os.chmod(P('modes', name), mode)
mkdir('owners')
for name, uid, gid in (('u100000', 100000, 100000), ('u70000_g65536', 70000, 65536),
                       ('u1000', 1000, 1000), ('root_g70000', 0, 70000),
                       ('u65534', 65534, 65534), ('u4294967294', 4294967294, 123)):
    write(P('owners', name), name.encode())
    os.chown(P('owners', name), uid, gid)
mkdir('owners', 'dir_12345')
os.chown(P('owners', 'dir_12345'), 12345, 54321)
os.symlink(b'u1000', P('owners', 'link_100000'))
os.lchown(P('owners', 'link_100000'), 100000, 100001)

# --- times ------------------------------------------------------------------------------
mkdir('times')
for name, t in (('epoch0', 0), ('epoch1', 1), ('y2001', 1000000000), ('y2038_plus', 2**31 + 100),
                ('future_2096', FUTURE), ('max_u32', 2**32 - 1)):
    write(P('times', name), name.encode(), mtime=t)
os.symlink(b'epoch0', P('times', 'link_old'))
os.utime(P('times', 'link_old'), (5, 5), follow_symlinks=False)
os.symlink(b'future_2096', P('times', 'link_future'))
os.utime(P('times', 'link_future'), (FUTURE + 1, FUTURE + 1), follow_symlinks=False)
write(P('top_level_file'), b'top\n')

# --- mtimes: files get T0+i unless set above; directories last, bottom-up -----------------
i = 0
explicit = {P('times', n) for n in os.listdir(P('times'))}
dirs = []
for dp, dn, fn in os.walk(root):
    dirs.append(dp)
    for n in fn + [x for x in dn if os.path.islink(os.path.join(dp, x))]:
        p = os.path.join(dp, n)
        if p in explicit:
            continue
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            os.utime(p, (T0 + i, T0 + i), follow_symlinks=False)
        elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            os.utime(p, (T0 + 77, T0 + 77))   # hard links share one inode
        else:
            os.utime(p, (T0 + i, T0 + i))
        i += 7
dirs.sort(key=lambda d: -d.count(b'/'))
for j, d in enumerate(dirs):
    t = FUTURE + 5 if d.endswith(b'/times') else T0 + 100000 + j * 13
    os.utime(d, (t, t))
os.chmod(root, 0o755)
os.chown(root, 0, 0)
os.utime(root, (T0 + 5000, T0 + 5000))
EOF

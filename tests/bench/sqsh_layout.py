# SPDX-License-Identifier: BSD-2-Clause
"""The data layout of a SquashFS 4.0 image, for the remote-policy simulation (app_policy.py).

Reads the superblock, the inode, directory and fragment tables of an image file (zstd, xz, gzip
or uncompressed metadata; zstd through libzstd with ctypes, no Python package needed) and
returns, for every regular file, where its bytes lie in the image: the stored data blocks
(absolute offset, stored length) and the fragment block holding its tail (start, stored
length), with the path relative to the image root. A tool for the benchmarks only: the product
never uses it.

    python3 sqsh_layout.py IMAGE [PATH...]   prints "path size nblocks first..end frag" lines
"""
import ctypes
import ctypes.util
import lzma
import os
import struct
import sys
import zlib

NONE32 = 0xFFFFFFFF
MB = 8192


class _Zstd:
    def __init__(self):
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        self.lib = ctypes.CDLL(name)
        self.lib.ZSTD_decompress.restype = ctypes.c_size_t
        self.lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
        self.lib.ZSTD_isError.restype = ctypes.c_uint
        self.lib.ZSTD_isError.argtypes = [ctypes.c_size_t]

    def __call__(self, data, cap):
        dst = ctypes.create_string_buffer(cap)
        n = self.lib.ZSTD_decompress(dst, cap, data, len(data))
        if self.lib.ZSTD_isError(n):
            raise ValueError("zstd: corrupt block")
        return dst.raw[:n]


def _decompressor(comp):
    if comp == 6:
        return _Zstd()
    if comp == 4:
        return lambda d, cap: lzma.decompress(d)
    if comp == 1:
        return lambda d, cap: zlib.decompress(d)
    raise ValueError("compressor %d not supported here" % comp)


class Layout:
    """files: {path: File}; File has size, blocks [(off, stored_len)], frag (start, stored_len,
    index) or None, ino (inode number), blocks_start, data_end (end of its stored blocks)."""

    def __init__(self, path):
        self.f = open(path, "rb")
        sb = self.f.read(96)
        (magic, self.inodes, _mtime, self.block_size, self.frag_count, comp, _blog, self.flags,
         _ids, vmaj, _vmin, self.root, self.bytes_used, _idt, _xat, self.inode_table, self.dir_table,
         self.frag_table, self.export_table) = struct.unpack("<IIIIIHHHHHHQQQQQQQQ", sb)
        if magic != 0x73717368 or vmaj != 4:
            raise ValueError("%s: not a SquashFS 4.0 image" % path)
        self.size = os.fstat(self.f.fileno()).st_size
        self.dec = _decompressor(comp)
        self.frags = self._fragments()
        self.itab, self.imap = self._table(self.inode_table, self.dir_table)
        self.dtab, self.dmap = self._table(self.dir_table, self._dir_end())
        self.files = {}
        self.dirs = {}
        self._walk(self.root, "")

    def _pread(self, off, n):
        self.f.seek(off)
        return self.f.read(n)

    def _meta(self, off):
        """(payload, stored length incl. header) of the metadata block at off."""
        (h,) = struct.unpack("<H", self._pread(off, 2))
        n = h & 0x7FFF
        raw = self._pread(off + 2, n)
        return (raw if h & 0x8000 else self.dec(raw, MB)), n + 2

    def _table(self, start, end):
        """The decompressed metadata blocks of [start, end) and {relative block pos: offset}."""
        out, pos, m = bytearray(), start, {}
        while pos < end:
            m[pos - start] = len(out)
            data, n = self._meta(pos)
            out += data
            pos += n
        return bytes(out), m

    def _dir_end(self):
        # the directory table ends where the fragment table's metadata blocks (or the export or
        # id table's) begin: the smallest pointer in those indexes past dir_table
        cands = [self.frag_table, self.export_table, self.bytes_used]
        if self.frag_count:
            n = (self.frag_count + 511) // 512
            cands += struct.unpack("<%dQ" % n, self._pread(self.frag_table, 8 * n))
        return min(c for c in cands if c > self.dir_table)

    def _fragments(self):
        if not self.frag_count:
            return []
        n = (self.frag_count + 511) // 512
        ptrs = struct.unpack("<%dQ" % n, self._pread(self.frag_table, 8 * n))
        raw = b"".join(self._meta(p)[0] for p in ptrs)
        out = []
        for i in range(self.frag_count):
            start, size, _ = struct.unpack_from("<QII", raw, 16 * i)
            out.append((start, size & 0xFFFFFF))
        return out

    def _inode(self, ref):
        return self.imap[ref >> 16] + (ref & 0xFFFF)

    def _walk(self, ref, path):
        p = self._inode(ref)
        t, = struct.unpack_from("<H", self.itab, p)
        if t == 1:
            start, _nl, fsize, off, _par = struct.unpack_from("<IIHHI", self.itab, p + 16)
        elif t == 8:
            _nl, fsize, start, _par, _ic, off = struct.unpack_from("<IIIIHH", self.itab, p + 16)
        else:
            raise ValueError("not a directory inode")
        names = []
        self.dirs[path] = names
        if fsize <= 3:
            return
        q, end = self.dmap[start] + off, self.dmap[start] + off + fsize - 3
        while q < end:
            count, blk, _base = struct.unpack_from("<III", self.dtab, q)
            q += 12
            for _ in range(count + 1):
                eoff, _ioff, etype, nsz = struct.unpack_from("<HhHH", self.dtab, q)
                name = self.dtab[q + 8:q + 9 + nsz].decode("utf-8", "surrogateescape")
                q += 9 + nsz
                child = (blk << 16) | eoff
                cpath = name if not path else path + "/" + name
                names.append(cpath)
                if etype in (1, 8):
                    self._walk(child, cpath)
                elif etype in (2, 9):
                    self.files[cpath] = self._file(child)

    def _file(self, ref):
        p = self._inode(ref)
        t, = struct.unpack_from("<H", self.itab, p)
        ino, = struct.unpack_from("<I", self.itab, p + 12)
        if t == 2:
            bstart, fidx, foff, size = struct.unpack_from("<IIII", self.itab, p + 16)
            q = p + 32
        else:
            bstart, size, _sp, _nl, fidx, foff, _x = struct.unpack_from("<QQQIIII", self.itab, p + 16)
            q = p + 56
        bs = self.block_size
        n = size // bs if fidx != NONE32 else (size + bs - 1) // bs
        words = struct.unpack_from("<%dI" % n, self.itab, q)
        blocks, pos = [], bstart
        for w in words:
            ln = w & 0xFFFFFF
            if ln:
                blocks.append((pos, ln))
            pos += ln
        frag = None
        if fidx != NONE32:
            fs, fl = self.frags[fidx]
            frag = (fs, fl, fidx)
        return File(ino, size, bstart, pos, blocks, frag)


class File:
    __slots__ = ("ino", "size", "blocks_start", "data_end", "blocks", "frag")

    def __init__(self, ino, size, blocks_start, data_end, blocks, frag):
        self.ino, self.size, self.blocks_start, self.data_end = ino, size, blocks_start, data_end
        self.blocks, self.frag = blocks, frag

    def ranges(self):
        """The image byte ranges [(start, end)] holding this file's bytes."""
        r = [(self.blocks_start, self.data_end)] if self.data_end > self.blocks_start else []
        if self.frag:
            r.append((self.frag[0], self.frag[0] + self.frag[1]))
        return r


def main():
    lay = Layout(sys.argv[1])
    want = sys.argv[2:] or sorted(lay.files)
    for p in want:
        f = lay.files[p]
        print(p, f.size, len(f.blocks), "%d..%d" % (f.blocks_start, f.data_end),
              "frag=%d@%d+%d" % (f.frag[2], f.frag[0], f.frag[1]) if f.frag else "-")


if __name__ == "__main__":
    main()

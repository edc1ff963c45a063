#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Decode and patch SquashFS 4.0 images for the verify tests (t_70_verify.sh).

  sqfs_patch.py layout IMAGE            JSON: superblock fields, table regions, data ranges
  sqfs_patch.py region IMAGE POS...     the region verify should name for each byte position
  sqfs_patch.py patch IMAGE WHAT [ARG]  applies one crafted corruption in place (see PATCHES)

Metadata blocks may be compressed (zlib only) or raw; patches that edit inode or directory
bytes need the tables raw (mksquashfs -noI) and print the file offset they changed."""
import json
import struct
import sys
import zlib

NONE64 = 0xFFFFFFFFFFFFFFFF


def sb_of(img):
    f = struct.unpack_from('<IIIIIHHHHHHQQQQQQQQ', img, 0)
    keys = ['magic', 'inode_count', 'mkfs_time', 'block_size', 'fragment_count', 'compressor',
            'block_log', 'flags', 'id_count', 'vmaj', 'vmin', 'root_inode', 'bytes_used',
            'id_table_start', 'xattr_id_table_start', 'inode_table_start',
            'directory_table_start', 'fragment_table_start', 'export_table_start']
    return dict(zip(keys, f))


def meta_stream(img, start, end):
    """Decodes the metadata blocks of [start, end): (bytes, [(stream_off, file_pos, raw)])."""
    out, blocks, pos = bytearray(), [], start
    while pos < end:
        hdr = struct.unpack_from('<H', img, pos)[0]
        ln, raw = hdr & 0x7FFF, bool(hdr & 0x8000)
        payload = img[pos + 2:pos + 2 + ln]
        blocks.append((len(out), pos, raw, pos - start))
        out += payload if raw else zlib.decompress(payload)
        pos += 2 + ln
    return bytes(out), blocks


class Image:
    def __init__(self, path):
        self.path = path
        self.img = bytearray(open(path, 'rb').read())
        self.sb = sb_of(self.img)
        sb = self.sb
        self.dir_end = self.first_block_after_dirs()
        self.ino, self.iblocks = meta_stream(self.img, sb['inode_table_start'],
                                             sb['directory_table_start'])
        self.dirs, self.dblocks = meta_stream(self.img, sb['directory_table_start'], self.dir_end)

    def first_block_after_dirs(self):
        sb = self.sb
        for key, count in (('fragment_table_start', sb['fragment_count']),
                           ('export_table_start', 1), ('id_table_start', 1)):
            if sb[key] != NONE64 and count:
                return struct.unpack_from('<Q', self.img, sb[key])[0]
        return sb['bytes_used']

    def stream_off(self, blocks, rel_block, off):
        for soff, _, _, rel in blocks:
            if rel == rel_block:
                return soff + off
        raise ValueError('no block at %d' % rel_block)

    def file_pos(self, blocks, soff):
        """File position of stream byte soff (raw blocks only)."""
        for s, pos, raw, _ in reversed(blocks):
            if s <= soff:
                assert raw, 'table must be raw (mksquashfs -noI)'
                return pos + 2 + soff - s
        raise ValueError

    def inode_at(self, ref):
        return self.stream_off(self.iblocks, ref >> 16, ref & 0xFFFF)

    def inode(self, ref):
        o = self.inode_at(ref)
        t, mode, uid, gid, mtime, ino = struct.unpack_from('<HHHHII', self.ino, o)
        d = {'off': o, 'type': t, 'ino': ino}
        if t == 1:
            d['start'], d['nlink'], d['size'], d['doff'], d['parent'] = \
                struct.unpack_from('<IIHHI', self.ino, o + 16)
        elif t == 8:
            (d['nlink'], d['size'], d['start'], d['parent'], d['icount'], d['doff'],
             d['xattr']) = struct.unpack_from('<IIIIHHI', self.ino, o + 16)
        elif t == 2:
            d['blocks'], d['frag'], d['foff'], d['size'] = struct.unpack_from('<IIII', self.ino,
                                                                              o + 16)
            d['words'] = o + 32
        elif t == 9:
            d['blocks'], d['size'], _, _, d['frag'], d['foff'], _ = \
                struct.unpack_from('<QQQIIII', self.ino, o + 16)
            d['words'] = o + 56
        return d

    def listing(self, d):
        """Entries of directory inode d: (name, ref, ino, name stream offset)."""
        o = self.stream_off(self.dblocks, d['start'], d['doff'])
        end, ents = o + d['size'] - 3, []
        while o < end:
            count, start, base = struct.unpack_from('<III', self.dirs, o)
            o += 12
            for _ in range(count + 1):
                off, delta, typ, nl = struct.unpack_from('<HhHH', self.dirs, o)
                name = self.dirs[o + 8:o + 9 + nl].decode('utf-8', 'replace')
                ents.append((name, (start << 16) | off, base + delta, o + 8))
                o += 9 + nl
        return ents

    def lookup(self, path):
        d = self.inode(self.sb['root_inode'])
        for part in [p for p in path.split('/') if p]:
            ref = [e[1] for e in self.listing(d) if e[0] == part][0]
            d = self.inode(ref)
            d['ref'] = ref
        return d

    def frag_entry(self, i):
        sb = self.sb
        idx = struct.unpack_from('<Q', self.img, sb['fragment_table_start'] + 8 * (i * 16 // 8192))[0]
        data, _ = meta_stream(self.img, idx, idx + 2 + (struct.unpack_from('<H', self.img, idx)[0] & 0x7FFF))
        start, size = struct.unpack_from('<QI', data, (i * 16) % 8192)
        return start, size & 0xFFFFFF

    def regions(self):
        """(start, end, name) of the superblock and every table, as verify names them."""
        sb, img = self.sb, self.img
        r = [(0, 96, 'superblock')]
        dend = 96
        if sb['flags'] & 0x400:
            dend = 96 + 2 + (struct.unpack_from('<H', img, 96)[0] & 0x7FFF)
            r.append((96, dend, 'compressor options'))
        r.append((sb['inode_table_start'], sb['directory_table_start'], 'inode table'))
        r.append((sb['directory_table_start'], self.dir_end, 'directory table'))
        at = self.dir_end
        def nb(count, size):
            return (count * size + 8191) // 8192 * 8
        if sb['fragment_count']:
            e = sb['fragment_table_start'] + nb(sb['fragment_count'], 16)
            r.append((at, e, 'fragment table'))
            at = e
        if sb['export_table_start'] != NONE64:
            e = sb['export_table_start'] + nb(sb['inode_count'], 8)
            r.append((at, e, 'export table'))
            at = e
        e = sb['id_table_start'] + nb(sb['id_count'], 4)
        r.append((at, e, 'id table'))
        if sb['xattr_id_table_start'] != NONE64:
            r.append((e, sb['bytes_used'], 'xattr table'))
        bu = sb['bytes_used']
        r.append((bu, (bu + 4095) // 4096 * 4096, 'padding'))
        if len(img) > (bu + 4095) // 4096 * 4096:
            # the fast checksum block ends the covered bytes (common/integrity.h)
            if len(img) >= 128 and img[-8:] == b'SQKINTG1':
                covered = struct.unpack_from('<Q', img, len(img) - 112)[0]
                if 32 <= covered <= len(img) and img[covered - 8:covered] == b'SQKFAST1':
                    flen = struct.unpack_from('<Q', img, covered - 24)[0]
                    r.append((covered - flen, covered, 'fast checksums'))
            r.append(((bu + 4095) // 4096 * 4096, len(img), 'integrity data'))
        for i in range(sb['fragment_count']):
            s, ln = self.frag_entry(i)
            r.append((s, s + ln, 'fragment block %d' % i))
        return r, dend

    def data_ranges(self):
        """(start, end, 'data of /path') of every regular file with blocks."""
        out, todo = [], [('', self.inode(self.sb['root_inode']))]
        bs = self.sb['block_size']
        while todo:
            path, d = todo.pop()
            for name, ref, _, _ in self.listing(d):
                c = self.inode(ref)
                p = path + '/' + name
                if c['type'] in (1, 8):
                    todo.append((p, c))
                elif c['type'] in (2, 9):
                    n = c['size'] // bs if c['frag'] != 0xFFFFFFFF else (c['size'] + bs - 1) // bs
                    ln = sum(struct.unpack_from('<I', self.ino, c['words'] + 4 * k)[0] & 0xFFFFFF
                             for k in range(n))
                    if ln:
                        out.append((c['blocks'], c['blocks'] + ln, 'data of ' + p))
        return out

    def region_of(self, pos):
        regs, _ = self.regions()
        for s, e, name in regs + self.data_ranges():
            if s <= pos < e:
                return name
        return 'unused bytes'


def patch(im, what, arg):
    img, sb = im.img, im.sb
    def put(fmt, pos, *vals):
        struct.pack_into(fmt, img, pos, *vals)
        print(pos)
    if what == 'inode-number-zero':
        d = im.lookup(arg)
        put('<I', im.file_pos(im.iblocks, d['off'] + 12), 0)
    elif what == 'unsorted-name':
        ents = im.listing(im.lookup(arg))
        put('<B', im.file_pos(im.dblocks, ents[-1][3]), 0x21)
    elif what == 'size-word-bit25':
        d = im.lookup(arg)
        pos = im.file_pos(im.iblocks, d['words'])
        put('<I', pos, struct.unpack_from('<I', img, pos)[0] | (1 << 25))
    elif what == 'fragment-index':
        d = im.lookup(arg)
        off = d['off'] + (20 if d['type'] == 2 else 44)
        put('<I', im.file_pos(im.iblocks, off), sb['fragment_count'] + 5)
    elif what == 'id-index':
        d = im.lookup(arg)
        put('<H', im.file_pos(im.iblocks, d['off'] + 4), sb['id_count'] + 7)
    elif what == 'table-index-past-end':
        put('<Q', sb['id_table_start'], sb['bytes_used'] + 4096)
    elif what == 'data-garbage':
        d = im.lookup(arg)
        s = d['blocks'] + 16
        for k in range(64):
            img[s + k] = (k * 37 + 11) & 0xFF
        print(s)
    elif what == 'dir-index-start':
        d = im.lookup(arg)
        assert d['type'] == 8 and d['icount'] > 0, 'not a directory with an index: %r' % d
        put('<I', im.file_pos(im.iblocks, d['off'] + 44), 0x7FFFFF00)  # entry 0's start
    elif what == 'xattr-ool-ref':
        # the first out-of-line value (mksquashfs stores a value shared by several xattr sets
        # once and refers to it): its reference now points far past the key/value stream
        xt = sb['xattr_id_table_start']
        kv_start, count = struct.unpack_from('<QI', img, xt)
        first_ids = struct.unpack_from('<Q', img, xt + 16)[0]
        kv, blocks = meta_stream(img, kv_start, first_ids)
        ids, _ = meta_stream(img, first_ids, xt)
        for i in range(count):
            ref, n, _ = struct.unpack_from('<QII', ids, 16 * i)
            o = im.stream_off(blocks, ref >> 16, ref & 0xFFFF)
            for _ in range(n):
                typ, nsize = struct.unpack_from('<HH', kv, o)
                o += 4 + nsize
                if typ & 0x100:
                    put('<Q', im.file_pos(blocks, o + 4), 0x7FFFFFFF << 16)
                    break
                o += 4 + struct.unpack_from('<I', kv, o)[0]
            else:
                continue
            break
        else:
            sys.exit('no out-of-line xattr value')
    elif what == 'meta-header-len':
        pos = sb['inode_table_start']
        hdr = struct.unpack_from('<H', img, pos)[0]
        put('<H', pos, (hdr & 0x8000) | ((hdr & 0x7FFF) - 3))
    else:
        sys.exit('unknown patch ' + what)
    open(im.path, 'wb').write(img)


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    im = Image(path)
    if cmd == 'layout':
        regs, dend = im.regions()
        print(json.dumps({'sb': im.sb, 'regions': regs, 'data': im.data_ranges(),
                          'data_start': dend}, indent=1))
    elif cmd == 'region':
        for p in sys.argv[3:]:
            print(p, im.region_of(int(p)))
    elif cmd == 'patch':
        patch(im, sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else '')


if __name__ == '__main__':
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""tar_lls.py IMAGE [PATH]: the tree of IMAGE as `unsquashfs -lln` lists it (times in UTC), one
line per entry, "NAME MODE UID/GID SIZE DATE TIME", sorted, so that two tools' images of one tar
compare with diff (t_22_tar_in.sh). Directory sizes (an encoding detail: how many directory
headers a tool writes) are given as '-', the squashfs-root prefix goes ('/' is the root) and a
name with a newline stays on one line ('\\n'). Devices are "MAJ,MIN" as unsquashfs prints them
(4.5.1 prints large numbers wrongly, the same way for every image)."""
import os
import re
import subprocess
import sys

MODE = re.compile(rb'^[-dlcbps][-rwxsStT]{9} ')
LINE = re.compile(rb'^(\S{10}) (\S+) +(\d+|-?\d+, *-?\d+) (\S+ \S+) (.*)$', re.S)

env = dict(os.environ, TZ='UTC')
out = subprocess.run(['unsquashfs', '-lln', sys.argv[1]] + sys.argv[2:], check=True, env=env,
                     stdout=subprocess.PIPE).stdout
entries = []
for line in out.split(b'\n'):
    if MODE.match(line):
        entries.append(line)
    elif entries and line:
        entries[-1] += b'\\n' + line     # a name with a newline goes on
rows = []
for e in entries:
    m = LINE.match(e)
    if not m:
        sys.exit('tar_lls.py: cannot parse %r' % e)
    mode, owner, size, when, name = m.groups()
    size = b'-' if mode[:1] == b'd' else re.sub(rb', *', b',', size)
    name = name[len(b'squashfs-root'):] or b'/'
    rows.append(b' '.join((name, mode, owner, size, when)))
sys.stdout.buffer.write(b''.join(r + b'\n' for r in sorted(rows)))

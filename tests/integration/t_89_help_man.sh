#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The manual pages cannot drift from the programs: every command `sqk help` lists has its section
# in sqk(1); every option each command's --help prints appears in that command's section (the
# remote-image options in REMOTE IMAGES), every option and -o option of sqkfuse --help in
# sqkfuse(8); `sqk help CMD` prints what `sqk CMD --help` prints; the pages render without a
# groff or mandoc warning.
. "$(dirname "$0")/lib.sh"
need_sqk
need_cmd man groff col python3
TOP=$(cd "$IT_DIR/../.." && pwd)
MAN=$TOP/cli/man
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
W=$(scratch man)

for p in "$MAN/sqk.1" "$MAN/sqkfuse.8"; do
	[ -f "$p" ] || fail "no manual page $p"
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 >/dev/null) ||
		fail "man -l $p failed: $out"
	[ -z "$out" ] || fail "man --warnings -l $p warns: $out"
	out=$(groff -man -Tutf8 -ww -z "$p" 2>&1)
	[ -z "$out" ] || fail "groff -ww $p warns: $out"
	if command -v mandoc >/dev/null; then
		out=$(mandoc -Tlint -W style "$p" 2>&1) || fail "mandoc -Tlint $p: $out"
		[ -z "$out" ] || fail "mandoc -Tlint $p: $out"
	else
		info "mandoc not installed: its lint did not run"
	fi
	# plain text, no hyphenation (option names stay whole), long lines
	groff -man -Tascii -rHY=0 -rLL=250n "$p" 2>/dev/null | col -bx >"$W/$(basename "$p").txt"
done

# each command's help, both ways, and its exit status
cmds=$("$SQK" help | sed -n '/^commands:/,/^$/p' | sed -n 's/^  \([a-z]\+\).*/\1/p')
[ -n "$cmds" ] || fail "sqk help lists no commands"
for c in $cmds; do
	[ "$c" = version ] && continue
	"$SQK" help "$c" >"$W/help.$c" 2>&1 || fail "sqk help $c exited $?"
	if [ "$c" != help ]; then
		"$SQK" "$c" --help >"$W/dash.$c" 2>&1 || fail "sqk $c --help exited $?"
		cmp -s "$W/help.$c" "$W/dash.$c" || fail "sqk help $c differs from sqk $c --help"
	fi
done
"$SQK" help >"$W/help.top" || fail "sqk help exited $?"
"$SQKFUSE" --help >"$W/help.sqkfuse" || fail "sqkfuse --help exited $?"
"$SQK" --version | grep -qx 'sqk [0-9][0-9.]*' || fail "sqk --version: $("$SQK" --version)"

cat >"$W/check.py" <<'PY'
import os, re, sys
w, cmds = sys.argv[1], sys.argv[2:]
TOK = re.compile(r'(?<![\w./-])(--?[A-Za-z][A-Za-z0-9_-]*)')

def text(name):
    return open(os.path.join(w, name), errors='replace').read()

def has(body, tok):
    return re.search(r'(?<![\w-])' + re.escape(tok) + r'(?![\w-])', body) is not None

def sections(txt):
    """{heading: body} for .SH (column 0) and .SS (column 3) headings."""
    out, cur = {}, None
    for line in txt.splitlines():
        if re.match(r'^(\S.*|   \S.*)$', line) and not line.startswith('    '):
            cur = line.strip()
            out[cur] = ''
        elif cur:
            out[cur] += line + '\n'
    return out

def split_help(h):
    """(own lines, remote-image lines) of a --help text."""
    own, remote, inrem = [], [], False
    for line in h.splitlines():
        if line.startswith('Remote images ('):
            inrem = True
        elif inrem and re.match(r'^\s+-h, --help', line):
            inrem = False
        (remote if inrem else own).append(line)
    return '\n'.join(own), '\n'.join(remote)

bad = []
SHARED = ('--require-integrity', '--trust', '--trust-dir', '--allow-rollback')
sqk1 = text('sqk.1.txt')
secs = sections(sqk1)
remote_sec = secs.get('REMOTE IMAGES', '')
integ_sec = secs.get('INTEGRITY DATA', '')  # the options every reading command shares
if not remote_sec:
    bad.append('sqk(1) has no REMOTE IMAGES section')
for c in cmds:
    if ('sqk ' + c) not in secs:
        bad.append('sqk(1) has no section "sqk %s"' % c)
        continue
    if c in ('version', 'help'):   # help prints the overview: checked against the whole page
        continue
    own, remote = split_help(text('help.' + c))
    if c == 'mount':   # sqkfuse inside sqk: documented in sqkfuse(8)
        continue
    body = secs['sqk ' + c]
    for t in sorted(set(TOK.findall(own))):
        if not has(body, t) and not (t in SHARED and has(integ_sec, t)):
            bad.append('sqk %s --help prints %s; its section of sqk(1) does not' % (c, t))
    for t in sorted(set(TOK.findall(remote))):
        if not has(body, t) and not has(remote_sec, t):
            bad.append('sqk %s --help prints %s; sqk(1) has it neither in its section nor in REMOTE IMAGES' % (c, t))
for t in sorted(set(TOK.findall(text('help.top')))):
    if not has(sqk1, t):
        bad.append('sqk help prints %s; sqk(1) does not' % t)

fuse8 = text('sqkfuse.8.txt')
for f in ('help.sqkfuse', 'help.mount'):
    h = text(f) if os.path.exists(os.path.join(w, f)) else ''
    for t in sorted(set(TOK.findall(h))):
        if not has(fuse8, t):
            bad.append('%s prints %s; sqkfuse(8) does not' % (f[5:], t))
    for o in sorted(set(re.findall(r'-o ([a-z0-9_]+)', h))):
        if not re.search(r'-o ' + o + r'(?![\w])', fuse8):
            bad.append('%s prints -o %s; sqkfuse(8) does not' % (f[5:], o))
n = sum(len(set(TOK.findall(text('help.' + c)))) for c in cmds if c != 'version')
print('%d commands, %d option spellings checked against the pages' % (len(cmds), n))
for b in bad:
    print('  ' + b)
sys.exit(1 if bad else 0)
PY
python3 "$W/check.py" "$W" $cmds || fail "the manual pages lack options the programs print"
info "$(echo $cmds | wc -w) commands: every --help option is in sqk(1) / sqkfuse(8)"

# the check can fail: a copy of sqk.1 without --no-dedup's entry is caught, naming it
line='.B \-\-no\-dedup'
grep -qxF "$line" "$MAN/sqk.1" || fail "sqk.1 has no '$line' line"
grep -vxF "$line" "$MAN/sqk.1" | groff -man -Tascii -rHY=0 -rLL=250n 2>/dev/null | col -bx >"$W/sqk.1.txt"
python3 "$W/check.py" "$W" $cmds >"$W/broken.out" && fail "a sqk.1 without --no-dedup passed the check"
grep -q 'mkimage --help prints --no-dedup' "$W/broken.out" ||
	fail "the check of a sqk.1 without --no-dedup did not name it: $(cat "$W/broken.out")"
exit 0

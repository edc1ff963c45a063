#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# The docs cannot name an option the programs do not know: every option README.md and docs/*.md
# name for sqk or sqkfuse must appear in the programs' own help (`sqk help`, `sqk CMD --help`
# for every command it lists, `sqkfuse --help`, whose -o options count as mount options).
#
# What counts as naming an option, so that other tools' options quoted in the docs do not:
#   - in a fenced code block (not one marked c, or a language other than sh/shell/bash/console
#     or none), each command of a line (split at |, ;, && and ||) whose program is sqk or
#     sqkfuse (after sudo and VAR=value words; a trailing '# comment' dropped);
#   - in prose, an inline `code span` that starts with sqk or sqkfuse (checked like a command)
#     or with an option itself (`--reuse OLD`, `-sort FILE`, `-o trace=FILE`): spans that start
#     with another program (`mksquashfs -mem`, `tar --xattrs`) are not checked;
#   - a prose line that itself starts with `sqk ` or `sqkfuse ` (after list markers).
# Tokens are --long and -single-dash words (mksquashfs's -comp style); -lR-style bundles of
# known one-letter options are accepted. `-o name[=value][,name...]` names mount options, except
# after `sqk tar`, whose -o is the output file; a bare span's -o is checked when its value is
# lower-case option names.
#
# Usage: SQK=build/bin/sqk [SQKFUSE=build/bin/sqkfuse] bash tests/lint/docs_options.sh [FILE...]
# (default files: README.md docs/*.md of this tree). Prints each unknown option as
# FILE:LINE: and ends with `docs_options: N passed, N failed`; exit 1 when one failed, 2 when
# the help could not be read.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SQK=${SQK:-$TOP/build/bin/sqk}
SQKFUSE=${SQKFUSE:-$(dirname "$SQK")/sqkfuse}
command -v python3 >/dev/null || { echo "docs_options: python3 is needed" >&2; exit 2; }
[ -x "$SQK" ] || { echo "docs_options: no sqk at $SQK (build it, or set SQK)" >&2; exit 2; }

W=$(mktemp -d "${TMPDIR:-/tmp}/docs_options.XXXXXX") || exit 2
trap 'rm -rf "$W"' EXIT

# Every help text, in one file.
"$SQK" help >"$W/help" 2>&1 || { echo "docs_options: '$SQK help' failed" >&2; exit 2; }
cmds=$(sed -n '/^commands:/,/^$/p' "$W/help" | sed -n 's/^  \([a-z]\+\).*/\1/p')
[ -n "$cmds" ] || { echo "docs_options: '$SQK help' lists no commands" >&2; exit 2; }
for c in $cmds; do
	case $c in help | version) continue ;; esac
	"$SQK" "$c" --help >"$W/one" 2>&1 || {
		[ "$c" = mount ] && continue # a build without FUSE: see below
		echo "docs_options: '$SQK $c --help' failed" >&2
		exit 2
	}
	cat "$W/one" >>"$W/help"
done
: >"$W/fusehelp"
if [ -x "$SQKFUSE" ]; then
	"$SQKFUSE" --help >"$W/fusehelp" 2>&1 ||
		{ echo "docs_options: '$SQKFUSE --help' failed" >&2; exit 2; }
fi
# sqk mount prints sqkfuse's options too. A build without FUSE has neither: sqkfuse(8), which
# t_89 keeps equal to sqkfuse --help where it is built, stands in for them.
"$SQK" mount --help >>"$W/fusehelp" 2>/dev/null || true
if ! grep -q -- '-o [a-z]' "$W/fusehelp" && [ -f "$TOP/cli/man/sqkfuse.8" ]; then
	echo "docs_options: sqkfuse not built: its options taken from cli/man/sqkfuse.8"
	sed 's/\\-/-/g' "$TOP/cli/man/sqkfuse.8" >"$W/fusehelp"
fi

if [ $# -eq 0 ]; then
	set -- "$TOP/README.md" "$TOP"/docs/*.md
fi

python3 - "$W/help" "$W/fusehelp" "$TOP" "$@" <<'PY'
import os, re, sys

help_txt = open(sys.argv[1], errors='replace').read()
fuse_txt = open(sys.argv[2], errors='replace').read()
top = sys.argv[3]
files = sys.argv[4:]

TOK = re.compile(r'(?<![\w./$-])(--?[A-Za-z][A-Za-z0-9_-]*)')
known = set(TOK.findall(help_txt)) | set(TOK.findall(fuse_txt))
shorts = {t[1] for t in known if re.fullmatch(r'-[A-Za-z]', t)}
mount_opts = set(re.findall(r'-o ([a-z0-9_]+)', fuse_txt))
# Mount options sqkfuse passes to libfuse and mount(8); its --help names them only as
# "allow_other, default_permissions, ...: standard FUSE mount options".
mount_opts |= {'ro', 'allow_other', 'allow_root', 'auto_unmount', 'default_permissions',
               'fsname', 'subtype'}
PROGS = {'sqk', 'sqkfuse'}
SHELL_LANGS = {'', 'sh', 'shell', 'bash', 'console', 'text'}

def program_of(words):
    """The program a command's words run, after sudo, env and VAR=value."""
    i = 0
    while i < len(words) and (words[i] in ('sudo', 'env', '$', '#')
                              or re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*=\S*', words[i])):
        i += 1
    return (os.path.basename(words[i]) if i < len(words) else ''), words[i + 1:]

def commands(text):
    """The commands of a shell line, without a trailing comment."""
    text = re.sub(r'(^|\s)#\s.*$', '', text)
    return [c for c in re.split(r'\|\||&&|[|;]', text) if c.strip()]

results = []  # (file, line, token, ok)

def check_words(path, ln, args, is_tar):
    """Option tokens of one sqk or sqkfuse command (its arguments, as text)."""
    toks = args.split()
    i = 0
    while i < len(toks):
        w = toks[i].strip('`"\'[](),')
        if w == '-o' and i + 1 < len(toks):
            if not is_tar:
                check_mount(path, ln, toks[i + 1])
            i += 2
            continue
        m = re.match(r'(--?[A-Za-z][A-Za-z0-9_-]*)', w)
        if m and toks[i].lstrip('`"\'[(').startswith('-'):
            check_token(path, ln, m.group(1))
        i += 1

def check_token(path, ln, t):
    ok = t in known or (re.fullmatch(r'-[A-Za-z]{2,}', t) is not None
                        and all(ch in shorts for ch in t[1:]))
    results.append((path, ln, t, ok))

def check_mount(path, ln, value):
    value = value.strip('`"\'')
    for part in value.split(','):
        name = part.split('=', 1)[0]
        if not re.fullmatch(r'[a-z][a-z0-9_]*', name):
            continue  # a placeholder (OPTION, FILE, ...), not a name
        results.append((path, ln, '-o ' + name, name in mount_opts))

def check_command(path, ln, text):
    for c in commands(text):
        prog, rest = program_of(c.split())
        if prog in PROGS:
            is_tar = prog == 'sqk' and rest[:1] == ['tar']
            check_words(path, ln, ' '.join(rest), is_tar)

def check_span(path, ln, span):
    s = span.strip()
    if not s:
        return
    first = s.split()[0]
    if os.path.basename(first) in PROGS:
        check_command(path, ln, s)
    elif first == '-o':
        rest = s.split()[1:]
        if rest:
            check_mount(path, ln, rest[0])
    elif first.startswith('-'):
        # a bare option, or a list of them: `--no-verify` / `-o noverify`
        check_words(path, ln, s.replace('/', ' '), is_tar=False)

for path in files:
    rel = os.path.relpath(path, top) if os.path.abspath(path).startswith(top + os.sep) else path
    fence, lang = None, ''
    for ln, line in enumerate(open(path, errors='replace'), 1):
        line = line.rstrip('\n')
        m = re.match(r'^\s*(```+|~~~+)\s*([\w+-]*)', line)
        if m:
            if fence is None:
                fence, lang = m.group(1), m.group(2).lower()
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is not None:
            if lang in SHELL_LANGS:
                check_command(rel, ln, line)
            continue
        bare = re.sub(r'^\s*(?:[-*+>]|\d+\.)\s+', '', line)
        if re.match(r'(sqk|sqkfuse)\s', bare):
            check_command(rel, ln, bare.replace('`', ''))
            continue
        for span in re.findall(r'`([^`]+)`', line):
            check_span(rel, ln, span)

bad = [r for r in results if not r[3]]
for path, ln, tok, _ in bad:
    print('%s:%d: %s is not an option the help knows' % (path, ln, tok))
print('docs_options: %d passed, %d failed' % (len(results) - len(bad), len(bad)))
sys.exit(1 if bad else 0)
PY

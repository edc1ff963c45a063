/* SPDX-License-Identifier: BSD-2-Clause */
/* The action parser: mksquashfs's ACTION[(ARGS)]@EXPRESSION syntax (ACTIONS-README of
 * squashfs-tools 4.6 and later) into the rules of action.h. Words are split by ( ) && || ! , @
 * and blanks; "..." quotes them and \ escapes one character, in or out of quotes. Operators
 * have no precedence: an expression is read strictly left to right. Every error names the word
 * and its column; an action or test sqk does not apply is refused by its name. */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


#include "sqk/error.h"
#include "common/format.h"
#include "common/datestr.h"
#include "common/grow.h"
#include "action.h"
#include "xattr_value.h"

#define ACT_MAX_ARGS 64

enum tok { TK_EOF, TK_OPEN, TK_CLOSE, TK_AND, TK_OR, TK_NOT, TK_COMMA, TK_AT, TK_STR, TK_ERR };

struct lex {
	const char *s, *p;        /* the text, the next character */
	char *str;                /* TK_STR: the word, unquoted and unescaped (owned) */
	size_t len, cap;
	size_t col;               /* 1-based column of the last token */
	char *msg;
	size_t msg_cap;
	bool failed;
};

static int lex_fail(struct lex *x, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records the first error: "column N: why". */
static int lex_fail(struct lex *x, size_t col, const char *fmt, ...)
{
	if (x->failed)
		return SQK_EINVAL;
	x->failed = true;
	int n = snprintf(x->msg, x->msg_cap, "column %zu: ", col);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < x->msg_cap)
		vsnprintf(x->msg + n, x->msg_cap - (size_t)n, fmt, ap);
	va_end(ap);
	return SQK_EINVAL;
}

/* The operator at p and its length (0: none). */
static int special(const char *p, size_t *len)
{
	static const struct { const char *s; enum tok t; } ops[] = {
		{ "(", TK_OPEN }, { ")", TK_CLOSE }, { "&&", TK_AND }, { "||", TK_OR },
		{ "!", TK_NOT }, { ",", TK_COMMA }, { "@", TK_AT },
		{ " ", TK_EOF }, { "\t", TK_EOF }, /* blanks */
	};
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i].s);
		if (!strncmp(p, ops[i].s, n)) {
			*len = n;
			return ops[i].t;
		}
	}
	*len = 0;
	return -1;
}

static int put_char(struct lex *x, char ch)
{
	if (mem_grow(&x->str, &x->cap, x->len + 2, 1, 0))
		return lex_fail(x, x->col, "out of memory");
	x->str[x->len++] = ch;
	x->str[x->len] = 0;
	return 0;
}

/* A word: up to an operator or a blank outside quotes. */
static enum tok lex_word(struct lex *x)
{
	bool quoted = false;
	size_t n;
	x->len = 0;
	if (put_char(x, 0))
		return TK_ERR;
	x->len = 0;
	for (;;) {
		while (*x->p == '"') {
			x->p++;
			quoted = !quoted;
		}
		if (!*x->p && quoted) {
			lex_fail(x, x->col, "a quote (\") not closed");
			return TK_ERR;
		}
		if (!*x->p || (!quoted && special(x->p, &n) >= 0))
			return TK_STR;
		if (*x->p == '\\' && !*++x->p) {
			lex_fail(x, (size_t)(x->p - x->s), "a \\ with nothing after it");
			return TK_ERR;
		}
		if (put_char(x, *x->p++))
			return TK_ERR;
	}
}

static enum tok lex_next(struct lex *x)
{
	size_t n;
	int t;
	while ((t = special(x->p, &n)) == TK_EOF)
		x->p += n;
	x->col = (size_t)(x->p - x->s) + 1;
	if (!*x->p)
		return TK_EOF;
	if (t >= 0) {
		x->p += n;
		return (enum tok)t;
	}
	return lex_word(x);
}

static enum tok lex_peek(struct lex *x)
{
	const char *p = x->p;
	size_t col = x->col;
	enum tok t = lex_next(x);
	if (t != TK_ERR) {
		x->p = p;
		x->col = col;
	}
	return t;
}

/* What messages call token t. */
static const char *tok_name(const struct lex *x, enum tok t, char *buf, size_t cap)
{
	static const char *const names[] = { "the end", "\"(\"", "\")\"", "\"&&\"", "\"||\"",
					     "\"!\"", "\",\"", "\"@\"" };
	if (t == TK_STR) {
		snprintf(buf, cap, "'%s'", x->str);
		return buf;
	}
	return t < TK_STR ? names[t] : "an error";
}

static int unexpected(struct lex *x, enum tok t, const char *want)
{
	char b[96];
	return lex_fail(x, x->col, "expected %s, got %.80s", want, tok_name(x, t, b, sizeof(b)));
}

/* ---- arguments ---- */

struct args {
	char *v[ACT_MAX_ARGS];    /* owned */
	size_t col[ACT_MAX_ARGS];
	int n;
	size_t col0;              /* the name's column */
};

static void args_free(struct args *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	a->n = 0;
}

/* "(" already read: the words up to ")", separated by ",". */
static int read_args(struct lex *x, struct args *a)
{
	enum tok t = lex_next(x);
	if (t == TK_CLOSE)
		return 0;
	for (;;) {
		if (t != TK_STR)
			return t == TK_ERR ? SQK_EINVAL : unexpected(x, t, "an argument");
		if (a->n == ACT_MAX_ARGS)
			return lex_fail(x, x->col, "more than %d arguments", ACT_MAX_ARGS);
		if (!(a->v[a->n] = strdup(x->str)))
			return lex_fail(x, x->col, "out of memory");
		a->col[a->n++] = x->col;
		t = lex_next(x);
		if (t == TK_CLOSE)
			return 0;
		if (t != TK_COMMA)
			return t == TK_ERR ? SQK_EINVAL : unexpected(x, t, "\",\" or \")\"");
		t = lex_next(x);
	}
}

static int want_args(struct lex *x, const struct args *a, const char *what, const char *name,
		     int want)
{
	if (want >= 0 && a->n != want)
		return lex_fail(x, a->col0, "%s '%s' takes %d argument%s, got %d", what, name, want,
				want == 1 ? "" : "s", a->n);
	if (want == -1 && a->n == 0)
		return lex_fail(x, a->col0, "%s '%s' takes one or more arguments", what, name);
	return 0;
}

/* ---- numbers, owners, modes ---- */

/* The comparison s starts with (<, <=, >=, >; with signs, find's - and + too) into *cmp:
 * its length. */
static size_t cmp_prefix(const char *s, bool signs, enum act_cmp *cmp)
{
	*cmp = ACT_EQ;
	if ((s[0] == '<' || s[0] == '>') && s[1] == '=') {
		*cmp = s[0] == '<' ? ACT_LE : ACT_GE;
		return 2;
	}
	if (*s == '<' || *s == '>' || (signs && (*s == '-' || *s == '+'))) {
		*cmp = *s == '<' || *s == '-' ? ACT_LT : ACT_GT;
		return 1;
	}
	return 0;
}

/* [<|<=|>|>=|-|+]N[k|K|m|M|g|G] */
static int parse_number(struct lex *x, const char *s, size_t col, bool range_ok,
			enum act_cmp *cmp, int64_t *out)
{
	const char *p = s + cmp_prefix(s, true, cmp);
	if (*cmp != ACT_EQ && !range_ok)
		return lex_fail(x, col, "'%s': no <, >, - or + in a range", s);
	if (!isdigit((unsigned char)*p))
		return lex_fail(x, col, "'%s': a number expected", s);
	errno = 0;
	char *end;
	long long v = strtoll(p, &end, 10);
	int shift = 0;
	if (*end && strchr("kKmMgG", *end) && !end[1])
		shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20 : 30;
	else if (*end)
		return lex_fail(x, col, "'%s': trailing characters after the number", s);
	if (errno || v > (INT64_MAX >> shift))
		return lex_fail(x, col, "'%s': number too large", s);
	*out = (int64_t)v << shift;
	return 0;
}

/* A uid or gid: a number below 2^32, or a name from the passwd or group file. */
static int parse_owner(struct lex *x, const char *s, size_t col, bool group, uint32_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = isdigit((unsigned char)*s) ? strtoull(s, &end, 10) : 0;
	if (isdigit((unsigned char)*s) && !*end && !errno && v <= UINT32_MAX) {
		*out = (uint32_t)v;
		return 0;
	}
	if (group) {
		struct group *g = getgrnam(s);
		if (g) {
			*out = (uint32_t)g->gr_gid;
			return 0;
		}
	} else {
		struct passwd *pw = getpwnam(s);
		if (pw) {
			*out = (uint32_t)pw->pw_uid;
			return 0;
		}
	}
	return lex_fail(x, col, "'%s': no such %s (a name, or a number below 2^32)", s,
			group ? "group" : "user");
}

static int push_op(struct lex *x, struct act_mode *m, const struct act_mode_op *op)
{
	size_t cap = m->n;
	if (mem_grow(&m->ops, &cap, m->n + 1, sizeof(*m->ops), 0))
		return lex_fail(x, x->col, "out of memory");
	m->ops[m->n++] = *op;
	return 0;
}

/* The classes of a symbolic mode ([ugoa]*; none: all but the set-id and sticky bits). */
static uint16_t mode_classes(const char **pp)
{
	const char *p = *pp;
	uint16_t mask = 0;
	if (!strchr("ugoa", *p) || !*p)
		return 0777;
	for (; *p && strchr("ugoa", *p); p++)
		mask = *p == 'a' ? 07777 : mask | (*p == 'u' ? 04700 : *p == 'g' ? 02070 : 01007);
	*pp = p;
	return mask;
}

/* One symbolic mode: [ugoa]*([+-=]([ugo]|[rwxXst]*))+ */
static int parse_sym(struct lex *x, const char *s, size_t col, struct act_mode *m)
{
	const char *p = s;
	uint16_t mask = mode_classes(&p);
	if (!*p || !strchr("+-=", *p))
		return lex_fail(x, col, "mode '%s': expected u, g, o, a, +, - or =", s);
	while (*p) {
		struct act_mode_op op = { .op = *p, .mask = mask };
		if (!strchr("+-=", *p))
			return lex_fail(x, col, "mode '%s': expected +, - or = at '%c'", s, *p);
		p++;
		if (*p && strchr("ugo", *p)) {
			op.from = *p++;
		} else {
			for (; *p && !strchr("+-=", *p); p++) {
				static const char set[] = "rwxstX";
				static const uint16_t bits[] = { 0444, 0222, 0111, 06000, 01000,
								 0 };
				const char *k = strchr(set, *p);
				if (!k)
					return lex_fail(x, col, "mode '%s': expected r, w, x, X, s "
							"or t at '%c'", s, *p);
				op.bits |= bits[k - set];
				op.X |= *p == 'X';
			}
			op.bits &= mask;
		}
		if (push_op(x, m, &op))
			return SQK_EINVAL;
	}
	return 0;
}

/* chmod's argument: one octal mode, or symbolic modes (each argument one, as "u=rw,go=r" is
 * split at its commas by the word rules). first: argv[0] without perm's prefix. */
static int parse_mode(struct lex *x, const struct args *a, const char *first, struct act_mode *m)
{
	if (isdigit((unsigned char)*first)) {
		char *end;
		unsigned long v = strtoul(first, &end, 8);
		if (*end)
			return lex_fail(x, a->col[0], "mode '%s': not an octal number", first);
		if (v > 07777)
			return lex_fail(x, a->col[0], "mode '%s': above 07777", first);
		if (a->n > 1)
			return lex_fail(x, a->col[1], "an octal mode is the only argument");
		struct act_mode_op op = { .op = '0', .bits = (uint16_t)v, .mask = 07777 };
		return push_op(x, m, &op);
	}
	for (int i = 0; i < a->n; i++)
		if (parse_sym(x, i ? a->v[i] : first, a->col[i], m))
			return SQK_EINVAL;
	return 0;
}

mode_t act_mode_apply(const struct act_mode *m, mode_t mode)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct act_mode_op *op = &m->ops[i];
		mode_t v = op->bits;
		if (op->from) {
			int sh = op->from == 'u' ? 6 : op->from == 'g' ? 3 : 0;
			mode_t c = (mode >> sh) & 7;
			v = ((c << 6) | (c << 3) | c) & op->mask;
		} else if (op->X && (S_ISDIR(mode) || (mode & 0111))) {
			v |= 0111 & op->mask;
		}
		if (op->op == '0')
			mode = (mode & S_IFMT) | v;
		else if (op->op == '=')
			mode = (mode & ~(mode_t)op->mask) | v;
		else if (op->op == '+')
			mode |= v;
		else
			mode &= ~v;
	}
	return mode;
}

/* ---- tests ---- */

enum targ {
	TA_NONE, TA_PATTERN, TA_NUMBER, TA_RANGE, TA_USER, TA_GROUP, TA_TYPE, TA_PERM, TA_TIME,
	TA_TIME_RANGE,
};

static const struct test_def {
	const char *name;
	int test;                 /* enum act_test, or -1: known to mksquashfs, not applied */
	enum targ arg;
} tests[] = {
	{ "name", ACT_T_NAME, TA_PATTERN }, { "pathname", ACT_T_PATHNAME, TA_PATTERN },
	{ "subpathname", ACT_T_SUBPATHNAME, TA_PATTERN },
	{ "filesize", ACT_T_FILESIZE, TA_NUMBER }, { "tailsize", ACT_T_TAILSIZE, TA_NUMBER },
	{ "dirsize", ACT_T_DIRSIZE, TA_NUMBER }, { "size", ACT_T_SIZE, TA_NUMBER },
	{ "uid", ACT_T_UID, TA_NUMBER }, { "gid", ACT_T_GID, TA_NUMBER },
	{ "depth", ACT_T_DEPTH, TA_NUMBER },
	{ "filesize_range", ACT_T_FILESIZE, TA_RANGE },
	{ "tailsize_range", ACT_T_TAILSIZE, TA_RANGE },
	{ "dirsize_range", ACT_T_DIRSIZE, TA_RANGE }, { "size_range", ACT_T_SIZE, TA_RANGE },
	{ "uid_range", ACT_T_UID, TA_RANGE }, { "gid_range", ACT_T_GID, TA_RANGE },
	{ "depth_range", ACT_T_DEPTH, TA_RANGE },
	{ "user", ACT_T_USER, TA_USER }, { "group", ACT_T_GROUP, TA_GROUP },
	{ "type", ACT_T_TYPE, TA_TYPE }, { "perm", ACT_T_PERM, TA_PERM },
	{ "true", ACT_T_TRUE, TA_NONE }, { "false", ACT_T_FALSE, TA_NONE },
	{ "inode", ACT_T_INODE, TA_NUMBER }, { "nlink", ACT_T_NLINK, TA_NUMBER },
	{ "fileblocks", ACT_T_FILEBLOCKS, TA_NUMBER }, { "dirblocks", ACT_T_DIRBLOCKS, TA_NUMBER },
	{ "blocks", ACT_T_BLOCKS, TA_NUMBER },
	{ "inode_range", ACT_T_INODE, TA_RANGE }, { "nlink_range", ACT_T_NLINK, TA_RANGE },
	{ "fileblocks_range", ACT_T_FILEBLOCKS, TA_RANGE },
	{ "dirblocks_range", ACT_T_DIRBLOCKS, TA_RANGE },
	{ "blocks_range", ACT_T_BLOCKS, TA_RANGE },
	{ "dircount", -1, TA_NONE }, { "dircount_range", -1, TA_NONE },
	{ "file", -1, TA_NONE }, { "exec", -1, TA_NONE }, { "exists", -1, TA_NONE },
	{ "absolute", -1, TA_NONE }, { "stat", -1, TA_NONE }, { "readlink", -1, TA_NONE },
	{ "eval", -1, TA_NONE },
	{ "mtime", ACT_T_MTIME, TA_TIME }, { "mtime_range", ACT_T_MTIME, TA_TIME_RANGE },
};

static void act_expr_free(struct act_expr *e)
{
	if (!e)
		return;
	act_expr_free(e->l);
	act_expr_free(e->r);
	free(e->pat);
	free(e);
}

static int count_parts(const char *p)
{
	int n = 0;
	while (*p) {
		while (*p == '/')
			p++;
		if (*p)
			n++;
		while (*p && *p != '/')
			p++;
	}
	return n;
}

/* name matches the base name; pathname and subpathname a path from the root, "/" in front. */
static int set_pattern(struct lex *x, struct act_expr *e, const char *s)
{
	bool path = e->test != ACT_T_NAME && *s != '/';
	size_t n = strlen(s);
	if (!(e->pat = malloc(n + 2)))
		return lex_fail(x, x->col, "out of memory");
	snprintf(e->pat, n + 2, "%s%s", path ? "/" : "", s);
	e->pat_parts = count_parts(e->pat);
	return 0;
}

static int set_type(struct lex *x, struct act_expr *e, const struct args *a)
{
	static const char letters[] = "fdlcbps";
	static const mode_t types[] = { S_IFREG, S_IFDIR, S_IFLNK, S_IFCHR, S_IFBLK, S_IFIFO,
					S_IFSOCK };
	const char *k = a->v[0][0] && !a->v[0][1] ? strchr(letters, a->v[0][0]) : NULL;
	if (!k)
		return lex_fail(x, a->col[0], "type '%s': expected f, d, l, c, b, p or s",
				a->v[0]);
	e->type = types[k - letters];
	return 0;
}

/* find's -perm: MODE exactly, -MODE all of its bits, /MODE any of them; octal or symbolic. */
static int set_perm(struct lex *x, struct act_expr *e, const struct args *a)
{
	const char *first = a->v[0];
	struct act_mode m = { 0 };
	e->perm_op = *first == '-' || *first == '/' ? *first++ : '=';
	int err = parse_mode(x, a, first, &m);
	e->perm = act_mode_apply(&m, 0);
	free(m.ops);
	return err;
}

/* mtime's argument: [<|<=|>|>=]T, T seconds since 1970 or a date `date -d` reads (as
 * -all-time); range_ok false: no comparison. */
static int parse_time(struct lex *x, const char *s, size_t col, bool range_ok,
		      enum act_cmp *cmp, int64_t *out)
{
	const char *p = s + cmp_prefix(s, false, cmp);
	if (*cmp != ACT_EQ && !range_ok)
		return lex_fail(x, col, "'%s': no <, <=, > or >= in a range", s);
	char *end;
	errno = 0;
	uint64_t v = isdigit((unsigned char)*p) ? strtoull(p, &end, 10) : 0;
	bool num = isdigit((unsigned char)*p) && !*end && !errno && v <= UINT32_MAX;
	if (!*p || (!num && date_seconds(p, &v)))
		return lex_fail(x, col, "'%s': need seconds since 1970 or a date the date "
				"command reads", s);
	*out = (int64_t)v;
	return 0;
}

typedef int (*value_fn)(struct lex *x, const char *s, size_t col, bool range_ok,
			enum act_cmp *cmp, int64_t *out);

/* A _range test's two ends, each read by fn. */
static int set_range(struct lex *x, struct act_expr *e, const struct args *a, value_fn fn)
{
	enum act_cmp c;
	e->cmp = ACT_RANGE;
	int err = fn(x, a->v[0], a->col[0], false, &c, &e->num);
	return err ? err : fn(x, a->v[1], a->col[1], false, &c, &e->num2);
}

static int set_test_args(struct lex *x, struct act_expr *e, enum targ kind, const struct args *a)
{
	uint32_t id;
	switch (kind) {
	case TA_PATTERN: return set_pattern(x, e, a->v[0]);
	case TA_NUMBER: return parse_number(x, a->v[0], a->col[0], true, &e->cmp, &e->num);
	case TA_RANGE: return set_range(x, e, a, parse_number);
	case TA_USER:
	case TA_GROUP:
		if (parse_owner(x, a->v[0], a->col[0], kind == TA_GROUP, &id))
			return SQK_EINVAL;
		e->cmp = ACT_EQ;
		e->num = id;
		return 0;
	case TA_TYPE: return set_type(x, e, a);
	case TA_PERM: return set_perm(x, e, a);
	case TA_TIME: return parse_time(x, a->v[0], a->col[0], true, &e->cmp, &e->num);
	case TA_TIME_RANGE: return set_range(x, e, a, parse_time);
	default: return 0;
	}
}

static int test_nargs(enum targ kind)
{
	return kind == TA_NONE ? 0 : kind == TA_RANGE || kind == TA_TIME_RANGE ? 2 :
	       kind == TA_PERM ? -1 : 1;
}

/* A test, its name just read: its arguments in ( ), when there are some. */
static struct act_expr *parse_test(struct lex *x)
{
	const struct test_def *d = NULL;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]) && !d; i++)
		if (!strcmp(tests[i].name, x->str))
			d = &tests[i];
	if (!d) {
		lex_fail(x, x->col, "no such test '%s'", x->str);
		return NULL;
	}
	if (d->test < 0) {
		lex_fail(x, x->col, "test '%s' is not supported by sqk mkimage", x->str);
		return NULL;
	}
	struct args a = { .col0 = x->col };
	struct act_expr *e = calloc(1, sizeof(*e));
	enum tok t = lex_peek(x);
	int err = e ? 0 : lex_fail(x, x->col, "out of memory");
	if (!err && t == TK_OPEN) {
		lex_next(x);
		err = read_args(x, &a);
	}
	if (!err)
		err = want_args(x, &a, "test", d->name, test_nargs(d->arg));
	if (!err) {
		e->kind = ACT_ATOM;
		e->test = (enum act_test)d->test;
		err = set_test_args(x, e, d->arg, &a);
	}
	args_free(&a);
	if (err) {
		act_expr_free(e);
		return NULL;
	}
	return e;
}

/* ---- expressions ---- */

static struct act_expr *parse_expr(struct lex *x, bool sub);

static struct act_expr *node(struct lex *x, enum act_node kind, struct act_expr *l,
			     struct act_expr *r)
{
	struct act_expr *e = l && (r || kind == ACT_NOT) ? calloc(1, sizeof(*e)) : NULL;
	if (!e) {
		if (l && (r || kind == ACT_NOT))
			lex_fail(x, x->col, "out of memory");
		act_expr_free(l);
		act_expr_free(r);
		return NULL;
	}
	e->kind = kind;
	e->l = l;
	e->r = r;
	return e;
}

static struct act_expr *parse_atom(struct lex *x)
{
	enum tok t = lex_next(x);
	switch (t) {
	case TK_NOT: return node(x, ACT_NOT, parse_atom(x), NULL);
	case TK_OPEN: return parse_expr(x, true);
	case TK_STR: return parse_test(x);
	case TK_ERR: return NULL;
	default: unexpected(x, t, "a test, \"!\" or \"(\""); return NULL;
	}
}

static struct act_expr *parse_expr(struct lex *x, bool sub)
{
	struct act_expr *e = parse_atom(x);
	while (e) {
		enum tok t = lex_next(x);
		if ((t == TK_EOF && !sub) || (t == TK_CLOSE && sub))
			return e;
		if (t != TK_AND && t != TK_OR) {
			if (t != TK_ERR)
				unexpected(x, t, sub ? "\"&&\", \"||\" or \")\"" :
						       "\"&&\", \"||\" or the end");
			act_expr_free(e);
			return NULL;
		}
		e = node(x, t == TK_AND ? ACT_AND : ACT_OR, e, parse_atom(x));
	}
	return NULL;
}

/* ---- actions ---- */

static const struct action_def {
	const char *name;
	int kind;                 /* enum act_kind, or -1: mksquashfs's, not applied */
	int nargs;                /* -1: one or more */
} actions[] = {
	{ "exclude", ACT_EXCLUDE, 0 }, { "prune", ACT_PRUNE, 0 },
	{ "chmod", ACT_MODE, -1 }, { "mode", ACT_MODE, -1 },
	{ "uid", ACT_UID, 1 }, { "gid", ACT_GID, 1 }, { "guid", ACT_GUID, 2 },
	{ "compressed", ACT_COMPRESSED, 0 }, { "uncompressed", ACT_UNCOMPRESSED, 0 },
	{ "fragments", ACT_FRAGMENTS, 0 }, { "no-fragments", ACT_NO_FRAGMENTS, 0 },
	{ "always-use-fragments", ACT_ALWAYS_FRAGS, 0 }, { "tailend", ACT_ALWAYS_FRAGS, 0 },
	{ "dont-always-use-fragments", ACT_NO_ALWAYS_FRAGS, 0 },
	{ "no-tailend", ACT_NO_ALWAYS_FRAGS, 0 }, { "noop", ACT_NOOP, 0 },
	{ "fragment", -1, 1 }, { "empty", -1, 0 }, { "move", -1, 1 },
	{ "xattrs-exclude", ACT_XATTRS_EXCLUDE, 1 }, { "xattrs-include", ACT_XATTRS_INCLUDE, 1 },
	{ "xattrs-add", ACT_XATTRS_ADD, 1 },
	{ "align", -1, 1 },
	/* sqk's, not in mksquashfs 4.7.5 */
	{ "chown", ACT_GUID, -1 }, { "no-fragment", ACT_NO_FRAGMENTS, 0 },
	{ "always-fragment", ACT_ALWAYS_FRAGS, 0 }, { "no-xattrs", ACT_NO_XATTRS, 0 },
};

static const struct action_def *find_action(struct lex *x)
{
	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++)
		if (!strcmp(actions[i].name, x->str)) {
			if (actions[i].kind >= 0)
				return &actions[i];
			lex_fail(x, x->col, "action '%s' is not supported by sqk mkimage", x->str);
			return NULL;
		}
	lex_fail(x, x->col, "no such action '%s'", x->str);
	return NULL;
}

/* xattrs-exclude, xattrs-include: a POSIX extended regular expression of xattr names. */
static int parse_regex(struct lex *x, const struct args *a, struct act_rule *r)
{
	if (!(r->re = malloc(sizeof(*r->re))))
		return lex_fail(x, a->col[0], "out of memory");
	int rc = regcomp(r->re, a->v[0], REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char why[128];
		regerror(rc, r->re, why, sizeof(why));
		free(r->re);
		r->re = NULL;
		return lex_fail(x, a->col[0], "regex '%s': %s", a->v[0], why);
	}
	return 0;
}

/* xattrs-add(NAME=VALUE): a user., trusted. or security. xattr. */
static int parse_xattr_add(struct lex *x, const struct args *a, struct act_rule *r)
{
	const char *s = a->v[0], *eq = strchr(s, '='), *why = NULL;
	size_t n = 0;

	if (!eq || !eq[1] || !mk_xattr_name_ok(s, (size_t)(eq - s)))
		return lex_fail(x, a->col[0], "'%s': expected NAME=VALUE, NAME in user., trusted. "
				"or security.", s);
	r->xname = strndup(s, (size_t)(eq - s));
	r->xval = malloc(strlen(eq) + 1);
	if (!r->xname || !r->xval)
		return lex_fail(x, a->col[0], "out of memory");
	if (mk_xattr_value(eq + 1, r->xval, &n, &why))
		return lex_fail(x, a->col[0], "'%s': %s", s, why);
	r->xlen = n;
	return 0;
}

static void rule_free(struct act_rule *r)
{
	act_expr_free(r->expr);
	free(r->mode.ops);
	if (r->re)
		regfree(r->re);
	free(r->re);
	free(r->xname);
	free(r->xval);
}

/* guid(USER, GROUP), chown(USER, GROUP); either may be empty in chown (that one unchanged). */
static int set_guid(struct lex *x, struct act_rule *r, const char *u, size_t ucol, const char *g,
		    size_t gcol)
{
	if (!*u && !*g)
		return lex_fail(x, ucol, "chown: a user or a group expected");
	if (!*u || !*g)
		r->kind = *u ? ACT_UID : ACT_GID;
	if (*u && parse_owner(x, u, ucol, false, &r->uid))
		return SQK_EINVAL;
	return *g ? parse_owner(x, g, gcol, true, &r->gid) : 0;
}

/* chown's one argument, as chown(1): USER, USER:GROUP or :GROUP (sqk's; and chown(USER, GROUP)
 * as guid). */
static int parse_chown(struct lex *x, struct act_rule *r, const struct args *a)
{
	if (a->n != 1)
		return lex_fail(x, a->col0, "action 'chown' takes USER[:GROUP] or USER, GROUP");
	const char *s = a->v[0], *colon = strchr(s, ':');
	if (!colon)
		return set_guid(x, r, s, a->col[0], "", a->col[0]);
	size_t n = (size_t)(colon - s);
	char *u = malloc(n + 1);
	if (!u)
		return lex_fail(x, a->col0, "out of memory");
	memcpy(u, s, n);
	u[n] = 0;
	int err = set_guid(x, r, u, a->col[0], colon + 1, a->col[0] + n + 1);
	free(u);
	return err;
}

static int set_action_args(struct lex *x, struct act_rule *r, const struct args *a)
{
	switch (r->kind) {
	case ACT_UID: return parse_owner(x, a->v[0], a->col[0], false, &r->uid);
	case ACT_GID: return parse_owner(x, a->v[0], a->col[0], true, &r->gid);
	case ACT_MODE: return parse_mode(x, a, a->v[0], &r->mode);
	case ACT_GUID: return a->n == 2 ? set_guid(x, r, a->v[0], a->col[0], a->v[1], a->col[1]) :
			      parse_chown(x, r, a);
	case ACT_XATTRS_EXCLUDE:
	case ACT_XATTRS_INCLUDE: return parse_regex(x, a, r);
	case ACT_XATTRS_ADD: return parse_xattr_add(x, a, r);
	default: return 0;
	}
}

/* The action's name, its arguments and the "@". */
static int parse_head(struct lex *x, struct act_rule *r)
{
	enum tok t = lex_next(x);
	if (t != TK_STR)
		return t == TK_ERR ? SQK_EINVAL : unexpected(x, t, "an action");
	const struct action_def *d = find_action(x);
	if (!d)
		return SQK_EINVAL;
	r->kind = (enum act_kind)d->kind;
	struct args a = { .col0 = x->col };
	int err = 0;
	t = lex_next(x);
	if (t == TK_OPEN) {
		err = read_args(x, &a);
		t = err ? TK_ERR : lex_next(x);
	}
	if (!err && t != TK_AT)
		err = t == TK_ERR ? SQK_EINVAL : unexpected(x, t, a.n ? "\"@\"" : "\"(\" or \"@\"");
	if (!err)
		err = want_args(x, &a, "action", d->name, d->nargs);
	if (!err)
		err = set_action_args(x, r, &a);
	args_free(&a);
	return err;
}

int mk_actions_parse(struct mk_actions *a, const char *text, char *msg, size_t cap)
{
	struct lex x = { .s = text, .p = text, .msg = msg, .msg_cap = cap };
	struct act_rule r = { 0 };
	int err = parse_head(&x, &r);
	if (!err && !(r.expr = parse_expr(&x, false)))
		err = SQK_EINVAL;
	if (!err && mem_grow(&a->rules, &a->cap, a->n + 1, sizeof(*a->rules), 0))
		err = lex_fail(&x, 1, "out of memory");
	free(x.str);
	if (err) {
		rule_free(&r);
		return err;
	}
	a->rules[a->n++] = r;
	a->any_exclude |= r.kind == ACT_EXCLUDE || r.kind == ACT_PRUNE;
	a->any_xattr |= r.kind >= ACT_XATTRS_EXCLUDE;
	a->nadd += r.kind == ACT_XATTRS_ADD;
	return 0;
}

/* Whether the line read so far continues on the next: it ends in one \ (not an escaped one). */
static bool continues(const char *line, size_t len)
{
	return len && line[len - 1] == '\\' && !(len >= 2 && line[len - 2] == '\\');
}

/* One logical line of f into *buf (continuations joined): its length, or -1 at the end. */
static ssize_t read_logical(FILE *f, char **buf, size_t *cap, size_t *lines)
{
	char *line = NULL;
	size_t lcap = 0, len = 0;
	ssize_t n;
	bool any = false;
	while ((n = getline(&line, &lcap, f)) >= 0) {
		any = true;
		(*lines)++;
		if (n && line[n - 1] == '\n')
			line[--n] = 0;
		if (mem_grow(buf, cap, len + (size_t)n + 1, 1, 0)) {
			free(line);
			return -2;
		}
		memcpy(*buf + len, line, (size_t)n + 1);
		len += (size_t)n;
		if (!continues(*buf, len))
			break;
		(*buf)[--len] = 0;
	}
	free(line);
	return any ? (ssize_t)len : -1;
}

int mk_actions_each_line(const char *path, mk_actions_line_fn fn, void *arg, char *msg,
			 size_t cap)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(msg, cap, "cannot open: %s", strerror(errno));
		return sqk_from_errno(errno);
	}
	char *buf = NULL, why[512];
	size_t bcap = 0, lines = 0, first;
	ssize_t n;
	int err = 0;
	for (;;) {
		first = lines + 1;
		n = read_logical(f, &buf, &bcap, &lines);
		if (n < 0)
			break;
		const char *p = buf;
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			continue;
		why[0] = 0;
		err = fn(arg, p, why, sizeof(why));
		if (err) {
			snprintf(msg, cap, "line %zu: %s", first, why);
			break;
		}
	}
	if (!err && (n == -2 || ferror(f))) {
		err = n == -2 ? SQK_ENOMEM : SQK_EIO;
		snprintf(msg, cap, "cannot read: %s", n == -2 ? "out of memory" : strerror(errno));
	}
	free(buf);
	fclose(f);
	return err;
}

static int parse_line(void *arg, const char *line, char *msg, size_t cap)
{
	return mk_actions_parse(arg, line, msg, cap);
}

int mk_actions_parse_file(struct mk_actions *a, const char *path, char *msg, size_t cap)
{
	return mk_actions_each_line(path, parse_line, a, msg, cap);
}

void mk_actions_clear(struct mk_actions *a)
{
	for (size_t i = 0; i < a->n; i++)
		rule_free(&a->rules[i]);
	free(a->rules);
	free(a->xkv);
	for (size_t i = 0; i < a->ngone; i++)
		free(a->gone[i]);
	free(a->gone);
	memset(a, 0, sizeof(*a));
}

int act_mode_parse(const char *spec, struct act_mode *m, char *msg, size_t cap)
{
	*m = (struct act_mode){ 0 };
	if (!*spec || strspn(spec, "ugoa+-=rwxXst01234567,") != strlen(spec)) {
		snprintf(msg, cap, "expected an octal mode or [ugoa]*[+-=][rwxXst]... clauses");
		return SQK_EINVAL;
	}
	/* the chmod action's parser, so that both read a mode alike */
	size_t n = strlen(spec) + sizeof("chmod()@true");
	char *text = malloc(n), why[256] = "out of memory";
	struct mk_actions a = { 0 };
	int err = text ? 0 : SQK_ENOMEM;
	if (text) {
		snprintf(text, n, "chmod(%s)@true", spec);
		err = mk_actions_parse(&a, text, why, sizeof(why));
	}
	free(text);
	if (!err) {
		*m = a.rules[0].mode;
		a.rules[0].mode = (struct act_mode){ 0 };
	} else {
		const char *p = strncmp(why, "column ", 7) ? NULL : strstr(why, ": mode '");
		snprintf(msg, cap, "%s", p ? p + 2 : err == SQK_ENOMEM ? why :
			 "expected an octal mode or [ugoa]*[+-=][rwxXst]... clauses");
	}
	mk_actions_clear(&a);
	return err;
}

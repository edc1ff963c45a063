/* SPDX-License-Identifier: BSD-2-Clause */
/* The reading commands' option parser (cmdopt.h): getopt_long's tables, read in the order the
 * words come so that a command may tell which positionals followed an option (extract's
 * -excludes), unsquashfs's "-name" spellings, and one-line errors. */
#include "cmdopt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cmdopt_init(struct cmdopt *p, const char *cmd, int argc, char **argv,
		 const struct option *longs, const char *shorts)
{
	memset(p, 0, sizeof(*p));
	p->cmd = cmd;
	p->argc = argc;
	p->argv = argv;
	p->longs = longs;
	p->shorts = shorts;
	p->i = 1;
}

int cmdopt_fail(struct cmdopt *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(p->msg, sizeof(p->msg), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(p->msg))
		snprintf(p->msg + n, sizeof(p->msg) - (size_t)n,
			 "; sqk %s --help lists the options", p->cmd);
	fprintf(stderr, "sqk %s: %s\n", p->cmd, p->msg);
	return 2;
}

/* The value of option p->as: the rest of its word (attached, may be NULL) or the next word. */
static int take_value(struct cmdopt *p, const char *attached, int code)
{
	if (attached) {
		p->arg = attached;
		return code;
	}
	if (p->i >= p->argc) {
		cmdopt_fail(p, "option '%s' needs a value", p->as);
		return CMDOPT_ERR;
	}
	p->arg = p->argv[p->i++];
	return code;
}

/* The long option named by the n bytes at w: exact, else a unique prefix (when prefix). */
static const struct option *find_long(const struct cmdopt *p, const char *w, size_t n,
				      bool prefix, int *hits)
{
	const struct option *hit = NULL;

	*hits = 0;
	for (const struct option *l = p->longs; l && l->name; l++) {
		if (strncmp(l->name, w, n))
			continue;
		if (strlen(l->name) == n) {
			*hits = 1;
			return l;
		}
		if (prefix) {
			hit = l;
			++*hits;
		}
	}
	return *hits == 1 ? hit : NULL;
}

/* "--name", "--name=value" (prefix: GNU's abbreviations) or "-name" (dash: 1, whole names). */
static int long_opt(struct cmdopt *p, const char *word, int dash)
{
	const char *w = word + dash, *eq = dash == 2 ? strchr(w, '=') : NULL;
	size_t n = eq ? (size_t)(eq - w) : strlen(w);
	int hits;
	const struct option *l = find_long(p, w, n, dash == 2, &hits);

	if (!l) {
		if (dash == 1)
			return 0; /* not a name: short letters */
		snprintf(p->as, sizeof(p->as), "--%.*s", (int)(n < 40 ? n : 40), w);
		cmdopt_fail(p, "%s option '%s'", hits ? "ambiguous" : "unknown", p->as);
		return CMDOPT_ERR;
	}
	snprintf(p->as, sizeof(p->as), "%s%s", dash == 2 ? "--" : "-", l->name);
	if (l->has_arg == no_argument) {
		if (eq) {
			cmdopt_fail(p, "option '%s' takes no value", p->as);
			return CMDOPT_ERR;
		}
		return l->val;
	}
	if (l->has_arg == optional_argument)
		return p->arg = eq ? eq + 1 : NULL, l->val;
	return take_value(p, eq ? eq + 1 : NULL, l->val);
}

/* The next letter of the cluster being read. */
static int short_opt(struct cmdopt *p, const char *word)
{
	char c = *p->cluster++;
	const char *d = c != ':' && c != 'h' ? strchr(p->shorts, c) : NULL;

	if (c == 'h' && p->cluster == word + 2 && !*p->cluster)
		d = strchr(p->shorts, c); /* "-h" alone */
	snprintf(p->as, sizeof(p->as), "-%c", c);
	if (!d) {
		if (p->cluster == word + 2) /* its first letter: the word is no option */
			cmdopt_fail(p, "unknown option '%.40s'", word);
		else
			cmdopt_fail(p, "unknown option '-%c' (in '%.40s')", c, word);
		p->cluster = NULL;
		return CMDOPT_ERR;
	}
	if (d[1] != ':')
		return c;
	if (*p->cluster) {
		p->arg = p->cluster;
		p->cluster = NULL;
		return c;
	}
	p->cluster = NULL;
	return take_value(p, NULL, c);
}

int cmdopt_next(struct cmdopt *p)
{
	const char *w;
	int r;

	p->arg = NULL;
	if (p->cluster && *p->cluster)
		return short_opt(p, p->argv[p->i - 1]);
	p->cluster = NULL;
	if (p->i >= p->argc)
		return CMDOPT_END;
	w = p->argv[p->i++];
	if (p->no_more || w[0] != '-' || !w[1]) {
		p->arg = w;
		p->argv[++p->npos] = (char *)w; /* never past the word just read */
		return CMDOPT_POS;
	}
	if (!strcmp(w, "--")) {
		p->no_more = true;
		return cmdopt_next(p);
	}
	if (w[1] == '-')
		return long_opt(p, w, 2);
	if (w[2] && (r = long_opt(p, w, 1)) != 0)
		return r;
	p->cluster = w + 1;
	return short_opt(p, w);
}

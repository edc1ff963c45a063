/* SPDX-License-Identifier: BSD-2-Clause */
/* The command line of the reading commands (ls, cat, extract, tar, info, verify): options
 * anywhere among the positional arguments ("--" ends them), GNU long options ("--name",
 * "--name=value", a unique prefix), unsquashfs's single-dash spellings ("-dest", "-force": any
 * long name given whole after one dash) and short letters in clusters ("-fj4"). A bad option is
 * one line naming it and a hint, never the whole help. */
#ifndef SQK_CMDOPT_H
#define SQK_CMDOPT_H

#include <getopt.h>
#include <stdbool.h>

enum {
	CMDOPT_END = -1, /* no more words */
	CMDOPT_ERR = -2, /* a bad option: its line is printed; exit 2 */
	CMDOPT_POS = -3, /* a positional argument, in arg */
};

/* The parser's state; plain struct on the caller's stack. */
struct cmdopt {
	const char *cmd;             /* "extract", for messages */
	int argc;
	char **argv;
	const struct option *longs;  /* getopt_long's table (flag must be NULL) */
	const char *shorts;          /* "j:fh": letters, ':' after those that take a value */
	int i;                       /* the next word */
	const char *cluster;         /* the letters left of "-abc" */
	bool no_more;                /* after "--": the rest is positional */
	const char *arg;             /* the option's value (NULL for a flag), or the positional */
	char as[64];                 /* the option as it was spelled ("-dest", "--force", "-f") */
	int npos;                    /* positionals so far: also moved to argv[1..npos] */
	char msg[160];               /* the last error, as printed (without "sqk CMD: ") */
};

/* Starts parsing argv[1..argc) (argv[0] is the command). Borrows every argument. */
void cmdopt_init(struct cmdopt *p, const char *cmd, int argc, char **argv,
		 const struct option *longs, const char *shorts);

/* The next option's code (its struct option val, or its letter) with p->arg and p->as set, or
 * CMDOPT_POS with p->arg the word (also stored at argv[p->npos], in order), CMDOPT_END, or
 * CMDOPT_ERR (one line printed: "sqk CMD: unknown option '-x'; sqk CMD --help lists them").
 * 'h' is help only as the word "-h" (or --help): in a cluster ("-lh") it is an unknown
 * letter. */
int cmdopt_next(struct cmdopt *p);

/* Prints "sqk CMD: MESSAGE; sqk CMD --help lists the options" (one line), keeps it in
 * p->msg and returns 2. */
int cmdopt_fail(struct cmdopt *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* Which entries of an image a command works on, as unsquashfs chooses them: PATH patterns
 * matched a component at a time with fnmatch(3) (a directory that matches a whole pattern
 * brings everything below it; one that matches the start of a pattern is made on the way),
 * exclude patterns (an entry matching one is left out with everything below it) and a maximum
 * depth. Used by sqk extract (and the listing modes that share its selection). */
#ifndef SQK_SELECT_H
#define SQK_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sqk/sqk.h"

#define SEL_NO_MAX_DEPTH UINT32_MAX

/* The compiled selection: sel_init, sel_add..., then sel_walk (any number of times). */
struct sel {
	struct sel_pat {
		char **comps;        /* the components, empty ones dropped (owned) */
		uint32_t n;
		bool exclude;
		bool hit;            /* an extract pattern: matched at least one entry */
		const char *text;    /* as given (borrowed) */
	} *pats;
	size_t npats, cap;
	size_t nextract;             /* extract patterns among pats (none: everything) */
	uint32_t max_depth;          /* SEL_NO_MAX_DEPTH: no bound; 0: the root only */
	unsigned *lv;                /* walk state: per depth, each pattern's next component */
	size_t lvcap;
};

/* One step of sel_walk, borrowed for the call. */
struct sel_entry {
	const char *path;            /* from the root, no leading '/'; "" for the root */
	const char *name;            /* its last component; "" for the root */
	uint32_t depth;              /* components of path (0: the root) */
	const struct sqk_inode *ino;
	bool post;                   /* a directory left, after its selected entries */
	bool whole;                  /* selected with everything below it (else: a directory on
				      * the way to a deeper match) */
	int err;                     /* a failed step of the walk (SQK_E*, walk says what) */
	const struct sqk_walk_entry *walk; /* the library's step (for messages) */
};

/* Called for each selected entry, a directory before its entries (and again with post set
 * after them when it was entered), and for each failed step (err set). Returns 0 to go on
 * (and enter a directory), 1 not to enter this directory, or a negative value that ends the
 * walk and is returned by sel_walk. */
typedef int (*sel_fn)(void *ctx, const struct sel_entry *e);

/* An empty selection (everything, no bound). */
void sel_init(struct sel *s);

/* Adds pattern (borrowed: must outlive s) as an extract (exclude false) or exclude pattern.
 * Returns 0 or SQK_ENOMEM. */
int sel_add(struct sel *s, const char *pattern, bool exclude);

/* Whether pattern holds fnmatch's special characters (else it names one path). */
bool sel_is_glob(const char *pattern);

/* Makes pattern i match its text exactly (each character escaped): for a PATH with wildcard
 * characters that names an entry as written. Returns 0 or SQK_ENOMEM. */
int sel_make_literal(struct sel *s, size_t i);

/* Walks img from its root, calling fn(ctx, ...) as sel_fn says. Returns 0, fn's negative
 * value, or SQK_E* of opening the walk (out of memory, an unreadable root). Borrows img. */
int sel_walk(struct sel *s, struct sqk_image *img, sel_fn fn, void *ctx);

struct cmd;

/* False when pattern has a . or .. component (unsquashfs would take it as a name). */
bool sel_path_ok(const char *pattern);

/* Checks the extract patterns of s against c's open image before anything is done: a PATH
 * without wildcards must name an entry (else a message naming it, ending "nothing <what>");
 * one with wildcards that names an entry as written is made to match that entry alone
 * (sel_make_literal), so that names with '*', '?' or '[' stay reachable. Borrows s, c, what.
 * Returns 0, or -1 after the messages. */
int sel_check_paths(struct sel *s, struct cmd *c, const char *what);

/* After sel_walk: a warning on stderr for each extract pattern that matched nothing. */
void sel_warn_unmatched(const struct sel *s, struct cmd *c);

/* Frees what s owns. */
void sel_free(struct sel *s);

#endif

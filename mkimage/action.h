/* SPDX-License-Identifier: BSD-2-Clause */
/* mksquashfs's actions (its ACTIONS-README, 4.6 and later): ACTION@EXPRESSION lines parsed into
 * rules (action_parse.c), then applied to each entry the source gives, between the source and
 * the tree (action.c): exclude and prune leave an entry out (a directory with all under it),
 * chmod/mode, uid, gid and guid change its attributes, the data actions choose how a file's
 * blocks are stored (raw, fragment or not), which data.c reads from the entry, and
 * xattrs-exclude/xattrs-include filter its xattrs. sqk's extensions: chown, no-fragment,
 * always-fragment, no-xattrs and the mtime test. */
#ifndef SQK_MK_ACTION_H
#define SQK_MK_ACTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <regex.h>
#include <sys/types.h>

struct mk_ctx;
struct mk_entry;
struct mk_source;
struct mk_xattr_kv;

/* The tests an expression is made of (ACTIONS-README section 4). */
enum act_test {
	ACT_T_NAME, ACT_T_PATHNAME, ACT_T_SUBPATHNAME,
	ACT_T_FILESIZE, ACT_T_TAILSIZE, ACT_T_DIRSIZE, ACT_T_SIZE, ACT_T_UID, ACT_T_GID,
	ACT_T_DEPTH, ACT_T_USER, ACT_T_GROUP, ACT_T_TYPE, ACT_T_PERM, ACT_T_TRUE, ACT_T_FALSE,
	ACT_T_INODE, ACT_T_NLINK, ACT_T_FILEBLOCKS, ACT_T_DIRBLOCKS, ACT_T_BLOCKS,
	ACT_T_MTIME,              /* sqk's: not in mksquashfs 4.7.5 */
};

/* How a number compares: <, <=, =, >=, > (find's - and + are < and >), or a range [lo, hi]. */
enum act_cmp { ACT_LT, ACT_LE, ACT_EQ, ACT_GE, ACT_GT, ACT_RANGE };

/* One step of a mode change (chmod's symbolic and octal forms, find's -perm). */
struct act_mode_op {
	char op;           /* '0' octal (sets all bits), '=', '+', '-' */
	char from;         /* 'u', 'g', 'o': copy that class's bits; 0: bits below */
	bool X;            /* X: x where a directory, or where some x is set already */
	uint16_t bits;     /* the permission bits (already cut to mask) */
	uint16_t mask;     /* the bits the classes given cover (u 04700, g 02070, o 01007) */
};

struct act_mode {
	struct act_mode_op *ops; /* owned */
	size_t n;
};

/* An expression: an atom (one test) or !, && and || of others (evaluated left to right, with
 * short cuts, no precedence: a && b || c is (a && b) || c). */
enum act_node { ACT_ATOM, ACT_NOT, ACT_AND, ACT_OR };
struct act_expr {
	enum act_node kind;
	struct act_expr *l, *r;   /* operands (owned); NOT uses l */
	enum act_test test;       /* ACT_ATOM: */
	char *pat;                /* name, pathname, subpathname (owned) */
	int pat_parts;            /* subpathname: the pattern's components */
	enum act_cmp cmp;         /* numbers */
	int64_t num, num2;        /* the number, or the range's ends */
	mode_t type;              /* type: S_IF* */
	char perm_op;             /* perm: '=' exact, '-' all of them, '/' any of them */
	mode_t perm;              /* perm: the bits */
};

/* The actions (ACTIONS-README section 5) sqk applies. */
enum act_kind {
	ACT_EXCLUDE, ACT_PRUNE, ACT_MODE, ACT_UID, ACT_GID, ACT_GUID,
	ACT_COMPRESSED, ACT_UNCOMPRESSED, ACT_FRAGMENTS, ACT_NO_FRAGMENTS,
	ACT_ALWAYS_FRAGS, ACT_NO_ALWAYS_FRAGS, ACT_NOOP, ACT_XATTRS_EXCLUDE, ACT_XATTRS_INCLUDE,
	ACT_XATTRS_ADD,
	ACT_NO_XATTRS,            /* sqk's: not in mksquashfs 4.7.5 (drops every xattr) */
};

struct act_rule {
	enum act_kind kind;
	uint32_t uid, gid;        /* uid, gid, guid */
	struct act_mode mode;     /* chmod, mode */
	regex_t *re;              /* xattrs-exclude, xattrs-include: the names' regex (owned) */
	char *xname;              /* xattrs-add: the name (owned) */
	uint8_t *xval;            /* its value, decoded (owned) */
	size_t xlen;
	struct act_expr *expr;    /* owned */
};

/* A per-file choice an action made, in struct mk_entry (0: the build's options decide). */
enum { MK_ACT_DEFAULT = 0, MK_ACT_OFF, MK_ACT_ON };

struct mk_actions {
	struct act_rule *rules;   /* owned, in the order given */
	size_t n, cap;
	bool any_exclude;         /* exclude or prune rules: entries may be left out */
	bool any_xattr;           /* xattrs-exclude, xattrs-include or xattrs-add rules */
	size_t nadd;              /* xattrs-add rules */
	bool no_xattrs;           /* the build stores no xattrs: xattrs-add adds none */
	struct mk_xattr_kv *xkv;  /* the xattrs an entry keeps (owned array; the names and values
				   * borrowed from the source's entry) */
	size_t xkv_cap;
	char **gone;              /* directories left out so far (owned, sorted): their entries
				   * are left out too, whatever order a source gives them in */
	size_t ngone, gone_cap;
};

/* Parses one action (text, borrowed) and appends its rule to a: 0, or SQK_EINVAL (a syntax
 * error, an unknown or unsupported action or test) with a one-line message in msg that names
 * the word and its column ("column 9: no such test 'mtime'"). */
int mk_actions_parse(struct mk_actions *a, const char *text, char *msg, size_t cap);

/* Calls fn with each action of the action file at path, read as mksquashfs does (one action a
 * line, \ at the end continues it, blank lines and # comments skipped), the line borrowed until
 * fn returns: 0, or the first error (fn's, with its message after "line N: " in msg; or the
 * file's). */
typedef int (*mk_actions_line_fn)(void *arg, const char *line, char *msg, size_t cap);
int mk_actions_each_line(const char *path, mk_actions_line_fn fn, void *arg, char *msg,
			 size_t cap);

/* Reads an action file as mksquashfs does (one action a line, \ at the end continues it, blank
 * lines and # comments skipped) into a: 0, or an SQK_E* code with the message (naming the file,
 * the line and the column) in msg. */
int mk_actions_parse_file(struct mk_actions *a, const char *path, char *msg, size_t cap);

/* Frees what a owns (not a). */
void mk_actions_clear(struct mk_actions *a);

/* Frees a (from mk_actions_load) and what it owns; NULL is fine. */
void mk_actions_free(struct mk_actions *a);

/* Parses spec (borrowed: octal, or symbolic clauses separated by commas, as -root-mode and
 * the chmod action take them) into *m (its ops owned by the caller: free(m->ops)): 0, or
 * SQK_EINVAL / SQK_ENOMEM with a message in msg. */
int act_mode_parse(const char *spec, struct act_mode *m, char *msg, size_t cap);

/* A mode with the ops of m applied (mksquashfs's order and X rule). */
mode_t act_mode_apply(const struct act_mode *m, mode_t mode);

/* Applies a to the entry e at depth (0 the root, 1 its entries...): 0 when exclude or prune
 * leaves it out, else 1 with its mode and owner changed, act_* set and its xattrs filtered
 * (e->xattrs then points into a, valid until the next call), or SQK_ENOMEM. block_size: for
 * tailsize. e's strings are borrowed. */
int mk_actions_apply(struct mk_actions *a, struct mk_entry *e, uint32_t depth,
		     uint32_t block_size);

/* Loads the source description's actions into c->actions (none: NULL). Errors through c. */
int mk_actions_load(struct mk_ctx *c);

/* mk_source_dir_file (source.h) for --order and -sort, with the actions: 1 also when an action
 * leaves the file, or a directory above it, out; e with the actions applied. */
int mk_actions_file(struct mk_ctx *c, struct mk_source *src, const char *rel,
		    struct mk_entry *e);

/* The source's next entry the actions keep (as the source's next()): what is under a directory
 * left out is skipped (the source is told not to read it, when it can). */
int mk_actions_next(struct mk_ctx *c, struct mk_source *src, struct mk_entry *e);

#endif

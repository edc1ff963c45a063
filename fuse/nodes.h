/* SPDX-License-Identifier: BSD-2-Clause */
/* Node table of the FUSE front-end: FUSE node ids are inode references (+2; the root is 1), so
 * requests need no table; this one only lets an error message name the path of a node. It keeps,
 * per node the kernel knows, the parent's id and the name it was reached by (no path copies, no
 * global lock: the table is split into independently locked shards), and builds the path only
 * when a message needs it. Entries follow the kernel's lookup counts and go at forget. The kernel
 * forgets only under memory pressure, so the table is bounded: at most a fixed number of entries,
 * and a full table makes room by evicting an entry no other entry needs for its path, the least
 * recently used one as far as a CLOCK sweep can tell. */
#ifndef SQK_FUSE_NODES_H
#define SQK_FUSE_NODES_H

#include <stddef.h>
#include <stdint.h>

struct nodes;

/* The default bound on entries: about 4 MiB of entries and buckets. */
#define SQK_NODES_DEFAULT_MAX 65536

/* Creates an empty table of at most max entries (0: it records nothing). Caller owns *out. */
int nodes_create(size_t max, struct nodes **out);

/* Destroys t and every entry left in it; NULL-safe. */
void nodes_destroy(struct nodes *t);

/* Counts one kernel lookup of id, found as name (len bytes, borrowed) in directory parent; a new
 * entry remembers parent and name (the first ones seen while the node lives). Call it before the
 * reply that makes the kernel count the lookup. A full table evicts an entry that is no other
 * entry's parent (its path parts are lost, its lookups are not counted any more); when none can
 * go, or out of memory, the node is not recorded. Thread-safe. */
void nodes_add(struct nodes *t, uint64_t id, uint64_t parent, const char *name, size_t len);

/* Drops nlookup kernel lookups of id; the entry is freed when none are left and no entry below it
 * needs it for its path. Unknown (never recorded or evicted) ids are ignored. Thread-safe. */
void nodes_forget(struct nodes *t, uint64_t id, uint64_t nlookup);

/* Writes id's path into buf (cap bytes, NUL-terminated): "/" for the root, "/a/b" otherwise, with
 * a leading "..." when an ancestor is not recorded or the path is cut to fit (".../b"). Returns 0
 * for a whole path, 1 for one that starts with "...", -1 (buf "") when id itself is not recorded.
 * Thread-safe. */
int nodes_path(struct nodes *t, uint64_t id, char *buf, size_t cap);

/* Entries held now (for tests and stats). Thread-safe. */
size_t nodes_count(struct nodes *t);

#endif

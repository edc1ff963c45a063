/* Node table of the FUSE front-end: FUSE node ids are inode references (+2; the root is 1), so
 * requests need no table; this one only lets an error message name the path of a node. It keeps,
 * per node the kernel knows, the parent's id and the name it was reached by (no path copies, no
 * global lock: the table is split into independently locked shards), and builds the path only
 * when a message needs it. Entries follow the kernel's lookup counts and go at forget. */
#ifndef SQK_FUSE_NODES_H
#define SQK_FUSE_NODES_H

#include <stddef.h>
#include <stdint.h>

struct sqk_nodes;

/* Creates an empty table. Caller owns *out. */
int sqk_nodes_create(struct sqk_nodes **out);

/* Destroys t and every entry left in it; NULL-safe. */
void sqk_nodes_destroy(struct sqk_nodes *t);

/* Counts one kernel lookup of id, found as name (len bytes, borrowed) in directory parent; a new
 * entry remembers parent and name (the first ones seen while the node lives). Call it before the
 * reply that makes the kernel count the lookup. Out of memory: the node's path reads "?".
 * Thread-safe. */
void sqk_nodes_add(struct sqk_nodes *t, uint64_t id, uint64_t parent, const char *name, size_t len);

/* Drops nlookup kernel lookups of id; the entry is freed when none are left and no entry below it
 * needs it for its path. Unknown ids are ignored. Thread-safe. */
void sqk_nodes_forget(struct sqk_nodes *t, uint64_t id, uint64_t nlookup);

/* Writes id's path into buf (cap bytes, NUL-terminated): "/" for the root, "/a/b" otherwise, with
 * "?" for a part not known and a leading "..." when cut to fit. Thread-safe. */
void sqk_nodes_path(struct sqk_nodes *t, uint64_t id, char *buf, size_t cap);

#endif

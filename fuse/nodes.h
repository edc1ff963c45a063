/* Node table of the FUSE front-end: FUSE node ids are inode references (+2; the root is 1), so
 * lookups need no table; this only remembers one path per node for log messages. */
#ifndef SQK_FUSE_NODES_H
#define SQK_FUSE_NODES_H

#include <stddef.h>
#include <stdint.h>

struct sqk_nodes;

/* Creates an empty table. Caller owns *out. */
int sqk_nodes_create(struct sqk_nodes **out);

/* Destroys t; NULL-safe. */
void sqk_nodes_destroy(struct sqk_nodes *t);

/* Remembers "parent path/name" for id unless id already has a path. Thread-safe. */
void sqk_nodes_add(struct sqk_nodes *t, uint64_t id, uint64_t parent, const char *name);

/* Copies id's path into buf ("/" for the root, "?" when unknown). Thread-safe. */
void sqk_nodes_path(struct sqk_nodes *t, uint64_t id, char *buf, size_t cap);

#endif

/* SPDX-License-Identifier: BSD-2-Clause */
/* The on-disk chunk cache of remote images: one folder per image version (named by a key over
 * the URL, the server's validators and the root digest) holding one file per unit of chunks (a
 * file per chunk made the kernel's file creation the larger part of storing them). Every entry
 * carries a length and an XXH3 checksum written after its data, so a killed process or a torn
 * write never leaves an entry that is later served; the reader also checks chunks of images
 * with integrity data against their SHA-256. The cache is bounded in bytes over all images: the
 * entries of the least recently used files (by mtime) are removed first. Processes sharing a
 * folder share requests in flight through per-unit locks in it. */
#ifndef SQK_HTTP_CACHE_H
#define SQK_HTTP_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dcache;

/* Keys with this bit set are kept in files of their own (variable-sized entries). */
#define DCACHE_SOLO ((uint64_t)1 << 63)

/* Opens (creating) root/key; limit = bytes for the whole of root. Chunk k (of csize bytes, the
 * last one shorter) goes to the file of unit k / per, u < units (a unit file of root/key
 * numbered past that is removed); per < 2 (or above 1024): every entry in a file of its own.
 * Borrows root and key. Caller owns *out. */
int dcache_open(const char *root, const char *key, uint64_t limit, uint32_t csize, uint32_t per,
		uint64_t units, struct dcache **out);

/* Reads chunk k (exactly len bytes) into buf: 0, or SQK_ENOENT when absent or not valid (a
 * damaged entry is removed). Thread-safe. */
int dcache_get(struct dcache *d, uint64_t k, uint8_t *buf, size_t len);

/* Reads entry k (a key with DCACHE_SOLO set) of the folder root/key, exactly len bytes, into buf
 * without opening the cache: nothing is counted, touched, made or removed. 0; SQK_ENOENT when
 * absent, SQK_ECORRUPT when not valid, SQK_EACCESS when the folder or the entry is not the
 * user's own alone (dcache_own_only). Borrows root and key. */
int dcache_peek(const char *root, const char *key, uint64_t k, uint8_t *buf, size_t len);

/* Whether the file or folder fd belongs to this process's user and nobody else may write to it:
 * what is trusted without the server. */
bool dcache_own_only(int fd);

/* Makes entry k (a key with DCACHE_SOLO set) the newest: the last one evicted. 0, or SQK_ENOENT
 * when it is not there. Thread-safe. */
int dcache_touch(struct dcache *d, uint64_t k);

/* Stores chunk k atomically, evicting the oldest files to make room: 0, or SQK_E* (the
 * cache is left as it was: SQK_ENOSPC for a full disk or an entry larger than the limit).
 * Callers that only cache may ignore the result. Thread-safe. */
int dcache_put(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len);

/* dcache_put without evicting anything: SQK_ETOOBIG when the limit leaves no room for it. */
int dcache_put_room(struct dcache *d, uint64_t k, const uint8_t *buf, size_t len);

/* Whether chunk k has an entry (not read or checked: cheap). Thread-safe. */
bool dcache_has(struct dcache *d, uint64_t k);

/* Bytes that fit before the limit (over every image of the folder). Thread-safe. */
uint64_t dcache_room(struct dcache *d);

/* The bytes entry k of len bytes of data takes in the count against the limit. */
uint64_t dcache_entry_size(const struct dcache *d, uint64_t k, size_t len);

/* Removes chunk k (its bytes were found wrong). Thread-safe. */
void dcache_drop(struct dcache *d, uint64_t k);

/* Per-unit locks shared by the processes using d's folder (fcntl OFD byte-range locks, byte u
 * of KEY/.units; the kernel drops them when a process dies): takes unit u's lock without
 * waiting. False only when another process holds it; true when taken, or when locks cannot be
 * used (then nothing is shared). Thread-safe; one holder per unit in a process (the caller's
 * rule). */
bool dcache_unit_trylock(struct dcache *d, uint64_t u);
void dcache_unit_unlock(struct dcache *d, uint64_t u);

/* Closes d; NULL-safe. */
void dcache_close(struct dcache *d);

/* The default cache folder into buf: $XDG_CACHE_HOME/squashkit or $HOME/.cache/squashkit.
 * SQK_ENOENT when neither variable is set. */
int dcache_default_dir(char *buf, size_t cap);

#endif

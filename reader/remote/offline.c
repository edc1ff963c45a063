/* SPDX-License-Identifier: BSD-2-Clause */
/* Opening a remote image from the disk cache while its server cannot be reached. An open that
 * keeps the image in the disk cache also keeps what the open itself fetched (its first and last
 * bytes, the integrity data), once the image passed every check of the open (signatures,
 * rollback): a record, an entry of the image's cache folder ROOT/KEY (counted against the
 * cache's limit, evicted after what the open reads, written again at close if it was evicted),
 * and ROOT/urls/ID, ID a digest of the URL, naming that folder. An online open that keeps no
 * record (no integrity data, no room) removes the map of an earlier version. An open whose
 * every request went unanswered replays the record instead of fetching, and its reads find
 * their chunks in the cache folder (checked against the integrity data as ever) or fail as they
 * would with the server gone. Only images with integrity data (a cache keyed by their root
 * digest) are kept; without the server, the map, the record and their folders must be the
 * user's own, writable by nobody else (the integrity data comes from them).
 *
 * A record, integers little-endian: "SQKOPEN1", u64 image size, u64 time kept (s), u32
 * segments, u32 ETag length, u32 Last-Modified length, the ETag, the Last-Modified date, per
 * segment u64 offset and u64 length, then the segments' bytes. ROOT/urls/ID is one line:
 * "sqk-open 1 KEY LENGTH", the image's folder and the record's length. The open reads the record
 * without opening the cache (dcache_peek), and opens it once the integrity data says which
 * folder and geometry are the image's: a damaged map cannot make it drop what is cached. */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/endian.h"
#include "sqk/error.h"
#include "http_cache.h"
#include "http_internal.h"

#define REC_MAGIC "SQKOPEN1"
#define REC_HEAD (8 + 8 + 8 + 4 + 4 + 4)
#define REC_KEYLEN 32u
#define REC_SEGS 16u                   /* the open's fetches: head, tail and a few more */
#define REC_MAX ((uint64_t)64 << 20)   /* a record larger than this is not believed */
#define REC_DIR "urls"
/* A URL's record in the cache folder: this key with the first 48 bits of its map's name (past
 * any digest group's key; mirrors of one image each have theirs) */
#define REC_ENTRY (DCACHE_SOLO | ((uint64_t)1 << 62))
#define MAP_FMT "sqk-open 1 %32s %" SCNu64

struct rec_seg {
	uint64_t off;
	size_t len;
	uint8_t *data;
};

struct http_rec {
	struct rec_seg seg[REC_SEGS];
	unsigned n;
	bool overflow; /* a fetch not kept: the record would be incomplete */
	bool sealed;   /* the open is over: reads after it are not the open's */
	bool stored;   /* in the cache folder, named by the URL's map */
	uint64_t kept; /* when the record loaded was written (unix seconds) */
	char key[REC_KEYLEN + 1]; /* the cache folder the map names (a loaded record) */
};

void http_rec_start(struct http *h)
{
	h->rec = calloc(1, sizeof(*h->rec));
}

void http_rec_free(struct http *h)
{
	for (unsigned i = 0; h->rec && i < h->rec->n; i++)
		free(h->rec->seg[i].data);
	free(h->rec);
	h->rec = NULL;
}

/* A copy of len bytes at p (caller frees); NULL on ENOMEM. */
static uint8_t *dup_bytes(const uint8_t *p, size_t len)
{
	uint8_t *c = malloc(len ? len : 1);

	if (c)
		memcpy(c, p, len);
	return c;
}

void http_rec_add(struct http *h, uint64_t off, const uint8_t *p, size_t len)
{
	struct http_rec *r = h->rec;
	uint8_t *copy;

	if (!r || h->replay || r->overflow || r->sealed)
		return;
	copy = r->n < REC_SEGS ? dup_bytes(p, len) : NULL;
	if (!copy) {
		r->overflow = true;
		return;
	}
	r->seg[r->n++] = (struct rec_seg){ off, len, copy };
}

void http_rec_seal(struct http *h)
{
	if (h->rec)
		h->rec->sealed = true;
}

int http_rec_fetch(struct http *h, uint64_t off, size_t len, uint8_t **out)
{
	for (unsigned i = 0; h->rec && i < h->rec->n; i++) {
		const struct rec_seg *s = &h->rec->seg[i];

		if (off < s->off || off - s->off > s->len || len > s->len - (off - s->off))
			continue;
		*out = dup_bytes(s->data + (off - s->off), len);
		return *out ? 0 : SQK_ENOMEM;
	}
	http_logf(h, "%s: bytes %llu-%llu are not in what the cache folder kept of the open",
		  h->name, (unsigned long long)off, (unsigned long long)(off + len - 1));
	return SQK_EIO;
}

/* The map's file name under ROOT/urls: the first 32 hex digits of SHA-256("url\n" URL). */
static void map_name(const struct http *h, char name[REC_KEYLEN + 1])
{
	char hex[2 * SQK_INTEG_DIGEST_SIZE + 1], *id = NULL;
	uint8_t d[SQK_INTEG_DIGEST_SIZE];
	int n = asprintf(&id, "url\n%s", h->url);

	hash_sha256(n > 0 ? id : h->url, n > 0 ? (size_t)n : strlen(h->url), d);
	free(id);
	integ_hex(d, hex);
	memcpy(name, hex, REC_KEYLEN);
	name[REC_KEYLEN] = '\0';
}

/* The cache entry of the record of the URL whose map is `name`. */
static uint64_t rec_entry(const char *name)
{
	char top[13];

	memcpy(top, name, 12);
	top[12] = '\0';
	return REC_ENTRY | strtoull(top, NULL, 16);
}

/* The record of h's open (kept segments, validators) in a buffer the caller frees. */
static uint8_t *rec_encode(const struct http *h, size_t *len)
{
	const struct http_rec *r = h->rec;
	size_t el = strlen(h->etag), ll = strlen(h->lastmod), n = REC_HEAD + el + ll, at;
	uint8_t *b;

	for (unsigned i = 0; i < r->n; i++)
		n += 16 + r->seg[i].len;
	if (n > REC_MAX || !(b = malloc(n)))
		return NULL;
	memcpy(b, REC_MAGIC, 8);
	put_le64(b + 8, h->size);
	put_le64(b + 16, (uint64_t)time(NULL));
	put_le32(b + 24, r->n);
	put_le32(b + 28, (uint32_t)el);
	put_le32(b + 32, (uint32_t)ll);
	at = REC_HEAD;
	memcpy(b + at, h->etag, el);
	memcpy(b + at + el, h->lastmod, ll);
	at += el + ll;
	for (unsigned i = 0; i < r->n; i++, at += 16) {
		put_le64(b + at, r->seg[i].off);
		put_le64(b + at + 8, r->seg[i].len);
	}
	for (unsigned i = 0; i < r->n; at += r->seg[i].len, i++)
		memcpy(b + at, r->seg[i].data, r->seg[i].len);
	*len = n;
	return b;
}

/* ROOT/urls/name's line into line (cap bytes), with its inode into *ino (may be NULL): 0, or
 * SQK_E* (SQK_EACCESS: trusted, and not the user's own alone). */
static int map_read(int dfd, const char *name, char *line, size_t cap, bool trusted,
		    ino_t *ino)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return errno == ENOENT ? SQK_ENOENT : sqk_from_errno(errno);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return SQK_ECORRUPT;
	}
	if (trusted && !dcache_own_only(fd)) {
		close(fd);
		return SQK_EACCESS;
	}
	n = pread(fd, line, cap - 1, 0);
	close(fd);
	if (n <= 0)
		return SQK_ECORRUPT;
	line[n] = '\0';
	if (ino)
		*ino = st.st_ino;
	return 0;
}

/* Whether line is a map: its folder's KEY (32 hex digits) into key, the record's length into
 * *len. */
static bool map_parse(const char *line, char key[REC_KEYLEN + 1], uint64_t *len)
{
	return sscanf(line, MAP_FMT, key, len) == 2 &&
	       strspn(key, "0123456789abcdef") == REC_KEYLEN;
}

/* Removes the maps of ROOT/urls (dfd) whose cache folder is gone (evicted). */
static void map_prune(int rootfd, int dfd)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dh = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!dh) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dh))) {
		char line[256], key[REC_KEYLEN + 1];
		struct stat st;
		uint64_t l;
		ino_t ino;

		if (de->d_name[0] == '.' || strlen(de->d_name) != REC_KEYLEN ||
		    map_read(dfd, de->d_name, line, sizeof(line), false, &ino))
			continue;
		/* (not when another process put a new map in its place meanwhile) */
		if ((!map_parse(line, key, &l) ||
		     (faccessat(rootfd, key, F_OK, AT_SYMLINK_NOFOLLOW) && errno == ENOENT)) &&
		    !fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) && st.st_ino == ino)
			unlinkat(dfd, de->d_name, 0);
	}
	closedir(dh);
}

/* Writes line to ROOT/urls/name (a temporary, renamed) unless it holds it already; then drops
 * the maps of evicted folders. True when the map holds line. */
static bool map_write(const char *root, const char *name, const char *line)
{
	char tmp[96], old[256];
	int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd = -1, fd;
	size_t len = strlen(line);
	bool ok = false;

	if (rootfd < 0)
		return false;
	if ((mkdirat(rootfd, REC_DIR, 0700) && errno != EEXIST) ||
	    (dfd = openat(rootfd, REC_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0)
		goto out;
	if (!map_read(dfd, name, old, sizeof(old), false, NULL) && !strcmp(old, line)) {
		ok = true;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), ".tmp.%ld.%ld.map", (long)getpid(), (long)syscall(SYS_gettid));
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto out;
	ok = write(fd, line, len) == (ssize_t)len;
	ok = !close(fd) && ok;
	ok = ok && !renameat(dfd, tmp, dfd, name);
	if (!ok)
		unlinkat(dfd, tmp, 0);
	else
		map_prune(rootfd, dfd);
out:
	if (dfd >= 0)
		close(dfd);
	close(rootfd);
	return ok;
}

/* Removes ROOT/urls/name unless it names the folder key (the same image: the record there is
 * still the URL's). */
static void map_forget(const char *root, const char *name, const char *key)
{
	char path[4200], line[256], mkey[REC_KEYLEN + 1];
	uint64_t l;
	int dfd;

	snprintf(path, sizeof(path), "%s/" REC_DIR, root);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return;
	if (!map_read(dfd, name, line, sizeof(line), false, NULL) &&
	    !(key[0] && map_parse(line, mkey, &l) && !strcmp(mkey, key)))
		unlinkat(dfd, name, 0);
	close(dfd);
}

/* Whether the cache holds record b (len bytes) already, but for the time it was kept. */
static bool rec_same(struct http *h, uint64_t k, const uint8_t *b, size_t len)
{
	uint8_t *old = malloc(len);
	bool same = old && !dcache_get(h->dc, k, old, len) && !memcmp(old, b, 16) &&
		    !memcmp(old + 24, b + 24, len - 24);

	free(old);
	return same;
}

/* Writes the record of h's open as the URL's entry (map `name`) of the folder key, then the
 * map naming it: true when both hold it. */
static bool rec_keep(struct http *h, const char *root, const char *key, const char *name)
{
	char line[256];
	uint8_t *b;
	size_t len;
	bool kept = false;

	if (!h->dc || h->rec->overflow || h->rec->n < 2 || !(b = rec_encode(h, &len)))
		return false;
	snprintf(line, sizeof(line), "sqk-open 1 %s %zu\n", key, len);
	/* the entry first, newest (evicted after what the open reads): a map names only a record
	 * that was there */
	if (rec_same(h, rec_entry(name), b, len) ? !dcache_touch(h->dc, rec_entry(name))
						  : !dcache_put(h->dc, rec_entry(name), b, len))
		kept = map_write(root, name, line);
	free(b);
	return kept;
}

void http_rec_commit(struct http *h, const char *root, const char *key)
{
	char name[REC_KEYLEN + 1];

	map_name(h, name);
	if (h->rec && key[0] && rec_keep(h, root, key, name)) {
		h->rec->stored = true;
		return;
	}
	map_forget(root, name, key); /* an earlier version's, or nothing */
	http_rec_free(h);
}

void http_rec_close(struct http *h)
{
	char name[REC_KEYLEN + 1];
	uint8_t *b;
	size_t len;

	if (h->rec && h->rec->stored && h->dc) {
		map_name(h, name);
		/* evicted meanwhile (more was read than the cache folder holds): kept again */
		if (dcache_touch(h->dc, rec_entry(name)) && (b = rec_encode(h, &len))) {
			dcache_put(h->dc, rec_entry(name), b, len);
			free(b);
		}
	}
	http_rec_free(h);
}

/* Checks and takes the record b (len bytes): validators, size and segments into h. */
static int rec_decode(struct http *h, const uint8_t *b, size_t len)
{
	uint64_t n, el, ll, at, data;

	if (len < REC_HEAD || memcmp(b, REC_MAGIC, 8))
		return SQK_ECORRUPT;
	n = get_le32(b + 24);
	el = get_le32(b + 28);
	ll = get_le32(b + 32);
	if (n < 2 || n > REC_SEGS || el >= sizeof(h->etag) || ll >= sizeof(h->lastmod) ||
	    REC_HEAD + el + ll + 16 * n > len)
		return SQK_ECORRUPT;
	h->size = get_le64(b + 8);
	h->rec->kept = get_le64(b + 16);
	memcpy(h->etag, b + REC_HEAD, el);
	h->etag[el] = '\0';
	memcpy(h->lastmod, b + REC_HEAD + el, ll);
	h->lastmod[ll] = '\0';
	at = REC_HEAD + el + ll;
	data = at + 16 * n;
	for (unsigned i = 0; i < n; i++, at += 16) {
		uint64_t off = get_le64(b + at), sl = get_le64(b + at + 8);
		struct rec_seg *sg = &h->rec->seg[i];

		if (off > h->size || sl > h->size - off || sl > len - data)
			return SQK_ECORRUPT;
		if (!(sg->data = dup_bytes(b + data, (size_t)sl)))
			return SQK_ENOMEM;
		sg->off = off;
		sg->len = (size_t)sl;
		h->rec->n = i + 1;
		data += sl;
	}
	/* the first two: the open's head (at 0) and tail (to the end) */
	if (data != len || h->rec->seg[0].off != 0 ||
	    h->rec->seg[1].off + h->rec->seg[1].len != h->size)
		return SQK_ECORRUPT;
	return 0;
}

/* The map `name` under root: its folder's KEY into h->rec, the record's length into *len. */
static int map_load(struct http *h, const char *root, const char *name, size_t *len)
{
	char path[4200], line[256];
	struct http_rec *r = h->rec;
	uint64_t l;
	int dfd, rc;

	snprintf(path, sizeof(path), "%s/" REC_DIR, root);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0)
		return errno == ENOENT ? SQK_ENOENT : sqk_from_errno(errno);
	rc = dcache_own_only(dfd) ? map_read(dfd, name, line, sizeof(line), true, NULL)
				  : SQK_EACCESS;
	close(dfd);
	if (rc)
		return rc;
	if (!map_parse(line, r->key, &l) || l < REC_HEAD || l > REC_MAX)
		return SQK_ECORRUPT;
	*len = (size_t)l;
	return 0;
}

/* Why what the cache folder kept at path cannot be used (rc: SQK_E*). */
static void rec_refused(struct http *h, const char *what, const char *path, int rc)
{
	http_logf(h, "%s: the cache folder's %s (%s) %s", h->name, what, path,
		  rc == SQK_ENOENT ? "is gone (evicted)" : rc == SQK_ECORRUPT ? "is damaged"
		  : rc == SQK_EACCESS ? "is not the user's own, or others may write to it: not "
					"trusted without the server"
				      : sqk_strerror(rc));
}

/* The record the map names, from its cache folder. */
static int rec_load(struct http *h, const char *root)
{
	char name[REC_KEYLEN + 1], path[4300];
	uint8_t *b = NULL;
	size_t len = 0;
	int rc;

	map_name(h, name);
	snprintf(path, sizeof(path), "%s/" REC_DIR "/%s", root, name);
	rc = map_load(h, root, name, &len);
	if (rc && rc != SQK_ENOENT)
		rec_refused(h, "map of the URL", path, rc);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/%s/%llx", root, h->rec->key,
		 (unsigned long long)rec_entry(name));
	if (!(b = malloc(len)))
		rc = SQK_ENOMEM;
	else if (!(rc = dcache_peek(root, h->rec->key, rec_entry(name), b, len)))
		rc = rec_decode(h, b, len);
	free(b);
	if (rc && rc != SQK_ENOMEM)
		rec_refused(h, "record of the image's open", path, rc);
	return rc;
}

int http_rec_load(struct http *h, const char *root, uint8_t **head, size_t *head_len,
		  uint8_t **tail, uint64_t *tail_at)
{
	char when[32];
	struct tm tm;
	time_t t;
	int rc;

	http_rec_start(h);
	rc = h->rec ? rec_load(h, root) : SQK_ENOMEM;
	if (!rc) {
		*head_len = h->rec->seg[0].len;
		*head = dup_bytes(h->rec->seg[0].data, *head_len);
		*tail_at = h->rec->seg[1].off;
		*tail = dup_bytes(h->rec->seg[1].data, h->rec->seg[1].len);
		rc = *head && *tail ? 0 : SQK_ENOMEM;
	}
	if (rc) {
		http_rec_free(h);
		return rc;
	}
	t = (time_t)h->rec->kept;
	if (!gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(when, sizeof(when), "an unknown time");
	http_logf(h, "%s: the server cannot be reached: opening from the cache folder %s, as "
		  "fetched at %s (bytes not in it cannot be read until the server is back)",
		  h->name, root, when);
	h->replay = true;
	return 0;
}

bool http_rec_matches(const struct http *h, const char *key)
{
	return h->rec && !strcmp(h->rec->key, key);
}

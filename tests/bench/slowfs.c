/* SPDX-License-Identifier: BSD-2-Clause */
/* slowfs: a read-only FUSE view of a directory in which every request waits a fixed delay
 * before it is answered, as a networked file system's round trip would. bench.sh builds from
 * it to see how a builder copes with a latency-bound source (many requests in flight, or one
 * at a time). Benchmark tool only: not part of the product.
 *
 *   cc -O2 -o slowfs slowfs.c $(pkg-config --cflags --libs fuse3)
 *   slowfs SRC MNT -o delay_us=200 [FUSE options]      (multithreaded; fusermount3 -u MNT)
 */
#define FUSE_USE_VERSION 31
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

struct slowfs {
	char *root;
	unsigned delay_us;
};

static struct slowfs *cfg(void)
{
	return fuse_get_context()->private_data;
}

/* The round trip: every request waits delay_us first. */
static void wait_trip(void)
{
	unsigned us = cfg()->delay_us;
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
	if (us)
		nanosleep(&ts, NULL);
}

static int real_path(char *buf, const char *path)
{
	int n = snprintf(buf, PATH_MAX, "%s%s", cfg()->root, path);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

/* A request on path: its real path in p, after the round trip; 0 or -errno. */
static int trip(char *p, const char *path)
{
	int r = real_path(p, path);
	wait_trip();
	return r;
}

static void *s_init(struct fuse_conn_info *conn, struct fuse_config *c)
{
	(void)conn;
	c->use_ino = 1;
	return fuse_get_context()->private_data;
}

static int s_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	int r = trip(p, path);
	if (fi)
		return fstat((int)fi->fh, st) ? -errno : 0;
	return r ? r : lstat(p, st) ? -errno : 0;
}

static int s_readlink(const char *path, char *buf, size_t size)
{
	char p[PATH_MAX];
	int r = trip(p, path);
	if (r)
		return r;
	ssize_t n = readlink(p, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int s_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	char p[PATH_MAX];
	int r = trip(p, path);
	if (r)
		return r;
	DIR *d = opendir(p);
	if (!d)
		return -errno;
	struct dirent *de;
	/* each entry's type, as NFS, sshfs and local file systems give it to readdir(3) */
	while ((de = readdir(d))) {
		struct stat st = { .st_ino = de->d_ino, .st_mode = DTTOIF(de->d_type) };
		if (fill(buf, de->d_name, &st, 0, 0))
			break;
	}
	closedir(d);
	return 0;
}

static int s_open(const char *path, struct fuse_file_info *fi)
{
	char p[PATH_MAX];
	int r = trip(p, path);
	if (r)
		return r;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	int fd = open(p, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	fi->fh = (uint64_t)fd;
	fi->keep_cache = 1;
	return 0;
}

static int s_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path;
	wait_trip();
	ssize_t n = pread((int)fi->fh, buf, size, off);
	return n < 0 ? -errno : (int)n;
}

static int s_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	wait_trip();
	return 0;
}

static int s_release(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	close((int)fi->fh);
	return 0;
}

static int s_getxattr(const char *path, const char *name, char *value, size_t size)
{
	char p[PATH_MAX];
	int r = trip(p, path);
	if (r)
		return r;
	ssize_t n = lgetxattr(p, name, value, size);
	return n < 0 ? -errno : (int)n;
}

static int s_listxattr(const char *path, char *list, size_t size)
{
	char p[PATH_MAX];
	int r = trip(p, path);
	if (r)
		return r;
	ssize_t n = llistxattr(p, list, size);
	return n < 0 ? -errno : (int)n;
}

static const struct fuse_operations ops = {
	.init = s_init,
	.getattr = s_getattr,
	.readlink = s_readlink,
	.readdir = s_readdir,
	.open = s_open,
	.read = s_read,
	.flush = s_flush,
	.release = s_release,
	.getxattr = s_getxattr,
	.listxattr = s_listxattr,
};

static const struct fuse_opt opts[] = {
	{ "delay_us=%u", offsetof(struct slowfs, delay_us), 0 },
	FUSE_OPT_END
};

int main(int argc, char **argv)
{
	static struct slowfs c;
	if (argc < 3) {
		fprintf(stderr, "usage: slowfs SRC MNT [-o delay_us=N] [FUSE options]\n");
		return 2;
	}
	if (!(c.root = realpath(argv[1], NULL))) {
		perror(argv[1]);
		return 1;
	}
	struct fuse_args args = FUSE_ARGS_INIT(argc - 1, argv + 1);
	args.argv[0] = argv[0];
	if (fuse_opt_parse(&args, &c, opts, NULL))
		return 2;
	fuse_opt_add_arg(&args, "-oro,default_permissions");
	int r = fuse_main(args.argc, args.argv, &ops, &c);
	fuse_opt_free_args(&args);
	free(c.root);
	return r;
}

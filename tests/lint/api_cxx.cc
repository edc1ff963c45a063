// SPDX-License-Identifier: BSD-2-Clause
// A C++17 program using every installed header: walks an image (argv[1]) through libsqk, checks
// it, and prints "entries=N files=N bytes=N check_errors=N" for the lint script to compare.
#include <sqk/api.h>
#include <sqk/counts.h>
#include <sqk/error.h>
#include <sqk/io.h>
#include <sqk/remote.h>
#include <sqk/sqk.h>
#include <sqk/sqk_check.h>
#include <sqk/types.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: api_cxx IMAGE\n");
		return 2;
	}
	sqk_open_opts o;
	sqk_open_opts_init(&o);
	sqk_http_opts h;
	sqk_http_opts_init(&h);
	if (!sqk_is_url("http://127.0.0.1/x.sqsh") || sqk_is_url(argv[1]))
		return 3;

	// Bytes that are no image: the error code and its text.
	std::vector<unsigned char> junk(4096, 0x5a);
	sqk_io *mem = nullptr;
	sqk_image *img = nullptr;
	if (sqk_io_mem_create(junk.data(), junk.size(), &mem))
		return 4;
	int rc = sqk_image_open_io(mem, &o, &img);
	if (rc != SQK_ENOTSQFS || !sqk_err_not_image(rc) || !std::strlen(sqk_strerror(rc)))
		return 5;
	sqk_io_destroy(mem);

	rc = sqk_image_open(argv[1], &o, &img);
	if (rc) {
		std::fprintf(stderr, "api_cxx: %s: %s\n", argv[1], sqk_strerror(rc));
		return 1;
	}
	const sqk_super *sb = sqk_image_super(img);
	if (sb->magic != SQK_MAGIC)
		return 6;
	sqk_walk *w = nullptr;
	sqk_walk_entry e;
	unsigned long long entries = 0, files = 0, bytes = 0;
	if (sqk_walk_open_path(img, "", 0, SQK_WALK_MAX_DEPTH, &w))
		return 7;
	std::vector<char> buf(1 << 16);
	while ((rc = sqk_walk_next(w, &e)) == 1) {
		if (e.event != SQK_WALK_PRE)
			continue;
		entries++;
		if (e.inode.type != SQK_T_FILE && e.inode.type != SQK_T_LFILE)
			continue;
		files++;
		for (uint64_t off = 0;;) {
			ssize_t n = sqk_read(img, &e.inode, buf.data(), buf.size(), off);
			if (n < 0)
				return 8;
			if (n == 0)
				break;
			off += (uint64_t)n;
			bytes += (uint64_t)n;
		}
	}
	sqk_walk_close(w);
	if (rc < 0)
		return 9;

	sqk_check_opts co;
	sqk_check_opts_init(&co);
	sqk_check_result res;
	std::memset(&res, 0, sizeof(res));
	res.size = sizeof(res);
	if (sqk_check_image(sqk_image_io(img), sb->bytes_used, &co, &res))
		return 10;
	sqk_counts counts = res.counts;
	(void)counts;
	std::printf("entries=%llu files=%llu bytes=%llu check_errors=%llu version=%s\n", entries,
		    files, bytes, (unsigned long long)res.errors,
		    std::string(sqk_version()).c_str());
	sqk_image_close(img);
	return 0;
}

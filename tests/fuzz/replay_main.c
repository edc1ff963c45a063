/* SPDX-License-Identifier: BSD-2-Clause */
/* Replay driver: runs a fuzz target's LLVMFuzzerTestOneInput over every file named on the command
 * line or found (non-recursively) in the named directories, without libFuzzer, so `make check`
 * replays the corpus and the crash reproducers under the normal and the sanitizer builds. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;
	int rc = -1;

	if (!f) {
		perror(path);
		return -1;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc(len ? (size_t)len : 1);
		if (buf && fread(buf, 1, (size_t)len, f) == (size_t)len) {
			LLVMFuzzerTestOneInput(buf, (size_t)len);
			rc = 0;
		}
	}
	if (rc)
		fprintf(stderr, "%s: cannot read\n", path);
	free(buf);
	fclose(f);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir in name order (so runs are reproducible); returns the count. */
static int run_dir(const char *dir, int *failed)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int count = 0;

	if (!d) {
		perror(dir);
		(*failed)++;
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, cap * sizeof(*names));
			if (!names)
				abort();
		}
		names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2);
		if (!names[n])
			abort();
		sprintf(names[n++], "%s/%s", dir, de->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(names[i]) < 0)
				(*failed)++;
			count++;
		}
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	int count = 0, failed = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			count += run_dir(argv[i], &failed);
		} else {
			failed += run_file(argv[i]) < 0;
			count++;
		}
	}
	printf("%s: replayed %d inputs%s\n", argv[0], count, failed ? ", some unreadable" : "");
	return failed ? 1 : 0;
}

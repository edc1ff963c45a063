/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract -pf FILE and -s: unsquashfs's ways of printing an image instead of extracting
 * it, dispatched to the code of sqk ls --pseudo (ls_dump.c) and sqk info -s (info_stat.c). */
#include "extract.h"
#include "info_stat.h"
#include "ls_dump.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* -pf FILE: the whole tree as pseudo definitions, then the files' data, into FILE (removed
 * when it fails) or stdout ("-"). Returns 0 or 1 (message printed). */
static int x_pseudo(struct extract *x)
{
	const char *pf = x->pseudo_file;
	bool std = !strcmp(pf, "-");
	FILE *f = std ? stdout : fopen(pf, "w");
	struct sqk_inode root;
	int r;

	if (!f) {
		cmd_err(&x->c, NULL, 0, "cannot create %s: %s", pf, strerror(errno));
		return 1;
	}
	r = cmd_lookup(&x->c, "", &root) ? 1 : ls_dump(&x->c, &root, "", LS_DUMP_PSEUDO, NULL, f);
	if ((fflush(f) || ferror(f)) && !r) {
		cmd_err(&x->c, NULL, 0, "cannot write %s: %s", std ? "stdout" : pf,
			strerror(errno));
		r = 1;
	}
	if (!std && fclose(f) && !r) {
		cmd_err(&x->c, NULL, 0, "cannot write %s: %s", pf, strerror(errno));
		r = 1;
	}
	if (r && !std)
		unlink(pf); /* no partial file left */
	return r;
}

int x_dump(struct extract *x)
{
	if (x->sel.npats || x->sel.max_depth != SEL_NO_MAX_DEPTH || x->lst.mode != LST_NONE ||
	    x->lst.info || x->cat || (x->pseudo_file && x->stat)) {
		cmd_usage_err("extract", "%s takes IMAGE alone (no PATH, exclude, -max-depth, "
			      "listing, -cat or other of -pf and -s)", x->stat ? "-s" : "-pf");
		return 2;
	}
	if (cmd_open(&x->c))
		return 1;
	return x->stat ? info_stat(&x->c, x->lst.utc) : x_pseudo(x);
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* sqk extract: restores an image (or some subtrees) into DEST in four phases, run in order
 * here: the tree structure (directories, symlinks, devices, fifos, sockets) by one thread,
 * through libsqk's walk (extract_tree.c); regular files' contents and metadata by N workers,
 * then deferred hard links to regular files (extract_files.c); directory metadata, deepest
 * first (extract_dirs.c). Options are parsed in extract_opts.c. Everything is created relative
 * to directory fds without following symlinks. */
#include "extract.h"
#include "common/depth.h"
#include "cli/lib/sigwatch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Creates DEST, or checks that it is empty (unless --force); opens it. */
static int x_open_dest(struct extract *x)
{
	bool existed = mkdir(x->dest, 0700) != 0;
	struct dirent *de;
	DIR *d;
	int fd;

	if (existed && errno != EEXIST) {
		cmd_err(&x->c, NULL, 0, "cannot create %s: %s", x->dest, strerror(errno));
		return -1;
	}
	x->destfd = open(x->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x->destfd < 0) {
		cmd_err(&x->c, NULL, 0, "cannot open %s: %s", x->dest, strerror(errno));
		return -1;
	}
	if (!existed || x->force)
		return 0;
	fd = dup(x->destfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		cmd_err(&x->c, NULL, 0, "cannot read %s: %s", x->dest, strerror(errno));
		return -1;
	}
	while ((de = readdir(d)) && (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")))
		;
	closedir(d);
	if (de) {
		cmd_err(&x->c, NULL, 0, "%s exists and is not empty (use --force to extract "
			    "into it)", x->dest);
		return -1;
	}
	return 0;
}

/* The PATHs checked before anything is made (not even DEST): select.c. */
static int x_check_paths(struct extract *x)
{
	return sel_check_paths(&x->sel, &x->c, x->lst.only ? "listed" : "extracted");
}

/* Phase 2's totals for the progress line: the files its workers write. */
static void x_totals(struct extract *x)
{
	uint64_t bytes = 0;
	size_t j;

	for (j = 0; j < x->njobs; j++)
		bytes += x->ents[x->jobs[j]].ino.size;
	progress_totals(&x->pr, x->njobs, bytes);
}

/* The name of a signal the watcher takes. */
static const char *x_signame(int sig)
{
	return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
									: "a signal";
}

/* What stopped the extraction, for x_left's message. */
static const char *x_why(const struct extract *x, char *buf, size_t cap)
{
	int sig = x->sig ? atomic_load(x->sig) : 0;

	if (!sig)
		return "before the error";
	snprintf(buf, cap, "before %s stopped it", x_signame(sig));
	return buf;
}

/* After a failure or a signal: the directories made get their attributes all the same, and
 * the message says what DEST holds: the files extracted, the partial files removed (and any
 * that could not be: each was named). */
static void x_left(struct extract *x, bool files_started)
{
	size_t removed = atomic_load(&x->files_removed), partial = atomic_load(&x->files_partial);
	char left[96] = "", buf[64];
	const char *why = x_why(x, buf, sizeof(buf));

	progress_stop(&x->pr); /* no line drawn under the last messages */
	x_dir_meta(x);
	if (partial)
		snprintf(left, sizeof(left), ", %zu partial %s not removed", partial,
			 plural(partial, "file", "files"));
	if (files_started)
		cmd_err(&x->c, NULL, 0, "extracted %zu of %zu %s into %s %s "
			    "(%zu partial %s removed%s); %s is incomplete",
			    atomic_load(&x->files_done), x->njobs,
			    plural(x->njobs, "file", "files"), x->dest, why, removed,
			    plural(removed, "file", "files"), left, x->dest);
	else
		cmd_err(&x->c, NULL, 0, "extracted no file into %s %s (%zu %s, "
			    "%zu other %s made); %s is incomplete", x->dest, why, x->made_dirs,
			    plural(x->made_dirs, "directory", "directories"), x->made_other,
			    plural(x->made_other, "entry", "entries"), x->dest);
}

/* Starts fetching the selected files' data of a remote image, in image order (best effort:
 * each file's read says what fails). Not for the whole image: its hint came at open. */
static void x_prefetch(struct extract *x)
{
	struct sqk_prefetch *p;

	if (x->c.whole || x->c.remote.no_prefetch || !x->njobs ||
	    sqk_prefetch_new(x->c.img, CMD_PREFETCH_MAX, &p))
		return;
	for (size_t j = 0; j < x->njobs; j++) {
		if (sqk_prefetch_add(p, &x->ents[x->jobs[j]].ino) == SQK_ENOMEM) {
			sqk_prefetch_free(p); /* no memory to spare for chunks either */
			return;
		}
	}
	sqk_prefetch_start(p);
}

/* Phases 1 (the selected entries) to 4. Returns 0 or -1 (messages printed). */
static int x_phases(struct extract *x)
{
	if (x_extract_tree(x) || x_stopped(x)) {
		x_left(x, false);
		return -1;
	}
	x_prefetch(x);
	x_totals(x);
	if (x_run_workers(x) || x_link_files(x) || x_stopped(x)) {
		x_left(x, true);
		return -1;
	}
	if (x_dir_meta(x) && !x_go_on(x)) {
		cmd_err(&x->c, NULL, 0, "extracted all %zu %s into %s, but not all the "
			    "directories' attributes", x->njobs,
			    plural(x->njobs, "file", "files"), x->dest);
		return -1;
	}
	sel_warn_unmatched(&x->sel, &x->c);
	if (atomic_load(&x->errors)) {
		progress_stop(&x->pr);
		cmd_err(&x->c, NULL, 0, "%zu %s gone past (-ignore-errors): extracted %zu of %zu "
			    "%s into %s (%zu partial %s removed); %s is incomplete",
			    atomic_load(&x->errors), plural(atomic_load(&x->errors), "error",
			    "errors"), atomic_load(&x->files_done), x->njobs,
			    plural(x->njobs, "file", "files"), x->dest,
			    atomic_load(&x->files_removed),
			    plural(atomic_load(&x->files_removed), "file", "files"), x->dest);
		return -1;
	}
	return 0;
}

/* The terminal's summary line after a complete extraction. */
static void x_summary(struct extract *x)
{
	char size[32], rate[32];
	uint64_t bytes = 0;
	double secs = progress_elapsed(&x->pr);
	size_t j;

	for (j = 0; j < x->njobs; j++)
		bytes += x->ents[x->jobs[j]].ino.size;
	progress_size(size, sizeof(size), bytes);
	progress_rate(rate, sizeof(rate), bytes, secs);
	progress_summary(&x->pr, "%zu %s (%s), %zu %s, %zu other %s extracted into %s in "
			     "%.1f s, %s", x->njobs, plural(x->njobs, "file", "files"), size,
			     x->made_dirs, plural(x->made_dirs, "directory", "directories"),
			     x->made_other, plural(x->made_other, "entry", "entries"), x->dest,
			     secs, rate);
}

/* The tree phase keeps one directory open per level, SQK_DEPTH_MAX of them for an image at the
 * limit of common/depth.h: more than the usual soft limit of 1024 descriptors, so the soft
 * limit is raised (up to the hard one) to twice that. */
static void x_raise_fd_limit(void)
{
	struct rlimit rl;
	rlim_t want = 2 * (rlim_t)SQK_DEPTH_MAX;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < want && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur =
		    rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Checks the PATHs, opens DEST, runs the phases with the progress line. */
static int x_run(struct extract *x)
{
	const struct sqk_super *s = sqk_image_super(x->c.img);
	struct sqk_inode root;
	int r;

	x->block_size = s->block_size;
	x->first = malloc(((size_t)s->inode_count + 1) * sizeof(*x->first));
	if (!x->first)
		return -1;
	memset(x->first, 0xFF, ((size_t)s->inode_count + 1) * sizeof(*x->first));
	r = sqk_image_root(x->c.img, &root);
	if (r) {
		cmd_err(&x->c, "", r, "cannot read the root inode");
		return -1;
	}
	if (root.ino == 0 || root.ino > s->inode_count || x_add(x, -1, "", &root) != 0)
		return -1;
	x->first[root.ino] = 0;
	x_raise_fd_limit();
	if (x_check_paths(x) || x_open_dest(x))
		return -1;
	x->ents[0].made = true;
	if (x->lst.info && lst_tree_sel(&x->lst, &x->c, x->dest, &x->sel))
		return -1;
	progress_stage(&x->pr, "reading the tree", "entries");
	progress_start(&x->pr, 0);
	r = x_phases(x);
	progress_stop(&x->pr);
	if (r == 0)
		x_summary(x);
	if (r == 0 && x_stopped(x)) /* the status says signal: say that DEST is whole */
		cmd_err(&x->c, NULL, 0, "%s came after the extraction was complete: %s is whole",
			x_signame(atomic_load(x->sig)), x->dest);
	return r;
}

/* Frees what x holds. */
static void x_free(struct extract *x)
{
	size_t i;

	if (x->destfd >= 0)
		close(x->destfd);
	cmd_close(&x->c);
	for (i = 0; i < x->nents; i++)
		free(x->ents[i].path);
	free(x->ents);
	free(x->jobs);
	free(x->first);
	x_free_opts(x);
	lst_free(&x->lst);
}

/* -cat: the files the PATHs select, to stdout, as sqk cat writes them. */
static int x_cat(struct extract *x)
{
	char **paths = calloc(x->sel.npats + 1, sizeof(*paths));
	int n = 0, r;

	if (x->sel.max_depth != SEL_NO_MAX_DEPTH || x->sel.nextract != x->sel.npats) {
		free(paths);
		cmd_usage_err("extract", "-cat takes PATHs only (no excludes, no -max-depth)");
		return 2;
	}
	if (!paths)
		return 1;
	for (size_t i = 0; i < x->sel.npats; i++)
		paths[n++] = (char *)x->sel.pats[i].text;
	r = cat_paths(&x->c, paths, n, x->progress);
	free(paths);
	return r;
}

/* -ls, -lls ...: unsquashfs's listing under DEST (-d) or squashfs-root; nothing extracted. */
static int x_list(struct extract *x)
{
	if (x_check_paths(x))
		return 1;
	if (lst_tree_sel(&x->lst, &x->c, x->dest, &x->sel))
		return 1;
	sel_warn_unmatched(&x->sel, &x->c);
	return 0;
}

int extract_main(int argc, char **argv)
{
	struct extract x;
	struct sigwatch sw;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int r, sig = 0;

	memset(&x, 0, sizeof(x));
	sel_init(&x.sel);
	lst_init(&x.lst);
	x.c.name = "extract";
	x.destfd = -1;
	x.threads = ncpu > 0 ? (unsigned)ncpu : 1;
	x.root = geteuid() == 0;
	x.progress = true;
	argc = lst_strip(&x.lst, argc, argv, LST_FOR_EXTRACT);
	r = x_parse(&x, argc, argv);
	if (r < 0 && (x.pseudo_file || x.stat)) {
		r = x_dump(&x);
		x_free(&x);
		return r;
	}
	if (r >= 0 || x.cat) {
		r = r >= 0 ? r : x_cat(&x);
		x_free_opts(&x);
		lst_free(&x.lst);
		cmd_remote_free(&x.c.remote);
		return r;
	}
	x.lst.escape = isatty(STDOUT_FILENO);
	if (x.lst.only) {
		r = cmd_open(&x.c) ? 1 : x_list(&x);
		x_free(&x);
		return r;
	}
	if (x.lst.info)
		x.progress = false; /* as unsquashfs: the listing instead */
	/* Modes are restored exactly as stored, not filtered by the caller's umask. */
	umask(0);
	progress_init(&x.pr, "extract", x.progress);
	x.c.progress = &x.pr;
	/* a signal stops the phases: the partial file goes, the message says what is left */
	if (sigwatch_start(&sw, NULL, NULL) == 0)
		x.sig = &sw.sig;
	r = 1;
	x.c.whole = x.sel.nextract == 0;
	if (!cmd_open(&x.c))
		r = x_run(&x) ? 1 : 0;
	if (x.sig) {
		sig = atomic_load(&sw.sig);
		sigwatch_stop(&sw);
	}
	x_free(&x);
	return sig ? 128 + sig : r;
}

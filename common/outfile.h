/* A file that appears under its name only once it is complete: written as an unnamed temporary
 * in its destination directory (O_TMPFILE), or as a named ".PREFIX-XXXXXX" temporary there where
 * O_TMPFILE is unsupported, then linked and renamed into place, atomically replacing an older
 * file. A failed or interrupted write leaves the directory as it was. Used by `sqk mkimage`
 * (the image) and `sqk tar -o` (the archive). */
#ifndef SQK_OUTFILE_H
#define SQK_OUTFILE_H

struct sqk_outfile {
	int fd;          /* the temporary, open for writing; -1 when closed */
	char *dir;       /* the destination directory (owned) */
	char *tmpname;   /* the named temporary, NULL while the file has no name (owned) */
	const char *prefix; /* of temporary names (borrowed) */
};

/* Creates the temporary for path, with mode 0666 & ~umask, temporary names starting with
 * prefix (borrowed, e.g. ".sqk"). 0, or -1 with errno set; o must then be aborted. */
int sqk_outfile_open(struct sqk_outfile *o, const char *path, const char *prefix);

/* Gives the complete temporary the name path (the caller synced it) and closes it. 0, or -1
 * with errno set (the temporary is still there: abort it). */
int sqk_outfile_commit(struct sqk_outfile *o, const char *path);

/* Closes and removes the temporary, frees what o owns; o may be aborted again. */
void sqk_outfile_abort(struct sqk_outfile *o);

#endif

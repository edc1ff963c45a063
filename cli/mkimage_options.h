/* SPDX-License-Identifier: BSD-2-Clause */
/* `sqk mkimage`'s command line: argv and the environment parsed into the builder's structs
 * (sqk/build.h) plus what only the command line uses. */
#ifndef SQK_CLI_MKIMAGE_OPTIONS_H
#define SQK_CLI_MKIMAGE_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "mkimage/build.h"

struct mk_options {
	struct sqk_build_opts build;  /* the builder's options (build.image = image) */
	struct sqk_build_source src;  /* the source: its arrays point at the ones below */
	char **sources;      /* owned array of strings borrowed from argv */
	int nsources;
	size_t sources_cap;  /* entries allocated (mem_grow), like each *_cap below */
	const char *image;   /* borrowed from argv */
	bool force;          /* --force, -noappend: replace an IMAGE that is not a SquashFS image */
	bool quiet;          /* -q, -quiet: no progress line, no summary (warnings still print) */
	bool no_progress;    /* --no-progress, -no-progress: no progress line, summary kept */
	const char **excludes; /* --exclude GLOB: owned array of borrowed strings */
	int nexcludes;
	size_t excludes_cap;
	/* mksquashfs's excludes (-e PATH... to the end of the command line, -ef FILE): exact
	 * paths, absolute (/, ./, ../) or relative to each source, or with -wildcards patterns
	 * matched a component at a time ("... " in front: at any depth). Owned array of strings
	 * borrowed from argv or owned by mks_exclude_text. */
	const char **mks_excludes;
	int nmks_excludes;
	size_t mks_excludes_cap;
	bool wildcards;      /* -wildcards or -regex: the -e excludes are patterns */
	bool regex;          /* -regex: POSIX extended regular expressions, not shell patterns */
	char **mks_exclude_text; /* owned: the lines of -ef files */
	int nmks_exclude_text;
	size_t mks_exclude_text_cap;
	bool keep_as_directory; /* one source directory: an entry of the root, as several are */
	bool tar;            /* --tar: the source is a tar stream */
	const char *tar_path; /* --tar FILE; NULL or "-" = standard input */
	bool tar_ignore_zeros; /* --ignore-zeros: read concatenated archives */
	/* --verity[=sidecar|append] is build.verity; --verity-salt HEX|- fills verity_salt, which
	 * build.verity_salt then points at */
	uint8_t verity_salt[256];
	const char *verity_cert; /* --verity-cert CERT.pem (borrowed): sign the root hash */
	const char *verity_key;  /* --verity-key KEY.pem (borrowed) */
	struct sqk_build_pseudo *pseudo; /* owned array: --pseudo, --pseudo-def in order */
	int npseudo;
	size_t pseudo_cap;
	const char **sign_paths; /* --sign KEY: owned array of strings borrowed from argv */
	int nsign;
	size_t sign_cap;
	EVP_PKEY **sign_keys; /* their keys, loaded by the parse (owned; build.sign_keys) */
	const char *sign_comment; /* --sign-comment TEXT (borrowed) */
	const char *pack_file;  /* --pack FILE, -F (borrowed) */
	const char *pack_dir;   /* --pack-dir DIR, -D (borrowed) */
	const char *pseudo_dir; /* --pseudo-dir DEF, -pd (borrowed) */
	bool pseudo_override;   /* --pseudo-override */
	const char **xattrs_add; /* --xattrs-add NAME=VALUE: owned array of strings borrowed from
				  * argv (build.xattrs_add) */
	size_t nxattrs_add;
	size_t xattrs_add_cap;
	bool force_progress; /* -progress: the progress line even when stderr is no terminal */
	uint64_t offset;     /* -o, --offset: the image starts this many bytes into IMAGE, after
			      * zeros (a hole), as mksquashfs -offset writes it */
	const char *xz_dict; /* -Xdict-size, --xz-dict-size: resolved by mks_xz_dict (borrowed) */
	/* --action ACTION@EXPR, and each action of an --action-file FILE (read once), in order:
	 * owned array of strings borrowed from argv or owned by action_text */
	struct sqk_build_action *actions;
	int nactions;
	size_t actions_cap;
	char **action_text;  /* owned: the actions of action files */
	int naction_text;
	size_t action_text_cap;
	bool action_file_pending; /* while an action file is read */
};

/* Parses argv (argv[0] = "mkimage") into o: options anywhere (before, between or after the
 * paths), "--" ends them, mksquashfs's "-e" takes every argument after it. Returns 0, 1 when
 * help was printed, or -1 after printing an error naming the option. o borrows argv; what it
 * owns after 0 is freed with mk_options_free (after 1 or -1 nothing is left to free; calling
 * it then is harmless). o->build and o->src are ready for sqk_build after 0. */
int mk_options_parse(int argc, char **argv, struct mk_options *o);

/* Frees what mk_options_parse allocated. */
void mk_options_free(struct mk_options *o);

#endif

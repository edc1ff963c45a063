/* Private, temporary: the by-value directory iterator for fuse/ until its split (branch i18)
 * lands and fuse/ moves to sqk_dir_open/next/close. Force-included by fuse/fuse.mk only; it
 * reaches into libsqk's internals (linked statically), never into the public API. */
#ifndef SQK_DIR_COMPAT_H
#define SQK_DIR_COMPAT_H

#include "reader/lib/internal.h"

#define sqk_dir_iter_init sqk_dir_start
#define sqk_dir_iter_next sqk_dir_next

#endif

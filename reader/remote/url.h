/* SPDX-License-Identifier: BSD-2-Clause */
/* What url.c shares with the backend and with its stand-in (none.c). Not installed. */
#ifndef SQK_REMOTE_URL_H
#define SQK_REMOTE_URL_H

#include "common/abi.h"
#include "sqk/remote.h"

/* The first version of struct sqk_http_opts: the smallest size a caller's may have. */
#define HTTP_OPTS_V1 SQK_ABI_SIZE_V1(struct sqk_http_opts, no_sign_request)

#endif

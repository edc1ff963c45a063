/* SPDX-License-Identifier: BSD-2-Clause */
/* The data stage: each file's content read once (data.c). */
#ifndef SQK_MK_DATA_H
#define SQK_MK_DATA_H



#include "mk.h"

struct mk_entry;

/* data.c: file content. mk_data_start before the first file; mk_data_file reads n's content
 * from src now (blocks go to the pipeline, the tail is kept for a fragment, a duplicate of an
 * earlier file is found by size and SHA-256 and shares its data); mk_data_finish writes the
 * fragment blocks, waits for the pipeline and points duplicates at their originals. */
int mk_data_start(struct mk_ctx *c);
int mk_data_file(struct mk_ctx *c, const struct mk_file_ref *fr, struct mk_source *src,
		 const struct mk_entry *e);
int mk_data_finish(struct mk_ctx *c);
/* Packs the tails waiting so far (the front files', order.c) into fragment blocks in the order
 * they came, before any other file's data. */
int mk_data_flush_front(struct mk_ctx *c);
/* Bytes of the tails waiting to be packed. */
uint64_t mk_data_tails_waiting(const struct mk_ctx *c);
/* Frees the data stage after an error (mk_data_finish frees it otherwise); returns the
 * pipeline's own error (a failed write), which is then the cause to report. */
int mk_data_abort(struct mk_ctx *c);
/* Offers f, a file whose data is placed already (an appended-to image's, append.c), to the
 * duplicate index under digest (SHA-256 of its content); a later file equal to it shares its
 * data. Between mk_data_start and mk_data_finish. */
int mk_data_known(struct mk_ctx *c, const struct mk_file *f, const uint8_t *digest);

#endif

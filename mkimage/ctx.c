/* SPDX-License-Identifier: BSD-2-Clause */
/* The builder's context helpers, used by every stage: the first error and its message
 * (mk_fail, thread-safe), the array grower (mk_grow over common/grow.h), the one writer of image
 * bytes (mk_write: written at c->pos and hashed on the way, for the integrity data and a
 * dm-verity tree), and the context's setup and
 * teardown. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqk/error.h"
#include "common/grow.h"
#include "common/verity.h"
#include "mk.h"
#include "entry_opts.h"
#include "attrs.h"
#include "order.h"
#include "pseudo.h"
#include "action.h"
#include "tree.h"
#include "reuse.h"
#include "append.h"

int mk_fail(struct mk_ctx *c, int err, const char *fmt, ...)
{
	pthread_mutex_lock(&c->errmu);
	if (!c->first_err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
		va_end(ap);
		c->first_err = err;
	}
	pthread_mutex_unlock(&c->errmu);
	return err;
}

int mk_grow(struct mk_ctx *c, void *arrp, size_t *cap, size_t need, size_t sz)
{
	int err = mem_grow(arrp, cap, need, sz, 0);
	return err ? mk_fail(c, err, "out of memory") : 0;
}

int mk_write(struct mk_ctx *c, const void *buf, size_t len)
{
	int err = sqk_io_write_at(c->out, c->pos, buf, len);
	if (err)
		return mk_fail(c, err, "cannot write image '%s' at offset %llu: %s", c->opt->image,
			       (unsigned long long)c->pos,
			       err == SQK_EIO ? strerror(errno) : sqk_strerror(err));
	if (c->integ && (err = integ_writer_update(c->integ, c->pos, buf, len)))
		return mk_fail(c, err, "cannot hash image '%s' at offset %llu: %s", c->opt->image,
			       (unsigned long long)c->pos, sqk_strerror(err));
	if (c->verity && (err = mk_verity_feed(c, c->pos, buf, len)))
		return err;
	c->pos += len;
	return 0;
}

void mk_opts_derive(struct sqk_build_opts *o)
{
	size_t quarter = (size_t)(o->mem / 4);
	if (!o->image)
		o->image = "image";
	if (!o->tail_mem)
		o->tail_mem = quarter;
	if (!o->digest_mem)
		o->digest_mem = quarter;
	if (!o->entry_mem)
		o->entry_mem = quarter;
	o->comp.block_size = o->block_size;
	if (o->comp.id == SQK_COMP_LZ4 && o->comp.level > 0)
		o->comp.lz4_hc = true;
	if (o->set_mtime >= 0)
		o->default_mtime = o->set_mtime;
	else if (o->clamp_time >= 0 && o->default_mtime > o->clamp_time)
		o->default_mtime = o->clamp_time;
}

int mk_ctx_init(struct mk_ctx *c, const struct sqk_build_opts *opts,
		const struct sqk_build_source *s)
{
	memset(c, 0, sizeof(*c));
	c->optv = *opts;
	mk_opts_derive(&c->optv);
	c->opt = &c->optv;
	c->src = s;
	c->cancel = opts->cancel;
	const struct sqk_build_opts *o = c->opt;
	pthread_mutex_init(&c->errmu, NULL);
	if (mk_ids_create(&c->ids) || mk_xattrs_create(&c->xattrs))
		return mk_fail(c, SQK_ENOMEM, "out of memory");
	int err = compressor_create(&o->comp, &c->comp);
	if (err)
		return mk_fail(c, err, "cannot set up the %s compressor: %s",
			       comp_name(o->comp.id), sqk_strerror(err));
	return 0;
}

void mk_ctx_free(struct mk_ctx *c)
{
	if (c->tops)
		c->tops->free(c);
	mk_ids_destroy(c->ids);
	mk_xattrs_destroy(c->xattrs);
	compressor_destroy(c->comp);
	integ_writer_destroy(c->integ);
	verity_builder_destroy(c->verity);
	mk_reuse_close(c->reuse);
	mk_append_close(c->append);
	mk_pseudo_free(c->pseudo);
	mk_actions_free(c->actions);
	mk_order_free(c);
	mk_eopts_free(c);
	free(c->frags);
	pthread_mutex_destroy(&c->errmu);
}


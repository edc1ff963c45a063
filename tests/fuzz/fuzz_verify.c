/* Fuzz target for the image checker: runs sqk_check_image over the input on a memory I/O object
 * with one thread and a report callback that drops every finding. The checker must survive any
 * bytes: report, never crash, hang or allocate beyond what the image justifies. */
#include <stdint.h>
#include <string.h>

#include "reader/sqk_check.h"
#include "common/io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drop_report(void *ctx, const struct sqk_check_report *r)
{
	(void)ctx;
	(void)r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sqk_check_opts opts = { .threads = 1, .report = drop_report };
	struct sqk_check_result res;
	struct sqk_io *io = NULL;

	if (sqk_io_mem_create(data, size, &io) < 0)
		return 0;
	memset(&res, 0, sizeof(res));
	sqk_check_image(io, size, &opts, &res);
	sqk_io_destroy(io);
	return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbolic modes ("u+rwx,go=rx", "a-w", "g=u") for pseudo definitions, read and applied as the
 * chmod action and -root-mode do (action_parse.c: mksquashfs's rules), so that one mode string
 * means one thing everywhere in the builder. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/parse.h"
#include "action.h"
#include "symmode.h"

bool mk_symmode_is_symbolic(const char *spec)
{
	return spec[0] && strspn(spec, "01234567") != strlen(spec);
}

int mk_symmode_apply(const char *spec, uint32_t old, bool dir, uint32_t *out, size_t *bad_at)
{
	struct act_mode m;
	char msg[128];

	*bad_at = 0;
	if (!mk_symmode_is_symbolic(spec))
		return parse_mode(spec, out) ? -1 : 0;
	if (act_mode_parse(spec, &m, msg, sizeof(msg)))
		return -1;
	*out = (uint32_t)act_mode_apply(&m, (mode_t)((old & 07777) | (dir ? S_IFDIR : S_IFREG))) &
	       07777;
	free(m.ops);
	return 0;
}

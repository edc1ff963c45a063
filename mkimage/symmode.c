/* SPDX-License-Identifier: BSD-2-Clause */
/* Symbolic modes ("u+rwx,go=rx", "a-w", "g=u") for pseudo definitions, with chmod(1)'s rules:
 * no who letter means all (the umask is not applied: an image has no umask), X is x for a
 * directory or for an entry that already has an x bit, s and t set the set-id and sticky bits. */
#include <stddef.h>
#include <string.h>

#include "common/parse.h"
#include "symmode.h"

/* The bits of who (u, g, o masks) a permission letter stands for. */
static uint32_t perm_bits(char p, uint32_t who, uint32_t cur, bool dir)
{
	switch (p) {
	case 'r': return who & 0444;
	case 'w': return who & 0222;
	case 'x': return who & 0111;
	case 'X': return dir || (cur & 0111) ? who & 0111 : 0;
	case 's': return (who & 0700 ? 04000 : 0) | (who & 0070 ? 02000 : 0);
	case 't': return 01000;
	default: return 0;
	}
}

/* The bits of class u, g or o of cur, copied to every class of who. */
static uint32_t copy_bits(char from, uint32_t who, uint32_t cur)
{
	uint32_t v = from == 'u' ? (cur >> 6) & 7 : from == 'g' ? (cur >> 3) & 7 : cur & 7;
	return who & (v << 6 | v << 3 | v);
}

static uint32_t who_bits(char w)
{
	return w == 'u' ? 04700 : w == 'g' ? 02070 : w == 'o' ? 01007 : 07777;
}

/* One clause at spec[*i]: [ugoa]* then one or more [+-=]PERMS. */
static int clause(const char *spec, size_t *i, uint32_t *cur, bool dir)
{
	uint32_t who = 0;
	while (spec[*i] && strchr("ugoa", spec[*i]))
		who |= who_bits(spec[(*i)++]);
	if (!who)
		who = 07777;
	if (!spec[*i] || !strchr("+-=", spec[*i]))
		return -1;
	while (spec[*i] && strchr("+-=", spec[*i])) {
		char op = spec[(*i)++];
		uint32_t bits = 0, snap = *cur;
		if (spec[*i] && strchr("ugo", spec[*i]))
			bits = copy_bits(spec[(*i)++], who & 0777, snap);
		else
			while (spec[*i] && strchr("rwxXst", spec[*i]))
				bits |= perm_bits(spec[(*i)++], who, snap, dir);
		if (op == '+')
			*cur |= bits;
		else if (op == '-')
			*cur &= ~bits;
		else
			*cur = (*cur & ~who) | bits;
	}
	return 0;
}

bool mk_symmode_is_symbolic(const char *spec)
{
	return spec[0] && strspn(spec, "01234567") != strlen(spec);
}

int mk_symmode_apply(const char *spec, uint32_t old, bool dir, uint32_t *out, size_t *bad_at)
{
	size_t i = 0;
	uint32_t cur = old & 07777;
	if (!mk_symmode_is_symbolic(spec)) {
		*bad_at = 0;
		return parse_mode(spec, out) ? -1 : 0;
	}
	for (;;) {
		if (clause(spec, &i, &cur, dir)) {
			*bad_at = i;
			return -1;
		}
		if (!spec[i])
			break;
		if (spec[i++] != ',') {
			*bad_at = i - 1;
			return -1;
		}
	}
	*out = cur;
	return 0;
}

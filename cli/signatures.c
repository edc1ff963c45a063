/* SPDX-License-Identifier: BSD-2-Clause */
/* The signatures of an image as sqk info and sqk verify show them: one line each in text (key
 * id, time in UTC, valid or not, trusted or not, comment), an array in JSON. */
#include <stdio.h>
#include <time.h>

#include "cmd.h"
#include "common/json.h"

/* The time t as "YYYY-MM-DD HH:MM:SS UTC" into out (32 bytes). */
static void utc(uint64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (t > (uint64_t)INT64_MAX || !gmtime_r(&tt, &tm) ||
	    !strftime(out, 32, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(out, 32, "%llu", (unsigned long long)t);
}

/* Borrows s[0..n); prints to stdout. */
void cmd_sigs_text(const struct sqk_signature *s, size_t n, int rc)
{
	char when[32];

	if (rc) {
		printf("signatures:              unreadable (%s)\n", sqk_strerror(rc));
		return;
	}
	if (!n) {
		printf("signatures:              none\n");
		return;
	}
	printf("signatures:              %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		utc(s[i].time, when);
		printf("  key %s  %s  %s%s%s%s%s\n", s[i].key_id, when,
		       s[i].valid ? "valid" : "INVALID", s[i].trusted ? ", trusted" : "",
		       s[i].comment[0] ? "  \"" : "", s[i].comment, s[i].comment[0] ? "\"" : "");
	}
}

/* Borrows s[0..n); prints the "signatures" member (and a comma) to stdout, null when rc. */
void cmd_sigs_json(const struct sqk_signature *s, size_t n, int rc, const char *indent)
{
	if (rc) {
		printf("%s\"signatures\": null,\n", indent);
		return;
	}
	printf("%s\"signatures\": [", indent);
	for (size_t i = 0; i < n; i++) {
		printf("%s\n%s  {\"key_id\": \"%s\", \"time\": %llu, \"comment\": ", i ? "," : "",
		       indent, s[i].key_id, (unsigned long long)s[i].time);
		json_put_str(stdout, s[i].comment);
		printf(", \"valid\": %s, \"trusted\": %s}", s[i].valid ? "true" : "false",
		       s[i].trusted ? "true" : "false");
	}
	printf("%s%s],\n", n ? "\n" : "", n ? indent : "");
}

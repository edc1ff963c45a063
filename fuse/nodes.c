/* Path memory for log lines: an open-addressing map from node id to the first path seen. */
#include "fuse/nodes.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

struct slot {
	uint64_t id;
	char *path;
};

struct sqk_nodes {
	pthread_mutex_t mu;
	struct slot *slots;
	size_t cap, used;
};

int sqk_nodes_create(struct sqk_nodes **out)
{
	struct sqk_nodes *t = calloc(1, sizeof(*t));
	if (!t)
		return SQK_ENOMEM;
	t->cap = 1024;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return SQK_ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	*out = t;
	return 0;
}

void sqk_nodes_destroy(struct sqk_nodes *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].path);
	free(t->slots);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static size_t find(const struct sqk_nodes *t, uint64_t id)
{
	size_t j = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (t->cap - 1);
	while (t->slots[j].path && t->slots[j].id != id)
		j = (j + 1) & (t->cap - 1);
	return j;
}

static int grow(struct sqk_nodes *t)
{
	struct slot *old = t->slots;
	size_t ocap = t->cap;
	t->slots = calloc(ocap * 2, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return SQK_ENOMEM;
	}
	t->cap = ocap * 2;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].path)
			t->slots[find(t, old[i].id)] = old[i];
	free(old);
	return 0;
}

void sqk_nodes_add(struct sqk_nodes *t, uint64_t id, uint64_t parent, const char *name)
{
	pthread_mutex_lock(&t->mu);
	if ((t->used + 1) * 2 > t->cap && grow(t)) {
		pthread_mutex_unlock(&t->mu);
		return;
	}
	size_t j = find(t, id);
	if (!t->slots[j].path) {
		size_t p = find(t, parent);
		const char *pp = parent == 1 ? "" : t->slots[p].path ? t->slots[p].path : "?";
		size_t len = strlen(pp) + strlen(name) + 2;
		char *s = malloc(len);
		if (s) {
			snprintf(s, len, "%s/%s", pp, name);
			t->slots[j] = (struct slot){ id, s };
			t->used++;
		}
	}
	pthread_mutex_unlock(&t->mu);
}

void sqk_nodes_path(struct sqk_nodes *t, uint64_t id, char *buf, size_t cap)
{
	pthread_mutex_lock(&t->mu);
	size_t j = find(t, id);
	snprintf(buf, cap, "%s", id == 1 ? "/" : t->slots[j].path ? t->slots[j].path : "?");
	pthread_mutex_unlock(&t->mu);
}

/*
 * One sample type of a merged profile (see view_pick.h). Everything is
 * changed in place and freed with protobuf-c's default allocator, so the
 * result is freed as the decoded profile was (pprof_free).
 */
#include <stdlib.h>
#include <string.h>

#include "common/xmalloc.h"
#include "view/view_pick.h"

/* Keeps only sample type idx; see view_pick.h. */
void
view_pick_type(pprof_profile_t *p, int idx)
{
	Perftools__Profiles__Sample *s;
	size_t i, k = 0;
	int64_t v;

	if (idx < 0 || (size_t)idx >= p->n_sample_type)
		return;
	for (i = 0; i < p->n_sample; i++) {
		s = p->sample[i];
		v = (size_t)idx < s->n_value ? s->value[idx] : 0;
		if (v == 0) {
			protobuf_c_message_free_unpacked(&s->base, NULL);
			continue;
		}
		s->value[0] = v;
		s->n_value = 1;
		p->sample[k++] = s;
	}
	p->n_sample = k;
	for (i = 0; i < p->n_sample_type; i++)
		if (i != (size_t)idx)
			protobuf_c_message_free_unpacked(
			    &p->sample_type[i]->base, NULL);
	p->sample_type[0] = p->sample_type[idx];
	p->n_sample_type = 1;
	p->default_sample_type = p->sample_type[0]->type;
}

/* An empty profile of one sample type; see view_pick.h. */
pprof_profile_t *
view_pick_empty(const char *name, const char *unit)
{
	pprof_profile_t *p = xcalloc(1, sizeof *p);
	Perftools__Profiles__ValueType *vt = xcalloc(1, sizeof *vt);

	perftools__profiles__profile__init(p);
	perftools__profiles__value_type__init(vt);
	p->string_table = xcalloc(3, sizeof *p->string_table);
	p->string_table[0] = xstrdup("");
	p->string_table[1] = xstrdup(name);
	p->string_table[2] = xstrdup(unit);
	p->n_string_table = 3;
	vt->type = 1;
	vt->unit = 2;
	p->sample_type = xcalloc(1, sizeof *p->sample_type);
	p->sample_type[0] = vt;
	p->n_sample_type = 1;
	p->default_sample_type = 1;
	return p;
}

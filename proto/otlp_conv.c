/*
 * OTLP profiles to pprof (see otlp_conv.h). The dictionary's tables hold
 * the zero value at index 0. Each profile becomes a pprof of its own
 * holding only what its samples reach: a stack's locations (leaf first,
 * as pprof's), their mappings and lines (callee first, as pprof's), the
 * functions and strings those use; dictionary indices are renumbered as
 * first met (per profile: a remap table per dictionary table, so a
 * request's profiles are bounded too). Sample attributes become pprof
 * sample labels (numbers for integers); a sample's value is the sum of
 * its values, or the count of its timestamps when it has none. Frames
 * written over all samples of a request are counted against max_refs
 * before they are written (a million samples of a 100,000-frame stack
 * fit in a small body).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/xmalloc.h"
#include "proto/otlp_conv.h"
#include "proto/pprof.h"

typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary
    otlp_conv_dict_t;
typedef Opentelemetry__Proto__Profiles__V1development__Profile
    otlp_conv_prof_t;
typedef Opentelemetry__Proto__Common__V1__AnyValue otlp_conv_any_t;
typedef Opentelemetry__Proto__Common__V1__KeyValue otlp_conv_kv_t;

/* One profile being written. */
struct otlp_conv_out {
	const otlp_conv_dict_t	*d;
	struct arena		*a;
	pprof_profile_t		 p;
	uint64_t		*str, *fn, *map, *loc;	/* dictionary -> id */
	size_t			 nstr, capstr, cap_fn, cap_map, cap_loc;
	const char		*where;		/* the profile's path */
	char			**cause;
};

static const otlp_conv_dict_t otlp_conv_empty =
    OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;

/* Fails at the current profile: where, then the message. */
static int __attribute__((format(printf, 2, 3)))
otlp_conv_fail(struct otlp_conv_out *o, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	va_start(ap, fmt);
	msg = xvasprintf(fmt, ap);
	va_end(ap);
	xcause(o->cause, "%s%s", o->where, msg);
	free(msg);
	return -1;
}

/* Grows an arena array of pointers by one slot. */
static void *
otlp_conv_push(struct arena *a, void *arr, size_t n, size_t *cap,
    size_t size)
{
	void *bigger;

	if (n < *cap)
		return arr;
	*cap = *cap * 2 + 16;
	bigger = arena_alloc(a, *cap * size);
	if (n > 0)
		memcpy(bigger, arr, n * size);
	return bigger;
}

/* The pprof string index of dictionary string i; -1 if out of range. */
static int64_t
otlp_conv_str(struct otlp_conv_out *o, int64_t i, const char *field)
{
	if (i < 0 || (size_t)i >= (o->d->n_string_table > 0 ?
	    o->d->n_string_table : 1)) {
		otlp_conv_fail(o, "%s: string %lld out of range (%zu strings)",
		    field, (long long)i, o->d->n_string_table);
		return -1;
	}
	if (o->d->n_string_table == 0 || i == 0)
		return 0;
	if (o->str[i] == 0) {
		o->p.string_table = otlp_conv_push(o->a, o->p.string_table,
		    o->p.n_string_table, &o->capstr, sizeof (char *));
		o->p.string_table[o->p.n_string_table] =
		    o->d->string_table[i];
		o->str[i] = o->p.n_string_table++;
	}
	return (int64_t)o->str[i];
}

/* The pprof id of dictionary function i (0 none); -1 out of range. */
static int64_t
otlp_conv_fn(struct otlp_conv_out *o, int32_t i)
{
	const Opentelemetry__Proto__Profiles__V1development__Function *f;
	Perftools__Profiles__Function *pf;
	int64_t name, sys, file;

	if (i < 0 || (size_t)i >= o->d->n_function_table)
		return otlp_conv_fail(o, "line's function_index %d out of range "
		    "(%zu functions)", i, o->d->n_function_table);
	if (o->fn[i] != 0)
		return (int64_t)o->fn[i];
	f = o->d->function_table[i];
	if ((name = otlp_conv_str(o, f->name_strindex, "function name")) < 0 ||
	    (sys = otlp_conv_str(o, f->system_name_strindex,
	    "function system_name")) < 0 ||
	    (file = otlp_conv_str(o, f->filename_strindex,
	    "function filename")) < 0)
		return -1;
	pf = arena_alloc(o->a, sizeof *pf);
	perftools__profiles__function__init(pf);
	pf->id = o->p.n_function + 1;
	pf->name = name;
	pf->system_name = sys;
	pf->filename = file;
	pf->start_line = f->start_line;
	o->p.function = otlp_conv_push(o->a, o->p.function, o->p.n_function,
	    &o->cap_fn, sizeof *o->p.function);
	o->p.function[o->p.n_function++] = pf;
	o->fn[i] = pf->id;
	return (int64_t)pf->id;
}

/* The pprof id of dictionary mapping i (0: none); -1 out of range. */
static int64_t
otlp_conv_map(struct otlp_conv_out *o, int32_t i)
{
	const Opentelemetry__Proto__Profiles__V1development__Mapping *m;
	Perftools__Profiles__Mapping *pm;
	int64_t file;

	if (i < 0 || (size_t)i >= (o->d->n_mapping_table > 0 ?
	    o->d->n_mapping_table : 1))
		return otlp_conv_fail(o, "location's mapping_index %d out of "
		    "range (%zu mappings)", i, o->d->n_mapping_table);
	if (i == 0 || o->d->n_mapping_table == 0)
		return 0;	/* the zero value: no mapping */
	if (o->map[i] != 0)
		return (int64_t)o->map[i];
	m = o->d->mapping_table[i];
	if ((file = otlp_conv_str(o, m->filename_strindex,
	    "mapping filename")) < 0)
		return -1;
	pm = arena_alloc(o->a, sizeof *pm);
	perftools__profiles__mapping__init(pm);
	pm->id = o->p.n_mapping + 1;
	pm->memory_start = m->memory_start;
	pm->memory_limit = m->memory_limit;
	pm->file_offset = m->file_offset;
	pm->filename = file;
	o->p.mapping = otlp_conv_push(o->a, o->p.mapping, o->p.n_mapping,
	    &o->cap_map, sizeof *o->p.mapping);
	o->p.mapping[o->p.n_mapping++] = pm;
	o->map[i] = pm->id;
	return (int64_t)pm->id;
}

/* The pprof id of dictionary location i; -1 out of range. */
static int64_t
otlp_conv_loc(struct otlp_conv_out *o, int32_t i)
{
	const Opentelemetry__Proto__Profiles__V1development__Location *l;
	Perftools__Profiles__Location *pl;
	Perftools__Profiles__Line *ln;
	int64_t mid, fid;
	size_t k;

	if (i < 0 || (size_t)i >= o->d->n_location_table)
		return otlp_conv_fail(o, "stack's location_indices: %d out of "
		    "range (%zu locations)", i, o->d->n_location_table);
	if (o->loc[i] != 0)
		return (int64_t)o->loc[i];
	l = o->d->location_table[i];
	if ((mid = otlp_conv_map(o, l->mapping_index)) < 0)
		return -1;
	pl = arena_alloc(o->a, sizeof *pl);
	perftools__profiles__location__init(pl);
	pl->id = o->p.n_location + 1;
	pl->mapping_id = (uint64_t)mid;
	pl->address = l->address;
	pl->n_line = l->n_lines;
	pl->line = arena_alloc(o->a, (l->n_lines + 1) * sizeof *pl->line);
	for (k = 0; k < l->n_lines; k++) {
		if ((fid = otlp_conv_fn(o, l->lines[k]->function_index)) < 0)
			return -1;
		ln = arena_alloc(o->a, sizeof *ln);
		perftools__profiles__line__init(ln);
		ln->function_id = (uint64_t)fid;
		ln->line = l->lines[k]->line;
		ln->column = l->lines[k]->column;
		pl->line[k] = ln;
	}
	o->p.location = otlp_conv_push(o->a, o->p.location, o->p.n_location,
	    &o->cap_loc, sizeof *o->p.location);
	o->p.location[o->p.n_location++] = pl;
	o->loc[i] = pl->id;
	return (int64_t)pl->id;
}

/* The dictionary string i, or NULL when out of range. */
static const char *
otlp_conv_dstr(const otlp_conv_dict_t *d, int64_t i)
{
	if (i == 0)
		return "";
	return i > 0 && (size_t)i < d->n_string_table ? d->string_table[i] :
	    NULL;
}

/*
 * A scalar attribute value as text into buf (size); *num set for an
 * integer. 0, 1 when it is not a scalar (left out), -1 out of range.
 */
static int
otlp_conv_value(const otlp_conv_dict_t *d, const otlp_conv_any_t *v,
    char *buf, size_t size, int64_t *num, int *is_num)
{
	const char *s;

	*is_num = 0;
	if (v == NULL)
		return 1;
	switch (v->value_case) {
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
		snprintf(buf, size, "%s", v->string_value);
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
		if ((s = otlp_conv_dstr(d, v->string_value_strindex)) == NULL)
			return -1;
		snprintf(buf, size, "%s", s);
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
		snprintf(buf, size, "%s", v->bool_value ? "true" : "false");
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
		snprintf(buf, size, "%lld", (long long)v->int_value);
		*num = v->int_value;
		*is_num = 1;
		return 0;
	case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_DOUBLE_VALUE:
		snprintf(buf, size, "%.17g", v->double_value);
		return 0;
	default:
		return 1;	/* arrays, lists, bytes: not a label */
	}
}

/* A pprof sample label of attribute i; -1 on a bad index. */
static int
otlp_conv_sample_label(struct otlp_conv_out *o, Perftools__Profiles__Sample *s,
    int32_t i, size_t *cap)
{
	const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *kv;
	Perftools__Profiles__Label *lb;
	char buf[OTLP_CONV_MAX_VALUE + 1];
	int64_t key, num = 0, unit;
	int is_num, rc;

	if (i < 0 || (size_t)i >= (o->d->n_attribute_table > 0 ?
	    o->d->n_attribute_table : 1))
		return otlp_conv_fail(o, "sample's attribute_indices: %d out "
		    "of range (%zu attributes)", i, o->d->n_attribute_table);
	if (i == 0 || o->d->n_attribute_table == 0)
		return 0;
	kv = o->d->attribute_table[i];
	if ((key = otlp_conv_str(o, kv->key_strindex, "attribute key")) < 0 ||
	    (unit = otlp_conv_str(o, kv->unit_strindex, "attribute unit")) < 0)
		return -1;
	if ((rc = otlp_conv_value(o->d, kv->value, buf, sizeof buf, &num,
	    &is_num)) < 0)
		return otlp_conv_fail(o, "attribute %d: string out of range", i);
	if (rc == 1 || key == 0)
		return 0;
	lb = arena_alloc(o->a, sizeof *lb);
	perftools__profiles__label__init(lb);
	lb->key = key;
	if (is_num) {
		lb->num = num;
		lb->num_unit = unit;
	} else if (kv->value->value_case ==
	    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX) {
		if ((lb->str = otlp_conv_str(o,
		    kv->value->string_value_strindex, "attribute value")) < 0)
			return -1;
	} else {
		/* Text of its own: a string of the profile's table. */
		o->p.string_table = otlp_conv_push(o->a, o->p.string_table,
		    o->p.n_string_table, &o->capstr, sizeof (char *));
		o->p.string_table[o->p.n_string_table] = arena_alloc(o->a,
		    strlen(buf) + 1);
		strcpy(o->p.string_table[o->p.n_string_table], buf);
		lb->str = (int64_t)o->p.n_string_table++;
	}
	s->label = otlp_conv_push(o->a, s->label, s->n_label, cap,
	    sizeof *s->label);
	s->label[s->n_label++] = lb;
	return 0;
}

/* Writes the samples of P; refs counts frames against the limit. */
static int
otlp_conv_samples(struct otlp_conv_out *o, const otlp_conv_prof_t *P,
    uint64_t *refs, uint64_t max_refs)
{
	const Opentelemetry__Proto__Profiles__V1development__Sample *in;
	const Opentelemetry__Proto__Profiles__V1development__Stack *st;
	Perftools__Profiles__Sample *s;
	int64_t id, v;
	size_t i, k, cap;

	o->p.sample = arena_alloc(o->a, (P->n_samples + 1) * sizeof *o->p.sample);
	for (i = 0; i < P->n_samples; i++) {
		in = P->samples[i];
		if (in->stack_index < 0 || (size_t)in->stack_index >=
		    (o->d->n_stack_table > 0 ? o->d->n_stack_table : 1))
			return otlp_conv_fail(o, "samples[%zu].stack_index %d "
			    "out of range (%zu stacks)", i, in->stack_index,
			    o->d->n_stack_table);
		if (in->link_index < 0 || (size_t)in->link_index >=
		    (o->d->n_link_table > 0 ? o->d->n_link_table : 1))
			return otlp_conv_fail(o, "samples[%zu].link_index %d "
			    "out of range (%zu links)", i, in->link_index,
			    o->d->n_link_table);
		st = o->d->n_stack_table > 0 ?
		    o->d->stack_table[in->stack_index] : NULL;
		if (st != NULL && st->n_location_indices > max_refs - *refs)
			return otlp_conv_fail(o, "samples[%zu]: the request's "
			    "stacks would write more than %llu frames (a table "
			    "bomb)", i, (unsigned long long)max_refs);
		s = arena_alloc(o->a, sizeof *s);
		perftools__profiles__sample__init(s);
		s->n_location_id = st != NULL ? st->n_location_indices : 0;
		*refs += s->n_location_id;
		s->location_id = arena_alloc(o->a, (s->n_location_id + 1) *
		    sizeof *s->location_id);
		for (k = 0; k < s->n_location_id; k++) {
			if ((id = otlp_conv_loc(o, st->location_indices[k])) < 0)
				return -1;
			s->location_id[k] = (uint64_t)id;
		}
		v = in->n_values == 0 ? (int64_t)in->n_timestamps_unix_nano : 0;
		for (k = 0; k < in->n_values; k++) {
			if (__builtin_add_overflow(v, in->values[k], &v))
				return otlp_conv_fail(o, "samples[%zu].values: "
				    "their sum overflows", i);
		}
		s->value = arena_alloc(o->a, sizeof *s->value);
		s->value[0] = v;
		s->n_value = 1;
		cap = 0;
		if (in->n_attribute_indices > max_refs - *refs)
			return otlp_conv_fail(o, "samples[%zu]: the request's "
			    "attributes would write more than %llu labels",
			    i, (unsigned long long)max_refs);
		*refs += in->n_attribute_indices;
		for (k = 0; k < in->n_attribute_indices; k++)
			if (otlp_conv_sample_label(o, s,
			    in->attribute_indices[k], &cap) != 0)
				return -1;
		o->p.sample[o->p.n_sample++] = s;
	}
	return 0;
}

/* profd's type of a sample type and period type; see otlp_conv.h. */
const char *
otlp_conv_type(const char *st, const char *unit, const char *period)
{
	(void)unit;
	if (strcmp(st, "cpu") == 0 || strcmp(period, "cpu") == 0 ||
	    (strcmp(st, "samples") == 0 && strcmp(period, "wall") != 0))
		return "cpu";
	if (strncmp(st, "alloc_", 6) == 0 || strncmp(st, "inuse_", 6) == 0 ||
	    strcmp(period, "space") == 0)
		return "heap";
	if (strcmp(st, "contentions") == 0 || strcmp(st, "delay") == 0)
		return "mutex";
	if (strcmp(st, "goroutine") == 0 || strcmp(st, "goroutines") == 0)
		return "goroutine";
	return "other";
}

/* Adds a stored label key=value unless the key is there or past max. */
static void
otlp_conv_label_add(struct otlp_profile *op, const char *key,
    const char *value)
{
	char k[OTLP_CONV_MAX_KEY + 1];
	size_t i, n;

	if (*key == '\0' || strcmp(key, "service.name") == 0 ||
	    op->nlabels >= 64)
		return;
	/* profd's keys: [A-Za-z_][A-Za-z0-9_.-]*, at most 63 bytes. */
	for (n = 0; key[n] != '\0' && n < OTLP_CONV_MAX_KEY; n++) {
		k[n] = key[n];
		if (!((k[n] >= 'a' && k[n] <= 'z') || (k[n] >= 'A' &&
		    k[n] <= 'Z') || k[n] == '_' || (n > 0 && ((k[n] >= '0' &&
		    k[n] <= '9') || k[n] == '.' || k[n] == '-'))))
			k[n] = '_';
	}
	k[n] = '\0';
	for (i = 0; i < op->nlabels; i++)
		if (strcmp(op->labels[i].key, k) == 0)
			return;		/* the nearer scope's wins */
	op->labels = xreallocarray(op->labels, op->nlabels + 1,
	    sizeof *op->labels);
	op->labels[op->nlabels].key = xstrdup(k);
	op->labels[op->nlabels].value = xstrndup(value, OTLP_CONV_MAX_VALUE);
	op->nlabels++;
}

/* The labels of KeyValues (resource, scope); service.name noted. */
static int
otlp_conv_kvs(const otlp_conv_dict_t *d, otlp_conv_kv_t *const *kv, size_t n,
    struct otlp_profile *op, const char *what, char **cause)
{
	char buf[OTLP_CONV_MAX_VALUE + 1];
	const char *key;
	int64_t num;
	int is_num, rc;
	size_t i;

	for (i = 0; i < n; i++) {
		key = *kv[i]->key != '\0' ? kv[i]->key :
		    otlp_conv_dstr(d, kv[i]->key_strindex);
		if (key == NULL)
			return xcause(cause, "%s.attributes[%zu].key_strindex "
			    "%d out of range (%zu strings)", what, i,
			    kv[i]->key_strindex, d->n_string_table);
		if ((rc = otlp_conv_value(d, kv[i]->value, buf, sizeof buf,
		    &num, &is_num)) < 0)
			return xcause(cause, "%s.attributes[%zu].value: string "
			    "out of range (%zu strings)", what, i,
			    d->n_string_table);
		if (rc != 0)
			continue;
		if (strcmp(key, "service.name") == 0 && op->service == NULL &&
		    *buf != '\0')
			op->service = xstrdup(buf);
		otlp_conv_label_add(op, key, buf);
	}
	return 0;
}

/* The labels of a profile's attribute_indices. */
static int
otlp_conv_prof_labels(const otlp_conv_dict_t *d, const otlp_conv_prof_t *P,
    struct otlp_profile *op, const char *where, char **cause)
{
	const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *kv;
	char buf[OTLP_CONV_MAX_VALUE + 1];
	const char *key;
	int64_t num;
	int is_num, rc;
	size_t i;
	int32_t a;

	for (i = 0; i < P->n_attribute_indices; i++) {
		a = P->attribute_indices[i];
		if (a < 0 || (size_t)a >= (d->n_attribute_table > 0 ?
		    d->n_attribute_table : 1))
			return xcause(cause, "%sattribute_indices[%zu]: %d out "
			    "of range (%zu attributes)", where, i, a,
			    d->n_attribute_table);
		if (a == 0 || d->n_attribute_table == 0)
			continue;
		kv = d->attribute_table[a];
		if ((key = otlp_conv_dstr(d, kv->key_strindex)) == NULL ||
		    (rc = otlp_conv_value(d, kv->value, buf, sizeof buf, &num,
		    &is_num)) < 0)
			return xcause(cause, "%sattribute_indices[%zu]: a string "
			    "out of range (%zu strings)", where, i,
			    d->n_string_table);
		if (rc == 0)
			otlp_conv_label_add(op, key, buf);
	}
	return 0;
}

/* Converts one profile P into op->pprof; -1 with *cause. */
static int
otlp_conv_one(const otlp_conv_dict_t *d, const otlp_conv_prof_t *P,
    struct otlp_profile *op, uint64_t *refs, uint64_t max_refs,
    char **cause)
{
	struct otlp_conv_out o;
	Perftools__Profiles__ValueType *st, *pt;
	const char *stn, *stu, *ptn;
	int64_t v;
	size_t n;
	int rc = -1;

	memset(&o, 0, sizeof o);
	o.d = d;
	o.a = arena_new(0);
	o.where = op->where;
	o.cause = cause;
	perftools__profiles__profile__init(&o.p);
	o.str = xcalloc(d->n_string_table + 1, sizeof *o.str);
	o.fn = xcalloc(d->n_function_table + 1, sizeof *o.fn);
	o.map = xcalloc(d->n_mapping_table + 1, sizeof *o.map);
	o.loc = xcalloc(d->n_location_table + 1, sizeof *o.loc);
	o.p.string_table = otlp_conv_push(o.a, NULL, 0, &o.capstr,
	    sizeof (char *));
	o.p.string_table[o.p.n_string_table++] = "";
	st = arena_alloc(o.a, sizeof *st);
	pt = arena_alloc(o.a, sizeof *pt);
	perftools__profiles__value_type__init(st);
	perftools__profiles__value_type__init(pt);
	if (P->sample_type != NULL &&
	    ((v = otlp_conv_str(&o, P->sample_type->type_strindex,
	    "sample_type")) < 0 || (st->type = v,
	    (v = otlp_conv_str(&o, P->sample_type->unit_strindex,
	    "sample_type unit")) < 0)))
		goto out;
	st->unit = P->sample_type != NULL ? v : 0;
	if (P->period_type != NULL &&
	    ((v = otlp_conv_str(&o, P->period_type->type_strindex,
	    "period_type")) < 0 || (pt->type = v,
	    (v = otlp_conv_str(&o, P->period_type->unit_strindex,
	    "period_type unit")) < 0)))
		goto out;
	pt->unit = P->period_type != NULL ? v : 0;
	o.p.sample_type = arena_alloc(o.a, sizeof *o.p.sample_type);
	o.p.sample_type[0] = st;
	o.p.n_sample_type = 1;
	o.p.period_type = pt;
	o.p.period = P->period;
	o.p.time_nanos = P->time_unix_nano > INT64_MAX ? 0 :
	    (int64_t)P->time_unix_nano;
	o.p.duration_nanos = P->duration_nano > INT64_MAX ? 0 :
	    (int64_t)P->duration_nano;
	if (otlp_conv_samples(&o, P, refs, max_refs) != 0)
		goto out;
	stn = o.p.string_table[st->type];
	stu = o.p.string_table[st->unit];
	ptn = o.p.string_table[pt->type];
	op->type = otlp_conv_type(stn, stu, ptn);
	op->time_ns = o.p.time_nanos;
	op->duration_ns = o.p.duration_nanos;
	n = perftools__profiles__profile__get_packed_size(&o.p);
	op->pprof = xmalloc(n + 1);
	op->len = perftools__profiles__profile__pack(&o.p, op->pprof);
	rc = 0;
out:
	free(o.str);
	free(o.fn);
	free(o.map);
	free(o.loc);
	arena_free(o.a);
	return rc;
}

/* Converts every profile of a request; see otlp_conv.h. */
int
otlp_conv_run(const otlp_request_t *req, const struct otlp_limits *lim,
    struct otlp_profile **out, size_t *n, char **cause)
{
	const otlp_conv_dict_t *d = req->dictionary != NULL ?
	    req->dictionary : &otlp_conv_empty;
	const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp;
	const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp;
	struct otlp_profile *op;
	uint64_t refs = 0;
	size_t r, s, p;
	char path[160];

	*out = NULL;
	*n = 0;
	for (r = 0; r < req->n_resource_profiles; r++) {
		rp = req->resource_profiles[r];
		for (s = 0; s < rp->n_scope_profiles; s++) {
			sp = rp->scope_profiles[s];
			for (p = 0; p < sp->n_profiles; p++) {
				if (*n == lim->max_profiles) {
					xcause(cause, "more than %zu profiles in "
					    "one request", lim->max_profiles);
					goto fail;
				}
				*out = xreallocarray(*out, *n + 1, sizeof **out);
				op = &(*out)[(*n)++];
				memset(op, 0, sizeof *op);
				snprintf(path, sizeof path, "resource_profiles[%zu]."
				    "scope_profiles[%zu].profiles[%zu]: ", r, s,
				    p);
				op->where = xstrdup(path);
				snprintf(path, sizeof path, "resource_profiles"
				    "[%zu].scope", r);
				if (otlp_conv_prof_labels(d, sp->profiles[p], op,
				    op->where, cause) != 0 ||
				    (sp->scope != NULL && otlp_conv_kvs(d,
				    sp->scope->attributes, sp->scope->n_attributes,
				    op, path, cause) != 0))
					goto fail;
				snprintf(path, sizeof path, "resource_profiles"
				    "[%zu].resource", r);
				if ((rp->resource != NULL && otlp_conv_kvs(d,
				    rp->resource->attributes,
				    rp->resource->n_attributes, op, path,
				    cause) != 0) ||
				    otlp_conv_one(d, sp->profiles[p], op, &refs,
				    lim->max_refs, cause) != 0)
					goto fail;
				if (op->service == NULL)
					op->service = xstrdup("unknown_service");
			}
		}
	}
	return 0;
fail:
	otlp_conv_free(*out, *n);
	*out = NULL;
	*n = 0;
	return -1;
}

/* Frees converted profiles. */
void
otlp_conv_free(struct otlp_profile *op, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		free(op[i].service);
		for (j = 0; j < op[i].nlabels; j++) {
			free(op[i].labels[j].key);
			free(op[i].labels[j].value);
		}
		free(op[i].labels);
		free(op[i].pprof);
		free(op[i].where);
	}
	free(op);
}

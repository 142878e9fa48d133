/*
 * The stream reader's differential check, shared by its unit test
 * (test_pprof_stream.c) and the pprof fuzz target: stream_diff() opens raw
 * protobuf bytes with pprof_stream_open, and says what differs from the
 * upload check (pprof_check_raw: the same verdict and cause) and, for a
 * profile both accept, from protobuf-c (pprof_decode + pprof_validate must
 * accept it too and decode every value the reader gives: header, strings,
 * every function, mapping, location, line, sample and label). Where the
 * upload check and protobuf-c part (an overlong key of field 0, which
 * only protobuf-c takes) is the scanner's tests' business.
 */
#ifndef PROFD_STREAM_TESTLIB_H
#define PROFD_STREAM_TESTLIB_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/xmalloc.h"
#include "proto/pprof.h"
#include "proto/pprof_stream.h"

/* Formats a difference (new string). */
#define STREAM_DIFF(...)	xasprintf(__VA_ARGS__)

/* The header, string table and sample types of s against p. */
static inline char *
stream_diff_header(const struct pprof_stream *s, const pprof_profile_t *p)
{
	const char *str;
	size_t i, len;

	if (s->n_string != p->n_string_table)
		return STREAM_DIFF("strings: %zu vs %zu", s->n_string,
		    p->n_string_table);
	for (i = 0; i < s->n_string; i++) {
		str = pprof_stream_string(s, i, &len);
		if (len != strlen(p->string_table[i]) ||
		    memcmp(str, p->string_table[i], len) != 0)
			return STREAM_DIFF("string %zu differs", i);
	}
	if (s->n_sample_type != p->n_sample_type)
		return STREAM_DIFF("sample types: %zu vs %zu",
		    s->n_sample_type, p->n_sample_type);
	for (i = 0; i < s->n_sample_type; i++)
		if (s->sample_type[2 * i] != p->sample_type[i]->type ||
		    s->sample_type[2 * i + 1] != p->sample_type[i]->unit)
			return STREAM_DIFF("sample type %zu differs", i);
	if (s->n_comment != p->n_comment)
		return STREAM_DIFF("comments: %zu vs %zu", s->n_comment,
		    p->n_comment);
	for (i = 0; i < s->n_comment; i++)
		if (s->comment[i] != p->comment[i])
			return STREAM_DIFF("comment %zu differs", i);
	if (s->have_period_type != (p->period_type != NULL) ||
	    (p->period_type != NULL && (s->period_type !=
	    p->period_type->type || s->period_unit != p->period_type->unit)))
		return STREAM_DIFF("period_type differs");
	if (s->drop_frames != p->drop_frames ||
	    s->keep_frames != p->keep_frames ||
	    s->time_nanos != p->time_nanos ||
	    s->duration_nanos != p->duration_nanos ||
	    s->period != p->period ||
	    s->default_sample_type != p->default_sample_type ||
	    s->doc_url != p->doc_url)
		return STREAM_DIFF("a header scalar differs");
	return NULL;
}

/* Functions and mappings. */
static inline char *
stream_diff_tables(struct pprof_stream *s, const pprof_profile_t *p)
{
	struct pprof_stream_function f;
	struct pprof_stream_mapping m;
	size_t i;

	if (s->n[PPROF_STREAM_FUNCTION] != p->n_function ||
	    s->n[PPROF_STREAM_MAPPING] != p->n_mapping)
		return STREAM_DIFF("function or mapping count differs");
	for (i = 0; pprof_stream_function(s, &f) == 1; i++) {
		const Perftools__Profiles__Function *g = p->function[i];

		if (f.id != g->id || f.name != g->name ||
		    f.system_name != g->system_name ||
		    f.filename != g->filename ||
		    f.start_line != g->start_line)
			return STREAM_DIFF("function %zu differs", i);
	}
	if (i != p->n_function)
		return STREAM_DIFF("read %zu functions", i);
	for (i = 0; pprof_stream_mapping(s, &m) == 1; i++) {
		const Perftools__Profiles__Mapping *g = p->mapping[i];

		if (m.id != g->id || m.memory_start != g->memory_start ||
		    m.memory_limit != g->memory_limit ||
		    m.file_offset != g->file_offset ||
		    m.filename != g->filename || m.build_id != g->build_id ||
		    m.has_functions != !!g->has_functions ||
		    m.has_filenames != !!g->has_filenames ||
		    m.has_line_numbers != !!g->has_line_numbers ||
		    m.has_inline_frames != !!g->has_inline_frames)
			return STREAM_DIFF("mapping %zu differs", i);
	}
	if (i != p->n_mapping)
		return STREAM_DIFF("read %zu mappings", i);
	return NULL;
}

/* Locations and their lines. */
static inline char *
stream_diff_locations(struct pprof_stream *s, const pprof_profile_t *p)
{
	struct pprof_stream_location l;
	size_t i, j;

	if (s->n[PPROF_STREAM_LOCATION] != p->n_location)
		return STREAM_DIFF("location count differs");
	for (i = 0; pprof_stream_location(s, &l) == 1; i++) {
		const Perftools__Profiles__Location *g = p->location[i];

		if (l.id != g->id || l.mapping_id != g->mapping_id ||
		    l.address != g->address ||
		    l.is_folded != !!g->is_folded || l.n_line != g->n_line)
			return STREAM_DIFF("location %zu differs", i);
		for (j = 0; j < l.n_line; j++)
			if (l.line[j].function_id != g->line[j]->function_id ||
			    l.line[j].line != g->line[j]->line ||
			    l.line[j].column != g->line[j]->column)
				return STREAM_DIFF("location %zu line %zu "
				    "differs", i, j);
	}
	if (i != p->n_location)
		return STREAM_DIFF("read %zu locations", i);
	return NULL;
}

/* Samples and their labels. */
static inline char *
stream_diff_samples(struct pprof_stream *s, const pprof_profile_t *p)
{
	struct pprof_stream_sample sm;
	size_t i, j;

	if (s->n[PPROF_STREAM_SAMPLE] != p->n_sample)
		return STREAM_DIFF("sample count differs");
	for (i = 0; pprof_stream_sample(s, &sm) == 1; i++) {
		const Perftools__Profiles__Sample *g = p->sample[i];

		if (sm.n_location_id != g->n_location_id ||
		    sm.n_value != g->n_value || sm.n_label != g->n_label ||
		    (g->n_location_id > 0 && memcmp(sm.location_id,
		    g->location_id, g->n_location_id * 8) != 0) ||
		    (g->n_value > 0 && memcmp(sm.value, g->value,
		    g->n_value * 8) != 0))
			return STREAM_DIFF("sample %zu differs", i);
		for (j = 0; j < sm.n_label; j++)
			if (sm.label[j].key != g->label[j]->key ||
			    sm.label[j].str != g->label[j]->str ||
			    sm.label[j].num != g->label[j]->num ||
			    sm.label[j].num_unit != g->label[j]->num_unit)
				return STREAM_DIFF("sample %zu label %zu "
				    "differs", i, j);
	}
	if (i != p->n_sample)
		return STREAM_DIFF("read %zu samples", i);
	return NULL;
}

/*
 * Opens raw both ways; NULL if they agree, else what differs (new
 * string). *accepted: OUT whether the bytes are a valid profile.
 */
static inline char *
stream_diff(const uint8_t *raw, size_t len, int *accepted)
{
	struct arena *arena = arena_new(0);
	struct pprof_stream s;
	pprof_profile_t *p;
	char *sc = NULL, *pc = NULL, *rc_cause = NULL, *d = NULL;
	int rc, ref;

	rc = pprof_stream_open(&s, raw, len, NULL, NULL, &sc);
	ref = pprof_check_raw(raw, len, NULL, NULL, &rc_cause);
	*accepted = rc == 0;
	p = NULL;
	if (rc == 0) {
		p = pprof_decode(raw, len, arena_allocator(arena), &pc);
		if (p != NULL && pprof_validate(p, &pc) != 0)
			p = NULL;
	}
	if (rc != ref || (rc != 0 && (sc == NULL || rc_cause == NULL ||
	    strcmp(sc, rc_cause) != 0)))
		d = STREAM_DIFF("verdicts differ: stream %d (%s), upload check "
		    "%d (%s)", rc, sc ? sc : "", ref, rc_cause ? rc_cause : "");
	else if (rc == 0 && p == NULL)
		d = STREAM_DIFF("the stream reads what protobuf-c refuses (%s)",
		    pc ? pc : "");
	else if (rc == 0 && (d = stream_diff_header(&s, p)) == NULL &&
	    (d = stream_diff_tables(&s, p)) == NULL &&
	    (d = stream_diff_locations(&s, p)) == NULL)
		d = stream_diff_samples(&s, p);
	pprof_stream_close(&s);
	arena_free(arena);
	free(sc);
	free(pc);
	free(rc_cause);
	return d;
}

#endif

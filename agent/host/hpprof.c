/*
 * pprof packing of one host agent group (see hpprof.h), with the
 * protobuf-c code generated from proto/profile.proto; gzip by
 * agent/core/build.c's build_gzip, as the in-process agent's profiles.
 * Location and function ids are the group's indexes plus one; mapping ids
 * follow the order written (main executables first: pprof takes mapping
 * 1 for the program).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"

#include "agent/core/build.h"
#include "agent/host/hgroups.h"
#include "agent/host/hpprof.h"
#include "common/xmalloc.h"

/* The tables of the profile being packed. */
struct hpprof {
	char				**strs;
	size_t				  nstrs, nown;	/* own: from nown */
};

/* Appends a string the group does not hold (copied). */
static int64_t
hpprof_str(struct hpprof *h, const char *s)
{
	h->strs[h->nstrs] = xstrdup(s);
	return (int64_t)h->nstrs++;
}

/* Builds the profile (see hpprof.h). */
int
hpprof_build(const struct hgroup *g, const struct hpprof_window *w,
    uint8_t **out, size_t *outlen, char **cause)
{
	Perftools__Profiles__Profile p = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[3], *vtp[2];
	Perftools__Profiles__Mapping *mp, **mpp;
	Perftools__Profiles__Location *loc, **locp;
	Perftools__Profiles__Line *line, **linep;
	Perftools__Profiles__Function *fn, **fnp;
	Perftools__Profiles__Sample *samp, **sampp;
	Perftools__Profiles__Label *lab, **labp;
	const struct stacks *s = &g->stacks;
	struct hpprof h;
	uint64_t *mapid, *locids;
	int64_t *vals, comment, kpid, kexe;
	size_t i, j, k, nm = 0, nl, nf, ns, nmaps;
	const uintptr_t *key;
	uint8_t *raw;
	size_t rawlen;
	int ret;

	nl = g->nlocs ? g->nlocs : 1;
	nf = g->nfuncs ? g->nfuncs : 1;
	ns = s->n ? s->n : 1;
	nmaps = g->nmaps ? g->nmaps : 1;
	memset(&h, 0, sizeof h);
	h.strs = xcalloc(g->nstrs + 8, sizeof *h.strs);
	for (i = 0; i < g->nstrs; i++)
		h.strs[i] = g->strs[i];
	h.nstrs = h.nown = g->nstrs;
	for (i = 0; i < 3; i++)
		perftools__profiles__value_type__init(&vt[i]);
	vt[0].type = hpprof_str(&h, "samples");
	vt[0].unit = hpprof_str(&h, "count");
	vt[1].type = hpprof_str(&h, "cpu");
	vt[1].unit = hpprof_str(&h, "nanoseconds");
	vt[2] = vt[1];
	vtp[0] = &vt[0];
	vtp[1] = &vt[1];
	comment = hpprof_str(&h, w->comment);
	kpid = hpprof_str(&h, "pid");
	kexe = hpprof_str(&h, "exe");

	/* Mappings: executables first. */
	mp = xcalloc(nmaps, sizeof *mp);
	mpp = xcalloc(nmaps, sizeof *mpp);
	mapid = xcalloc(nmaps, sizeof *mapid);
	for (k = 0; k < 2; k++)
		for (i = 0; i < g->nmaps; i++) {
			if ((g->maps[i].is_exe != 0) != (k == 0))
				continue;
			perftools__profiles__mapping__init(&mp[nm]);
			mp[nm].id = nm + 1;
			mp[nm].memory_start = g->maps[i].start;
			mp[nm].memory_limit = g->maps[i].limit;
			mp[nm].file_offset = g->maps[i].pgoff;
			mp[nm].filename = g->maps[i].path;
			mp[nm].build_id = g->maps[i].build_id;
			mp[nm].has_functions = 1;
			if (g->maps[i].named) {
				mp[nm].memory_start = mp[nm].memory_limit = 0;
				mp[nm].has_filenames = 1;
				mp[nm].has_line_numbers = 1;
			}
			mpp[nm] = &mp[nm];
			mapid[i] = ++nm;
		}
	/* Locations, one line each when named. */
	loc = xcalloc(nl, sizeof *loc);
	locp = xcalloc(nl, sizeof *locp);
	line = xcalloc(nl, sizeof *line);
	linep = xcalloc(nl, sizeof *linep);
	for (i = 0; i < g->nlocs; i++) {
		perftools__profiles__location__init(&loc[i]);
		loc[i].id = i + 1;
		loc[i].address = g->maps[g->locs[i].map].named ? 0 :
		    g->locs[i].addr;
		loc[i].mapping_id = mapid[g->locs[i].map];
		if (g->locs[i].func >= 0) {
			perftools__profiles__line__init(&line[i]);
			line[i].function_id = (uint64_t)g->locs[i].func + 1;
			line[i].line = g->locs[i].line;
			linep[i] = &line[i];
			loc[i].n_line = 1;
			loc[i].line = &linep[i];
		}
		locp[i] = &loc[i];
	}
	fn = xcalloc(nf, sizeof *fn);
	fnp = xcalloc(nf, sizeof *fnp);
	for (i = 0; i < g->nfuncs; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = g->funcs[i].name;
		fn[i].system_name = g->funcs[i].name;
		fn[i].filename = g->funcs[i].file;
		fnp[i] = &fn[i];
	}
	/* Samples: [pid, exe, locations...] keys. */
	samp = xcalloc(ns, sizeof *samp);
	sampp = xcalloc(ns, sizeof *sampp);
	vals = xcalloc(2 * ns, sizeof *vals);
	locids = xcalloc(s->npcs ? s->npcs : 1, sizeof *locids);
	lab = xcalloc(2 * ns, sizeof *lab);
	labp = xcalloc(2 * ns, sizeof *labp);
	for (i = 0; i < s->n; i++) {
		key = s->pcs + s->v[i].off;
		perftools__profiles__sample__init(&samp[i]);
		for (j = 2; j < s->v[i].n; j++)
			locids[s->v[i].off + j] = (uint64_t)key[j] + 1;
		samp[i].n_location_id = s->v[i].n - 2;
		samp[i].location_id = locids + s->v[i].off + 2;
		vals[2 * i] = s->v[i].count;
		vals[2 * i + 1] = s->v[i].count * (1000000000LL / w->hz);
		samp[i].n_value = 2;
		samp[i].value = &vals[2 * i];
		for (k = 0; k < 2; k++) {
			perftools__profiles__label__init(&lab[2 * i + k]);
			labp[2 * i + k] = &lab[2 * i + k];
		}
		lab[2 * i].key = kpid;
		lab[2 * i].num = (int64_t)key[0];	/* -tagfocus pid=N */
		lab[2 * i + 1].key = kexe;
		lab[2 * i + 1].str = (int64_t)key[1];
		samp[i].n_label = 2;
		samp[i].label = &labp[2 * i];
		sampp[i] = &samp[i];
	}
	p.n_sample_type = 2;
	p.sample_type = vtp;
	p.n_sample = s->n;
	p.sample = sampp;
	p.n_mapping = nm;
	p.mapping = mpp;
	p.n_location = g->nlocs;
	p.location = locp;
	p.n_function = g->nfuncs;
	p.function = fnp;
	p.n_string_table = h.nstrs;
	p.string_table = h.strs;
	p.time_nanos = w->time_nanos;
	p.duration_nanos = w->duration_nanos;
	p.period_type = &vt[2];
	p.period = 1000000000LL / w->hz;
	p.n_comment = 1;
	p.comment = &comment;
	p.default_sample_type = vt[1].type;
	rawlen = perftools__profiles__profile__get_packed_size(&p);
	raw = xmalloc(rawlen ? rawlen : 1);
	perftools__profiles__profile__pack(&p, raw);
	ret = build_gzip(raw, rawlen, out, outlen, cause);
	free(raw);
	for (i = h.nown; i < h.nstrs; i++)
		free(h.strs[i]);
	free(h.strs);
	free(mp);
	free(mpp);
	free(mapid);
	free(loc);
	free(locp);
	free(line);
	free(linep);
	free(fn);
	free(fnp);
	free(samp);
	free(sampp);
	free(vals);
	free(locids);
	free(lab);
	free(labp);
	return ret;
}

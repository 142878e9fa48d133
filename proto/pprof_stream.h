/*
 * pprof stream reader: a raw (inflated) perftools.profiles.Profile read in
 * place, one table entry or sample at a time, instead of being decoded
 * into protobuf-c's object tree (about 100 bytes per Sample, whatever the
 * sample holds). pprof_stream_open checks the bytes exactly as
 * pprof_check does (legacy format, then pprof_scan), so it accepts and
 * refuses what pprof_decode() + pprof_validate() do, with their causes;
 * what it then reads are the values protobuf-c would have decoded. It
 * keeps the header and a pointer per string; every other entry is read
 * off the wire when asked for, into buffers reused from one entry to the
 * next. Its memory is charged to a budget account. Not thread-safe.
 */
#ifndef PROFD_PPROF_STREAM_H
#define PROFD_PPROF_STREAM_H

#include <stddef.h>
#include <stdint.h>

struct budget_acct;

/* Profile.function, Profile.mapping, Location.line, Sample.label. */
struct pprof_stream_function {
	uint64_t	 id;
	int64_t		 name, system_name, filename, start_line;
};
struct pprof_stream_mapping {
	uint64_t	 id, memory_start, memory_limit, file_offset;
	int64_t		 filename, build_id;
	int		 has_functions, has_filenames, has_line_numbers;
	int		 has_inline_frames;
};
struct pprof_stream_line {
	uint64_t	 function_id;
	int64_t		 line, column;
};
struct pprof_stream_label {
	int64_t		 key, str, num, num_unit;
};

/* Profile.location; line points into the reader (valid until next). */
struct pprof_stream_location {
	uint64_t	 id, mapping_id, address;
	int		 is_folded;
	size_t		 n_line;
	const struct pprof_stream_line *line;
};

/* Profile.sample; the arrays point into the reader (valid until next). */
struct pprof_stream_sample {
	size_t		 n_location_id, n_value, n_label;
	const uint64_t	*location_id;
	const int64_t	*value;
	const struct pprof_stream_label *label;
};

/* The kinds of repeated entries, for counts and cursors. */
enum pprof_stream_kind {
	PPROF_STREAM_SAMPLE,
	PPROF_STREAM_MAPPING,
	PPROF_STREAM_LOCATION,
	PPROF_STREAM_FUNCTION,
	PPROF_STREAM_NKINDS
};

/* A profile being read (fields public for reading, set by open). */
struct pprof_stream {
	const uint8_t	 *raw, *end;
	struct budget_acct *acct;

	size_t		  n[PPROF_STREAM_NKINDS];
	size_t		  n_string;
	const uint8_t	**strs;		/* string i: its length prefix */
	size_t		  n_sample_type;
	int64_t		 *sample_type;	/* type, unit per sample type */
	size_t		  n_comment;
	int64_t		 *comment;
	int		  have_period_type;
	int64_t		  period_type, period_unit;
	int64_t		  drop_frames, keep_frames, time_nanos;
	int64_t		  duration_nanos, period, default_sample_type;
	int64_t		  doc_url;

	/* Where each kind's entries lie, and the next one to read. */
	const uint8_t	 *first[PPROF_STREAM_NKINDS];
	const uint8_t	 *last[PPROF_STREAM_NKINDS];	/* past the last */
	const uint8_t	 *at[PPROF_STREAM_NKINDS];

	/* Buffers reused from one entry to the next. */
	uint64_t	 *locs;
	int64_t		 *vals;
	struct pprof_stream_label *labels;
	struct pprof_stream_line *lines;
	size_t		  locs_cap, vals_cap, labels_cap, lines_cap;
};

/*
 * Checks raw[0..len) (see above) and opens it; raw must outlive the
 * reader. Returns 0, PPROF_EINVAL with *cause, PPROF_ENOMEM when acct (may
 * be NULL) refused memory, or PPROF_ECANCELED when *cancel (may be NULL;
 * read every few thousand fields) was set. Close it in every case.
 */
int	pprof_stream_open(struct pprof_stream *, const uint8_t *raw, size_t len,
	    struct budget_acct *acct, const volatile int *cancel,
	    char **cause);
/* Frees what the reader holds (not raw). */
void	pprof_stream_close(struct pprof_stream *);

/*
 * String i (< n_string) as protobuf-c's C string would be: up to its
 * first NUL. *len: OUT its length. Not NUL-terminated.
 */
const char *pprof_stream_string(const struct pprof_stream *, size_t i,
	    size_t *len);

/* Restarts the entries of kind k from the first. */
void	pprof_stream_rewind(struct pprof_stream *, enum pprof_stream_kind k);
/*
 * The next entry of its kind: 1 with *out filled, 0 after the last, -1
 * when acct refused the room for its lines or labels (PPROF_ENOMEM).
 */
int	pprof_stream_function(struct pprof_stream *,
	    struct pprof_stream_function *out);
int	pprof_stream_mapping(struct pprof_stream *,
	    struct pprof_stream_mapping *out);
int	pprof_stream_location(struct pprof_stream *,
	    struct pprof_stream_location *out);
int	pprof_stream_sample(struct pprof_stream *,
	    struct pprof_stream_sample *out);

#endif

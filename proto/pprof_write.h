/*
 * pprof wire writer: writes protobuf fields straight into a buffer, so a
 * profile can be serialized from whatever holds it (the merge's tables)
 * without first building protobuf-c's objects. The buffer is charged to a
 * budget account. In gzip mode the bytes are deflated as they come, a
 * chunk at a time, so only the compressed output is ever held whole.
 * Writes never fail one by one: the first refusal of memory marks the
 * writer failed and pprof_write_finish reports it. Not thread-safe.
 */
#ifndef PROFD_PPROF_WRITE_H
#define PROFD_PPROF_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

struct budget_acct;

/* The protobuf wire types the writer emits. */
#define PPROF_WRITE_VARINT	0
#define PPROF_WRITE_LEN		2

struct pprof_write {
	struct budget_acct *acct;
	int		 gzip;
	int		 failed;	/* memory refused: output is void */
	uint8_t		*buf;		/* bytes written (gzip: not yet
					   deflated) */
	size_t		 len, cap;
	z_stream	 zs;		/* gzip mode */
	int		 zinit;
	uint8_t		*gz;		/* gzip mode: the output */
	size_t		 gzlen, gzcap;
};

/* Bytes of v as a varint. */
static inline size_t
pprof_write_varint_size(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Bytes of a varint field (key below 16) holding v; 0 when v is 0. */
static inline size_t
pprof_write_field_size(uint64_t v)
{
	return v != 0 ? 1 + pprof_write_varint_size(v) : 0;
}

/*
 * Starts a writer charged to acct (may be NULL); gzip: deflate the bytes
 * (gzip format, level 1, as pprof_encode_gzip). Returns 0, or -1 with
 * *cause when zlib cannot start.
 */
int	pprof_write_init(struct pprof_write *, struct budget_acct *acct,
	    int gzip, char **cause);
/* Appends a varint. */
void	pprof_write_varint(struct pprof_write *, uint64_t v);
/* Appends a field key. */
void	pprof_write_key(struct pprof_write *, uint32_t field, unsigned wt);
/* Appends a varint field, left out when v is 0 (proto3). */
void	pprof_write_uint(struct pprof_write *, uint32_t field, uint64_t v);
/* Appends a length-delimited field's key and length; the body follows. */
void	pprof_write_len(struct pprof_write *, uint32_t field, size_t len);
/* Appends a length-delimited field with its bytes. */
void	pprof_write_bytes(struct pprof_write *, uint32_t field,
	    const void *p, size_t len);
/* Appends a ValueType message (string indices t and u) as field. */
void	pprof_write_value_type(struct pprof_write *, uint32_t field,
	    uint64_t t, uint64_t u);
/*
 * Ends the writing. Returns 0 with *out (charged to the account, exactly
 * *len bytes: free with budget_dealloc(acct, *out, *len)), or -1 with
 * *cause when memory was refused or zlib failed. The writer is done.
 */
int	pprof_write_finish(struct pprof_write *, uint8_t **out, size_t *len,
	    char **cause);
/* Frees a writer that will not be finished. */
void	pprof_write_abort(struct pprof_write *);

#endif

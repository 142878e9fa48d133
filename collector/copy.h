/*
 * profd --copy-to DEST: copies every profile of the configured store
 * (--data-dir or --store) into another (a data directory or a
 * postgresql:// URI), with its id, time, labels and bytes, then reads
 * both back and compares them. Resumable: profiles DEST already holds are
 * not copied again. See copy.c.
 */
#ifndef PROFD_COPY_H
#define PROFD_COPY_H

struct config;

/* Runs the copy and the check; prints a summary; returns the exit status. */
int	copy_run(const struct config *cfg);

#endif

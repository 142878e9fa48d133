/*
 * Pyroscope's flame graph ("levels") of a call tree: what
 * SelectMergeStacktraces, Diff and the legacy /pyroscope/render answer.
 * Level 0 is the root ("total"); each node is [x_offset, total, self,
 * name] (a diff: [left_offset, left_total, left_self, right_offset,
 * right_total, right_self, name]), offsets relative to the end of the
 * node before it in its level, children in the order of their names,
 * names numbered as Pyroscope numbers them. Past max_nodes, the children
 * under the max_nodes-th largest total (view_tree_min_value) are folded
 * into one "other" child per parent, as Pyroscope does. The baseline is
 * the left side of a diff, as Pyroscope's Diff(left, right) takes it.
 */
#ifndef PROFD_VIEW_LEVELS_H
#define PROFD_VIEW_LEVELS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "querier/v1/querier.pb-c.h"
#include "view/view_tree.h"

struct view_levels {
	const char	**names;	/* into the tree, "total", "other" */
	size_t		  nnames;
	int64_t		**levels;	/* the values of each level */
	size_t		 *nvalues;
	size_t		  nlevels;
	size_t		  nodes;
	int		  diff;
	int64_t		  total;	/* diff: left + right */
	int64_t		  max_self;
	int64_t		  left_ticks, right_ticks;	/* diff */
};

/*
 * The levels of t (0 max_nodes: every node); a diff (t built with a
 * baseline) has the baseline on the left. Valid while t is.
 */
void	view_levels_build(const struct view_tree *t, size_t max_nodes,
	    int diff, struct view_levels *out);
void	view_levels_clear(struct view_levels *);
/* The bytes the levels hold (with their messages' Level structs), about. */
size_t	view_levels_bytes(const struct view_levels *);
/*
 * At least what view_levels_build(t, max_nodes, diff) will hold and use
 * while it runs, known before building: for charging first.
 */
size_t	view_levels_bytes_max(const struct view_tree *t, size_t max_nodes,
	    int diff);

/* The protobuf-c messages of the levels (valid while lv is). */
Querier__V1__FlameGraph		*view_levels_flamegraph(
				    const struct view_levels *lv);
void				 view_levels_flamegraph_free(
				    Querier__V1__FlameGraph *);
Querier__V1__FlameGraphDiff	*view_levels_flamegraph_diff(
				    const struct view_levels *lv);
void				 view_levels_flamegraph_diff_free(
				    Querier__V1__FlameGraphDiff *);

/* The flamebearer object: {names, levels, numTicks, maxSelf}. */
json_t	*view_levels_flamebearer(const struct view_levels *lv);
/*
 * Pyroscope's render JSON of a single flame graph of sample type
 * name/unit: {version 1, flamebearer, metadata {format "single", spyName
 * "", sampleRate, units, name}, timeline {startTime, samples,
 * durationDelta, watermarks null}, groups null, heatmap null}; the
 * timeline's n sums from Unix second start, step seconds apart (the
 * caller fills empty buckets with 0, as Pyroscope's timeline.New).
 * units and sampleRate as Pyroscope's ExportToFlamebearer: cpu is
 * "samples" at 1e9, *_objects, goroutine and samples are "objects", else
 * unit, at 100. NULL if jansson could not allocate.
 */
json_t	*view_levels_render(const struct view_levels *lv, const char *name,
	    const char *unit, int64_t start, int64_t step,
	    const int64_t *samples, size_t n);
/*
 * The same of a diff: format "double", timeline null, leftTicks and
 * rightTicks (left out when 0, as Go's omitempty).
 */
json_t	*view_levels_render_diff(const struct view_levels *lv,
	    const char *name, const char *unit);

#endif

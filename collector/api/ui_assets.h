/*
 * The web UI's files, compiled into profd at build time by tools/ui_embed
 * from ui/ (the generated ui_assets.c defines the table).
 */
#ifndef PROFD_UI_ASSETS_H
#define PROFD_UI_ASSETS_H

#include <stddef.h>

struct ui_asset {
	const char		*name;		/* served as /ui/NAME */
	const char		*content_type;
	const char		*etag;		/* quoted */
	const unsigned char	*data;
	size_t			 len;
	const unsigned char	*gz;		/* the same, gzipped */
	size_t			 gzlen;
};

extern const struct ui_asset	ui_assets[];
extern const size_t		ui_assets_n;

#endif

/*
 * The web UI's files, served from the binary (see api_ui.c).
 */
#ifndef PROFD_API_UI_H
#define PROFD_API_UI_H

struct env;
struct evhttp_request;
struct params;

/* GET /, /ui, /ui/ and /ui/NAME. */
void	api_ui_get(struct env *, struct evhttp_request *,
	    const struct params *);

#endif

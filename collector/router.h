/*
 * The router: every request enters here on the loop thread. It finds the
 * handler for the path and method (the route table), checks the bearer
 * token when --auth-file is set, splits the query string and calls the
 * API handler with the request's environment; unknown paths get 404,
 * wrong methods 405 with Allow, and everything during shutdown 503.
 */
#ifndef PROFD_ROUTER_H
#define PROFD_ROUTER_H

struct env;
struct evhttp;
struct router;

/*
 * Routes http's requests to the handlers with env; loads the tokens of
 * auth_file (NULL: no tokens needed). Returns NULL with *cause on error.
 */
struct router	*router_new(struct env *, struct evhttp *,
		    const char *auth_file, char **cause);
/* Re-reads the auth file (SIGHUP); keeps the old tokens if it is bad. */
void		 router_reload_auth(struct router *);
void		 router_free(struct router *);

#endif

/*
 * Connect's error codes (connectrpc.com/docs/protocol, "Error Codes"):
 * profd's handlers answer HTTP statuses; on the Connect routes each
 * becomes the Connect code that means the same, sent with the HTTP
 * status Connect's table gives that code, in a {"code","message"} body.
 */
#ifndef PROFD_CONNERR_H
#define PROFD_CONNERR_H

struct evhttp_request;

/* Whether a request path (raw) is a Connect route. */
int		 connerr_is_connect(const char *uri);
/*
 * Marks req as a Connect call when its path is one (the router does, as
 * soon as the head is in: libevent forgets a refused request's URI
 * before its error is answered).
 */
void		 connerr_mark(struct evhttp_request *req);
/* Whether req is a Connect call (by its path, or its mark). */
int		 connerr_request(struct evhttp_request *req);
/* Takes the mark off before the reply goes out. */
void		 connerr_unmark(struct evhttp_request *req);
/* The Connect code for an HTTP status profd answers ("internal"...). */
const char	*connerr_code(int http_status);
/* The HTTP status Connect sends with that status's code. */
int		 connerr_status(int http_status);

#endif

#!/usr/bin/env python3
"""Sends N requests at once to 127.0.0.1:PORT, each a head announcing a
body of LEN bytes followed by as much of that body as the server takes,
until each connection is answered and closed (or SECONDS pass). Prints one
line "CODE COUNT" per status seen ("none": the connection ended with no
status line; "open": still open at the end), then "sent BYTES": the body
bytes the server took off all sockets. Used by test/e2e/http_early.sh: a
request refused from its head must be answered before its body is read.

usage: body_flood.py PORT N LEN 'HEAD' [SECONDS]
HEAD is the request line and headers with \\r\\n escapes; Content-Length
and the blank line are added. SECONDS bounds the run (default 20).
"""
import collections
import re
import selectors
import socket
import sys
import time

port, n, length = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
head = sys.argv[4].encode().decode("unicode_escape").encode("latin-1")
limit = float(sys.argv[5]) if len(sys.argv) > 5 else 20.0
head += b"Content-Length: %d\r\n\r\n" % length
piece = b"x" * 65536


def answered(got):
    """True once got holds a whole response (head and its body)."""
    h, sep, body = got.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", h)
    return bool(sep) and m is not None and len(body) >= int(m.group(1))


class Conn:
    def __init__(self):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setblocking(False)
        self.out = head
        self.left = length
        self.hrem = len(head)   # head bytes not sent yet
        self.got = b""
        self.closed = False


conns = [Conn() for _ in range(n)]
sel = selectors.DefaultSelector()
for c in conns:
    sel.register(c.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, c)
sent = 0
end = time.time() + limit
live = n
while live and time.time() < end:
    for key, ev in sel.select(timeout=0.2):
        c = key.data
        try:
            if ev & selectors.EVENT_READ:
                b = c.sock.recv(65536)
                if not b:
                    raise ConnectionResetError
                c.got += b
                if answered(c.got):
                    raise ConnectionResetError  # done: hang up
            if ev & selectors.EVENT_WRITE:
                if not c.out and c.left > 0:
                    c.out = piece[:min(len(piece), c.left)]
                    c.left -= len(c.out)
                k = c.sock.send(c.out)
                sent += max(0, k - c.hrem)
                c.hrem = max(0, c.hrem - k)
                c.out = c.out[k:]
                if not c.out and c.left == 0:
                    sel.modify(c.sock, selectors.EVENT_READ, c)
        except (ConnectionResetError, BrokenPipeError, OSError):
            c.closed = True
            sel.unregister(c.sock)
            c.sock.close()
            live -= 1

codes = collections.Counter()
for c in conns:
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", c.got)
    codes[m.group(1).decode() if m else ("none" if c.closed else "open")] += 1
    if not c.closed:
        c.sock.close()
for code, k in sorted(codes.items()):
    print(code, k)
print("sent", sent)

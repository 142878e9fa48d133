#!/usr/bin/env python3
"""Chunked request bodies for test/e2e/http_chunked.sh.

usage: chunked.py frame BODY OUT 'HEAD' [SIZE]
    Writes to OUT the request HEAD (request line and headers with \\r\\n
    escapes; Transfer-Encoding and the blank line are added) and BODY's
    bytes in chunks of SIZE (default 1000), each chunk-size line carrying
    a different kind of chunk extension (RFC 9112 7.1.1: names, token and
    quoted values, blanks around ';' and '=', a quoted ';' and '\\"'), the
    last chunk an extension too, then a trailer field.

usage: chunked.py endless PORT 'HEAD' PREFIX BYTES [SECONDS]
    Sends HEAD, then PREFIX, then up to BYTES bytes with no line end, until
    the server answers (or SECONDS pass, default 20). Prints "CODE SENT
    SECONDS": the status ("none" if no answer came), the bytes sent after
    the head and the time taken.
"""
import re
import socket
import sys
import time

EXTS = [b"", b";a", b";name=value", b" ; sp = x ", b';q="semi;colon"',
        b';q="esc\\"aped"', b";a=1;b;c=\"\"", b"\t;tab=1\t"]


def head_bytes(h):
    h = h.encode().decode("unicode_escape").encode("latin-1")
    return h + b"Transfer-Encoding: chunked\r\n\r\n"


def frame(body, out, head, size=1000):
    data = open(body, "rb").read()
    parts = [head_bytes(head)]
    for n, i in enumerate(range(0, len(data), size)):
        piece = data[i:i + size]
        parts.append(b"%x%s\r\n%s\r\n" % (len(piece), EXTS[n % len(EXTS)],
                                         piece))
    parts.append(b"0;last=yes\r\nX-Trailer: 1\r\n\r\n")
    open(out, "wb").write(b"".join(parts))


def endless(port, head, prefix, total, limit=20.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(head_bytes(head) + prefix.encode())
    s.setblocking(False)
    piece, sent, got = b"a" * 65536, 0, b""
    start = time.time()
    while time.time() - start < limit:
        try:
            b = s.recv(65536)
            if not b:
                break
            got += b
            if b"\r\n\r\n" in got:
                break
        except BlockingIOError:
            pass
        except ConnectionResetError:
            break
        if sent < total:
            try:
                sent += s.send(piece[:min(len(piece), total - sent)])
            except BlockingIOError:
                time.sleep(0.001)
            except (BrokenPipeError, ConnectionResetError):
                sent = total
        else:
            time.sleep(0.01)
    m = re.match(rb"HTTP/1\.[01] (\d{3})", got)
    print(m.group(1).decode() if m else "none", sent,
          "%.2f" % (time.time() - start))
    sys.stderr.buffer.write(got)


if sys.argv[1] == "frame":
    frame(sys.argv[2], sys.argv[3], sys.argv[4],
          int(sys.argv[5]) if len(sys.argv) > 5 else 1000)
else:
    endless(int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5]),
            float(sys.argv[6]) if len(sys.argv) > 6 else 20.0)

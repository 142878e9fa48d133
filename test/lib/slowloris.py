#!/usr/bin/env python3
"""Opens N connections to 127.0.0.1:PORT and trickles an upload request into
each one byte at a time (every 0.2 s) for SECONDS; prints how many of them
the server closed. Used by test/e2e/slow_clients.sh."""
import socket
import sys
import time

port, n, dur = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
req = (b"POST /api/0/profiles?service=slow&type=cpu HTTP/1.1\r\n"
       b"Host: x\r\nContent-Length: 100000\r\n\r\n")
socks = []
for _ in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.setblocking(False)
    socks.append(s)
closed = set()
t0 = time.time()
i = 0
while time.time() - t0 < dur and len(closed) < n:
    for k, s in enumerate(socks):
        if k in closed:
            continue
        try:
            s.send(req[i:i + 1] if i < len(req) else b"x")
            if s.recv(4096) == b"":
                closed.add(k)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(k)
    i += 1
    time.sleep(0.2)
print(len(closed))

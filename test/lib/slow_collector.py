#!/usr/bin/env python3
"""slow_collector.py PORTFILE MODE: a fake collector on 127.0.0.1:0 that
writes its port to PORTFILE, then for every connection: MODE "hang"
accepts and never answers (nor reads: the request sits in the socket
buffers); MODE "slow" reads the request and answers 200 after 0.3 s.
Prints one line per connection on stdout ("conn N") so a test can count
them. Runs until killed."""
import socket
import sys
import threading
import time


def slow(c):
    c.settimeout(5)
    try:
        buf = b""
        while b"\r\n\r\n" not in buf:
            d = c.recv(65536)
            if not d:
                return
            buf += d
        head, _, body = buf.partition(b"\r\n\r\n")
        n = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        while len(body) < n:
            d = c.recv(65536)
            if not d:
                return
            body += d
        time.sleep(0.3)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    except OSError:
        pass
    finally:
        c.close()


def main():
    portfile, mode = sys.argv[1], sys.argv[2]
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(s.getsockname()[1]))
    import os
    os.rename(portfile + ".tmp", portfile)
    held, n = [], 0
    while True:
        c, _ = s.accept()
        n += 1
        print("conn", n, flush=True)
        if mode == "hang":
            held.append(c)
        else:
            threading.Thread(target=slow, args=(c,), daemon=True).start()


main()

#!/usr/bin/env python3
"""Sends a file's bytes on one connection to 127.0.0.1:PORT and prints
"RESPONSES STATUSES STATE": how many status lines came back, their codes
(comma-separated, "-" for none) and STATE, closed (the server closed the
connection within WAIT seconds) or open. The raw replies go to stderr.
For requests curl will not send (smuggling attempts, malformed heads).

usage: rawhttp.py PORT FILE [WAIT]   (WAIT defaults to 2 seconds)
"""
import re
import socket
import sys
import time

port, path = int(sys.argv[1]), sys.argv[2]
wait = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
s = socket.create_connection(("127.0.0.1", port), timeout=5)
try:
    s.sendall(open(path, "rb").read())
except (BrokenPipeError, ConnectionResetError):
    pass
data, state, end = b"", "open", time.time() + wait
while time.time() < end:
    s.settimeout(max(0.05, end - time.time()))
    try:
        b = s.recv(65536)
    except socket.timeout:
        break
    except ConnectionResetError:
        state = "closed"
        break
    if not b:
        state = "closed"
        break
    data += b
codes = [c.decode() for c in re.findall(rb"HTTP/1\.[01] (\d{3}) ", data)]
print(len(codes), ",".join(codes) or "-", state)
sys.stderr.write(data.decode("latin-1"))

#!/usr/bin/env python3
"""Opens N idle connections to 127.0.0.1:PORT, holds them for SECONDS, then
closes them. Used by test/e2e/slow_clients.sh for --max-connections."""
import socket
import sys
import time

port, n, dur = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
time.sleep(dur)
for s in socks:
    s.close()

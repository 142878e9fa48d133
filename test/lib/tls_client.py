#!/usr/bin/env python3
"""TLS clients for test/e2e/tls.sh, on Python's ssl module (OpenSSL).

usage: tls_client.py keepalive HOST PORT CAFILE GOFILE
           one connection: GET /api/0/version, print "STATUS SERIAL";
           wait until GOFILE exists; the same request again on the same
           connection; print "STATUS SERIAL" (the certificate it was
           opened with) and the serial a new connection sees
       tls_client.py stall HOST PORT SECONDS [BYTES]
           a TCP connection that sends BYTES (hex; default nothing) and
           then nothing more: print how many seconds passed before the
           server closed it, or "open" after SECONDS
       tls_client.py hold HOST PORT CAFILE N
           N connections with their handshakes done; print "held N" and
           keep them until standard input closes
"""
import http.client
import socket
import ssl
import sys
import time


def context(cafile):
    ctx = ssl.create_default_context(cafile=cafile)
    return ctx


def serial(conn):
    return conn.sock.getpeercert().get("serialNumber", "?")


def keepalive(host, port, cafile, gofile):
    ctx = context(cafile)
    c = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=20)
    c.request("GET", "/api/0/version")
    r = c.getresponse()
    r.read()
    print(r.status, serial(c), flush=True)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            open(gofile).close()
            break
        except OSError:
            time.sleep(0.05)
    c.request("GET", "/api/0/version")
    r = c.getresponse()
    r.read()
    print(r.status, serial(c), flush=True)
    c.close()
    n = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=20)
    n.request("GET", "/api/0/version")
    r = n.getresponse()
    r.read()
    print(r.status, serial(n), flush=True)
    n.close()


def stall(host, port, seconds, data):
    s = socket.create_connection((host, int(port)))
    if data:
        s.sendall(bytes.fromhex(data))
    s.settimeout(float(seconds))
    t0 = time.time()
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
    except socket.timeout:
        print("open")
        return
    except OSError:
        pass
    print("%.1f" % (time.time() - t0))


def hold(host, port, cafile, n):
    ctx = context(cafile)
    socks = []
    for _ in range(int(n)):
        raw = socket.create_connection((host, int(port)), timeout=10)
        socks.append(ctx.wrap_socket(raw, server_hostname=host))
    print("held", len(socks), flush=True)
    sys.stdin.read()
    for s in socks:
        s.close()


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "keepalive":
        keepalive(*args)
    elif mode == "stall":
        stall(args[0], args[1], args[2], args[3] if len(args) > 3 else "")
    elif mode == "hold":
        hold(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()

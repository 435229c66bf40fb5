#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""HTTP/1.1 framing, judged by an independent parser both ways (issue 39, item 5).

Generates HTTP/1.1 requests (valid ones, and one or more of each request-smuggling class:
conflicting or malformed Content-Length, Transfer-Encoding other than exactly chunked, TE with CL,
framing fields named in Connection, bad chunk sizes and extensions, obs-fold, bare LF, bad field
names and values, Host errors, over-long headers), sends each on a fresh connection to
`backoff serve` and through `backoff proxy` to a recording upstream written here, and judges them
with h11 (Debian 12's python3-h11 0.14: a strict HTTP/1.1 parser written apart from Beast).

How it judges. Each case's bytes are the request under test, then a sentinel request
(GET /api?sentinel); request bodies carry the text of a request (GET /smuggled) so that a framing
that differs from h11's shows as an extra or a missing answer. The client sends everything, then
shuts down its sending side, and reads to the end.
  * h11 as the server (h11.Connection(h11.SERVER), fed the bytes 4 KiB at a time, then the end
    of the stream) predicts: the requests it completes (method, target, body), and whether it
    raises RemoteProtocolError after them.
  * serve: its answers, parsed with h11 as a client, must be one per request h11 completed, each
    with the status serve routes that request to (/api 200, /smuggled 404), and nothing more;
    where h11 raised, at most one more answer, a 4xx/5xx carrying `Connection: close`.
  * proxy: the same answers (the upstream answers 200 to everything); and the bytes the upstream
    received, parsed again with h11, must hold the same requests with the same bodies, and the
    same header fields but for what a proxy may change (hop-by-hop fields, framing, Via; trailer
    fields may be dropped but not merged into the header, RFC 9110 6.5.1). Where h11
    raised, nothing of the rejected request may reach the upstream as a complete request, nor as
    bytes that the upstream's h11 rejects (forwarded verbatim); a request cut off mid-body (the
    proxy streams bodies, so it had sent the header when it met a bad chunk) is noted only.
Where serve or the proxy reject what h11 accepts, that is a disagreement too, unless the case is
in ALLOWED_STRICTER below with its RFC reason; where they accept what h11 rejects, unless it is in
ALLOWED_LENIENT, and then they must frame it as the RFC does (given by an equivalent request that
h11 accepts).

Usage: /usr/bin/python3 tests/net/http_differential.py BACKOFF_BINARY [-v] [-k SUBSTRING]
       /usr/bin/python3 tests/net/http_differential.py --write-corpus fuzz/corpus/http_request
Exit 0 when every case agrees; 1 with one line per disagreement (case, what h11 said, what
serve/proxy did); 2 when it cannot run (no h11, the binary does not start). Each case's socket
operations time out (OP_TIMEOUT), the processes it starts are stopped whatever happens (and die
with it: PR_SET_PDEATHSIG), and it writes no file (--write-corpus aside). The allowed differences
that occurred are printed as `note:` lines.
"""

import ctypes
import os
import random
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

try:
    import h11
except ImportError:  # scripts/install-deps.sh installs python3-h11
    print("http_differential: cannot import h11 (Debian: apt-get install python3-h11; run with "
          "/usr/bin/python3)", file=sys.stderr)
    sys.exit(2)

OP_TIMEOUT = 2.0       # seconds, each socket operation
CASE_DEADLINE = 4.0    # seconds, reading one case's answers
H11_PIECE = 4096       # bytes fed to h11 at a time, as a server reading a socket would

SMUGGLE = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
SENTINEL = b"GET /api?sentinel HTTP/1.1\r\nHost: x\r\n\r\n"

# --------------------------------------------------------------------------------------------
# Allowed differences, each with its reason. Keyed by case name.

# h11 accepts, serve and the proxy reject: fine, for the reason given.
ALLOWED_STRICTER = {
    "te-and-cl": "RFC 9112 6.3: a request with both Transfer-Encoding and Content-Length "
                 "\"ought to be handled as an error\"; Beast rejects it (h11 lets TE win)",
    "cl-and-te": "RFC 9112 6.3, as te-and-cl (the fields in the other order)",
    "http10-te-chunked": "RFC 9112 6.1: an HTTP/1.0 message with Transfer-Encoding MUST be "
                         "treated as if its framing is faulty (h11 reads it as chunked)",
    "header-over-8k": "RFC 9110 5.4: a server MAY refuse a header larger than it wishes to "
                      "process with a 4xx; serve's limit is 8 KiB, h11's 16 KiB",
    "bare-lf": "RFC 9112 2.2: a recipient MAY recognize a single LF as a line terminator (h11 "
               "does; rejecting is allowed and safer)",
    "chunk-ext-empty": "RFC 9112 7.1.1: chunk-ext-name is a token (1 or more tchar); h11's "
                       "chunk-ext is \";.*\", lenient",
    "chunk-size-trailing-space": "RFC 9112 7.1: chunk = chunk-size [ chunk-ext ] CRLF, whitespace "
                                 "only around ';' (BWS); h11 allows OWS before the CRLF",
    "ctl-in-value": "RFC 9110 5.5: field values with CTL characters are invalid (a recipient "
                    "MAY retain them; rejecting is allowed); h11 accepts any byte but NUL and "
                    "whitespace",
    "del-in-value": "RFC 9110 5.5: DEL (0x7F) is a CTL, as ctl-in-value",
    # Beast merges trailer fields into the header fields, so serve sees these as a second
    # Content-Length, Transfer-Encoding or Host and refuses the request.
    "chunked-trailer-content-length": "RFC 9110 6.5.1: fields that describe framing or routing "
                                      "cannot be trailers, and 6.5.2: a sender MUST NOT "
                                      "generate a trailer field its definition does not permit",
    "chunked-trailer-transfer-encoding": "RFC 9110 6.5.1 and 6.5.2, as "
                                         "chunked-trailer-content-length",
    "chunked-trailer-host": "RFC 9110 6.5.1 and 6.5.2 (Host routes the request), as "
                            "chunked-trailer-content-length",
}

# h11 rejects, serve and the proxy may accept, framing it as h11 frames the equivalent request
# (the second element: a function of the case's bytes giving that request).
ALLOWED_LENIENT = {
    "te-empty-list-element": (
        "RFC 9110 5.6.1: a recipient MUST parse and ignore a reasonable number of empty list "
        "elements, so \", chunked\" is chunked (h11 compares the whole value with \"chunked\")",
        lambda data: data.replace(b"Transfer-Encoding: , chunked", b"Transfer-Encoding: chunked")),
}

# --------------------------------------------------------------------------------------------
# The cases.


def request(method=b"POST", target=b"/api", headers=(), body=b"", version=b"HTTP/1.1",
            host=b"x", eol=b"\r\n"):
    lines = [method + b" " + target + b" " + version]
    if host is not None:
        lines.append(b"Host: " + host)
    lines += list(headers)
    return eol.join(lines) + eol + eol + body


def chunked(*chunks, ext=b"", trailers=(), eol=b"\r\n"):
    out = b""
    for c in chunks:
        out += b"%x" % len(c) + ext + eol + c + eol
    return out + b"0" + eol + b"".join(t + eol for t in trailers) + eol


def cl(n):
    return b"Content-Length: " + str(n).encode()


TE = b"Transfer-Encoding: chunked"
S = SMUGGLE
N = len(SMUGGLE)


def cases():
    out = []

    def add(name, data):
        out.append((name, data))

    # Valid requests.
    add("get", request(b"GET", b"/api"))
    add("post-cl-0", request(headers=[cl(0)]))
    add("post-cl-small", request(headers=[cl(5)], body=b"hello"))
    add("post-cl-smuggle", request(headers=[cl(N)], body=S))
    add("chunked-one", request(headers=[TE], body=chunked(S)))
    add("chunked-several", request(headers=[TE], body=chunked(S[:7], S[7:20], S[20:])))
    add("chunked-ext", request(headers=[TE], body=chunked(S[:10], S[10:], ext=b";name=value")))
    add("chunked-ext-quoted", request(headers=[TE], body=chunked(S, ext=b';a;b="q;r"')))
    add("chunked-trailers", request(headers=[TE, b"Trailer: X-Sum"],
                                    body=chunked(S, trailers=[b"X-Sum: 1", b"X-More: 2"])))
    add("chunked-upper-hex", request(headers=[TE], body=b"%X\r\n" % N + S + b"\r\n0\r\n\r\n"))
    add("chunked-size-leading-zeros", request(headers=[TE], body=b"000%x\r\n" % N + S +
                                              b"\r\n0\r\n\r\n"))
    add("cl-duplicate-identical", request(headers=[cl(N), cl(N)], body=S))
    add("cl-list-identical", request(headers=[b"Content-Length: %d, %d" % (N, N)], body=S))
    add("cl-leading-zeros", request(headers=[b"Content-Length: 00%d" % N], body=S))
    add("cl-leading-space", request(headers=[b"Content-Length:  %d" % N], body=S))
    add("cl-trailing-space", request(headers=[b"Content-Length: %d  " % N], body=S))
    add("te-Chunked-case", request(headers=[b"Transfer-Encoding: Chunked"], body=chunked(S)))
    add("te-leading-space", request(headers=[b"Transfer-Encoding:   chunked"], body=chunked(S)))
    add("te-tab", request(headers=[b"Transfer-Encoding:\tchunked\t"], body=chunked(S)))
    add("field-names-mixed-case", request(headers=[b"tRaNsFeR-eNcOdInG: chunked"],
                                          body=chunked(S)))
    add("connection-content-length",
        request(headers=[b"Connection: Content-Length", cl(N)], body=S))
    add("connection-transfer-encoding",
        request(headers=[b"Connection: Transfer-Encoding", TE], body=chunked(S)))
    add("connection-keep-alive-te", request(headers=[b"Connection: keep-alive, Transfer-Encoding",
                                                     TE], body=chunked(S)))
    add("connection-close-body", request(headers=[b"Connection: close", cl(N)], body=S))
    add("http10-body", request(headers=[cl(N)], body=S, version=b"HTTP/1.0"))
    add("http10-no-host", request(b"GET", host=None, version=b"HTTP/1.0"))
    add("obs-fold", request(headers=[b"X-Folded: a", b" b", cl(N)], body=S))
    add("obs-fold-content-length", request(headers=[b"Content-Length:", b" %d" % N], body=S))
    add("obs-fold-transfer-encoding", request(headers=[b"Transfer-Encoding:", b" chunked"],
                                              body=chunked(S)))
    add("chunked-trailer-content-length",
        request(headers=[TE], body=chunked(S, trailers=[b"Content-Length: 5"])))
    add("chunked-trailer-host",
        request(headers=[TE], body=chunked(S, trailers=[b"Host: elsewhere"])))
    add("chunked-trailer-transfer-encoding",
        request(headers=[TE], body=chunked(S, trailers=[b"Transfer-Encoding: chunked"])))
    add("chunked-large-then-bad-size",
        request(headers=[TE], body=b"5000\r\n" + b"a" * 0x5000 + b"\r\nzz\r\n" + S +
                b"\r\n0\r\n\r\n"))
    add("cl-large-body", request(headers=[cl(40000 + N)], body=b"b" * 40000 + S))
    add("header-over-8k", request(b"GET", headers=[b"X-Long: " + b"a" * 12000]))

    # Framing attacks.
    add("cl-conflict-two-fields", request(headers=[cl(5), cl(N)], body=S))
    add("cl-conflict-list", request(headers=[b"Content-Length: 5, %d" % N], body=S))
    add("cl-plus", request(headers=[b"Content-Length: +%d" % N], body=S))
    add("cl-hex", request(headers=[b"Content-Length: 0x%x" % N], body=S))
    add("cl-two-numbers", request(headers=[b"Content-Length: 5 %d" % N], body=S))
    add("cl-negative", request(headers=[b"Content-Length: -1"], body=S))
    add("cl-empty", request(headers=[b"Content-Length: "], body=S))
    add("cl-junk-suffix", request(headers=[b"Content-Length: %dabc" % N], body=S))
    add("cl-overflow", request(headers=[b"Content-Length: 99999999999999999999999"], body=S))
    add("te-and-cl", request(headers=[TE, cl(N)], body=chunked(S)))
    add("cl-and-te", request(headers=[cl(5), TE], body=chunked(S)))
    for name, value in [("chunked-identity", b"chunked, identity"), ("gzip", b"gzip"),
                        ("xchunked", b"xchunked"), ("chunked-chunked", b"chunked, chunked"),
                        ("identity", b"identity"), ("gzip-chunked", b"gzip, chunked"),
                        ("chunked-semicolon", b"chunked;q=1"), ("vtab", b"\x0bchunked"),
                        ("quoted", b'"chunked"')]:
        add("te-" + name, request(headers=[b"Transfer-Encoding: " + value], body=chunked(S)))
    add("te-empty-list-element", request(headers=[b"Transfer-Encoding: , chunked"],
                                         body=chunked(S)))
    add("te-two-fields", request(headers=[TE, TE], body=chunked(S)))
    add("te-two-fields-gzip-chunked", request(headers=[b"Transfer-Encoding: gzip", TE],
                                              body=chunked(S)))
    add("te-space-before-colon", request(headers=[b"Transfer-Encoding : chunked"],
                                         body=chunked(S)))
    add("cl-space-before-colon", request(headers=[b"Content-Length : %d" % N], body=S))
    add("http10-te-chunked", request(headers=[TE], body=chunked(S), version=b"HTTP/1.0"))
    for name, size in [("minus-one", b"-1"), ("0x-prefix", b"0x10"),
                       ("hex-overflow", b"ffffffffffffffffff"), ("empty", b""),
                       ("junk", b"5g")]:
        add("chunk-size-" + name, request(headers=[TE], body=size + b"\r\n" + S + b"\r\n0\r\n\r\n"))
    add("chunk-ext-empty", request(headers=[TE], body=b"%x;\r\n" % N + S + b"\r\n0\r\n\r\n"))
    add("chunk-size-trailing-space", request(headers=[TE], body=b"%x \r\n" % N + S +
                                             b"\r\n0\r\n\r\n"))
    add("chunk-missing-crlf", request(headers=[TE], body=b"5\r\nhelloXX" + chunked(S)))
    add("chunk-data-longer", request(headers=[TE], body=b"3\r\nhello\r\n0\r\n\r\n"))
    add("chunk-bare-lf", request(headers=[TE], body=chunked(S, eol=b"\n")))
    add("chunk-no-last-chunk", request(headers=[TE], body=b"%x\r\n" % N + S + b"\r\n"))
    add("host-two-fields", request(b"GET", headers=[b"Host: y"]))
    add("host-missing", request(b"GET", host=None))
    add("fold-at-start", request(headers=[cl(N)], body=S).replace(b"\r\nHost: x", b"\r\n Host: x"))
    add("bare-lf", request(headers=[cl(N)], body=S, eol=b"\n"))
    add("cr-in-value", request(headers=[b"X-Bad: a\rb", cl(N)], body=S))
    add("nul-in-value", request(headers=[b"X-Bad: a\x00b", cl(N)], body=S))
    add("ctl-in-value", request(headers=[b"X-Bad: a\x01b", cl(N)], body=S))
    add("del-in-value", request(headers=[b"X-Bad: a\x7fb", cl(N)], body=S))
    add("header-absurdly-long", request(b"GET", headers=[b"X-Long: " + b"a" * 100_000]))

    # Seeded combinations of valid framing: random chunkings, extensions and field-name case.
    rng = random.Random(39)
    for i in range(8):
        cuts = sorted(rng.sample(range(1, N), rng.randint(0, 4)))
        pieces = [S[a:b] for a, b in zip([0] + cuts, cuts + [N])]
        body = b""
        for p in pieces:
            ext = rng.choice([b"", b";x", b";x=1", b';x="a b"'])
            size = rng.choice([b"%x", b"%X", b"0%x"]) % len(p)
            body += size + ext + b"\r\n" + p + b"\r\n"
        body += b"0\r\n" + rng.choice([b"", b"X-T: 1\r\n"]) + b"\r\n"
        name = "".join(c.upper() if rng.random() < 0.5 else c for c in "transfer-encoding")
        add("random-%d-chunked-%d-pieces" % (i, len(pieces)),
            request(headers=[name.encode() + b": chunked"], body=body))
    return out


# --------------------------------------------------------------------------------------------
# h11's judgement.


class Parse:
    """What h11, as a server, makes of a connection's bytes."""

    def __init__(self):
        self.requests = []      # (method, target, body) of each request completed
        self.fields = []        # (header fields, trailer fields) of each, names in lower case
        self.error = None       # RemoteProtocolError's text, or None
        self.at_eof = False     # the error came with the end of the stream (a message cut off)
        self.partial = False    # the error came after the header of a request was accepted
        self.closed = False     # the connection had to close (HTTP/1.0, Connection: close)

    def describe(self):
        text = "%d request(s)" % len(self.requests)
        if self.requests:
            text += " " + ", ".join("%s %s body %d" % (m.decode(), t.decode(), len(b))
                                    for m, t, b in self.requests)
        if self.error:
            text += "; then rejects: %s%s" % (self.error, " (at the end of the stream)"
                                              if self.at_eof else "")
        return text


def h11_parse(data, piece=H11_PIECE):
    result = Parse()
    conn = h11.Connection(h11.SERVER)
    pieces = [data[i:i + piece] for i in range(0, len(data), piece)] + [b""]
    current = None
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                if not pieces:
                    break
                chunk = pieces.pop(0)
                result.at_eof = chunk == b""
                conn.receive_data(chunk)
                continue
            if isinstance(event, h11.Request):
                current = [event.method, event.target, bytearray(), list(event.headers)]
                result.partial = True
            elif isinstance(event, h11.Data):
                current[2] += event.data
            elif isinstance(event, h11.EndOfMessage):
                result.requests.append((current[0], current[1], bytes(current[2])))
                result.fields.append((current[3], list(event.headers)))
                result.partial = False
                conn.send(h11.Response(status_code=200, headers=[("Content-Length", "0")]))
                conn.send(h11.EndOfMessage())
                if conn.our_state is h11.MUST_CLOSE:
                    result.closed = True
                    break
                conn.start_next_cycle()
            elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                break
    except h11.RemoteProtocolError as e:
        result.error = str(e) or type(e).__name__
    if result.error is None:
        result.at_eof = False
    return result


def expected_status(method, target):
    """serve's status for a request it parsed (handler.cpp route_request)."""
    path = target.split(b"?")[0]
    if path == b"/api":
        return 200
    if path == b"/metrics":
        return 200 if method in (b"GET", b"HEAD") else 405
    return 404


# --------------------------------------------------------------------------------------------
# Talking to serve and the proxy.


class Answers:
    def __init__(self):
        self.statuses = []       # status of each complete answer
        self.closes = []         # whether each said Connection: close
        self.problem = None      # an answer that does not parse, or a reset, or a timeout

    def describe(self):
        text = "answers %s" % (self.statuses or "none")
        if self.problem:
            text += " (%s)" % self.problem
        return text


def parse_answers(raw, methods):
    """Parses `raw` with h11 as a client; `methods` are the requests' methods, in order."""
    out = Answers()
    conn = h11.Connection(h11.CLIENT)
    conn.receive_data(raw)
    conn.receive_data(b"")
    i = 0
    try:
        while True:
            if not conn.trailing_data[0]:
                return out  # the stream ended after the last answer
            method = methods[i] if i < len(methods) else b"GET"
            conn.send(h11.Request(method=method, target="/", headers=[("Host", "x")]))
            conn.send(h11.EndOfMessage())
            status = None
            while True:
                event = conn.next_event()
                if isinstance(event, h11.Response):
                    status = event.status_code
                    close = any(n.lower() == b"connection" and b"close" in v.lower()
                                for n, v in event.headers)
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed) or event is h11.NEED_DATA:
                    if status is not None:
                        out.problem = "an answer cut off"
                    return out
            out.statuses.append(status)
            out.closes.append(close)
            i += 1
            if conn.their_state is h11.MUST_CLOSE or conn.our_state is h11.MUST_CLOSE:
                if conn.trailing_data[0]:
                    out.problem = "bytes after an answer that closes the connection"
                return out
            conn.start_next_cycle()
    except (h11.RemoteProtocolError, h11.LocalProtocolError) as e:
        out.problem = "an answer h11 cannot parse: %s" % e
    return out


def exchange(port, data):
    """Sends `data` on a new connection, shuts down the sending side, returns what came back."""
    raw = b""
    problem = None
    deadline = time.monotonic() + CASE_DEADLINE
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=OP_TIMEOUT)
    except OSError as e:
        return raw, "connect: %s" % (e.strerror or e)
    with s:
        s.settimeout(OP_TIMEOUT)
        try:
            s.sendall(data)
            s.shutdown(socket.SHUT_WR)
        except OSError as e:
            problem = "send: %s" % (e.strerror or e)
        while time.monotonic() < deadline:
            try:
                got = s.recv(65536)
            except socket.timeout:
                problem = "no end of the answers within %.0f s" % OP_TIMEOUT
                break
            except OSError as e:
                problem = problem or "recv: %s" % (e.strerror or e)
                break
            if not got:
                break
            raw += got
        else:
            problem = "no end of the answers within %.0f s" % CASE_DEADLINE
    return raw, problem


class Upstream:
    """A raw TCP server that records every byte per connection, tagged with the case running
    when the connection was accepted, and answers each request its h11 parses with 200."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.case = None
        self.lock = threading.Lock()
        self.records = {}   # case -> list of [bytearray, open]
        self.stopping = False
        self.threads = []

    def start(self):
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()

    def _accept(self):
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                record = [bytearray(), True]
                self.records.setdefault(self.case, []).append(record)
            t = threading.Thread(target=self._serve, args=(conn, record), daemon=True)
            t.start()

    def _serve(self, conn, record):
        parser = h11.Connection(h11.SERVER)
        broken = False
        conn.settimeout(OP_TIMEOUT)
        try:
            while True:
                # After a request the upstream cannot parse, wait a little for anything more
                # the proxy sends, then close.
                if broken:
                    ready, _, _ = select.select([conn], [], [], 0.3)
                    if not ready:
                        break
                got = conn.recv(65536)
                if not got:
                    break
                with self.lock:
                    record[0] += got
                if broken:
                    continue
                parser.receive_data(got)
                try:
                    while True:
                        event = parser.next_event()
                        if event is h11.NEED_DATA or event is h11.PAUSED:
                            break
                        if isinstance(event, h11.EndOfMessage):
                            answer = parser.send(h11.Response(
                                status_code=200, headers=[("Content-Length", "0")]))
                            answer += parser.send(h11.EndOfMessage())
                            conn.sendall(answer)
                            if parser.our_state is h11.MUST_CLOSE:
                                broken = True
                                break
                            parser.start_next_cycle()
                except h11.RemoteProtocolError:
                    broken = True
        except OSError:
            pass
        finally:
            conn.close()
            with self.lock:
                record[1] = False

    def take(self, case, wait=2.0):
        """The byte streams of the connections accepted during `case`, once all closed."""
        # A connection the proxy opened just before it closed the client's may still wait to be
        # accepted: a moment for the accept thread, then none pending and all closed.
        time.sleep(0.02)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            pending, _, _ = select.select([self.sock], [], [], 0)
            with self.lock:
                records = self.records.get(case, [])
                if not pending and not any(r[1] for r in records):
                    break
            time.sleep(0.01)
        with self.lock:
            records = self.records.pop(case, [])
            return [bytes(r[0]) for r in records], any(r[1] for r in records)

    def stop(self):
        self.stopping = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def die_with_parent():
    # The process gets SIGKILL if this script dies (ctest's timeout kills with SIGKILL).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Process:
    """A backoff subcommand; its port is read from its first stderr line."""

    def __init__(self, name, argv, pattern):
        self.name = name
        self.stderr_lines = []
        self.proc = None
        for attempt in range(20):  # the binary may be relinked under us
            try:
                self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                             preexec_fn=die_with_parent)
                break
            except OSError as e:
                if attempt == 19:
                    raise RuntimeError("%s: cannot start %s: %s" % (name, argv[0], e))
                time.sleep(0.5)
        self.port = None
        deadline = time.monotonic() + 20
        fd = self.proc.stderr.fileno()
        pending = b""
        while self.port is None:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise RuntimeError("%s: no 'listening on' line within 20 s" % name)
            got = os.read(fd, 4096)
            if not got:
                raise RuntimeError("%s exited at start (%s): %s" % (
                    name, self.proc.wait(), b"".join(self.stderr_lines).decode(errors="replace")))
            pending += got
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                self.stderr_lines.append(line + b"\n")
                m = re.search(pattern, line)
                if m:
                    self.port = int(m.group(1))
        self.stderr_lines.append(pending)
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr_lines.append(line)

    def stop(self):
        """SIGTERM, then SIGKILL after 10 s; returns its exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return "killed after 10 s"

    def sanitizer_report(self):
        text = b"".join(self.stderr_lines).decode(errors="replace")
        m = re.search(r"(ERROR: \w+Sanitizer.*|runtime error:.*)", text)
        return m.group(1) if m else None


# --------------------------------------------------------------------------------------------
# The judgement of one case.


def judge_answers(who, case, h, answers, allowed_stricter, notes=None):
    """Disagreements between h11's parse `h` and the answers serve or the proxy gave; an allowed
    difference goes to `notes`."""
    problems = []
    said = "h11: " + h.describe()
    did = "%s: %s" % (who, answers.describe())
    k = len(h.requests)
    want = [expected_status(m, t) if who == "serve" else 200 for m, t, _ in h.requests]
    got = answers.statuses
    if answers.problem and not answers.problem.startswith(("recv", "send")):
        problems.append("%s | %s | %s" % (case, said, did))
        return problems
    if h.error is None:
        if got == want:
            return problems
        # Stricter: one 4xx/5xx in place of the request under test, and nothing more. A
        # rejection of a later request (the sentinel, a plain GET) is a framing difference.
        i = next((j for j, (g, w) in enumerate(zip(got, want)) if g != w), len(got))
        stricter = i == 0 and len(got) == 1 and got[0] >= 400
        if stricter and case in allowed_stricter:
            if notes is not None:
                notes.append("%s: %s rejects (%d) what h11 accepts, allowed: %s" % (
                    case, who, got[0], ALLOWED_STRICTER[case]))
            return problems
        what = "stricter than h11: rejects request %d" % (i + 1) if stricter else \
            "framed differently"
        problems.append("%s | %s | %s, %s (expected %s)" % (case, said, did, what, want))
        return problems
    # h11 rejected after k requests.
    if got[:k] != want[:k]:
        problems.append("%s | %s | %s, differs before h11's error (expected %s then a 4xx/5xx)"
                        % (case, said, did, want))
    elif len(got) > k + 1:
        problems.append("%s | %s | %s, accepted what h11 rejects: %d answer(s) where h11 "
                        "completes %d request(s), then rejects" % (case, said, did, len(got), k))
    elif len(got) == k + 1 and got[k] < 400:
        problems.append("%s | %s | %s, accepted the request h11 rejects (status %d)"
                        % (case, said, did, got[k]))
    elif len(got) == k + 1 and not answers.closes[k]:
        problems.append("%s | %s | %s, rejected without Connection: close" % (case, said, did))
    return problems


# Fields a proxy does not forward as received (RFC 9110 7.6.1 hop-by-hop, and the framing,
# which it may redo), and the ones it adds (Via; Host for an HTTP/1.0 request without one).
NOT_FORWARDED = {b"connection", b"keep-alive", b"proxy-connection", b"te", b"trailer",
                 b"upgrade", b"transfer-encoding", b"content-length", b"expect"}
ADDED = {b"via", b"transfer-encoding", b"content-length"}


def field_differences(client, upstream):
    """How the header section the upstream got differs from the client's, beyond what a proxy
    may change; empty when it does not."""
    (headers, trailers), (up_headers, _) = client, upstream
    named = {t.strip() for n, v in headers if n == b"connection" for t in v.lower().split(b",")}
    sent = sorted((n, v) for n, v in headers if n not in NOT_FORWARDED and n not in named)
    got = sorted((n, v) for n, v in up_headers if n not in ADDED)
    if not any(n == b"host" for n, _ in headers):
        got = [(n, v) for n, v in got if n != b"host"]
    if sent == got:
        return ""
    missing = [f for f in sent if f not in got]
    added = [f for f in got if f not in sent]
    text = []
    if added:
        merged = [f for f in added if f in trailers]
        text.append("added %s%s" % (b", ".join(n + b": " + v for n, v in added).decode(
            errors="replace"), " (trailer fields merged into the header section, RFC 9110 "
                               "6.5.1)" if merged else ""))
    if missing:
        text.append("dropped %s" % b", ".join(n + b": " + v for n, v in missing).decode(
            errors="replace"))
    return "; ".join(text)


def judge_upstream(case, h, streams, still_open):
    """Disagreements between h11's parse of what the client sent and what reached the upstream."""
    problems, notes = [], []
    said = "h11: " + h.describe()
    forwarded, forwarded_fields, rejected_upstream, cut_off = [], [], [], False
    for stream in streams:
        u = h11_parse(stream)
        forwarded += u.requests
        forwarded_fields += u.fields
        if u.error:
            if u.at_eof:
                cut_off = True
            else:
                rejected_upstream.append(u.error)
    did = "upstream got %d request(s)%s" % (len(forwarded), (" " + ", ".join(
        "%s %s body %d" % (m.decode(), t.decode(), len(b)) for m, t, b in forwarded))
        if forwarded else "")
    if rejected_upstream:
        did += "; then bytes its h11 rejects: %s" % rejected_upstream[0]
    elif cut_off:
        did += "; then a request cut off"
    if still_open:
        did += "; the upstream connection still open after 2 s"
    want = h.requests
    if h.error is None:
        if forwarded != want or rejected_upstream or cut_off:
            if not forwarded and not rejected_upstream and not cut_off:
                return problems, notes  # nothing forwarded: the proxy rejected (judged by answers)
            if forwarded == want[:len(forwarded)] and not rejected_upstream and not \
                    cut_off:
                return problems, notes  # stopped early: judged by its answers
            problems.append("%s | %s | proxy: %s, framed differently" % (case, said, did))
            return problems, notes
        for i, (client, upstream) in enumerate(zip(h.fields, forwarded_fields)):
            differences = field_differences(client, upstream)
            if differences:
                problems.append("%s | %s | proxy: request %d reached the upstream with its header "
                                "fields changed: %s" % (case, said, i + 1, differences))
        return problems, notes
    k = len(want)
    if forwarded[:k] != want or len(forwarded) > k:
        problems.append("%s | %s | proxy: %s, forwarded a different framing" % (case, said, did))
    elif rejected_upstream:
        problems.append("%s | %s | proxy: %s, forwarded what h11 rejects" % (case, said, did))
    elif cut_off:
        notes.append("%s: the proxy forwarded the header and part of the body, then cut the "
                     "upstream connection (h11: %s)" % (case, h.error))
    return problems, notes


# The cases written to the HTTP fuzzer's seed corpus (fuzz/corpus/http_request/NAME.bin) by
# --write-corpus: one per attack class, and the valid framings they vary. Small ones only (the
# over-long headers would raise libFuzzer's max_len for every input).
CORPUS_CASES = [
    "chunked-several", "chunked-ext-quoted", "chunked-trailers", "cl-duplicate-identical",
    "cl-list-identical", "connection-content-length", "connection-transfer-encoding",
    "obs-fold-content-length", "obs-fold-transfer-encoding", "chunked-trailer-content-length",
    "http10-body", "cl-conflict-two-fields", "cl-conflict-list", "cl-plus", "cl-hex",
    "cl-two-numbers", "cl-overflow", "te-and-cl", "te-chunked-identity", "te-gzip",
    "te-xchunked", "te-chunked-chunked", "te-gzip-chunked", "te-empty-list-element",
    "te-two-fields", "te-space-before-colon", "http10-te-chunked", "chunk-size-minus-one",
    "chunk-size-0x-prefix", "chunk-size-hex-overflow", "chunk-size-empty", "chunk-ext-empty",
    "chunk-missing-crlf", "chunk-bare-lf", "host-two-fields", "host-missing", "fold-at-start",
    "bare-lf", "nul-in-value", "ctl-in-value",
]


def write_corpus(folder):
    """One file per class: a read-size byte (the fuzzer's first byte: 0 reads all the buffer
    takes, n reads n bytes at a time; alternated so that splits get seeds too), then the case's
    bytes and the sentinel, as sent here."""
    by_name = dict(cases())
    for i, name in enumerate(CORPUS_CASES):
        read_size = bytes([0 if i % 2 == 0 else 1 + (i * 7) % 31])
        with open(os.path.join(folder, name + ".bin"), "wb") as f:
            f.write(read_size + by_name[name] + SENTINEL)
    print("wrote %d files to %s" % (len(CORPUS_CASES), folder))


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv[1:] if a != "-v"]
    if len(args) == 2 and args[0] == "--write-corpus":
        write_corpus(args[1])
        return 0
    only = None
    if "-k" in args:
        i = args.index("-k")
        only = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1:
        print(next(p for p in __doc__.split("\n\n") if p.startswith("Usage")), file=sys.stderr)
        return 2
    binary = args[0]
    if not os.access(binary, os.X_OK):
        print("http_differential: %s is not an executable" % binary, file=sys.stderr)
        return 2

    all_cases = [(n, d) for n, d in cases() if only is None or only in n]
    names = [n for n, _ in all_cases]
    assert len(set(names)) == len(names), "case names must be unique"
    for name in list(ALLOWED_STRICTER) + list(ALLOWED_LENIENT) + CORPUS_CASES:
        assert name in [n for n, _ in cases()], "a name that is no case: " + name

    # SIGTERM (a ctest timeout, a user) stops the processes as the end of a run does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    started = time.monotonic()
    upstream = Upstream()
    serve = proxy = None
    problems, notes = [], []
    try:
        serve = Process("serve", [binary, "serve", "--port", "0", "--base-delay", "0", "-q",
                                  "--threads", "1", "--header-timeout", "3s",
                                  "--idle-timeout", "3s"],
                        rb"listening on http://127\.0\.0\.1:(\d+)/")
        proxy = Process("proxy", [binary, "proxy", "--listen", "127.0.0.1:0", "--upstream",
                                  "127.0.0.1:%d" % upstream.port, "--upstream-timeout", "3s",
                                  "--header-timeout", "3s", "--idle-timeout", "3s"],
                        rb"listening on http://127\.0\.0\.1:(\d+),")
        upstream.start()
        for name, data in all_cases:
            stream = data + SENTINEL
            h = h11_parse(stream)
            stricter = set(ALLOWED_STRICTER)
            if name in ALLOWED_LENIENT and h.error:
                # Rejecting as h11 does is right; accepting is too, with the RFC's framing.
                alternative = h11_parse(ALLOWED_LENIENT[name][1](stream))
                assert alternative.error is None, name
            else:
                alternative = None
            if verbose:
                print("%-34s h11: %s" % (name, h.describe()))

            raw, problem = exchange(serve.port, stream)
            answers = parse_answers(raw, [m for m, _, _ in h.requests])
            answers.problem = answers.problem or problem
            found = judge_answers("serve", name, h, answers, stricter, notes)
            if found and alternative and not judge_answers("serve", name, alternative, answers,
                                                           stricter):
                found = []
                notes.append("%s: serve accepts what h11 rejects, allowed: %s" % (
                    name, ALLOWED_LENIENT[name][0]))
            problems += found
            if verbose:
                print("%-34s serve: %s" % ("", answers.describe()))

            upstream.case = name
            raw, problem = exchange(proxy.port, stream)
            answers = parse_answers(raw, [m for m, _, _ in h.requests])
            answers.problem = answers.problem or problem
            streams, still_open = upstream.take(name)
            upstream.case = None
            found = judge_answers("proxy", name, h, answers, stricter, notes)
            up_found, up_notes = judge_upstream(name, h, streams, still_open)
            if (found or up_found) and alternative:
                alt_found = judge_answers("proxy", name, alternative, answers, stricter)
                alt_up, _ = judge_upstream(name, alternative, streams, still_open)
                if not alt_found and not alt_up:
                    found, up_found = [], []
                    notes.append("%s: the proxy accepts what h11 rejects and forwards it as h11 "
                                 "frames the equivalent request, allowed: %s" % (
                                     name, ALLOWED_LENIENT[name][0]))
            problems += found + up_found
            notes += up_notes
            if verbose:
                print("%-34s proxy: %s; upstream streams %r" % (
                    "", answers.describe(), [s[:120] for s in streams]))
    except RuntimeError as e:
        print("http_differential: %s" % e, file=sys.stderr)
        return 2
    finally:
        for p in (proxy, serve):
            if p is None:
                continue
            status = p.stop()
            if status != 0:
                problems.append("%s | exit on SIGTERM | %s exited %s" % (p.name, p.name, status))
            report = p.sanitizer_report()
            if report:
                problems.append("%s | sanitizer | %s" % (p.name, report))
        upstream.stop()

    elapsed = time.monotonic() - started
    for note in notes:
        print("note: " + note)
    if problems:
        print("http_differential: %d disagreement(s) in %d case(s) (%.1f s); one per line: case | "
              "what h11 said | what serve/proxy did" % (len(problems), len(all_cases), elapsed))
        for p in problems:
            print(p)
        return 1
    print("http_differential: %d cases, serve and proxy agree with h11 (%.1f s; allowed "
          "exceptions: %s)" % (len(all_cases), elapsed,
                               ", ".join(sorted(list(ALLOWED_STRICTER) + list(ALLOWED_LENIENT)))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

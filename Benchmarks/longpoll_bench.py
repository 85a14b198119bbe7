#!/usr/bin/env python3
"""Long-poll benchmarks of issue 4 (API.md section 7), driven by Benchmarks/bench-longpoll.sh.

Standard library only: non-blocking sockets on one epoll (cheaper per answer than asyncio streams), HTTP/1.1
keep-alive, Content-Length and chunked bodies. Loopback only.

  longpoll_bench.py hold   --port P --pid PID [--waiters 10000]
      N concurrent long-polls on one observer (GET /observers/{id}/changes?since=S&timeout=T), the server's VmRSS
      before and while they wait, /healthz latency while they wait, then one PUT: how long until every waiter has
      its answer (target: all within 2 s; RSS growth < 16 KB per waiter).

  longpoll_bench.py fanout --kind bindery|etcd --port P --pid PID [--waiters 1000] [--changes 100] [--pace-ms 0]
      N waiters re-polling after each answer (Bindery: since=last; etcd v2: waitIndex=modifiedIndex+1) while a
      writer process makes CHANGES writes to one key, each after the previous one was acknowledged (plus PACE ms).
      Latency of every (waiter, change) pair from the writer's acknowledgement to the waiter's answer: p50/p99.

  longpoll_bench.py writer ...   (internal: the fan-out writer, a separate process so that the acknowledgement
      timestamps are not delayed by the waiters' event loop; both use CLOCK_MONOTONIC, which is system-wide)

Every subcommand prints human-readable lines and one final line `RESULT {json}`.
"""

import argparse
import json
import os
import resource
import select
import socket
import subprocess
import sys
import time

HOST = "127.0.0.1"
now = time.monotonic


class HTTPError(Exception):
    pass


def build_request(method, path, body=b"", content_type=None):
    head = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, path, HOST)
    if body or method in ("POST", "PUT", "PATCH"):
        head += "Content-Length: %d\r\n" % len(body)
        if content_type:
            head += "Content-Type: %s\r\n" % content_type
    return head.encode() + b"\r\n" + body


# ---------------------------------------------------------------------------------------------------------------------
# Measurements


def vm(pid, field):
    """VmRSS / VmHWM of a process in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def threads(pid):
    return vm_field(pid, "Threads")


def vm_field(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def summary_ms(values):
    return {
        "n": len(values),
        "min": round(min(values) * 1e3, 3) if values else None,
        "p50": round(percentile(values, 50) * 1e3, 3) if values else None,
        "p90": round(percentile(values, 90) * 1e3, 3) if values else None,
        "p99": round(percentile(values, 99) * 1e3, 3) if values else None,
        "max": round(max(values) * 1e3, 3) if values else None,
    }


def fmt(s):
    if not s["n"]:
        return "n=0"
    return "n=%d  min %.2f  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f ms" % (
        s["n"], s["min"], s["p50"], s["p90"], s["p99"], s["max"])


# ---------------------------------------------------------------------------------------------------------------------
# Many waiters in one process without asyncio: non-blocking sockets on one epoll, so that the client costs a few µs
# per answer and an answer's timestamp is taken when epoll reports it (before the other answers of that batch are
# processed), not when a coroutine gets around to it.


def parse_response(buf):
    """Parses one complete response at the start of `buf`: (status, headers, body, consumed) or None if incomplete."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    lines = buf[:end].decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    pos = end + 4
    if "content-length" in headers:
        length = int(headers["content-length"])
        if len(buf) < pos + length:
            return None
        return status, headers, bytes(buf[pos:pos + length]), pos + length
    if headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(bytes(buf[pos:eol]).split(b";")[0].strip(), 16)
            pos = eol + 2
            if size == 0:
                if len(buf) < pos + 2:
                    return None
                return status, headers, b"".join(chunks), pos + 2  # no trailers from etcd
            if len(buf) < pos + size + 2:
                return None
            chunks.append(bytes(buf[pos:pos + size]))
            pos += size + 2
    return status, headers, b"", pos


class Waiters:
    """N keep-alive connections that each send a request, and another one after every answer."""

    def __init__(self, port, n):
        self.port, self.n = port, n
        self.socks, self.bufs = [], []
        self.ep = select.epoll(n + 16)
        self.by_fd = {}
        self.closed = 0

    def connect(self, first_path):
        for i in range(self.n):
            s = socket.create_connection((HOST, self.port), timeout=10)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.sendall(build_request("GET", first_path(i)))
            s.setblocking(False)
            self.socks.append(s)
            self.bufs.append(bytearray())
            self.by_fd[s.fileno()] = i
            self.ep.register(s.fileno(), select.EPOLLIN)

    def pump(self, on_answer, until, done=lambda: False):
        """Reads answers until `until` (monotonic) or done(); on_answer(i, t, status, headers, body) returns the next
        path to poll or None."""
        while not done():
            left = until - now()
            if left <= 0:
                return False
            events = self.ep.poll(min(left, 0.5), 1024)
            t = now()
            for fd, _ in events:
                i = self.by_fd[fd]
                s = self.socks[i]
                try:
                    data = s.recv(1 << 16)
                except BlockingIOError:
                    continue
                if not data:
                    self.ep.unregister(fd)
                    self.closed += 1
                    on_answer(i, t, -1, {}, b"")
                    continue
                buf = self.bufs[i]
                buf += data
                while True:
                    parsed = parse_response(buf)
                    if parsed is None:
                        break
                    status, headers, body, used = parsed
                    del buf[:used]
                    path = on_answer(i, t, status, headers, body)
                    if path is not None:
                        s.send(build_request("GET", path))
        return True

    def close(self):
        for s in self.socks:
            s.close()
        self.ep.close()


def blocking_request(port, method, path, body=b"", content_type=None, sock=None):
    own = sock is None
    if own:
        sock = socket.create_connection((HOST, port), timeout=10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(build_request(method, path, body, content_type))
    buf = bytearray()
    while True:
        parsed = parse_response(buf)
        if parsed is not None:
            break
        data = sock.recv(1 << 16)
        if not data:
            raise HTTPError("connection closed")
        buf += data
    if own:
        sock.close()
    return parsed[:3]


def healthz_latencies(port, count):
    """`count` sequential GET /healthz on one keep-alive connection, and the first one on a fresh connection (connect
    included). Returns (list of seconds, fresh-connection seconds, failures)."""
    failures = 0
    t0 = now()
    sock = socket.create_connection((HOST, port), timeout=5)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    status, _, _ = blocking_request(port, "GET", "/healthz", sock=sock)
    fresh = now() - t0
    failures += status != 200
    times = []
    for _ in range(count):
        t = now()
        status, _, body = blocking_request(port, "GET", "/healthz", sock=sock)
        times.append(now() - t)
        failures += status != 200 or b'"ok"' not in body
    sock.close()
    return times, fresh, failures


def wait_idle(pid, quiet=0.4, limit=15.0):
    """Waits until the server has used no CPU for `quiet` seconds (it has parked every request); bounded."""
    deadline = now() + limit
    last = cpu_ticks(pid)
    while now() < deadline:
        time.sleep(quiet)
        ticks = cpu_ticks(pid)
        if ticks == last:
            return True
        last = ticks
    return False


def bindery_observer(port, target, key_path):
    body = json.dumps({"target": target, "keyPath": key_path, "options": ["new", "old"]}).encode()
    status, _, answer = blocking_request(port, "POST", "/observers", body, "application/json")
    if status != 201:
        raise HTTPError("POST /observers: %d %r" % (status, answer[:200]))
    obj = json.loads(answer)
    return obj["id"], int(obj["since"])


# ---------------------------------------------------------------------------------------------------------------------
# hold: N waiters on one observer, RSS, /healthz while waiting, one change


def hold(args):
    port, pid, n = args.port, args.pid, args.waiters
    target, key = args.target, args.key
    obs_id, since = bindery_observer(port, target, key)
    # Warm up the routes once so that first-use allocations are not counted against the waiters.
    for _ in range(20):
        blocking_request(port, "GET", "/observers/%s/changes?since=%d&timeout=0" % (obs_id, since))
    base_h, base_fresh, base_fail = healthz_latencies(port, args.healthz_requests)
    wait_idle(pid)
    rss_before = vm(pid, "VmRSS")
    print("observer %s since %d; server pid %d: VmRSS %d KiB, %d threads, %d fds before the waiters"
          % (obs_id, since, pid, rss_before, threads(pid), fd_count(pid)))
    print("/healthz before (keep-alive, %d sequential): %s; fresh connection %.2f ms"
          % (len(base_h), fmt(summary_ms(base_h)), base_fresh * 1e3))

    path = "/observers/%s/changes?since=%d&timeout=%d" % (obs_id, since, args.poll_timeout)
    waiters = Waiters(port, n)
    answers = {}
    early = []
    phase = {"changed": False}

    def on_answer(i, t, status, headers, body):
        if i in answers:
            return None
        answers[i] = (t, status, body)
        if not phase["changed"]:
            early.append((i, status, body[:200]))
        return None

    t_open = now()
    waiters.connect(lambda i: path)
    t_sent = now() - t_open
    idle = wait_idle(pid)
    waiters.pump(on_answer, now() + 0.5)  # anything answered early shows up here
    rss_wait = vm(pid, "VmRSS")
    fds_wait = fd_count(pid)
    print("%d waiters connected and sent in %.2f s (server idle afterwards: %s); %d early answers"
          % (n, t_sent, idle, len(early)))
    growth = rss_wait - rss_before
    per_waiter = growth * 1024.0 / n
    print("server VmRSS while waiting: %d KiB (+%d KiB = %.0f bytes per waiter), %d threads, %d fds"
          % (rss_wait, growth, per_waiter, threads(pid), fds_wait))

    wait_h, wait_fresh, wait_fail = healthz_latencies(port, args.healthz_requests)
    print("/healthz while %d wait (keep-alive, %d sequential): %s; fresh connection %.2f ms; %d failures"
          % (n, len(wait_h), fmt(summary_ms(wait_h)), wait_fresh * 1e3, wait_fail))

    # The change. The PUT goes out on its own connection; its answer is read in the same epoll loop as the waiters'
    # so that the acknowledgement is timestamped like them.
    value = int(time.time()) % 100000 + 100000
    ticks0 = cpu_ticks(pid)
    put = socket.create_connection((HOST, port), timeout=10)
    put.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    phase["changed"] = True
    t_put = now()
    put.sendall(build_request("PUT", "/objects/%s/%s" % (target, key), str(value).encode(), "application/json"))
    put.setblocking(False)
    put_i = n
    waiters.socks.append(put)
    waiters.bufs.append(bytearray())
    waiters.by_fd[put.fileno()] = put_i
    waiters.ep.register(put.fileno(), select.EPOLLIN)
    ack = {}

    def on_answer2(i, t, status, headers, body):
        if i == put_i:
            ack["t"], ack["status"], ack["seq"] = t, status, int(headers.get("x-store-seq", "-1"))
            return None
        return on_answer(i, t, status, headers, body)

    waiters.pump(on_answer2, now() + args.answer_limit, lambda: len(answers) >= n and "t" in ack)
    server_cpu = (cpu_ticks(pid) - ticks0) / os.sysconf("SC_CLK_TCK")
    t_ack, seq = ack.get("t", float("nan")), ack.get("seq", -1)
    print("PUT /objects/%s/%s = %d: %s, X-Store-Seq %d, acknowledged in %.2f ms"
          % (target, key, value, ack.get("status"), seq, (t_ack - t_put) * 1e3))
    waiters.close()

    good, bad = [], []
    for i, (t, st, b) in answers.items():
        ok = False
        if st == 200:
            try:
                obj = json.loads(b)
                ok = any(int(c.get("seq", -1)) == seq for c in obj.get("changes", [])) and int(obj["last"]) >= seq
            except ValueError:
                ok = False
        (good if ok else bad).append((i, t, st, b[:200]))
    late_ack = [t - t_ack for _, t, _, _ in good]
    from_put = [t - t_put for _, t, _, _ in good]
    within = sum(1 for x in late_ack if x <= 2.0)
    unanswered = n - len(answers)
    print("answered with the change: %d of %d; within 2 s of the acknowledgement: %d; wrong answers: %d; "
          "unanswered after %.0f s: %d" % (len(good), n, within, len(bad), args.answer_limit, unanswered))
    print("answer time after the PUT acknowledgement: %s" % fmt(summary_ms(late_ack)))
    print("answer time after the PUT was sent:        %s" % fmt(summary_ms(from_put)))
    rss_after = vm(pid, "VmRSS")
    hwm = vm(pid, "VmHWM")
    print("server CPU from the PUT to the last answer %.2f s; VmRSS after the answers: %d KiB (peak VmHWM %d KiB)"
          % (server_cpu, rss_after, hwm))
    for e in (early[:3] + bad[:3]):
        print("  example wrong/early answer: %r" % (e,))
    verdict = (len(good) == n and within == n and per_waiter < 16 * 1024 and wait_fail == 0 and not early)
    result = {
        "bench": "hold", "waiters": n, "connect_seconds": round(t_sent, 3),
        "rss_before_kib": rss_before, "rss_waiting_kib": rss_wait, "rss_after_kib": rss_after, "vmhwm_kib": hwm,
        "rss_growth_bytes_per_waiter": round(per_waiter), "fds_waiting": fds_wait,
        "healthz_before_ms": summary_ms(base_h), "healthz_waiting_ms": summary_ms(wait_h),
        "healthz_waiting_fresh_ms": round(wait_fresh * 1e3, 3), "healthz_failures": wait_fail + base_fail,
        "put_status": ack.get("status"), "put_ack_ms": round((t_ack - t_put) * 1e3, 3), "answered": len(good),
        "within_2s": within, "wrong": len(bad), "early": len(early), "unanswered": unanswered,
        "answer_after_ack_ms": summary_ms(late_ack), "answer_after_put_ms": summary_ms(from_put),
        "last_answer_after_put_s": round(max(from_put), 3) if from_put else None,
        "server_cpu_s": round(server_cpu, 2), "pass": verdict,
    }
    print("RESULT " + json.dumps(result))
    return 0 if verdict else 1


# ---------------------------------------------------------------------------------------------------------------------
# fanout: N re-polling waiters, a writer making CHANGES writes in a row


def fanout(args):
    port, pid, n, kind = args.port, args.pid, args.waiters, args.kind
    received = [dict() for _ in range(n)]  # waiter -> {key: time}
    cursors = [0] * n
    duplicates = [0]
    errors = []
    complete = [0]

    if kind == "bindery":
        obs_id, since = bindery_observer(port, args.target, args.key)
        first = since

        def path(i):
            return "/observers/%s/changes?since=%d&timeout=%d" % (obs_id, cursors[i], args.poll_timeout)
    else:
        status, _, body = blocking_request(port, "PUT", "/v2/keys/%s" % args.key, b"value=0",
                                           "application/x-www-form-urlencoded")
        if status not in (200, 201):
            raise HTTPError("etcd PUT: %d %r" % (status, body[:200]))
        first = int(json.loads(body)["node"]["modifiedIndex"])

        def path(i):
            return "/v2/keys/%s?wait=true&waitIndex=%d" % (args.key, cursors[i] + 1)

    cursors = [first] * n

    def on_answer(i, t, status, headers, body):
        if status != 200:
            errors.append("waiter %d: status %d %r" % (i, status, body[:200]))
            return None if status < 0 else path(i)
        obj = json.loads(body)
        got = received[i]
        before = len(got)
        if kind == "bindery":
            for change in obj["changes"]:
                k = int(change["seq"])
                if k in got:
                    duplicates[0] += 1
                else:
                    got[k] = t
            cursors[i] = int(obj["last"])
        else:
            k = int(obj["node"]["modifiedIndex"])
            if k in got:
                duplicates[0] += 1
            else:
                got[k] = t
            cursors[i] = k
        if before < args.changes <= len(got):
            complete[0] += 1
        return path(i)

    client = waiters = None
    if args.client:
        # The C waiters (fanout_client.c): same requests, same timestamps, a few µs per answer.
        if kind == "bindery":
            prefix, offset, suffix = "/observers/%s/changes?since=" % obs_id, 0, "&timeout=%d" % args.poll_timeout
        else:
            prefix, offset, suffix = "/v2/keys/%s?wait=true&waitIndex=" % args.key, 1, ""
        client = subprocess.Popen(
            [args.client, str(port), str(n), str(args.changes), kind, str(first), prefix, str(offset), suffix,
             str(args.answer_limit)], stdout=subprocess.PIPE)
        if client.stdout.readline().strip() != b"READY":
            raise HTTPError("the fan-out client did not start")
    else:
        waiters = Waiters(port, n)
        waiters.connect(path)
    idle = wait_idle(pid)
    rss_wait = vm(pid, "VmRSS")
    print("%s: %d waiters registered (server idle: %s), server VmRSS %d KiB" % (kind, n, idle, rss_wait))

    who = resource.RUSAGE_CHILDREN if client else resource.RUSAGE_SELF
    ru0 = resource.getrusage(who)
    ticks0 = cpu_ticks(pid)
    t_start = now()
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "writer", "--kind", kind, "--port", str(port),
         "--changes", str(args.changes), "--pace-ms", str(args.pace_ms), "--target", args.target, "--key", args.key],
        stdout=subprocess.PIPE)
    if client:
        out, _ = proc.communicate(timeout=args.answer_limit + 30)
        answers, _ = client.communicate(timeout=args.answer_limit + 30)
        t_end = now()
        for line in answers.decode().splitlines():
            if line.startswith("#"):  # "# duplicates D errors E"
                fields = line.split()
                duplicates[0] += int(fields[2])
                errors.extend(["a bad or missing answer (fan-out client)"] * int(fields[4]))
            else:
                i, k, t = line.split()
                received[int(i)][int(k)] = float(t)
    else:
        waiters.pump(on_answer, now() + args.answer_limit, lambda: complete[0] >= n)
        out, _ = proc.communicate(timeout=30)
        t_end = now()
        waiters.close()
    # With the C client, its CPU and the writer's (both children); else this process's.
    ru1 = resource.getrusage(who)
    server_cpu = (cpu_ticks(pid) - ticks0) / os.sysconf("SC_CLK_TCK")
    client_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    writes = json.loads(out.decode().strip().splitlines()[-1])  # [[key, t_send, t_ack, status], ...]
    bad_writes = [w for w in writes if w[3] not in (200, 201)]

    by_key = {w[0]: w for w in writes}
    from_ack, from_send = [], []
    missing = 0
    for got in received:
        for k, w in by_key.items():
            t = got.get(k)
            if t is None:
                missing += 1
                continue
            from_ack.append(t - w[2])
            from_send.append(t - w[1])
    acks = [w[2] - w[1] for w in writes]
    write_span = writes[-1][2] - writes[0][1] if writes else 0
    s_ack, s_send, s_put = summary_ms(from_ack), summary_ms(from_send), summary_ms(acks)
    print("%s: %d writes (pace %d ms) in %.3f s, PUT round trip %s" % (kind, len(writes), args.pace_ms, write_span,
                                                                     fmt(s_put)))
    print("%s: PUT ack -> waiter answer   %s" % (kind, fmt(s_ack)))
    print("%s: PUT sent -> waiter answer  %s" % (kind, fmt(s_send)))
    print("%s: deliveries %d of %d, missing %d, duplicates %d, errors %d, bad writes %d; "
          "CPU during the run: server %.2f s, client %.2f s over %.2f s"
          % (kind, len(from_ack), n * len(writes), missing, duplicates[0], len(errors), len(bad_writes),
             server_cpu, client_cpu, t_end - t_start))
    for e in errors[:5]:
        print("  example error: %s" % e)
    result = {
        "bench": "fanout", "kind": kind, "waiters": n, "changes": len(writes), "pace_ms": args.pace_ms,
        "write_span_s": round(write_span, 3), "put_rtt_ms": s_put, "ack_to_answer_ms": s_ack,
        "send_to_answer_ms": s_send, "deliveries": len(from_ack), "missing": missing, "duplicates": duplicates[0],
        "errors": len(errors), "bad_writes": len(bad_writes), "server_cpu_s": round(server_cpu, 2),
        "client_cpu_s": round(client_cpu, 2), "rss_waiting_kib": rss_wait,
    }
    print("RESULT " + json.dumps(result))
    return 0 if (missing == 0 and duplicates[0] == 0 and not errors and not bad_writes) else 1


def writer(args):
    """Blocking writer: CHANGES writes in a row, each after the previous acknowledgement (+ pace)."""
    sock = socket.create_connection((HOST, args.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    f = sock.makefile("rb")
    out = []
    base = int(time.time()) % 1000 * 1000
    for i in range(args.changes):
        if args.kind == "bindery":
            body = str(200000 + base + i).encode()
            req = build_request("PUT", "/objects/%s/%s" % (args.target, args.key), body, "application/json")
        else:
            body = ("value=%d" % (base + i)).encode()
            req = build_request("PUT", "/v2/keys/%s" % args.key, body, "application/x-www-form-urlencoded")
        t_send = now()
        sock.sendall(req)
        status, headers, payload = read_blocking(f)
        t_ack = now()
        if args.kind == "bindery":
            key = int(headers.get("x-store-seq", "-1"))
        else:
            key = int(json.loads(payload)["node"]["modifiedIndex"])
        out.append([key, t_send, t_ack, status])
        if args.pace_ms:
            time.sleep(args.pace_ms / 1000.0)
    sock.close()
    print(json.dumps(out))
    return 0


def read_blocking(f):
    status_line = f.readline().decode("latin-1")
    status = int(status_line.split(" ", 2)[1])
    headers = {}
    while True:
        line = f.readline().decode("latin-1").strip()
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = f.read(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int(f.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while f.readline() not in (b"\r\n", b""):
                    pass
                break
            chunks.append(f.read(size))
            f.read(2)
        body = b"".join(chunks)
    else:
        body = b""
    return status, headers, body


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hold")
    h.add_argument("--port", type=int, required=True)
    h.add_argument("--pid", type=int, required=True)
    h.add_argument("--waiters", type=int, default=10000)
    h.add_argument("--target", default="Employee/1")
    h.add_argument("--key", default="salary")
    h.add_argument("--poll-timeout", type=int, default=120)
    h.add_argument("--healthz-requests", type=int, default=500)
    h.add_argument("--answer-limit", type=float, default=15.0)
    f = sub.add_parser("fanout")
    f.add_argument("--kind", choices=["bindery", "etcd"], required=True)
    f.add_argument("--port", type=int, required=True)
    f.add_argument("--pid", type=int, required=True)
    f.add_argument("--waiters", type=int, default=1000)
    f.add_argument("--changes", type=int, default=100)
    f.add_argument("--pace-ms", type=int, default=0)
    f.add_argument("--target", default="Employee/1")
    f.add_argument("--key", default="salary")
    f.add_argument("--poll-timeout", type=int, default=60)
    f.add_argument("--answer-limit", type=float, default=15.0)
    f.add_argument("--client", help="the compiled fanout_client.c (default: waiters in this Python process)")
    w = sub.add_parser("writer")
    w.add_argument("--kind", choices=["bindery", "etcd"], required=True)
    w.add_argument("--port", type=int, required=True)
    w.add_argument("--changes", type=int, default=100)
    w.add_argument("--pace-ms", type=int, default=0)
    w.add_argument("--target", default="Employee/1")
    w.add_argument("--key", default="salary")
    args = p.parse_args()
    if args.cmd == "writer":
        return writer(args)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hold(args) if args.cmd == "hold" else fanout(args)


if __name__ == "__main__":
    sys.exit(main())

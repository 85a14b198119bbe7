/*
 * The waiters of the long-poll fan-out benchmark (issue 4), in C so that the measuring client costs a few
 * microseconds per answer instead of the ~20 us of the Python loop, which on 2 shared cores delayed every answer's
 * timestamp by the client's own backlog. Driven by longpoll_bench.py (fanout --client PATH), for Bindery and etcd alike.
 *
 *   fanout_client PORT WAITERS CHANGES KIND FIRST PREFIX OFFSET SUFFIX LIMIT_S
 *
 * Opens WAITERS keep-alive connections to 127.0.0.1:PORT; each sends GET PREFIX<cursor + OFFSET>SUFFIX (cursor
 * starts at FIRST) and, after every answer, the next one with the cursor the answer gave. KIND bindery: an answer is
 * {"changes":[{"seq":N,...}...],"last":M} (keys N, cursor M); KIND etcd: {"node":{..."modifiedIndex":N...}...}
 * (key and cursor N). Prints "READY" once every first request is sent, then, when every waiter has CHANGES keys or
 * LIMIT_S seconds passed, one line "waiter key time" per first delivery (time: CLOCK_MONOTONIC seconds, taken when
 * epoll reports the answer, like the Python client) and a last line "# duplicates D errors E".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct waiter {
    int fd;
    long long cursor, last_key;
    int count;
    char *buf;
    size_t len, cap;
};

struct delivery {
    int waiter;
    long long key;
    double time;
};

static const char *prefix, *suffix, *kind;
static long long offset;
static struct delivery *deliveries;
static size_t ndeliveries, capdeliveries;
static long duplicates, errors;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int send_poll(struct waiter *w) {
    char request[1024];
    int n = snprintf(request, sizeof request, "GET %s%lld%s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", prefix,
                     w->cursor + offset, suffix);
    return send(w->fd, request, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

static void record(int i, struct waiter *w, long long key, double t) {
    if (key <= w->last_key) {
        duplicates++;
        return;
    }
    w->last_key = key;
    w->count++;
    if (ndeliveries == capdeliveries) {
        capdeliveries = capdeliveries ? capdeliveries * 2 : 1 << 16;
        deliveries = realloc(deliveries, capdeliveries * sizeof *deliveries);
        if (!deliveries) abort();
    }
    deliveries[ndeliveries++] = (struct delivery){i, key, t};
}

/* The integer after the first `name` at or after `from` in body[0..len), or -1. */
static long long number_after(const char *body, size_t len, const char *from, const char *name, const char **end) {
    const char *p = memmem(from, (size_t)(body + len - from), name, strlen(name));
    if (!p) return -1;
    p += strlen(name);
    long long value = strtoll(p, (char **)end, 10);
    return value;
}

/* Handles one answer's body; returns 0, or -1 when it is not what the benchmark expects. */
static int answer(int i, struct waiter *w, int status, const char *body, size_t len, double t) {
    if (status != 200) return -1;
    if (strcmp(kind, "bindery") == 0) {
        const char *p = memmem(body, len, "\"changes\":[", 11), *end = NULL;
        if (!p) return -1;
        const char *stop = memmem(p, (size_t)(body + len - p), "\"last\":", 7);
        if (!stop) return -1;
        for (long long key; (key = number_after(body, (size_t)(stop - body), p, "\"seq\":", &end)) >= 0; p = end)
            record(i, w, key, t);
        w->cursor = strtoll(stop + 7, NULL, 10);
    } else {
        const char *node = memmem(body, len, "\"node\":", 7), *end;
        if (!node) return -1;
        long long key = number_after(body, len, node, "\"modifiedIndex\":", &end);
        if (key < 0) return -1;
        record(i, w, key, t);
        w->cursor = key;
    }
    return 0;
}

/* Parses every complete response in w->buf; returns -1 on a connection that cannot go on. */
static int drain(int i, struct waiter *w, double t) {
    for (;;) {
        char *head_end = memmem(w->buf, w->len, "\r\n\r\n", 4);
        if (!head_end) return 0;
        size_t head = (size_t)(head_end - w->buf) + 4;
        int status = atoi(w->buf + 9);
        char *cl = memmem(w->buf, head, "Content-Length:", 15);
        if (!cl) cl = memmem(w->buf, head, "content-length:", 15);
        char *body;
        size_t body_len, used;
        static char chunked[1 << 20];
        if (cl) {
            body_len = (size_t)strtoul(cl + 15, NULL, 10);
            if (w->len < head + body_len) return 0;
            body = w->buf + head;
            used = head + body_len;
        } else { /* chunked */
            size_t pos = head, out = 0;
            for (;;) {
                char *eol = memmem(w->buf + pos, w->len - pos, "\r\n", 2);
                if (!eol) return 0;
                size_t size = (size_t)strtoul(w->buf + pos, NULL, 16);
                pos = (size_t)(eol - w->buf) + 2;
                if (size == 0) {
                    if (w->len < pos + 2) return 0;
                    used = pos + 2;
                    break;
                }
                if (w->len < pos + size + 2 || out + size > sizeof chunked) return out + size > sizeof chunked ? -1 : 0;
                memcpy(chunked + out, w->buf + pos, size);
                out += size;
                pos += size + 2;
            }
            body = chunked;
            body_len = out;
        }
        if (answer(i, w, status, body, body_len, t) != 0) errors++;
        memmove(w->buf, w->buf + used, w->len - used);
        w->len -= used;
        if (send_poll(w) != 0) return -1;
    }
}

int main(int argc, char **argv) {
    if (argc != 10) {
        fprintf(stderr, "usage: %s PORT WAITERS CHANGES KIND FIRST PREFIX OFFSET SUFFIX LIMIT_S\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]), changes = atoi(argv[3]);
    kind = argv[4];
    long long first = atoll(argv[5]);
    prefix = argv[6];
    offset = atoll(argv[7]);
    suffix = argv[8];
    double deadline = now() + atof(argv[9]);

    struct waiter *ws = calloc((size_t)n, sizeof *ws);
    int ep = epoll_create1(0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    for (int i = 0; i < n; i++) {
        struct waiter *w = &ws[i];
        w->fd = socket(AF_INET, SOCK_STREAM, 0);
        if (w->fd < 0 || connect(w->fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
            perror("connect");
            return 1;
        }
        int one = 1;
        setsockopt(w->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        w->cursor = first;
        w->last_key = first;
        w->cap = 4096;
        w->buf = malloc(w->cap);
        if (send_poll(w) != 0) {
            perror("send");
            return 1;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &ev);
    }
    printf("READY\n");
    fflush(stdout);

    int complete = 0;
    struct epoll_event events[1024];
    while (complete < n && now() < deadline) {
        int ready = epoll_wait(ep, events, 1024, 100);
        double t = now();
        for (int e = 0; e < ready; e++) {
            int i = (int)events[e].data.u32;
            struct waiter *w = &ws[i];
            if (w->cap - w->len < 4096) {
                w->cap *= 2;
                w->buf = realloc(w->buf, w->cap);
            }
            ssize_t got = recv(w->fd, w->buf + w->len, w->cap - w->len, 0);
            if (got < 0 && errno == EAGAIN) continue;
            int before = w->count >= changes;
            if (got <= 0 || (w->len += (size_t)got, drain(i, w, t)) != 0) {
                errors++;
                epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
                if (!before) complete++;
                continue;
            }
            if (!before && w->count >= changes) complete++;
        }
    }
    for (size_t d = 0; d < ndeliveries; d++)
        printf("%d %lld %.6f\n", deliveries[d].waiter, deliveries[d].key, deliveries[d].time);
    printf("# duplicates %ld errors %ld\n", duplicates, errors);
    return 0;
}

/*
 * bare_mhd: the baseline for Benchmarks/bench-healthz.sh and bench-keypath.sh — a bare libmicrohttpd server
 * answering `GET PATH` (default `/healthz`) with BODY (default `{"status":"ok"}`, application/json), started with the
 * same daemon flags and options as Sources/HTTPServer/HTTPServer.swift (+ Sources/CMicroHTTPD/shim.h), answering on
 * the handler's second call, and accepting connections the same way (Sources/HTTPServer/HTTPAcceptor.swift: a thread
 * of its own accepts and hands each connection to the daemon with MHD_add_connection). Everything else gets 404.
 *
 *   cc -O2 -o bare_mhd Benchmarks/bare_mhd.c $(pkg-config --cflags --libs libmicrohttpd)
 *   bare_mhd [PORT [PATH BODY]] [--headers]
 *
 * PORT 0 (the default) picks a free port. On start it prints `bare_mhd listening on http://127.0.0.1:PORT`.
 * `--headers` adds the two headers Bindery puts on every response to a request without `Origin` (X-Store-Seq and
 * Access-Control-Allow-Origin), to separate the cost of the Swift layer from the cost of the bytes on the wire. SIGINT/SIGTERM stop it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *path = "/healthz";
static const char *body = "{\"status\":\"ok\"}";
static const char not_found[] = "{\"error\":{\"code\":\"not-found\",\"message\":\"There is nothing here.\"}}";
static int bindery_headers = 0;
/* A sentinel for *con_cls: the first call (headers only) sets it; the response is queued on the second call. */
static int seen_headers;

static int listen_fd = -1;
static volatile int stopping = 0;

/* The accepting thread: every connection goes to the daemon through MHD_add_connection. */
static void *accept_loop(void *daemon) {
    while (!stopping) {
        struct sockaddr_storage client_address;
        socklen_t length = sizeof client_address;
        int client = accept(listen_fd, (struct sockaddr *)&client_address, &length);
        if (client < 0) {
            if (!stopping) usleep(errno == EINTR || errno == ECONNABORTED ? 0 : 10000);
            continue;
        }
        fcntl(client, F_SETFD, FD_CLOEXEC);
        fcntl(client, F_SETFL, fcntl(client, F_GETFL) | O_NONBLOCK);
        MHD_add_connection(daemon, client, (struct sockaddr *)&client_address, length);
    }
    return NULL;
}

static size_t unescape_none(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    return strlen(s);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **con_cls) {
    (void)cls;
    (void)version;
    (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &seen_headers;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* drain and ignore bodies */
        return MHD_YES;
    }
    int ok = strcmp(url, path) == 0 && strcmp(method, "GET") == 0;
    const char *text = ok ? body : not_found;
    struct MHD_Response *response =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
    if (response == NULL) return MHD_NO;
    MHD_add_response_header(response, "Content-Type", "application/json");
    if (bindery_headers) {
        MHD_add_response_header(response, "X-Store-Seq", "0");
        MHD_add_response_header(response, "Access-Control-Allow-Origin", "*");
    }
    enum MHD_Result result = MHD_queue_response(connection, ok ? MHD_HTTP_OK : MHD_HTTP_NOT_FOUND, response);
    MHD_destroy_response(response);
    return result;
}

static void completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)connection;
    (void)toe;
    *con_cls = NULL;
}

int main(int argc, char **argv) {
    unsigned int port = 0;
    int positional = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--headers") == 0) {
            bindery_headers = 1;
        } else if (positional == 0) {
            char *end = NULL;
            long value = strtol(argv[i], &end, 10);
            if (end == argv[i] || *end != '\0' || value < 0 || value > 65535) {
                positional = -1;
                break;
            }
            port = (unsigned int)value;
            positional++;
        } else if (positional == 1) {
            path = argv[i];
            positional++;
        } else if (positional == 2) {
            body = argv[i];
            positional++;
        } else {
            positional = -1;
            break;
        }
    }
    if (positional < 0 || positional == 2) {
        fprintf(stderr, "usage: %s [PORT [PATH BODY]] [--headers]\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    /* Block SIGINT/SIGTERM before MHD's threads start, so that only sigwait below receives them. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((uint16_t)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned int threads = cores > 1 ? (unsigned int)cores : 1;
    /* The same flags and options as HTTPServer.start() and bindery_mhd_start(). */
    unsigned int flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_NO_LISTEN_SOCKET |
                         MHD_USE_ERROR_LOG | MHD_USE_TURBO;
    struct MHD_OptionItem options[16];
    int n = 0;
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)unescape_none, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, 20000, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, 60, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL};
    if (threads > 1) options[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)threads, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};

    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int on = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    socklen_t length = sizeof address;
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listen_fd, 4096) != 0 || getsockname(listen_fd, (struct sockaddr *)&address, &length) != 0) {
        fprintf(stderr, "bare_mhd: cannot listen on 127.0.0.1:%u: %s\n", port, strerror(errno));
        return 1;
    }
    struct MHD_Daemon *daemon = MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_ARRAY, options,
                                                 MHD_OPTION_END);
    pthread_t acceptor;
    if (daemon == NULL || pthread_create(&acceptor, NULL, accept_loop, daemon) != 0) {
        fprintf(stderr, "bare_mhd: cannot start libmicrohttpd\n");
        return 1;
    }
    printf("bare_mhd listening on http://127.0.0.1:%u\n", (unsigned int)ntohs(address.sin_port));
    fflush(stdout);

    int received = 0;
    sigwait(&stop_signals, &received);
    stopping = 1;
    shutdown(listen_fd, SHUT_RDWR);
    pthread_join(acceptor, NULL);
    MHD_stop_daemon(daemon);
    return 0;
}

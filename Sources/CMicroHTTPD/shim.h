#ifndef BINDERY_CMICROHTTPD_SHIM_H
#define BINDERY_CMICROHTTPD_SHIM_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/select.h>
#include <microhttpd.h>

/* Non-variadic wrappers: Swift does not import C variadic functions such as MHD_start_daemon. */

/* Leaves the URL and query arguments exactly as received; the Swift side percent-decodes per segment. */
static inline size_t bindery_mhd_unescape_none(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    return strlen(s);
}

/* Writes one of libmicrohttpd's log lines, at most 20 every 10 s: most of its lines are about a client's malformed
   request ("Error processing request (HTTP response code is 400 ...)"), which any client can send as fast as it likes.
   Past that, lines are counted, and the count is written when the next window starts, or when called with NULL (at
   the server's stop). Its state is in function-local statics (Swift does not emit a header's file-scope ones), so
   its two callers must be used from one Swift file (HTTPServer.swift), which then holds the one copy. */
static inline void bindery_mhd_log_write(const char *line) {
    enum { lines = 20, seconds = 10 };
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static time_t window;
    static unsigned written, dropped;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    pthread_mutex_lock(&lock);
    int next = now.tv_sec - window >= seconds;
    if ((next || line == NULL) && dropped > 0) {
        fprintf(stderr, "libmicrohttpd: %u more lines were not logged (at most %d every %d s)\n", dropped, lines,
                seconds);
        dropped = 0;
    }
    if (line != NULL) {
        if (next) {
            window = now.tv_sec;
            written = 0;
        }
        if (written < lines) {
            written += 1;
            fputs(line, stderr);
        } else {
            dropped += 1;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* At the server's stop: the count of libmicrohttpd's lines not written since the last report, if any. */
static inline void bindery_mhd_log_flush(void) {
    bindery_mhd_log_write(NULL);
}

/* libmicrohttpd's error log (MHD_USE_ERROR_LOG), at most 20 lines every 10 s, less the lines about a
   client that went away: that closed its connection while its answer was being sent ("The socket is no longer
   available for sending", "The connection was forcibly closed by remote peer"), which is how event streams end (a
   tab closed, an EventSource reconnecting), or before its request was whole ("Connection was closed by remote side
   with incomplete request"); one line each would drown the errors that matter. */
static inline void bindery_mhd_log(void *cls, const char *format, va_list arguments) {
    (void)cls;
    char line[1024];
    vsnprintf(line, sizeof line, format, arguments);
    if (strstr(line, "no longer available") != NULL || strstr(line, "forcibly closed by remote peer") != NULL
        || strstr(line, "with incomplete request") != NULL) {
        return;
    }
    bindery_mhd_log_write(line);
}

/* MHD_OPTION_URI_LOG_CALLBACK's function: sees the request target whole, before libmicrohttpd splits off the query. */
typedef void *(*bindery_mhd_uri_log_callback)(void *cls, const char *uri, struct MHD_Connection *connection);

/* Starts a daemon without a listening socket (the server accepts connections itself and adds them with
   MHD_add_connection); `thread_pool_size` <= 1 means one thread. */
static inline struct MHD_Daemon *bindery_mhd_start(unsigned int flags, MHD_AccessHandlerCallback handler,
                                                   void *handler_cls, MHD_RequestCompletedCallback completed,
                                                   void *completed_cls, MHD_NotifyConnectionCallback connection,
                                                   void *connection_cls, bindery_mhd_uri_log_callback uri_log,
                                                   void *uri_log_cls, unsigned int thread_pool_size,
                                                   unsigned int connection_limit, unsigned int connection_timeout,
                                                   size_t connection_memory_limit) {
    struct MHD_OptionItem options[16];
    int n = 0;
    /* First: libmicrohttpd logs with its own logger until this option is read. */
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)bindery_mhd_log, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)connection, connection_cls};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)bindery_mhd_unescape_none, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)uri_log, uri_log_cls};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)connection_timeout, NULL};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory_limit, NULL};
    if (thread_pool_size > 1) {
        options[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)thread_pool_size, NULL};
    }
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_cls, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
}

/* The number of connections the daemon currently holds (suspended ones included). */
static inline unsigned int bindery_mhd_connection_count(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info != NULL ? info->num_connections : 0;
}

/* The socket of a connection, or -1. */
static inline int bindery_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info != NULL ? info->connect_fd : -1;
}

/* What the connection-notification callback stored for a connection (its socket context), or NULL. */
static inline void *bindery_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info != NULL ? info->socket_context : NULL;
}

/* What is wrong with a request's framing (RFC 9112 §5.1, §6.1, §6.3), read from its header fields before its body:
   BINDERY_FRAMING_OK, or one of the others. libmicrohttpd takes the first of several Content-Length fields, reads a
   body both chunked and with a Content-Length, keeps a field name with white space before its colon as another
   name, and waits forever for a body in a transfer coding it does not know: each lets a body be read as requests.
   It also glues a folded line (obs-fold, a line starting with white space) onto the previous field's *name*
   (`Content-Length:` then ` 49` is a field `Content-Length49` with an empty value): the request would lose its
   Content-Length (its body read as another request) or its If-Match. A field name is a token (RFC 9110 §5.1); and
   as the glued name is copied out of the read buffer, where the value stays, a name found after its value in
   memory was folded. */
enum {
    BINDERY_FRAMING_OK = 0,
    BINDERY_FRAMING_CONFLICTING_LENGTHS = 1,
    BINDERY_FRAMING_LENGTH_AND_CHUNKED = 2,
    BINDERY_FRAMING_UNKNOWN_CODING = 3,
    BINDERY_FRAMING_BAD_FIELD_NAME = 4,
    BINDERY_FRAMING_BAD_FIELD_VALUE = 5,
    BINDERY_FRAMING_BAD_HOST = 6,
};

struct bindery_framing_scan {
    const char *length;
    int problem;
    int has_coding;
    int hosts;
    /* Where the previous field's value ends in the read buffer. */
    const char *previous_end;
};

/* Whether a field line ends right after its value: libmicrohttpd turned the line's CRLF (or bare LF) into NULs in
   the read buffer, and the next line (`next`: the next field's name, or NULL for the last field, which the empty
   line's NULs follow) starts right after. A value measured with strlen hides whatever follows a NUL in it (a
   `Content-Length: 0\0<n>` read as 0 would leave the body to be read as another request): then more bytes lie
   between the value's end and the next line. */
static inline int bindery_line_ends_after(const char *end, const char *next) {
    if (next == NULL) {
        return end[0] == '\0' && end[1] == '\0';
    }
    ptrdiff_t gap = next - end;
    return (gap == 1 || gap == 2) && end[0] == '\0' && end[gap - 1] == '\0';
}

/* Whether the last field's line ends right after its value: between the value's end and the head's end (`head_end`)
   lie only NULs, as many as that line's end and the empty line's take (2 to 4). More, or any other byte, was hidden
   from strlen behind a NUL in the value. */
static inline int bindery_head_ends_after(const char *end, const char *head_end) {
    ptrdiff_t gap = head_end - end;
    if (gap < 2 || gap > 4) {
        return 0;
    }
    for (ptrdiff_t i = 0; i < gap; i++) {
        if (end[i] != '\0') {
            return 0;
        }
    }
    return 1;
}

static inline enum MHD_Result bindery_framing_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                                   size_t key_size, const char *value, size_t value_size) {
    (void)kind;
    struct bindery_framing_scan *scan = cls;
    (void)key_size;
    if (key == NULL || key[0] == '\0') {
        scan->problem = BINDERY_FRAMING_BAD_FIELD_NAME;
        return MHD_NO;
    }
    /* A field value is visible characters, spaces and tabs (RFC 9110 §5.5): a lone CR is a line end to some readers
       and not to others. (libmicrohttpd measures values with strlen, so a NUL ends the value here: it is found by
       where the line ends, `bindery_line_ends_after`.) */
    for (size_t i = 0; value != NULL && i < value_size; i++) {
        unsigned char byte = (unsigned char)value[i];
        if ((byte < 0x20 && byte != '\t') || byte == 0x7f) {
            scan->problem = BINDERY_FRAMING_BAD_FIELD_VALUE;
            return MHD_NO;
        }
    }
    if (value != NULL && key > value) {
        scan->problem = BINDERY_FRAMING_BAD_FIELD_NAME;
        return MHD_NO;
    }
    if (scan->previous_end != NULL && !bindery_line_ends_after(scan->previous_end, key)) {
        scan->problem = BINDERY_FRAMING_BAD_FIELD_VALUE;
        return MHD_NO;
    }
    scan->previous_end = value != NULL ? value + value_size : NULL;
    for (const char *c = key; *c != '\0'; c++) {
        unsigned char byte = (unsigned char)*c;
        int token = (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') ||
                    (byte != 0 && strchr("!#$%&'*+-.^_`|~", byte) != NULL);
        if (!token) {
            scan->problem = BINDERY_FRAMING_BAD_FIELD_NAME;
            return MHD_NO;
        }
    }
    if (strcasecmp(key, "Content-Length") == 0) {
        if (scan->length != NULL && (value == NULL || strcmp(scan->length, value) != 0)) {
            scan->problem = BINDERY_FRAMING_CONFLICTING_LENGTHS;
            return MHD_NO;
        }
        scan->length = value != NULL ? value : "";
    } else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        /* Only chunked, once, and exactly as libmicrohttpd reads it (it skips leading white space only): anything it
           would not decode as chunked, it would read as a body until the connection closes. */
        if (scan->has_coding || value == NULL || strcasecmp(value, "chunked") != 0) {
            scan->problem = BINDERY_FRAMING_UNKNOWN_CODING;
            return MHD_NO;
        }
        scan->has_coding = 1;
    } else if (strcasecmp(key, "Host") == 0) {
        scan->hosts += 1;
    }
    return MHD_YES;
}

/* `method`: the request's method as the access handler got it, where the head starts in the read buffer (the request
   header size counts from there), or NULL. `needs_host`: the request is HTTP/1.1, which must have one Host field;
   any request may have at most one (RFC 9112 §3.2). */
static inline int bindery_mhd_framing_problem(struct MHD_Connection *connection, const char *method, int needs_host) {
    struct bindery_framing_scan scan = {NULL, BINDERY_FRAMING_OK, 0, 0, NULL};
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, bindery_framing_field, &scan);
    if (scan.problem == BINDERY_FRAMING_OK && scan.previous_end != NULL) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
        size_t head_size = info != NULL ? info->header_size : 0;
        int ends = method != NULL && head_size > 0 && method + head_size > scan.previous_end
                       ? bindery_head_ends_after(scan.previous_end, method + head_size)
                       : bindery_line_ends_after(scan.previous_end, NULL);
        if (!ends) {
            scan.problem = BINDERY_FRAMING_BAD_FIELD_VALUE;
        }
    }
    if (scan.problem == BINDERY_FRAMING_OK && scan.has_coding && scan.length != NULL) {
        scan.problem = BINDERY_FRAMING_LENGTH_AND_CHUNKED;
    }
    if (scan.problem == BINDERY_FRAMING_OK && (scan.hosts > 1 || (needs_host && scan.hosts == 0))) {
        scan.problem = BINDERY_FRAMING_BAD_HOST;
    }
    return scan.problem;
}

/* The size in bytes of the request line and header fields of the connection's current request (0 if unknown). */
static inline size_t bindery_mhd_request_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info != NULL ? info->header_size : 0;
}

/* The number of header fields, query arguments and cookies libmicrohttpd keeps for the connection's current request:
   each takes a record of its own (about 64 bytes) from the connection's memory pool, besides the bytes of the head. */
static inline int bindery_mhd_request_field_count(struct MHD_Connection *connection) {
    return MHD_get_connection_values(connection, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND | MHD_COOKIE_KIND, NULL, NULL);
}

/* Makes a response of unknown size end with the connection instead of chunked (libmicrohttpd 0.9.75 would send a
   chunked body's last chunk, `0\r\n\r\n`, after the header of a HEAD answer, where no body may follow). */
static inline void bindery_mhd_response_ends_with_connection(struct MHD_Response *response) {
    MHD_set_response_options(response, MHD_RF_HTTP_1_0_COMPATIBLE_STRICT, MHD_RO_END);
}

/* Whether the client of a connection has closed or reset it: a non-blocking peek at its socket finds the end of the
   stream or an error. A request waiting to be read (pipelined) or nothing yet is not. */
static inline int bindery_mhd_peer_closed(struct MHD_Connection *connection) {
    int fd = bindery_mhd_connection_fd(connection);
    if (fd < 0) {
        return 0;
    }
    char byte;
    ssize_t received = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (received == 0) {
        return 1;
    }
    return received < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

#endif

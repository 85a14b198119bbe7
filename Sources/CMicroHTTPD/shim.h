#ifndef BINDERY_CMICROHTTPD_SHIM_H
#define BINDERY_CMICROHTTPD_SHIM_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
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

/* Starts a daemon without a listening socket (the server accepts connections itself and adds them with
   MHD_add_connection); `thread_pool_size` <= 1 means one thread. */
static inline struct MHD_Daemon *bindery_mhd_start(unsigned int flags, MHD_AccessHandlerCallback handler,
                                                   void *handler_cls, MHD_RequestCompletedCallback completed,
                                                   void *completed_cls, unsigned int thread_pool_size,
                                                   unsigned int connection_limit, unsigned int connection_timeout,
                                                   size_t connection_memory_limit) {
    struct MHD_OptionItem options[16];
    int n = 0;
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, completed_cls};
    options[n++] = (struct MHD_OptionItem){MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)bindery_mhd_unescape_none, NULL};
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

/* Whether the client of a connection has closed or reset it: a non-blocking peek at its socket finds the end of the
   stream or an error. A request waiting to be read (pipelined) or nothing yet is not. */
static inline int bindery_mhd_peer_closed(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL) {
        return 0;
    }
    char byte;
    ssize_t received = recv(info->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (received == 0) {
        return 1;
    }
    return received < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

#endif

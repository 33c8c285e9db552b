// The only C the rest of the package sees. Every function carries the `cmhd_` prefix and exists
// because Swift cannot call the underlying API directly (variadics, macros, unions).
#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <microhttpd.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include <sys/ioctl.h>
#ifdef __linux__
#include <linux/sockios.h>
#include <sys/syscall.h>
#endif
#include <fcntl.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <poll.h>
#if defined(__linux__) && !defined(POLLRDHUP)
// Linux's value; glibc defines the name only under _GNU_SOURCE, which the system module was not built with.
#define POLLRDHUP 0x2000
#endif

_Static_assert(sizeof(uint64_t) == 8, "MHD_SIZE_UNKNOWN relies on a 64-bit size type");

/// `MHD_SIZE_UNKNOWN`: a macro, so it does not import.
static inline uint64_t cmhd_size_unknown(void) { return MHD_SIZE_UNKNOWN; }

/// `MHD_CONTENT_READER_END_OF_STREAM`.
static inline ssize_t cmhd_reader_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }

/// Lets a `Content-Length` field set by hand go out (`chunked-with-length`: beside the chunked coding
/// libmicrohttpd applies to a body of unknown size). Call before adding any field. `MHD_set_response_options` is
/// variadic, so it does not import.
static inline enum MHD_Result cmhd_allow_manual_content_length(struct MHD_Response *response) {
    return MHD_set_response_options(response, MHD_RF_INSANITY_HEADER_CONTENT_LENGTH, MHD_RO_END);
}

/// Like `cmhd_allow_manual_content_length`, and the body is sent unchunked and delimited by closing the
/// connection, in an HTTP/1.1 status line (`length-delta`: the declared length is the only one there is).
static inline enum MHD_Result cmhd_allow_manual_content_length_and_close(struct MHD_Response *response) {
    return MHD_set_response_options(
        response, MHD_RF_INSANITY_HEADER_CONTENT_LENGTH | MHD_RF_HTTP_1_0_COMPATIBLE_STRICT, MHD_RO_END);
}

/// `MHD_CONTENT_READER_END_WITH_ERROR`: closes the connection without finishing the body.
static inline ssize_t cmhd_reader_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }

/// Opens, binds and listens on `host:port` (numeric host, IPv4 or IPv6).
/// Returns the socket, or -1 with `*error_out` set to an errno value, or to -EAI code for a bad host.
static inline int cmhd_listen(const char *host, uint16_t port, int backlog, int *is_ipv6_out, int *error_out) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    struct addrinfo *info = NULL;
    int rc = getaddrinfo(host, service, &hints, &info);
    if (rc != 0 || info == NULL) {
        *error_out = rc == 0 ? -EAI_NONAME : -(rc < 0 ? -rc : rc);
        return -1;
    }
    int fd = socket(info->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *error_out = errno;
        freeaddrinfo(info);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (info->ai_family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    *is_ipv6_out = info->ai_family == AF_INET6;
    if (bind(fd, info->ai_addr, info->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
        *error_out = errno;
        close(fd);
        freeaddrinfo(info);
        return -1;
    }
    freeaddrinfo(info);
    return fd;
}

/// The port a listening socket is bound to (for `--port 0`).
static inline uint16_t cmhd_socket_port(int fd) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof storage;
    if (getsockname(fd, (struct sockaddr *)&storage, &length) != 0) return 0;
    if (storage.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&storage)->sin_port);
    if (storage.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&storage)->sin6_port);
    return 0;
}

/// `MHD_start_daemon` is variadic; this passes the options the server uses, and takes ownership of
/// `listen_fd` (MHD closes it in `MHD_stop_daemon`). With `https_key` and `https_cert` (PEM, NUL-terminated; both or
/// neither) the daemon speaks TLS; `flags` must then hold `MHD_USE_TLS`.
static inline struct MHD_Daemon *cmhd_start_daemon(
    unsigned int flags, int listen_fd, unsigned int thread_pool_size, unsigned int connection_limit,
    unsigned int connection_timeout, size_t connection_memory_limit, const char *https_key, const char *https_cert,
    MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context,
    MHD_NotifyConnectionCallback connection_notify, void *connection_notify_context,
    void *(*uri_log)(void *context, const char *uri, struct MHD_Connection *connection), void *uri_log_context) {
    struct MHD_OptionItem options[] = {
        {MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL},
        {MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)thread_pool_size, NULL},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)connection_limit, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)connection_timeout, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)connection_memory_limit, NULL},
        {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    if (https_key != NULL && https_cert != NULL) {
        options[5] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)https_key};
        options[6] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)https_cert};
    }
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handler_context,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                            MHD_OPTION_NOTIFY_CONNECTION, connection_notify, connection_notify_context,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, uri_log_context,
                            MHD_OPTION_END);
}

/// The value the connection-notify callback stored for this connection, or NULL.
static inline void *cmhd_connection_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/// Bytes queued in the socket's send buffer and not yet transmitted, or -1. Bytes transmitted but not yet
/// acknowledged are not counted: they may already have reached the client (an ACK it delayed, then a kill), so a
/// count that left them out could say less was sent than the client holds.
static inline int cmhd_unsent_bytes(int fd) {
#if defined(SIOCOUTQNSD)
    int pending = 0;
    return ioctl(fd, SIOCOUTQNSD, &pending) == 0 ? pending : -1;
#elif defined(SIOCOUTQ)
    int pending = 0;
    return ioctl(fd, SIOCOUTQ, &pending) == 0 ? pending : -1;
#else
    (void)fd;
    return -1;
#endif
}

/// Bytes the application has written to a TCP socket since it was opened, transmitted or still queued, from one
/// TCP_INFO snapshot (so no acknowledgement can land between two readings), or -1 where the kernel does not say.
///
/// The fields are read at their offsets in the kernel's `struct tcp_info` (linux/tcp.h; the structure only grows,
/// and these fields date from Linux 4.6 and 4.19): glibc's <netinet/tcp.h>, which this file needs, declares an older
/// `struct tcp_info` without them, and the two headers cannot be included together. New data sent is what was sent
/// less what was sent again; what is queued and not yet sent follows, less the FIN's sequence number when this end
/// has shut down (FIN_WAIT1, CLOSING, LAST_ACK) with bytes still unsent: the FIN then waits at the queue's tail.
static inline int64_t cmhd_bytes_written(int fd) {
#if defined(__linux__) && defined(TCP_INFO)
    unsigned char info[232];
    socklen_t length = sizeof(info);
    memset(info, 0, sizeof(info));
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &length) != 0 || length < 216) return -1;
    uint32_t notSent = 0;
    uint64_t sent = 0, sentAgain = 0;
    memcpy(&notSent, info + 144, sizeof(notSent));
    memcpy(&sent, info + 200, sizeof(sent));
    memcpy(&sentAgain, info + 208, sizeof(sentAgain));
    const unsigned char state = info[0];
    if (notSent > 0 && (state == 4 || state == 11 || state == 9)) notSent -= 1;
    return (int64_t)(sent - sentAgain) + (int64_t)notSent;
#else
    (void)fd;
    return -1;
#endif
}

/// Writes `length` bytes of `bytes` to the socket as they are, past libmicrohttpd's framing (plain HTTP only),
/// without raising SIGPIPE if the peer has gone. Returns what `send` returns.
static inline ssize_t cmhd_send_raw(int fd, const void *bytes, size_t length) {
#ifdef MSG_NOSIGNAL
    return send(fd, bytes, length, MSG_NOSIGNAL);
#else
    return send(fd, bytes, length, 0);
#endif
}

/// Whether the peer has closed the socket or reset it (or shut down its sending side, which an HTTP/1.1 client
/// waiting for a response does not do): 1 if so, 0 if not or when it cannot be told. Never blocks. Used while a
/// response waits on a fault (a stall, a delay), when libmicrohttpd, holding the connection suspended, does not watch
/// it.
static inline int cmhd_peer_closed(int fd) {
    if (fd < 0) return 0;
#ifdef POLLRDHUP
    struct pollfd watched = { .fd = fd, .events = POLLRDHUP, .revents = 0 };
    if (poll(&watched, 1, 0) <= 0) return 0;
    return (watched.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
#else
    struct pollfd watched = { .fd = fd, .events = POLLIN, .revents = 0 };
    if (poll(&watched, 1, 0) <= 0) return 0;
    if (watched.revents & (POLLHUP | POLLERR)) return 1;
    char byte;
    return (watched.revents & POLLIN) && recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
#endif
}

/// How the peer left a socket this side has shut down for writing: 0 not yet (or unknown), 1 in order (it read up to
/// the end of stream and closed: FIN), 2 with a reset (it closed with bytes it had not read, or aborted). Never blocks.
static inline int cmhd_peer_departure(int fd) {
    if (fd < 0) return 0;
    struct pollfd watched = { .fd = fd, .events = POLLIN, .revents = 0 };
#ifdef POLLRDHUP
    watched.events |= POLLRDHUP;
#endif
    if (poll(&watched, 1, 0) <= 0) return 0;
    if (watched.revents & POLLERR) return 2;
    int error = 0;
    socklen_t length = sizeof(error);
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error != 0) return 2;
    if (watched.revents & POLLHUP) return 1;
#ifdef POLLRDHUP
    if (watched.revents & POLLRDHUP) return 1;
#endif
    return 0;
}

/// Caps the socket's send buffer at `bytes` (the kernel books twice that), turning off its growth; returns what
/// `setsockopt` returns.
static inline int cmhd_cap_send_buffer(int fd, int bytes) {
    return setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
}

/// The connection's socket, or -1.
static inline int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/// The peer's numeric address and port, written to `buffer`; returns 0 on success.
static inline int cmhd_connection_peer(struct MHD_Connection *connection, char *buffer, size_t buffer_size,
                                       uint16_t *port_out) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)address;
        *port_out = ntohs(v4->sin_port);
        return inet_ntop(AF_INET, &v4->sin_addr, buffer, (socklen_t)buffer_size) ? 0 : -1;
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)address;
        *port_out = ntohs(v6->sin6_port);
        return inet_ntop(AF_INET6, &v6->sin6_addr, buffer, (socklen_t)buffer_size) ? 0 : -1;
    }
    return -1;
}

/// Aborts the TCP connection with a RST now. libmicrohttpd shuts a socket down (FIN) before closing it, so
/// SO_LINGER alone would let the peer see a clean end first; disconnecting with AF_UNSPEC makes the kernel
/// send the RST at once, and the later shutdown and close are harmless.
static inline int cmhd_abort_with_reset(int fd) {
    struct linger option = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, sizeof option);
    struct sockaddr unspecified;
    memset(&unspecified, 0, sizeof unspecified);
    unspecified.sa_family = AF_UNSPEC;
    return connect(fd, &unspecified, sizeof unspecified);
}

#endif

/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * agent_http.c — the few libcurl calls client.c makes, for the interposer's
 * agent module only (libharmonia-preload-agent.so): a small HTTP/1.1 client over
 * the unix socket or the TCP address of bbmgrd's URL.
 *
 * The agent module is opened in every process of a job that writes into the
 * buffer; opening libcurl there (about 25 libraries, and the TLS library's set-up
 * that curl_global_init() always does) cost several ms of cpu per process for a
 * client that only ever speaks plain HTTP to bbmgrd.  This file gives client.c
 * the same calls with the same meaning for what client.c asks: one request at a
 * time on a kept-alive connection (reopened once when a kept one was closed by
 * the daemon before any byte of the answer), the connect and total time bounds,
 * Content-Length and chunked bodies, the header and body callbacks, the error
 * buffer and the response code.  Anything else is refused (CURLE_UNKNOWN_OPTION).
 *
 * Bounds: a response's header is at most AH_HEADER_MAX bytes and its body at most
 * AH_BODY_MAX (the agent asks for phases and jobs, of a few KB): beyond either
 * the exchange fails and the error buffer says which; a request with no total
 * time bound (CURLOPT_TIMEOUT_MS 0) gets AH_DEFAULT_TIMEOUT.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <curl/curl.h>

#include "libhutil/hutil.h"

#undef curl_easy_setopt
#undef curl_easy_getinfo

#define AH_HEADER_MAX (64 * 1024)
#define AH_BODY_MAX (16 * 1024 * 1024)
#define AH_DEFAULT_TIMEOUT 300.0 /* s */

typedef struct easy {
    /* options (curl_easy_reset() clears them) */
    char *url, *method, *unix_path, *errbuf;
    const char *body;
    long body_len;
    bool nobody;
    long connect_ms, timeout_ms;
    struct curl_slist *headers;
    curl_write_callback write_cb, header_cb;
    void *write_data, *header_data;
    /* the kept connection */
    int fd;
    char *conn_key;
    long status;
    /* what was read past the current response's end */
    char *in;
    size_t in_len, in_cap;
    /* the current response: its header's and body's bytes so far */
    size_t header_bytes;
    unsigned long long body_total;
    const char *too_large; /* "header" or "body" when over its bound */
} easy_t;

CURLcode curl_global_init(long flags)
{
    (void)flags;
    return CURLE_OK;
}

const char *curl_easy_strerror(CURLcode rc)
{
    switch (rc) {
    case CURLE_OK:
        return "No error";
    case CURLE_URL_MALFORMAT:
        return "URL using bad/illegal format or missing URL";
    case CURLE_COULDNT_RESOLVE_HOST:
        return "Couldn't resolve host name";
    case CURLE_COULDNT_CONNECT:
        return "Couldn't connect to server";
    case CURLE_OUT_OF_MEMORY:
        return "Out of memory";
    case CURLE_OPERATION_TIMEDOUT:
        return "Timeout was reached";
    case CURLE_SEND_ERROR:
        return "Failed sending data to the peer";
    case CURLE_RECV_ERROR:
        return "Failure when receiving data from the peer";
    case CURLE_GOT_NOTHING:
        return "Server returned nothing (no headers, no data)";
    case CURLE_WEIRD_SERVER_REPLY:
        return "Weird server reply";
    case CURLE_WRITE_ERROR:
        return "Failed writing received data to disk/application";
    case CURLE_FILESIZE_EXCEEDED:
        return "Maximum file size exceeded";
    case CURLE_UNKNOWN_OPTION:
        return "An unknown option was passed in to libcurl";
    default:
        return "Error";
    }
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
    struct curl_slist *n = malloc(sizeof(*n)), *p;
    if (!n || !(n->data = strdup(s))) {
        free(n);
        return NULL;
    }
    n->next = NULL;
    if (!list)
        return n;
    for (p = list; p->next; p = p->next)
        ;
    p->next = n;
    return list;
}

void curl_slist_free_all(struct curl_slist *list)
{
    while (list) {
        struct curl_slist *n = list->next;
        free(list->data);
        free(list);
        list = n;
    }
}

static void drop_conn(easy_t *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    free(h->conn_key);
    h->conn_key = NULL;
    h->in_len = 0;
}

static void reset_opts(easy_t *h)
{
    free(h->url);
    free(h->method);
    free(h->unix_path);
    h->url = h->method = h->unix_path = h->errbuf = NULL;
    h->body = NULL;
    h->body_len = -1;
    h->nobody = false;
    h->connect_ms = 0;
    h->timeout_ms = 0;
    h->headers = NULL;
    h->write_cb = h->header_cb = NULL;
    h->write_data = h->header_data = NULL;
}

CURL *curl_easy_init(void)
{
    easy_t *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->fd = -1;
    reset_opts(h);
    return h;
}

void curl_easy_reset(CURL *hc)
{
    easy_t *h = hc;
    if (h)
        reset_opts(h);
}

void curl_easy_cleanup(CURL *hc)
{
    easy_t *h = hc;
    if (!h)
        return;
    drop_conn(h);
    reset_opts(h);
    free(h->in);
    free(h);
}

static int set_str(char **slot, const char *v)
{
    char *d = v ? strdup(v) : NULL;
    if (v && !d)
        return -1;
    free(*slot);
    *slot = d;
    return 0;
}

CURLcode(curl_easy_setopt)(CURL *hc, CURLoption opt, ...)
{
    easy_t *h = hc;
    va_list ap;
    CURLcode rc = CURLE_OK;
    va_start(ap, opt);
    switch (opt) {
    case CURLOPT_URL:
        rc = set_str(&h->url, va_arg(ap, const char *)) ? CURLE_OUT_OF_MEMORY : CURLE_OK;
        break;
    case CURLOPT_CUSTOMREQUEST:
        rc = set_str(&h->method, va_arg(ap, const char *)) ? CURLE_OUT_OF_MEMORY : CURLE_OK;
        break;
    case CURLOPT_UNIX_SOCKET_PATH:
        rc = set_str(&h->unix_path, va_arg(ap, const char *)) ? CURLE_OUT_OF_MEMORY : CURLE_OK;
        break;
    case CURLOPT_NOBODY:
        h->nobody = va_arg(ap, long) != 0;
        break;
    case CURLOPT_HTTPHEADER:
        h->headers = va_arg(ap, struct curl_slist *);
        break;
    case CURLOPT_CONNECTTIMEOUT_MS:
        h->connect_ms = va_arg(ap, long);
        break;
    case CURLOPT_TIMEOUT_MS:
        h->timeout_ms = va_arg(ap, long);
        break;
    case CURLOPT_WRITEFUNCTION:
        h->write_cb = va_arg(ap, curl_write_callback);
        break;
    case CURLOPT_WRITEDATA:
        h->write_data = va_arg(ap, void *);
        break;
    case CURLOPT_HEADERFUNCTION:
        h->header_cb = va_arg(ap, curl_write_callback);
        break;
    case CURLOPT_HEADERDATA:
        h->header_data = va_arg(ap, void *);
        break;
    case CURLOPT_ERRORBUFFER:
        h->errbuf = va_arg(ap, char *);
        break;
    case CURLOPT_POSTFIELDS:
        h->body = va_arg(ap, const char *);
        break;
    case CURLOPT_POSTFIELDSIZE:
        h->body_len = va_arg(ap, long);
        break;
    case CURLOPT_NOSIGNAL:    /* no signal is ever used */
    case CURLOPT_TCP_NODELAY: /* always set */
        (void)va_arg(ap, long);
        break;
    case CURLOPT_PROTOCOLS_STR: { /* plain HTTP is all this client speaks */
        const char *p = va_arg(ap, const char *);
        rc = p && !strcasecmp(p, "http") ? CURLE_OK : CURLE_UNSUPPORTED_PROTOCOL;
        break;
    }
    default:
        rc = CURLE_UNKNOWN_OPTION;
        break;
    }
    va_end(ap);
    return rc;
}

CURLcode(curl_easy_getinfo)(CURL *hc, CURLINFO info, ...)
{
    easy_t *h = hc;
    va_list ap;
    CURLcode rc = CURLE_OK;
    va_start(ap, info);
    if (info == CURLINFO_RESPONSE_CODE)
        *va_arg(ap, long *) = h->status;
    else
        rc = CURLE_UNKNOWN_OPTION;
    va_end(ap);
    return rc;
}

/* ------------------------------------------------------------------ transfer */
static CURLcode fail(easy_t *h, CURLcode rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static CURLcode fail(easy_t *h, CURLcode rc, const char *fmt, ...)
{
    if (h->errbuf) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(h->errbuf, CURL_ERROR_SIZE, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ms left before the deadline, at least 0 */
static int left_ms(double deadline)
{
    double l = (deadline - hu_mono()) * 1000;
    return l <= 0 ? 0 : l > 1e9 ? 1000000000 : (int)l + 1;
}

static int wait_fd(int fd, short ev, double deadline)
{
    struct pollfd p = { .fd = fd, .events = ev };
    for (;;) {
        int ms = left_ms(deadline);
        if (ms == 0)
            return 0;
        int r = poll(&p, 1, ms);
        if (r > 0)
            return 1;
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

/* A non-blocking connect, bounded; the socket or -1 (rc set). */
static int connect_one(int family, int type, int proto, const struct sockaddr *sa, socklen_t len,
                       double deadline, CURLcode *rc)
{
    int fd = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, proto);
    if (fd < 0) {
        *rc = CURLE_COULDNT_CONNECT;
        return -1;
    }
    if (family != AF_UNIX) {
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    if (connect(fd, sa, len) == 0)
        return fd;
    if (errno == EINPROGRESS || errno == EAGAIN) {
        int w = wait_fd(fd, POLLOUT, deadline), err = 0;
        socklen_t el = sizeof(err);
        if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
            return fd;
        *rc = w == 0 ? CURLE_OPERATION_TIMEDOUT : CURLE_COULDNT_CONNECT;
        errno = w == 0 ? ETIMEDOUT : err;
    } else
        *rc = CURLE_COULDNT_CONNECT;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* Parse "http://host[:port]/path"; host is bracketed for IPv6. */
static int parse_url(const char *url, char *host, size_t hostsz, char *port, size_t portsz,
                     const char **path)
{
    if (strncasecmp(url, "http://", 7))
        return -1;
    const char *p = url + 7, *end = p + strcspn(p, "/?"), *colon = NULL;
    const char *hs = p, *he;
    if (*p == '[') {
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb)
            return -1;
        hs = p + 1;
        he = rb;
        if (rb + 1 < end && rb[1] == ':')
            colon = rb + 1;
    } else {
        colon = memchr(p, ':', (size_t)(end - p));
        he = colon ? colon : end;
    }
    if (he <= hs || (size_t)(he - hs) >= hostsz)
        return -1;
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = '\0';
    if (colon && colon + 1 < end) {
        if ((size_t)(end - colon - 1) >= portsz)
            return -1;
        memcpy(port, colon + 1, (size_t)(end - colon - 1));
        port[end - colon - 1] = '\0';
    } else
        snprintf(port, portsz, "80");
    *path = *end ? end : "/";
    return 0;
}

static int open_conn(easy_t *h, const char *host, const char *port, double deadline, CURLcode *rc)
{
    double cd = deadline;
    if (h->connect_ms > 0 && hu_mono() + h->connect_ms / 1000.0 < cd)
        cd = hu_mono() + h->connect_ms / 1000.0;
    if (h->unix_path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(h->unix_path) >= sizeof(sa.sun_path)) {
            *rc = CURLE_COULDNT_CONNECT;
            errno = ENAMETOOLONG;
            return -1;
        }
        strcpy(sa.sun_path, h->unix_path);
        return connect_one(AF_UNIX, SOCK_STREAM, 0, (struct sockaddr *)&sa, sizeof(sa), cd, rc);
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
    int g = getaddrinfo(host, port, &hints, &res);
    if (g != 0) {
        *rc = CURLE_COULDNT_RESOLVE_HOST;
        errno = ENOENT;
        return -1;
    }
    int fd = -1;
    for (ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = connect_one(ai->ai_family, ai->ai_socktype, ai->ai_protocol, ai->ai_addr,
                         ai->ai_addrlen, cd, rc);
    freeaddrinfo(res);
    return fd;
}

static int send_all(int fd, const char *p, size_t n, double deadline, CURLcode *rc)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int r = wait_fd(fd, POLLOUT, deadline);
            if (r > 0)
                continue;
            *rc = r == 0 ? CURLE_OPERATION_TIMEDOUT : CURLE_SEND_ERROR;
            return -1;
        }
        *rc = CURLE_SEND_ERROR;
        return -1;
    }
    return 0;
}

/* More bytes into h->in; 0 at end of stream, -1 on error (rc set). */
static ssize_t fill(easy_t *h, double deadline, CURLcode *rc)
{
    if (h->in_len + 4096 > h->in_cap) {
        size_t cap = h->in_cap ? h->in_cap * 2 : 16384;
        char *p = realloc(h->in, cap);
        if (!p) {
            *rc = CURLE_OUT_OF_MEMORY;
            return -1;
        }
        h->in = p;
        h->in_cap = cap;
    }
    for (;;) {
        ssize_t r = recv(h->fd, h->in + h->in_len, h->in_cap - h->in_len - 1, 0);
        if (r >= 0) {
            h->in_len += (size_t)r;
            return r;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = wait_fd(h->fd, POLLIN, deadline);
            if (w > 0)
                continue;
            *rc = w == 0 ? CURLE_OPERATION_TIMEDOUT : CURLE_RECV_ERROR;
            return -1;
        }
        *rc = CURLE_RECV_ERROR;
        return -1;
    }
}

static void consume(easy_t *h, size_t n)
{
    memmove(h->in, h->in + n, h->in_len - n);
    h->in_len -= n;
}

/* The index just past the next "\r\n" in h->in, reading as needed; 0 at the end
 * of the stream before one, -1 on error. */
static ssize_t line_end(easy_t *h, double deadline, CURLcode *rc)
{
    size_t from = 0;
    for (;;) {
        if (h->in_len > 0) {
            char *nl = memchr(h->in + from, '\n', h->in_len - from);
            if (nl)
                return nl - h->in + 1;
            from = h->in_len;
        }
        if (h->in_len > 65536) {
            *rc = CURLE_WEIRD_SERVER_REPLY;
            return -1;
        }
        ssize_t r = fill(h, deadline, rc);
        if (r <= 0)
            return r;
    }
}

static int deliver(easy_t *h, const char *p, size_t n, CURLcode *rc)
{
    if (n == 0)
        return 0;
    h->body_total += n;
    if (h->body_total > AH_BODY_MAX) {
        h->too_large = "body";
        *rc = CURLE_FILESIZE_EXCEEDED;
        return -1;
    }
    if (!h->write_cb)
        return 0;
    if (h->write_cb((char *)p, 1, n, h->write_data) != n) {
        *rc = CURLE_WRITE_ERROR;
        return -1;
    }
    return 0;
}

/* Exactly n bytes of body (n < 0: until the end of the stream). */
static int body_bytes(easy_t *h, long long n, double deadline, CURLcode *rc)
{
    for (;;) {
        size_t take = h->in_len;
        if (n >= 0 && (long long)take > n)
            take = (size_t)n;
        if (deliver(h, h->in, take, rc) < 0)
            return -1;
        consume(h, take);
        if (n >= 0) {
            n -= (long long)take;
            if (n == 0)
                return 0;
        }
        ssize_t r = fill(h, deadline, rc);
        if (r < 0)
            return -1;
        if (r == 0) {
            if (n < 0)
                return 0;
            *rc = CURLE_RECV_ERROR;
            return -1;
        }
    }
}

static int chunked(easy_t *h, double deadline, CURLcode *rc)
{
    for (;;) {
        ssize_t e = line_end(h, deadline, rc);
        if (e <= 0) {
            if (e == 0)
                *rc = CURLE_RECV_ERROR;
            return -1;
        }
        char *end;
        h->in[e - 1] = '\0';
        unsigned long long sz = strtoull(h->in, &end, 16);
        if (end == h->in) {
            *rc = CURLE_WEIRD_SERVER_REPLY;
            return -1;
        }
        consume(h, (size_t)e);
        if (sz == 0) {
            /* trailers, up to the empty line */
            for (;;) {
                e = line_end(h, deadline, rc);
                if (e <= 0) {
                    if (e == 0)
                        *rc = CURLE_RECV_ERROR;
                    return -1;
                }
                bool empty = e <= 2;
                consume(h, (size_t)e);
                if (empty)
                    return 0;
            }
        }
        if (sz > (1ULL << 40) || body_bytes(h, (long long)sz, deadline, rc) < 0) {
            if (*rc == CURLE_OK)
                *rc = CURLE_WEIRD_SERVER_REPLY;
            return -1;
        }
        e = line_end(h, deadline, rc); /* the CRLF after the data */
        if (e <= 0) {
            if (e == 0)
                *rc = CURLE_RECV_ERROR;
            return -1;
        }
        consume(h, (size_t)e);
    }
}

/* One exchange on the open connection.  *nothing: the stream ended before any
 * byte of the answer (a kept connection the daemon had closed). */
static int exchange(easy_t *h, const char *req, size_t reqlen, double deadline, bool *nothing,
                    bool *keep, CURLcode *rc)
{
    *nothing = false;
    *keep = true;
    h->in_len = 0;
    h->header_bytes = 0;
    h->body_total = 0;
    h->too_large = NULL;
    if (send_all(h->fd, req, reqlen, deadline, rc) < 0) {
        *nothing = *rc == CURLE_SEND_ERROR;
        return -1;
    }
    if (h->body && h->body_len > 0
        && send_all(h->fd, h->body, (size_t)h->body_len, deadline, rc) < 0)
        return -1;
    long long clen = -1;
    bool chunk = false, first = true, http10 = false;
    int status = 0;
    for (;;) {
        ssize_t e = line_end(h, deadline, rc);
        if (e <= 0) {
            if (e == 0) {
                *rc = first && h->in_len == 0 ? CURLE_GOT_NOTHING : CURLE_RECV_ERROR;
                *nothing = first && h->in_len == 0;
            } else if (*rc == CURLE_RECV_ERROR && first && h->in_len == 0)
                *nothing = true;
            return -1;
        }
        char *l = h->in;
        size_t n = (size_t)e;
        h->header_bytes += n;
        if (h->header_bytes > AH_HEADER_MAX) {
            h->too_large = "header";
            *rc = CURLE_WEIRD_SERVER_REPLY;
            return -1;
        }
        if (h->header_cb && h->header_cb(l, 1, n, h->header_data) != n) {
            *rc = CURLE_WRITE_ERROR;
            return -1;
        }
        if (first) {
            int maj, min;
            if (sscanf(l, "HTTP/%d.%d %d", &maj, &min, &status) != 3 || status < 100) {
                *rc = CURLE_WEIRD_SERVER_REPLY;
                return -1;
            }
            http10 = maj == 1 && min == 0;
            first = false;
            consume(h, n);
            continue;
        }
        if (n <= 2) { /* the empty line */
            consume(h, n);
            if (status >= 100 && status < 200) {
                first = true; /* an interim answer: the real one follows */
                continue;
            }
            break;
        }
        if (!strncasecmp(l, "Content-Length:", 15))
            clen = strtoll(l + 15, NULL, 10);
        else if (!strncasecmp(l, "Transfer-Encoding:", 18)) {
            l[n - 1] = '\0';
            chunk = strcasestr(l + 18, "chunked") != NULL;
        } else if (!strncasecmp(l, "Connection:", 11)) {
            l[n - 1] = '\0';
            if (strcasestr(l + 11, "close"))
                *keep = false;
            else if (strcasestr(l + 11, "keep-alive"))
                http10 = false;
        }
        consume(h, n);
    }
    if (http10)
        *keep = false;
    h->status = status;
    bool none = h->nobody || status == 204 || status == 304;
    int r = 0;
    if (none)
        r = 0;
    else if (chunk)
        r = chunked(h, deadline, rc);
    else if (clen >= 0)
        r = body_bytes(h, clen, deadline, rc);
    else {
        r = body_bytes(h, -1, deadline, rc);
        *keep = false;
    }
    return r;
}

CURLcode curl_easy_perform(CURL *hc)
{
    easy_t *h = hc;
    char host[256], port[16], *req = NULL, *key = NULL;
    const char *path;
    size_t cap = 0, len = 0;
    CURLcode rc = CURLE_OK;
    FILE *f = NULL;

    h->status = 0;
    if (h->errbuf)
        h->errbuf[0] = '\0';
    if (!h->url || parse_url(h->url, host, sizeof(host), port, sizeof(port), &path) < 0)
        return fail(h, CURLE_URL_MALFORMAT, "%s: not an http:// URL", h->url ? h->url : "");
    double deadline = hu_mono() + (h->timeout_ms > 0 ? h->timeout_ms / 1000.0 : AH_DEFAULT_TIMEOUT);
    const char *method = h->method ? h->method : h->body ? "POST" : h->nobody ? "HEAD" : "GET";

    if (asprintf(&key, "%s|%s|%s", h->unix_path ? h->unix_path : "", host, port) < 0)
        return fail(h, CURLE_OUT_OF_MEMORY, "out of memory");
    if (!(f = open_memstream(&req, &cap))) {
        free(key);
        return fail(h, CURLE_OUT_OF_MEMORY, "out of memory");
    }
    bool v6 = strchr(host, ':') != NULL;
    fprintf(f, "%s %s HTTP/1.1\r\nHost: %s%s%s%s%s\r\n", method, path, v6 ? "[" : "", host,
            v6 ? "]" : "", strcmp(port, "80") ? ":" : "", strcmp(port, "80") ? port : "");
    for (struct curl_slist *s = h->headers; s; s = s->next) {
        const char *c = strchr(s->data, ':');
        if (c && c[1 + strspn(c + 1, " ")] == '\0')
            continue; /* "Name:": no such header (curl's rule) */
        fprintf(f, "%s\r\n", s->data);
    }
    if (h->body) {
        if (h->body_len < 0)
            h->body_len = (long)strlen(h->body);
        fprintf(f, "Content-Length: %ld\r\n", h->body_len);
    }
    fputs("\r\n", f);
    if (fclose(f) != 0 || !req) {
        free(req);
        free(key);
        return fail(h, CURLE_OUT_OF_MEMORY, "out of memory");
    }
    len = strlen(req);

    for (int attempt = 0; attempt < 2; attempt++) {
        bool reused = h->fd >= 0 && h->conn_key && !strcmp(h->conn_key, key);
        if (!reused) {
            drop_conn(h);
            h->fd = open_conn(h, host, port, deadline, &rc);
            if (h->fd < 0) {
                int e = errno;
                rc = fail(h, rc, "Failed to connect to %s%s%s: %s",
                          h->unix_path ? h->unix_path : host, h->unix_path ? "" : " port ",
                          h->unix_path ? "" : port, strerror(e));
                break;
            }
            h->conn_key = key;
            key = NULL;
        }
        bool nothing, keep;
        rc = CURLE_OK;
        int r = exchange(h, req, len, deadline, &nothing, &keep, &rc);
        if (r == 0) {
            if (!keep)
                drop_conn(h);
            break;
        }
        if (!key && !(key = strdup(h->conn_key)))
            rc = CURLE_OUT_OF_MEMORY;
        drop_conn(h);
        if (h->too_large) {
            rc = fail(h, rc, "response %s larger than %d bytes", h->too_large,
                      !strcmp(h->too_large, "body") ? AH_BODY_MAX : AH_HEADER_MAX);
            break;
        }
        if (!(reused && nothing) || !key) {
            rc = fail(h, rc, "%s", curl_easy_strerror(rc));
            break;
        }
        /* the daemon closed the kept connection: once more on a new one */
    }
    free(key);
    free(req);
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * A Prometheus endpoint's HTTP side, shared by both daemons (`flowgate
 * --metrics`, `flowgate-xdp --metrics`): GET/HEAD /metrics answered with
 * what a renderer callback writes (the text exposition format, version
 * 0.0.4), and the format's writers (families, label values), so both
 * daemons write one format the same way.
 *
 * Threads: the server runs on its own pthread, one poll() loop serving up
 * to FG_METRICS_MAX_CLIENTS connections at once with non-blocking
 * sockets; a request has FG_METRICS_TIMEOUT_MS to arrive and its answer as
 * long to leave, and is at most FG_METRICS_MAX_REQUEST bytes.  The
 * renderer is called on that thread, once per scrape.
 *
 * Security: no authentication; bind it to a management address
 * (e.g. 127.0.0.1:9469), not to a VIP network.
 */
#ifndef FLOWGATE_FG_PROMSERVE_H
#define FLOWGATE_FG_PROMSERVE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FG_METRICS_MAX_CLIENTS 16
#define FG_METRICS_MAX_REQUEST 4096
#define FG_METRICS_TIMEOUT_MS 5000

/** Writes the exposition text to @p f.  @return 0 or -errno (the scrape
 *  is then answered 503 with the reason). */
typedef int (*fg_promserve_render_fn)(FILE *f, void *ctx);

struct fg_promserve;

/**
 * Binds @p listen ("ADDR:PORT", "[V6ADDR]:PORT"; numeric addresses only)
 * and starts the server thread, named @p thread_name.
 * @return 0 and *out, -EINVAL (bad @p listen), -ENOMEM, or the -errno of
 *   socket/bind/listen/pthread_create.
 */
int fg_promserve_start(const char *listen, const char *thread_name,
		       fg_promserve_render_fn render, void *ctx, struct fg_promserve **out);

/** Stops the thread, closes every socket, frees.  NULL is a no-op. */
void fg_promserve_stop(struct fg_promserve *m);

/** Writes a family's HELP (escaped) and TYPE lines. */
void fg_prom_family(FILE *f, const char *name, const char *type, const char *help);

/** fg_prom_family() of the name @p prefix @p mid @p suffix, built in
 *  @p name (@p len bytes) for the caller's samples. */
void fg_prom_family3(FILE *f, char *name, size_t len, const char *prefix,
		     const char *mid, const char *suffix, const char *type,
		     const char *help);

/** The "backend" label value of a backend (escaped into @p out): ADDR,
 *  or ADDR:PORT / [V6ADDR]:PORT when it has its own port. */
void fg_prom_backend_label(const char *addr, int v6, uint16_t port, char *out, size_t len);

/**
 * Parses "ADDR:PORT" or "[V6ADDR]:PORT" into @p ss.  Pure, any thread.
 * @return 0, or -EINVAL.
 */
int fg_metrics_listen_parse(const char *s, struct sockaddr_storage *ss,
			    socklen_t *len);

/** What fg_metrics_http_parse() decided. */
enum fg_metrics_http {
	FG_METRICS_HTTP_INCOMPLETE = 0, /**< no end of headers yet */
	FG_METRICS_HTTP_METRICS,        /**< GET /metrics (query ignored) */
	FG_METRICS_HTTP_HEAD,           /**< HEAD /metrics */
	FG_METRICS_HTTP_NOT_FOUND,      /**< 404: another path */
	FG_METRICS_HTTP_BAD_METHOD,     /**< 405: not GET/HEAD */
	FG_METRICS_HTTP_BAD_REQUEST,    /**< 400: no request line / not HTTP/1.x */
	FG_METRICS_HTTP_TOO_LARGE,      /**< 431: headers past FG_METRICS_MAX_REQUEST */
};

/**
 * Classifies the bytes received so far of one HTTP/1.0 or 1.1 request.
 * Pure, any thread.
 */
enum fg_metrics_http fg_metrics_http_parse(const char *buf, size_t len);

/**
 * Escapes a label value of the exposition format (`\` -> `\\`, `"` ->
 * `\"`, newline -> `\n`) into @p out.  Pure, any thread.
 * @return the escaped length, or -ENOSPC (truncated, still terminated).
 */
int fg_metrics_label_escape(const char *in, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* FLOWGATE_FG_PROMSERVE_H */

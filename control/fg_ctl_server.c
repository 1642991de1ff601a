/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Control-socket server: poll() loop over a Unix listening socket and its
 * clients, request dispatch to struct fg_ctl_ops.  See fg_ctl_server.h.
 */
#include "fg_ctl_server.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fg_config_parse.h"
#include "fg_health.h"

const char *const fg_ctl_counter_names[] = {
#define FG_X(n) #n,
	FG_CTL_COUNTER_LIST(FG_X)
#undef FG_X
};

/* A stream flushes to the socket once this much output is pending. */
#define STREAM_FLUSH_BYTES (256u << 10)
#define READ_CHUNK 65536
#define WATCH_BATCH 256
#define WATCH_POLL_MS 50
/* An emptied output buffer larger than this is freed (an idle client does
 * not keep the peak of its biggest reply). */
#define OUT_KEEP_BYTES (256u << 10)

struct client {
	int fd;
	char *in;
	size_t in_len, in_cap;
	size_t scan;              /* bytes of in already searched for '\n' */
	bool backlog;             /* a complete line waits (output was full) */
	struct fg_json_writer out;
	size_t out_off;           /* bytes of out already sent */
	uint64_t sent_total;      /* bytes ever sent */
	/* write window: sent_total must reach drain_mark by drain_deadline_ms
	 * (0: no window open, nothing queued) */
	uint64_t drain_mark, drain_deadline_ms;
	bool closing;             /* close once out is flushed */
	bool dead;                /* close now */
	bool watching;
	uint64_t watch_id;
	struct fg_flow_filter watch_filter; /* events this watcher gets */
	uint64_t last_active_ms;  /* last request, or last reply fully read */
	struct ucred cred;        /* peer, for the audit trail (-1: unknown) */
	bool read_only;           /* came in on the read-only socket */
};

struct fg_ctl_server {
	struct fg_ctl_server_params p;
	struct fg_ctl_ops ops;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char config_path[PATH_MAX];     /**< the -c file, "" = none */
	char ro_path[sizeof(((struct sockaddr_un *)0)->sun_path)]; /**< "" = none */
	int lfd;
	int ro_lfd;                     /**< read-only socket, -1 = none */
	int wake[2];
	struct client **clients;
	unsigned int n_clients;
	unsigned int watchers;
	pthread_t thread;
	bool running;
	volatile bool stop;
	struct fg_ctl_counters cnt;
	struct fg_flow_event *evbuf;
	/* a request of the daemon itself (fg_ctl_server_reload), handed to
	 * the control thread */
	pthread_mutex_t local_lock;
	pthread_cond_t local_cv;
	struct local_req *local;
};

struct local_req {
	const char *line;
	size_t len;
	char *reply;    /* the reply line (malloc), NULL: out of memory */
	bool done;
};

/* ---- socket setup ------------------------------------------------------- */

static int check_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	struct stat st;
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* others could replace our socket with theirs */
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		return -EPERM;
	return 0;
}

/* A listening Unix socket at @p path, mode @p mode (umask ignored), group
 * @p gid when @p chgrp; a stale socket file is replaced only if nobody
 * answers on it.  @return the fd, or -errno. */
static int listen_on(const char *path, mode_t mode, bool chgrp, gid_t gid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	int fd, rc;

	if (!*path || strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = check_parent(path);
	if (rc)
		return rc;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		/* a live daemon answers: never steal its socket */
		int t = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (t >= 0) {
			int c = connect(t, (struct sockaddr *)&sa, sizeof(sa));
			close(t);
			if (!c)
				return -EADDRINUSE;
		}
		unlink(path);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* bind() creates the file with the umask applied: make it owner-only
	 * from the start rather than chmod-ing a socket that was briefly open;
	 * the group gets its access once the file has that group */
	mode_t old = umask(0177);
	rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (rc) {
		close(fd);
		return rc;
	}
	if ((chgrp && chown(path, (uid_t)-1, gid)) || chmod(path, mode) || listen(fd, 64)) {
		rc = -errno;
		unlink(path);
		close(fd);
		return rc;
	}
	return fd;
}

static void params_defaults(struct fg_ctl_server_params *p)
{
	if (!p->max_clients)
		p->max_clients = 64;
	if (!p->max_request)
		p->max_request = FG_PROTO_MAX_REQUEST;
	if (!p->max_outbuf)
		p->max_outbuf = 16u << 20;
	if (p->max_outbuf < 2 * STREAM_FLUSH_BYTES)
		p->max_outbuf = 2 * STREAM_FLUSH_BYTES;
	if (!p->write_timeout_ms)
		p->write_timeout_ms = 15000;
	if (!p->idle_timeout_ms)
		p->idle_timeout_ms = FG_CTL_DEFAULT_IDLE_MS;
	if (!p->max_watchers)
		p->max_watchers = FG_CTL_DEFAULT_WATCHERS;
}

int fg_ctl_server_create(const struct fg_ctl_server_params *p,
			 struct fg_ctl_server **out)
{
	if (!p || !p->ops || !out)
		return -EINVAL;
	const char *path = p->socket_path ? p->socket_path : FG_CTL_DEFAULT_SOCKET;
	int rc;

	if (!*path || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return -EINVAL;
	struct fg_ctl_server *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->p = *p;
	s->ops = *p->ops;
	s->lfd = s->ro_lfd = -1;
	pthread_mutex_init(&s->local_lock, NULL);
	pthread_cond_init(&s->local_cv, NULL);
	s->wake[0] = s->wake[1] = -1;
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (p->config_path)
		snprintf(s->config_path, sizeof(s->config_path), "%s", p->config_path);
	s->p.config_path = NULL;	/* the copy above outlives the caller's */
	params_defaults(&s->p);
	/* ordinary and watcher slots: accept_clients and h_flows_watch keep
	 * each kind under its cap, so n_clients never exceeds the sum */
	s->clients = calloc(s->p.max_clients + s->p.max_watchers, sizeof(*s->clients));
	s->evbuf = calloc(WATCH_BATCH, sizeof(*s->evbuf));
	if (!s->clients || !s->evbuf) {
		rc = -ENOMEM;
		goto fail;
	}
	if (pipe2(s->wake, O_NONBLOCK | O_CLOEXEC)) {
		rc = -errno;
		goto fail;
	}
	rc = s->lfd = listen_on(path, 0600, false, 0);
	if (rc < 0)
		goto fail;
	*out = s;
	return 0;
fail:
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	free(s->clients);
	free(s->evbuf);
	free(s);
	return rc;
}

int fg_ctl_server_listen_ro(struct fg_ctl_server *s, const char *path, gid_t gid)
{
	int fd;

	if (!s || !path || !*path || s->running || s->ro_lfd >= 0 || !strcmp(path, s->path) ||
	    strlen(path) >= sizeof(s->ro_path))
		return -EINVAL;
	fd = listen_on(path, 0660, true, gid);
	if (fd < 0)
		return fd;
	s->ro_lfd = fd;
	snprintf(s->ro_path, sizeof(s->ro_path), "%s", path);
	return 0;
}

/* ---- clients ------------------------------------------------------------ */

static size_t out_pending(const struct client *c)
{
	return c->out.len - c->out_off;
}

static void client_close(struct fg_ctl_server *s, unsigned int i)
{
	struct client *c = s->clients[i];
	if (c->watching) {
		c->watching = false;
		if (--s->watchers == 0 && s->ops.watch_set)
			s->ops.watch_set(false, s->p.ctx);
	}
	close(c->fd);
	free(c->in);
	fg_jw_fini(&c->out);
	free(c);
	s->clients[i] = s->clients[--s->n_clients];
	s->clients[s->n_clients] = NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Sends what the socket takes now.  @return 0 or -EPIPE (peer gone). */
static int client_send(struct client *c)
{
	while (out_pending(c)) {
		ssize_t n = send(c->fd, c->out.buf + c->out_off, out_pending(c),
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			c->out_off += (size_t)n;
			c->sent_total += (uint64_t)n;
			if (!out_pending(c))
				c->last_active_ms = now_ms(); /* the reply is read */
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		return -EPIPE;
	}
	if (!out_pending(c)) {
		fg_jw_reset(&c->out);
		if (c->out.cap > OUT_KEEP_BYTES)
			fg_jw_fini(&c->out);
		c->out_off = 0;
	} else if (c->out_off > c->out.len / 2 && c->out.depth == 0) {
		/* between messages: drop what was sent */
		memmove(c->out.buf, c->out.buf + c->out_off, out_pending(c));
		c->out.len -= c->out_off;
		c->out_off = 0;
	}
	return 0;
}

/* During a stream: waits (bounded) until pending output drops below
 * @p below.  The reader gets write_timeout_ms for this window as a whole:
 * progress does not restart the clock, or a reader taking a byte at a time
 * would hold the control thread (and every other client) for ever.  A
 * pipeline (`fgctl flows list | ...`) takes a window in milliseconds.
 * @return 0, -ETIMEDOUT (reader stuck or too slow), -EPIPE. */
static int client_drain(struct fg_ctl_server *s, struct client *c, size_t below)
{
	uint64_t deadline = now_ms() + s->p.write_timeout_ms;
	for (;;) {
		if (client_send(c))
			return -EPIPE;
		if (out_pending(c) <= below)
			return 0;
		uint64_t t = now_ms();
		if (t >= deadline)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
		int r = poll(&pfd, 1, (int)(deadline - t));
		if (r < 0 && errno != EINTR)
			return -EPIPE;
		if (r > 0 && (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)))
			return -EPIPE;
	}
}

/* ---- request handling --------------------------------------------------- */

struct req_ctx {
	struct fg_ctl_server *s;
	struct client *c;
	struct fg_proto_req *r;
	struct fg_json_writer *w;
	char err[1024];
	char hint[256];
	int stream_err;
	uint64_t emitted;
};

static int fail(struct req_ctx *x, const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct req_ctx *x, const char *hint, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	snprintf(x->hint, sizeof(x->hint), "%s", hint ? hint : "");
	return -1;
}

static int arg_str(struct req_ctx *x, const char *key, bool required, const char **out)
{
	int rc = fg_json_get_str(x->r->args, key, out);
	if (rc == -ENOENT && !required) {
		*out = NULL;
		return 0;
	}
	if (rc == -ENOENT)
		return fail(x, NULL, "%s: argument \"%s\" is required", x->r->cmd_name, key);
	if (rc)
		return fail(x, NULL, "%s: argument \"%s\" must be a string", x->r->cmd_name, key);
	return 0;
}

static int arg_u64(struct req_ctx *x, const char *key, bool required, uint64_t max,
		   uint64_t *out, bool *present)
{
	int rc = fg_json_get_u64(x->r->args, key, out);
	if (present)
		*present = rc == 0;
	if (rc == -ENOENT && !required)
		return 0;
	if (rc == -ENOENT)
		return fail(x, NULL, "%s: argument \"%s\" is required", x->r->cmd_name, key);
	if (rc || *out > max)
		return fail(x, NULL, "%s: argument \"%s\" must be an integer in 0..%" PRIu64,
			    x->r->cmd_name, key, max);
	return 0;
}

static int arg_bool(struct req_ctx *x, const char *key, bool *out)
{
	*out = false;
	int rc = fg_json_get_bool(x->r->args, key, out);
	if (rc == -EINVAL)
		return fail(x, NULL, "%s: argument \"%s\" must be true or false",
			    x->r->cmd_name, key);
	return 0;
}

static bool have_op(struct req_ctx *x, const void *op)
{
	if (!op) {
		fail(x, "this daemon build does not implement it", "%s is not supported",
		     x->r->cmd_name);
		return false;
	}
	return true;
}

static int get_config(struct req_ctx *x, struct fg_config *cfg)
{
	if (!have_op(x, (const void *)x->s->ops.config_get))
		return -1;
	memset(cfg, 0, sizeof(*cfg));
	int rc = x->s->ops.config_get(cfg, x->s->p.ctx);
	if (rc)
		return fail(x, NULL, "cannot read the running config: %s", strerror(-rc));
	return 0;
}

static void errs_to_msg(struct req_ctx *x, const struct fg_cfg_errs *e, const char *what)
{
	size_t n = (size_t)snprintf(x->err, sizeof(x->err), "%s: %u problem%s", what, e->n,
				    e->n == 1 ? "" : "s");
	for (unsigned i = 0; i < e->n && i < e->max && n < sizeof(x->err); i++) {
		const struct fg_cfg_err *r = &e->v[i];
		if (r->line)
			n += (size_t)snprintf(x->err + n, sizeof(x->err) - n, "\n%s%s%u: %s",
					      r->file, r->file[0] ? ":" : "line ", r->line, r->msg);
		else
			n += (size_t)snprintf(x->err + n, sizeof(x->err) - n, "\n%s%s%s", r->file,
					      r->file[0] ? ": " : "", r->msg);
	}
}

/* validate, assign ids against the running config, apply, tell health */
static int commit(struct req_ctx *x, struct fg_config *next, const struct fg_config *prev)
{
	struct fg_cfg_err ev[16];
	struct fg_cfg_errs e = { .v = ev, .max = 16 };
	if (fg_config_validate(next, "", &e)) {
		errs_to_msg(x, &e, "the change makes the config invalid");
		snprintf(x->hint, sizeof(x->hint), "nothing was changed");
		return -1;
	}
	if (fg_config_assign_ids(next, prev))
		return fail(x, NULL, "no free service id");
	/* a backend that is down stays down across edits and file applies */
	if (x->s->p.health)
		fg_health_mark(x->s->p.health, next);
	if (!have_op(x, (const void *)x->s->ops.config_apply))
		return -1;
	char aerr[512] = "";
	int rc = x->s->ops.config_apply(next, aerr, sizeof(aerr), x->s->p.ctx);
	if (rc)
		return fail(x, "nothing was changed; the running config is as before",
			    "apply failed: %s", aerr[0] ? aerr : strerror(-rc));
	if (x->s->p.health)
		fg_health_update(x->s->p.health, next);
	return 0;
}

static int find_service(struct req_ctx *x, const struct fg_config *cfg, const char *spec)
{
	int i = fg_config_find_service(cfg, spec);
	if (i < 0) {
		struct fg_addr a;
		uint16_t port;
		uint8_t proto;
		if (fg_service_spec_parse(spec, &a, &port, &proto) && !strchr(spec, ':'))
			return fail(x, "list services with 'fgctl service list'",
				    "no service named '%s'", spec);
		if (fg_service_spec_parse(spec, &a, &port, &proto))
			return fail(x, "write it as VIP:PORT/PROTO, e.g. 10.0.0.1:80/tcp or "
				    "[fd00::1]:443/udp", "bad service '%s'", spec);
		return fail(x, "list services with 'fgctl service list'",
			    "no service %s", spec);
	}
	return i;
}

static void json_backend(struct req_ctx *x, const struct fg_service_cfg *svc,
			 const struct fg_backend_cfg *b)
{
	char a[64];
	struct fg_json_writer *w = x->w;
	fg_jw_obj_open(w, NULL);
	fg_jw_u64(w, "id", b->id);
	fg_jw_str(w, "addr", fg_addr_format(&b->addr, a, sizeof(a)));
	fg_jw_u64(w, "port", b->port ? b->port : svc->port);
	fg_jw_u64(w, "weight", b->weight);
	fg_jw_bool(w, "drained", b->drained);
	fg_jw_bool(w, "health_down", b->health_down);
	if (b->src.family)
		fg_jw_str(w, "src", fg_addr_format(&b->src, a, sizeof(a)));
	const char *h = "unchecked";
	if (svc->health.type != FG_HC_NONE && x->s->p.health) {
		int up = fg_health_is_up(x->s->p.health, svc->id, b->id);
		h = up == 1 ? "up" : up == 0 ? "down" : "unchecked";
	}
	fg_jw_str(w, "health", h);
	/* ipvsadm's ActiveConn / InActConn (a backend not in the dataplane
	 * yet, e.g. during an apply, reads 0) */
	uint64_t act = 0, inact = 0;
	if (x->s->ops.backend_conns) {
		(void)x->s->ops.backend_conns(svc->id, b->id, &act, &inact, x->s->p.ctx);
		fg_jw_u64(w, "active_conns", act);
		fg_jw_u64(w, "inactive_conns", inact);
	}
	uint64_t nf, nfl;

	if (x->s->ops.backend_placed &&
	    x->s->ops.backend_placed(svc->id, b->id, &nf, &nfl, x->s->p.ctx) == 0) {
		fg_jw_u64(w, "new_flows", nf);
		if (svc->sched == FG_SCHED_MAGLEV_LOAD) {
			fg_jw_u64(w, "new_flows_maglev", nf >= nfl ? nf - nfl : 0);
			fg_jw_u64(w, "new_flows_load", nfl);
		}
	}
	struct fg_health_load l;

	if (svc->health.type == FG_HC_METRICS && x->s->p.health &&
	    fg_health_load(x->s->p.health, svc->id, b->id, &l) == 0) {
		fg_jw_obj_open(w, "load");
		fg_jw_str(w, "state", !l.fresh ? (l.ever ? "stale" : "never") :
				      l.saturated ? "saturated" : "fresh");
		fg_jw_dbl(w, "score", (double)l.score_milli / 1000.0);
		if (l.ever)
			fg_jw_u64(w, "age_ms", l.age_ms);
		else
			fg_jw_null(w, "age_ms");
		fg_jw_obj_open(w, "series");
		for (uint32_t k = 0; k < l.n_series; k++)
			fg_jw_dbl(w, l.series[k], l.raw[k]);
		fg_jw_obj_close(w);
		fg_jw_str(w, "last_error", l.last_error);
		fg_jw_obj_close(w);
	}
	fg_jw_obj_close(w);
}

static void json_service(struct req_ctx *x, const struct fg_service_cfg *s, bool backends)
{
	char a[96];
	struct fg_json_writer *w = x->w;
	fg_jw_obj_open(w, NULL);
	fg_jw_u64(w, "id", s->id);
	fg_jw_str(w, "name", s->name);
	fg_jw_str(w, "service", fg_service_spec_format(&s->vip, s->port, s->proto, a, sizeof(a)));
	fg_jw_str(w, "vip", fg_addr_format(&s->vip, a, sizeof(a)));
	fg_jw_u64(w, "port", s->port);
	fg_jw_str(w, "proto", s->proto == IPPROTO_UDP ? "udp" : "tcp");
	fg_jw_str(w, "mode", fg_mode_name(s->mode));
	fg_jw_str(w, "sched", fg_sched_name(s->sched));
	fg_jw_str(w, "on_fail", fg_fail_name(s->on_fail));
	fg_jw_str(w, "health_check", fg_hc_name(s->health.type));
	fg_jw_u64(w, "maglev_size", s->maglev_size);
	if (backends) {
		fg_jw_arr_open(w, "backends");
		for (uint32_t b = 0; b < s->n_backends; b++)
			json_backend(x, s, &s->backends[b]);
		fg_jw_arr_close(w);
	} else {
		fg_jw_u64(w, "n_backends", s->n_backends);
	}
	fg_jw_obj_close(w);
}

static int h_ping(struct req_ctx *x)
{
	struct fg_json_writer *w = x->w;
	fg_proto_reply_begin(w, x->r->id);
	fg_jw_obj_open(w, NULL);
	fg_jw_i64(w, "protocol", FG_PROTO_VERSION);
	fg_jw_obj_open(w, "control");
#define FG_X(n) fg_jw_u64(w, #n, x->s->cnt.n);
	FG_CTL_COUNTER_LIST(FG_X)
#undef FG_X
	fg_jw_u64(w, "clients", x->s->n_clients);
	fg_jw_u64(w, "watchers", x->s->watchers);
	/* what the other clients hold now: unread replies, and their buffers
	 * (the bound of "Isolation" in fg_ctl_server.h) */
	uint64_t queued = 0, held = 0;
	for (unsigned int i = 0; i < x->s->n_clients; i++) {
		const struct client *c = x->s->clients[i];
		if (c == x->c)
			continue;
		queued += out_pending(c);
		held += sizeof(*c) + c->in_cap + c->out.cap;
	}
	fg_jw_u64(w, "queued_bytes", queued);
	fg_jw_u64(w, "buffer_bytes", held);
	fg_jw_obj_close(w);
	fg_jw_obj_close(w);
	fg_proto_reply_end(w);
	return 0;
}

static int h_service_add(struct req_ctx *x)
{
	const char *spec, *mode, *sched, *name, *on_fail;
	if (arg_str(x, "service", true, &spec) || arg_str(x, "mode", false, &mode) ||
	    arg_str(x, "sched", false, &sched) || arg_str(x, "name", false, &name) ||
	    arg_str(x, "on_fail", false, &on_fail))
		return -1;
	struct fg_service_cfg *svc = malloc(sizeof(*svc));
	if (!svc)
		return fail(x, NULL, "out of memory");
	fg_service_init(svc);
	int rc = -1;
	struct fg_config cur, next;
	memset(&cur, 0, sizeof(cur));
	memset(&next, 0, sizeof(next));
	if (fg_service_spec_parse(spec, &svc->vip, &svc->port, &svc->proto)) {
		fail(x, "write it as VIP:PORT/PROTO, e.g. 10.0.0.1:80/tcp", "bad service '%s'", spec);
		goto out;
	}
	int m = mode ? fg_mode_parse(mode) : (int)svc->mode;
	int sc = sched ? fg_sched_parse(sched) : (int)svc->sched;
	if (m < 0) {
		fail(x, "use dsr-ipip, dsr-gue or nat", "unknown mode '%s'", mode);
		goto out;
	}
	if (sc < 0) {
		fail(x, "use maglev, lc or maglev-load", "unknown scheduler '%s'", sched);
		goto out;
	}
	svc->mode = (enum fg_fwd_mode)m;
	svc->sched = (enum fg_sched)sc;
	if (on_fail) {
		if (!strcmp(on_fail, "keep"))
			svc->on_fail = FG_FAIL_KEEP;
		else if (!strcmp(on_fail, "reset"))
			svc->on_fail = FG_FAIL_RESET;
		else {
			fail(x, "use keep or reset", "unknown on_fail policy '%s'", on_fail);
			goto out;
		}
	}
	if (name) {
		if (strlen(name) >= sizeof(svc->name)) {
			fail(x, NULL, "service name '%s' longer than %d", name, FG_NAME_MAX - 1);
			goto out;
		}
		snprintf(svc->name, sizeof(svc->name), "%s", name);
	}
	if (get_config(x, &cur))
		goto out;
	if (fg_config_copy(&next, &cur)) {
		fail(x, NULL, "out of memory");
		goto out;
	}
	int r = fg_config_add_service(&next, svc);
	if (r == -EEXIST) {
		fail(x, "delete it first with 'fgctl service del', or edit the config file and "
		     "'fgctl config apply'", "service %s already exists", spec);
		goto out;
	}
	if (r < 0) {
		fail(x, NULL, r == -ENOSPC ? "too many services (max %d)" : "out of memory (%d)",
		     FG_MAX_SERVICES);
		goto out;
	}
	if (commit(x, &next, &cur))
		goto out;
	fg_proto_reply_begin(x->w, x->r->id);
	json_service(x, &next.services[r], true);
	fg_proto_reply_end(x->w);
	rc = 0;
out:
	free(svc);
	fg_config_free(&cur);
	fg_config_free(&next);
	return rc;
}

static int h_service_del(struct req_ctx *x)
{
	const char *spec;
	if (arg_str(x, "service", true, &spec))
		return -1;
	struct fg_config cur, next;
	memset(&next, 0, sizeof(next));
	if (get_config(x, &cur))
		return -1;
	int rc = -1, i = find_service(x, &cur, spec);
	if (i < 0)
		goto out;
	if (fg_config_copy(&next, &cur)) {
		fail(x, NULL, "out of memory");
		goto out;
	}
	fg_config_del_service(&next, (unsigned)i);
	if (commit(x, &next, &cur))
		goto out;
	fg_proto_reply_begin(x->w, x->r->id);
	json_service(x, &cur.services[i], false);
	fg_proto_reply_end(x->w);
	rc = 0;
out:
	fg_config_free(&cur);
	fg_config_free(&next);
	return rc;
}

static int h_service_list(struct req_ctx *x)
{
	struct fg_config cur;
	if (get_config(x, &cur))
		return -1;
	fg_proto_reply_begin(x->w, x->r->id);
	fg_jw_arr_open(x->w, NULL);
	for (uint32_t i = 0; i < cur.n_services; i++)
		json_service(x, &cur.services[i], true);
	fg_jw_arr_close(x->w);
	fg_proto_reply_end(x->w);
	fg_config_free(&cur);
	return 0;
}

enum bop { B_ADD, B_DEL, B_WEIGHT, B_DRAIN, B_UNDRAIN };

static int h_backend(struct req_ctx *x, enum bop op)
{
	const char *spec, *addr;
	uint64_t weight = 1;
	bool has_weight = false;
	if (arg_str(x, "service", true, &spec) || arg_str(x, "addr", true, &addr) ||
	    arg_u64(x, "weight", op == B_WEIGHT, 65535, &weight, &has_weight))
		return -1;
	struct fg_addr a;
	uint16_t port;
	if (fg_endpoint_parse(addr, false, &a, &port))
		return fail(x, "write ADDR, ADDR:PORT or [IPv6]:PORT", "bad backend address '%s'",
			    addr);
	struct fg_config cur, next;
	memset(&next, 0, sizeof(next));
	if (get_config(x, &cur))
		return -1;
	int rc = -1, si = find_service(x, &cur, spec);
	if (si < 0)
		goto out;
	if (fg_config_copy(&next, &cur)) {
		fail(x, NULL, "out of memory");
		goto out;
	}
	struct fg_service_cfg *svc = &next.services[si];
	int bi = fg_config_find_backend(svc, &a, op == B_ADD ? port : port);
	if (op == B_ADD) {
		if (bi >= 0 && svc->backends[bi].port == port) {
			fail(x, "change it with 'fgctl backend weight' or 'backend drain'",
			     "backend %s already in service %s", addr, spec);
			goto out;
		}
		if (svc->n_backends >= FG_MAX_BACKENDS) {
			fail(x, NULL, "service %s has the maximum of %d backends", spec,
			     FG_MAX_BACKENDS);
			goto out;
		}
		bi = (int)svc->n_backends++;
		fg_backend_init(&svc->backends[bi]);
		svc->backends[bi].addr = a;
		svc->backends[bi].port = port;
		svc->backends[bi].weight = (uint32_t)weight;
	} else {
		if (bi < 0) {
			fail(x, "list backends with 'fgctl backend list SERVICE'",
			     "backend %s is not in service %s", addr, spec);
			goto out;
		}
		struct fg_backend_cfg *b = &svc->backends[bi];
		switch (op) {
		case B_DEL:
			memmove(b, b + 1, sizeof(*b) * (svc->n_backends - (uint32_t)bi - 1));
			svc->n_backends--;
			break;
		case B_WEIGHT:
			b->weight = (uint32_t)weight;
			break;
		case B_DRAIN:
			b->drained = true;
			break;
		case B_UNDRAIN:
			b->drained = false;
			break;
		default:
			break;
		}
	}
	if (commit(x, &next, &cur))
		goto out;
	fg_proto_reply_begin(x->w, x->r->id);
	if (op == B_DEL)
		json_backend(x, &cur.services[si], &cur.services[si].backends[
			fg_config_find_backend(&cur.services[si], &a, port)]);
	else
		json_backend(x, svc, &svc->backends[bi]);
	fg_proto_reply_end(x->w);
	rc = 0;
out:
	fg_config_free(&cur);
	fg_config_free(&next);
	return rc;
}

static int h_backend_list(struct req_ctx *x)
{
	const char *spec;
	if (arg_str(x, "service", false, &spec))
		return -1;
	struct fg_config cur;
	if (get_config(x, &cur))
		return -1;
	int si = -1;
	if (spec && (si = find_service(x, &cur, spec)) < 0) {
		fg_config_free(&cur);
		return -1;
	}
	fg_proto_reply_begin(x->w, x->r->id);
	fg_jw_arr_open(x->w, NULL);
	for (uint32_t i = 0; i < cur.n_services; i++)
		if (si < 0 || (uint32_t)si == i)
			json_service(x, &cur.services[i], true);
	fg_jw_arr_close(x->w);
	fg_proto_reply_end(x->w);
	fg_config_free(&cur);
	return 0;
}

static int parse_filter(struct req_ctx *x, struct fg_flow_filter *f, bool *any)
{
	const char *svc, *be, *st;
	uint64_t core = 0, limit = 0;
	bool has_core;
	fg_flow_filter_init(f);
	*any = false;
	if (arg_str(x, "service", false, &svc) || arg_str(x, "backend", false, &be) ||
	    arg_str(x, "state", false, &st) ||
	    arg_u64(x, "core", false, FG_CTL_MAX_CORES - 1, &core, &has_core) ||
	    arg_u64(x, "limit", false, UINT64_MAX, &limit, NULL))
		return -1;
	f->limit = limit;
	if (has_core) {
		f->core = (int32_t)core;
		*any = true;
	}
	if (st) {
		int i = fg_flow_state_lookup(st);
		if (i < 0)
			return fail(x, "states: SYN_SENT SYN_RECV ESTABLISHED FIN_WAIT CLOSE_WAIT "
				    "LAST_ACK TIME_WAIT CLOSE UDP UDP_STREAM OTHER PICKUP",
				    "unknown state '%s'", st);
		f->state = i;
		snprintf(f->state_name, sizeof(f->state_name), "%s", fg_flow_state_name(i));
		*any = true;
	}
	if (be) {
		if (fg_endpoint_parse(be, false, &f->backend, &f->backend_port))
			return fail(x, "write ADDR, ADDR:PORT or [IPv6]:PORT",
				    "bad backend address '%s'", be);
		f->has_backend = true;
		*any = true;
	}
	const char *client, *nat;
	uint64_t v;
	bool has;
	if (arg_str(x, "client", false, &client) || arg_str(x, "nat_addr", false, &nat))
		return -1;
	if (client) {
		if (fg_flow_filter_client_parse(f, client))
			return fail(x, "write ADDR or ADDR/PREFIX, e.g. 172.16.0.0/12 or fd00::/64",
				    "bad client address or prefix '%s'", client);
		*any = true;
	}
	if (nat) {
		if (fg_addr_parse(nat, &f->nat_addr))
			return fail(x, "write the balancer's local address, e.g. 10.0.0.1",
				    "bad NAT address '%s'", nat);
		f->has_nat_addr = true;
		*any = true;
	}
	if (arg_u64(x, "client_port", false, 65535, &v, &has))
		return -1;
	if (has) {
		f->has_client_port = true;
		f->client_port = (uint16_t)v;
		*any = true;
	}
	if (arg_u64(x, "nat_port", false, 65535, &v, &has))
		return -1;
	if (has) {
		f->has_nat_port = true;
		f->nat_port = (uint16_t)v;
		*any = true;
	}
	static const struct { const char *key; size_t off; } ranges[] = {
		{ "idle_min_ms", offsetof(struct fg_flow_filter, idle_min_ms) },
		{ "idle_max_ms", offsetof(struct fg_flow_filter, idle_max_ms) },
		{ "lifetime_min_ms", offsetof(struct fg_flow_filter, life_min_ms) },
		{ "lifetime_max_ms", offsetof(struct fg_flow_filter, life_max_ms) },
	};
	for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
		if (arg_u64(x, ranges[k].key, false, UINT64_MAX, &v, &has))
			return -1;
		if (has) {
			memcpy((char *)f + ranges[k].off, &v, sizeof(v));
			*any = true;
		}
	}
	if (f->idle_min_ms > f->idle_max_ms || f->life_min_ms > f->life_max_ms)
		return fail(x, NULL, "empty range: a minimum above its maximum");
	if (svc) {
		struct fg_config cur;
		if (get_config(x, &cur))
			return -1;
		int i = find_service(x, &cur, svc);
		if (i >= 0)
			f->service_id = cur.services[i].id;
		fg_config_free(&cur);
		if (i < 0)
			return -1;
		*any = true;
	}
	return 0;
}

static int emit_flow(const struct fg_flow_info *info, void *arg)
{
	struct req_ctx *x = arg;
	fg_proto_item_begin(x->w, x->r->id, NULL);
	fg_flow_info_to_json(x->w, NULL, info);
	fg_proto_reply_end(x->w);
	if (fg_jw_error(x->w))
		return x->stream_err = fg_jw_error(x->w);
	x->emitted++;
	if (out_pending(x->c) >= STREAM_FLUSH_BYTES) {
		int rc = client_drain(x->s, x->c, STREAM_FLUSH_BYTES / 4);
		if (rc)
			return x->stream_err = rc;
	}
	return 0;
}

static int h_flows_walk(struct req_ctx *x, bool get, bool del)
{
	struct fg_flow_filter f;
	bool any;
	if (!have_op(x, (const void *)x->s->ops.flows_walk))
		return -1;
	if (get) {
		const char *src, *dst, *proto;
		fg_flow_filter_init(&f);
		if (arg_str(x, "src", true, &src) || arg_str(x, "dst", true, &dst) ||
		    arg_str(x, "proto", true, &proto))
			return -1;
		if (fg_endpoint_parse(src, true, &f.src, &f.sport))
			return fail(x, "write ADDR:PORT or [IPv6]:PORT", "bad source '%s'", src);
		if (fg_endpoint_parse(dst, true, &f.dst, &f.dport))
			return fail(x, "write ADDR:PORT or [IPv6]:PORT", "bad destination '%s'", dst);
		if (f.src.family != f.dst.family)
			return fail(x, NULL, "source and destination families differ");
		if (!strcasecmp(proto, "tcp"))
			f.proto = IPPROTO_TCP;
		else if (!strcasecmp(proto, "udp"))
			f.proto = IPPROTO_UDP;
		else
			return fail(x, "use tcp or udp", "unknown protocol '%s'", proto);
		f.has_tuple = true;
	} else {
		if (parse_filter(x, &f, &any))
			return -1;
		bool all = false;
		if (del && arg_bool(x, "all", &all))
			return -1;
		if (del && !any && !all)
			return fail(x, "add a filter (--service, --backend, --state, --core) or "
				    "--all to delete every flow", "refusing to delete all flows "
				    "without --all");
	}
	if (arg_u64(x, "timeout_ms", false, FG_PROTO_TIMEOUT_MS_MAX, &f.wait_ms, NULL))
		return -1;
	x->emitted = 0;
	x->stream_err = 0;
	int64_t n = x->s->ops.flows_walk(&f, del ? NULL : emit_flow, x, del, x->s->p.ctx);
	if (x->stream_err == -EPIPE || x->stream_err == -ETIMEDOUT) {
		if (x->stream_err == -ETIMEDOUT)
			x->s->cnt.write_timeouts++;
		x->c->dead = true;
		return 0;
	}
	if (n < 0)
		return fail(x, NULL, "%s failed: %s", x->r->cmd_name, strerror((int)-n));
	if (get && n == 0)
		return fail(x, "the flow may have expired; list flows with 'fgctl flows list'",
			    "no tracked flow matches");
	fg_proto_reply_begin(x->w, x->r->id);
	fg_jw_obj_open(x->w, NULL);
	fg_jw_u64(x->w, del ? "deleted" : "count", (uint64_t)n);
	fg_jw_obj_close(x->w);
	fg_proto_reply_end(x->w);
	return 0;
}

static int h_flows_count(struct req_ctx *x)
{
	bool per_core;
	if (arg_bool(x, "per_core", &per_core) || !have_op(x, (const void *)x->s->ops.flows_count))
		return -1;
	struct fg_flow_counts *fc = calloc(1, sizeof(*fc));
	if (!fc)
		return fail(x, NULL, "out of memory");
	int rc = x->s->ops.flows_count(fc, x->s->p.ctx);
	if (rc) {
		free(fc);
		return fail(x, NULL, "flows.count failed: %s", strerror(-rc));
	}
	struct fg_json_writer *w = x->w;
	fg_proto_reply_begin(w, x->r->id);
	fg_jw_obj_open(w, NULL);
	fg_jw_u64(w, "total", fc->total);
	fg_jw_u64(w, "nat", fc->nat);
	fg_jw_u64(w, "nat_capacity", fc->nat_capacity);
	fg_jw_obj_open(w, "per_state");
	for (int i = 1; i < 16 && fg_flow_state_name(i); i++)
		fg_jw_u64(w, fg_flow_state_name(i), fc->per_state[i]);
	fg_jw_obj_close(w);
	if (per_core) {
		fg_jw_arr_open(w, "per_core");
		for (uint32_t i = 0; i < fc->n_cores && i < FG_CTL_MAX_CORES; i++)
			fg_jw_u64(w, NULL, fc->per_core[i]);
		fg_jw_arr_close(w);
	}
	fg_jw_obj_close(w);
	fg_proto_reply_end(w);
	free(fc);
	return 0;
}

static int h_flows_watch(struct req_ctx *x)
{
	if (!have_op(x, (const void *)x->s->ops.watch_set) ||
	    !have_op(x, (const void *)x->s->ops.watch_poll))
		return -1;
	if (x->c->watching)
		return fail(x, NULL, "this connection is already watching");
	bool any;
	if (parse_filter(x, &x->c->watch_filter, &any))
		return -1;
	if (x->c->watch_filter.limit)
		return fail(x, NULL, "flows.watch: \"limit\" is for listings");
	if (x->s->watchers >= x->s->p.max_watchers) {
		x->s->cnt.watch_rejected++;
		return fail(x, "stop another 'fgctl flows watch', or retry later",
			    "too many flows watch clients (max %u)", x->s->p.max_watchers);
	}
	if (x->s->watchers == 0) {
		int rc = x->s->ops.watch_set(true, x->s->p.ctx);
		if (rc)
			return fail(x, NULL, "cannot start event reporting: %s", strerror(-rc));
	}
	x->s->watchers++;
	x->c->watching = true;
	x->c->watch_id = x->r->id;
	return 0;
}

static int h_stats(struct req_ctx *x)
{
	const char *svc;
	bool per_core, zero;
	if (arg_str(x, "service", false, &svc) || arg_bool(x, "per_core", &per_core) ||
	    arg_bool(x, "zero", &zero) || !have_op(x, (const void *)x->s->ops.stats))
		return -1;
	struct fg_json_writer tw;
	fg_jw_init(&tw, x->s->p.max_outbuf);
	int rc = x->s->ops.stats(&tw, svc, per_core, zero, x->s->p.ctx);
	if (!rc && (fg_jw_error(&tw) || tw.depth || !tw.len))
		rc = fg_jw_error(&tw) ? fg_jw_error(&tw) : -EINVAL;
	if (rc) {
		fg_jw_fini(&tw);
		if (rc == -ENOENT && svc)
			return fail(x, "list services with 'fgctl service list'", "no service '%s'",
				    svc);
		return fail(x, NULL, "stats failed: %s", strerror(-rc));
	}
	fg_proto_reply_begin(x->w, x->r->id);
	fg_jw_json(x->w, NULL, tw.buf, tw.len);
	fg_proto_reply_end(x->w);
	fg_jw_fini(&tw);
	return 0;
}

static int h_health(struct req_ctx *x)
{
	if (!x->s->p.health)
		return fail(x, "add 'health tcp|http { ... }' to a service", "health checks are "
			    "not running in this daemon");
	fg_proto_reply_begin(x->w, x->r->id);
	fg_health_to_json(x->s->p.health, x->w);
	fg_proto_reply_end(x->w);
	return 0;
}

static int h_config_text(struct req_ctx *x, bool apply)
{
	const char *text, *name;
	bool allow_empty = false;
	if (arg_str(x, "text", true, &text) || arg_str(x, "name", false, &name) ||
	    (apply && arg_bool(x, "allow_empty", &allow_empty)))
		return -1;
	if (!name)
		name = "config";
	struct fg_cfg_err ev[32];
	struct fg_cfg_errs e = { .v = ev, .max = 32 };
	struct fg_config next, cur;
	memset(&cur, 0, sizeof(cur));
	int rc = fg_config_parse(text, strlen(text), name, &next, &e);
	if (rc) {
		if (e.n)
			errs_to_msg(x, &e, name);
		else
			fail(x, NULL, "%s: %s", name, strerror(-rc));
		snprintf(x->hint, sizeof(x->hint), "fix the lines above; the running config is "
			 "unchanged");
		fg_config_free(&next);
		return -1;
	}
	rc = -1;
	if (apply && next.n_services == 0 && !allow_empty) {
		fail(x, "to remove every service, apply it with --allow-empty (protocol: "
		     "\"allow_empty\":true); nothing was applied",
		     "%s: the config has no service: applying it would remove every service",
		     name);
		goto out;
	}
	/* the whole file replaces the running config: a field this daemon
	 * cannot change while running is refused by name, not ignored */
	char restart[512] = "";
	if (x->s->ops.config_check) {
		char cerr[512] = "";
		int crc = x->s->ops.config_check(&next, cerr, sizeof(cerr), x->s->p.ctx);
		if (crc < 0) {
			fail(x, apply ? "nothing was applied" : NULL, "%s: %s", name,
			     cerr[0] ? cerr : strerror(-crc));
			goto out;
		}
		if (crc > 0 && apply) {
			fail(x, "keep the running value in the file (fgctl config show prints "
			     "it), or restart flowgate with the new config; nothing was applied",
			     "%s: %s: needs a restart", name, cerr);
			goto out;
		}
		if (crc > 0)
			snprintf(restart, sizeof(restart), "%s", cerr);
	}
	if (apply) {
		if (get_config(x, &cur) || commit(x, &next, &cur))
			goto out;
	}
	uint32_t nb = 0;
	for (uint32_t i = 0; i < next.n_services; i++)
		nb += next.services[i].n_backends;
	fg_proto_reply_begin(x->w, x->r->id);
	fg_jw_obj_open(x->w, NULL);
	fg_jw_bool(x->w, "applied", apply);
	fg_jw_u64(x->w, "services", next.n_services);
	fg_jw_u64(x->w, "backends", nb);
	if (!apply) {
		fg_jw_bool(x->w, "daemon_checked", x->s->ops.config_check != NULL);
		if (restart[0])
			fg_jw_str(x->w, "restart_needed", restart);
	}
	fg_jw_obj_close(x->w);
	fg_proto_reply_end(x->w);
	rc = 0;
out:
	fg_config_free(&next);
	fg_config_free(&cur);
	return rc;
}

static int h_config_show(struct req_ctx *x)
{
	struct fg_config cur;
	char *text = NULL;
	if (get_config(x, &cur))
		return -1;
	int rc = fg_config_dump_str(&cur, &text);
	fg_config_free(&cur);
	if (rc)
		return fail(x, NULL, "cannot format the config: %s", strerror(-rc));
	fg_proto_reply_begin(x->w, x->r->id);
	fg_jw_obj_open(x->w, NULL);
	fg_jw_str(x->w, "text", text);
	if (x->s->config_path[0])
		fg_jw_str(x->w, "path", x->s->config_path);
	fg_jw_obj_close(x->w);
	fg_proto_reply_end(x->w);
	free(text);
	return 0;
}

static int h_version(struct req_ctx *x)
{
	struct fg_json_writer *w = x->w;

	fg_proto_reply_begin(w, x->r->id);
	fg_jw_obj_open(w, NULL);
	fg_jw_i64(w, "protocol", FG_PROTO_VERSION);
	if (x->s->ops.build_info)
		x->s->ops.build_info(w, x->s->p.ctx);
	fg_jw_str(w, "socket", x->c->read_only ? x->s->ro_path : x->s->path);
	fg_jw_bool(w, "read_only", x->c->read_only);
	fg_jw_obj_close(w);
	fg_proto_reply_end(w);
	return 0;
}

/* A request that changes state, on the read-only socket: refused, the
 * reason and the way to do it in one sentence. */
static int refuse_read_only(struct req_ctx *x)
{
	x->s->cnt.refused_read_only++;
	return fail(x, "read-only sockets serve stats, flows, backends, services, health, "
		    "config show / check and version",
		    "%s%s changes flowgate's state, and %s is the read-only control socket: "
		    "run it as root on the read-write socket %s", x->r->cmd_name,
		    x->r->cmd == FG_CMD_STATS ? " --zero" : "", x->s->ro_path, x->s->path);
}

static int dispatch(struct req_ctx *x)
{
	if (x->c->read_only && fg_ctl_request_writes(x->r))
		return refuse_read_only(x);
	switch ((enum fg_cmd)x->r->cmd) {
	case FG_CMD_PING: return h_ping(x);
	case FG_CMD_SERVICE_ADD: return h_service_add(x);
	case FG_CMD_SERVICE_DEL: return h_service_del(x);
	case FG_CMD_SERVICE_LIST: return h_service_list(x);
	case FG_CMD_BACKEND_ADD: return h_backend(x, B_ADD);
	case FG_CMD_BACKEND_DEL: return h_backend(x, B_DEL);
	case FG_CMD_BACKEND_LIST: return h_backend_list(x);
	case FG_CMD_BACKEND_WEIGHT: return h_backend(x, B_WEIGHT);
	case FG_CMD_BACKEND_DRAIN: return h_backend(x, B_DRAIN);
	case FG_CMD_BACKEND_UNDRAIN: return h_backend(x, B_UNDRAIN);
	case FG_CMD_FLOWS_LIST: return h_flows_walk(x, false, false);
	case FG_CMD_FLOWS_GET: return h_flows_walk(x, true, false);
	case FG_CMD_FLOWS_DELETE: return h_flows_walk(x, false, true);
	case FG_CMD_FLOWS_COUNT: return h_flows_count(x);
	case FG_CMD_FLOWS_WATCH: return h_flows_watch(x);
	case FG_CMD_STATS: return h_stats(x);
	case FG_CMD_HEALTH: return h_health(x);
	case FG_CMD_CONFIG_APPLY: return h_config_text(x, true);
	case FG_CMD_CONFIG_SHOW: return h_config_show(x);
	case FG_CMD_CONFIG_CHECK: return h_config_text(x, false);
	case FG_CMD_VERSION: return h_version(x);
	case FG_CMD_MAX: break;
	}
	return fail(x, NULL, "command not implemented");
}

bool fg_ctl_request_writes(const struct fg_proto_req *r)
{
	bool zero = false;

	switch ((enum fg_cmd)r->cmd) {
	case FG_CMD_STATS:
		return fg_json_get_bool(r->args, "zero", &zero) == 0 && zero;
	case FG_CMD_SERVICE_ADD: case FG_CMD_SERVICE_DEL:
	case FG_CMD_BACKEND_ADD: case FG_CMD_BACKEND_DEL:
	case FG_CMD_BACKEND_WEIGHT: case FG_CMD_BACKEND_DRAIN:
	case FG_CMD_BACKEND_UNDRAIN: case FG_CMD_CONFIG_APPLY:
	case FG_CMD_FLOWS_DELETE:
		return true;
	default:
		return false;
	}
}

/* One audit call per change request: who (SO_PEERCRED), what, result. */
static void audit(struct fg_ctl_server *s, const struct client *c,
		  const struct fg_proto_req *r, bool ok, const char *err)
{
	struct fg_json_writer w;
	const struct fg_json *text = fg_json_get(r->args, "text");

	if (!s->p.audit || !fg_ctl_request_writes(r))
		return;
	fg_jw_init(&w, 64 * 1024);
	if (text == NULL) {
		fg_jw_value(&w, NULL, r->args);
	} else {
		/* a whole config file is no log line: its size and the rest */
		const char *t = NULL;
		const char *keys[] = { "name", "origin" };
		fg_jw_obj_open(&w, NULL);
		if (fg_json_get_str(r->args, "text", &t) == 0)
			fg_jw_u64(&w, "text_bytes", strlen(t));
		for (unsigned i = 0; i < 2; i++) {
			const struct fg_json *v = fg_json_get(r->args, keys[i]);
			if (v)
				fg_jw_value(&w, keys[i], v);
		}
		bool ae = false;
		if (fg_json_get_bool(r->args, "allow_empty", &ae) == 0)
			fg_jw_bool(&w, "allow_empty", ae);
		fg_jw_obj_close(&w);
	}
	/* one line: a multi-line error (every config problem) is joined */
	char e1[1024];
	size_t k = 0;
	for (const char *q = ok ? "" : err; *q && k + 3 < sizeof(e1); q++) {
		if (*q == '\n') {
			e1[k++] = ';';
			e1[k++] = ' ';
		} else {
			e1[k++] = *q;
		}
	}
	e1[k] = 0;
	struct fg_ctl_audit a = {
		.uid = c->cred.pid < 0 ? -1 : (long)c->cred.uid,
		.gid = c->cred.pid < 0 ? -1 : (long)c->cred.gid,
		.pid = c->cred.pid < 0 ? -1 : (long)c->cred.pid,
		.cmd = r->cmd_name, .args = fg_jw_error(&w) ? "{}" : w.buf,
		.ok = ok, .error = e1,
	};
	if (a.args == NULL)
		a.args = "{}";
	s->p.audit(&a, s->p.ctx);
	fg_jw_fini(&w);
}

/* Handles one request line.  @return true if it was a well-formed
 * request (what counts as activity), false if it was refused unparsed. */
static bool handle_line(struct fg_ctl_server *s, struct client *c, const char *line, size_t len)
{
	struct fg_proto_req r;
	char err[256];
	s->cnt.requests++;
	int rc = fg_proto_req_parse(line, len, &r, err, sizeof(err));
	if (rc) {
		s->cnt.bad_requests++;
		s->cnt.errors++;
		const char *hint = rc == -EPROTO ? "upgrade fgctl to match the daemon" :
			rc == -ENOENT ? "run 'fgctl --help' for the commands" :
			"send one JSON object per line: {\"v\":1,\"id\":N,\"cmd\":\"...\",\"args\":{}}";
		fg_proto_reply_error(&c->out, r.id, err, hint);
		fg_proto_req_free(&r);
		return false;
	}
	struct req_ctx *x = calloc(1, sizeof(*x));
	if (!x) {
		fg_proto_reply_error(&c->out, r.id, "out of memory", NULL);
		fg_proto_req_free(&r);
		return true;
	}
	x->s = s;
	x->c = c;
	x->r = &r;
	x->w = &c->out;
	int drc = dispatch(x);
	if (drc && !c->dead) {
		s->cnt.errors++;
		fg_proto_reply_error(&c->out, r.id, x->err, x->hint);
	}
	audit(s, c, &r, drc == 0, x->err);
	free(x);
	fg_proto_req_free(&r);
	return true;
}

/* true while the client's unread replies stop its requests being read */
static bool client_paused(const struct client *c)
{
	return out_pending(c) >= FG_CTL_QUEUE_MAX;
}

/* The output checks after a request or an event batch: one reply or a
 * watcher's backlog over max_outbuf, or a failed writer, drops the
 * client.  @return true if it did. */
static bool client_out_over(struct fg_ctl_server *s, struct client *c)
{
	if (out_pending(c) <= s->p.max_outbuf && !fg_jw_error(&c->out))
		return false;
	s->cnt.dropped_slow++;
	c->dead = true;
	return true;
}

static void client_oversized(struct fg_ctl_server *s, struct client *c)
{
	char msg[128];

	s->cnt.oversized++;
	s->cnt.bad_requests++;
	snprintf(msg, sizeof(msg), "request exceeds %zu bytes", s->p.max_request);
	fg_proto_reply_error(&c->out, 0, msg, "split the change into smaller requests");
	c->in_len = 0;
	c->scan = 0;
	c->backlog = false;
	c->closing = true;
}

/* Handles the complete lines buffered, until the client's unread replies
 * reach FG_CTL_QUEUE_MAX (the rest wait: c->backlog). */
static void client_process(struct fg_ctl_server *s, struct client *c)
{
	size_t start = 0, i;

	c->backlog = false;
	for (i = c->scan; i < c->in_len; i++) {
		if (c->in[i] != '\n')
			continue;
		if (i - start > s->p.max_request) {
			client_oversized(s, c);
			return;
		}
		if (client_paused(c)) {
			c->backlog = true;
			break;
		}
		if (handle_line(s, c, c->in + start, i - start))
			c->last_active_ms = now_ms();
		start = i + 1;
		if (c->dead || client_out_over(s, c))
			return;
	}
	memmove(c->in, c->in + start, c->in_len - start);
	c->in_len -= start;
	c->scan = i - start;
	if (!c->backlog && c->in_len > s->p.max_request) {
		client_oversized(s, c);
		return;
	}
	if (!c->in_len && c->in_cap > 2 * READ_CHUNK) {
		/* after a big request: back to the usual size */
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
}

/* Reads what is there and handles complete lines; reads nothing while
 * the client's replies are unread (client_paused). */
static void client_read(struct fg_ctl_server *s, struct client *c)
{
	while (!c->dead && !c->closing && !client_paused(c) && !c->backlog) {
		if (c->in_cap - c->in_len < READ_CHUNK) {
			size_t nc = c->in_cap ? c->in_cap * 2 : 2 * READ_CHUNK;
			char *n = realloc(c->in, nc);
			if (!n) {
				c->dead = true;
				return;
			}
			c->in = n;
			c->in_cap = nc;
		}
		ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
		if (n == 0) {
			/* peer closed its side: answer what it sent, then close */
			c->closing = true;
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->dead = true;
			break;
		}
		c->in_len += (size_t)n;
		client_process(s, c);
		if ((size_t)n < READ_CHUNK)
			break;
	}
}

/* A queued reply must be read within write_timeout_ms: everything queued
 * when a window opens must be sent before it closes, then the next window
 * opens on what is queued then.  A reader that keeps up never sees a
 * deadline; one that takes nothing, or a byte now and then, is dropped.
 * @return true if the client is past its deadline. */
static bool client_write_expired(const struct fg_ctl_server *s, struct client *c,
				 uint64_t now)
{
	if (!out_pending(c)) {
		c->drain_deadline_ms = 0;
		return false;
	}
	if (!c->drain_deadline_ms || c->sent_total >= c->drain_mark) {
		c->drain_mark = c->sent_total + out_pending(c);
		c->drain_deadline_ms = now + s->p.write_timeout_ms;
		return false;
	}
	return now >= c->drain_deadline_ms;
}

/* How long an ordinary client has gone without a request (or without
 * reading its last reply to the end); 0 for watchers.  Bytes of an
 * unfinished line do not count: a drip-feeder is idle. */
static uint64_t client_idle_ms(const struct client *c, uint64_t now)
{
	if (c->watching || c->dead || now < c->last_active_ms)
		return 0;
	return now - c->last_active_ms;
}

/* At the cap: closes the ordinary client idle longest (silent,
 * drip-feeding, or not reading its replies) if it has been idle at least
 * FG_CTL_EVICT_IDLE_MS.  @return true if a slot was freed. */
static bool evict_idle(struct fg_ctl_server *s)
{
	uint64_t now = now_ms(), best_idle = 0;
	unsigned int best = 0;

	for (unsigned int i = 0; i < s->n_clients; i++) {
		uint64_t idle = client_idle_ms(s->clients[i], now);

		if (idle > best_idle) {
			best_idle = idle;
			best = i;
		}
	}
	if (best_idle < FG_CTL_EVICT_IDLE_MS)
		return false;
	s->cnt.evicted_idle++;
	client_close(s, best);
	return true;
}

/* Closes clients without a request for idle_timeout_ms (nothing queued
 * for them) and drops those whose queued output is past its write
 * deadline.  @return ms until the next deadline (for the poll timeout), or
 * -1 if none. */
static int expire_clients(struct fg_ctl_server *s)
{
	uint64_t now = now_ms(), limit = (uint64_t)s->p.idle_timeout_ms;
	uint64_t next = UINT64_MAX;

	for (unsigned int i = 0; i < s->n_clients; i++) {
		struct client *c = s->clients[i];
		if (c->dead)
			continue;
		if (out_pending(c)) {
			if (client_write_expired(s, c, now)) {
				s->cnt.write_timeouts++;
				client_close(s, i);
				i--;
				continue;
			}
			if (c->drain_deadline_ms - now < next)
				next = c->drain_deadline_ms - now;
			continue;
		}
		if (c->watching || s->p.idle_timeout_ms < 0)
			continue;
		uint64_t idle = client_idle_ms(c, now);
		if (idle >= limit) {
			s->cnt.idle_closed++;
			client_close(s, i);
			i--;
			continue;
		}
		if (limit - idle < next)
			next = limit - idle;
	}
	return next == UINT64_MAX ? -1 : next > INT_MAX ? INT_MAX : (int)next;
}

static void accept_clients(struct fg_ctl_server *s, int lfd, bool read_only)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		if (s->n_clients - s->watchers >= s->p.max_clients && !evict_idle(s)) {
			s->cnt.rejected_full++;
			static const char msg[] = "{\"v\":1,\"id\":0,\"ok\":false,\"error\":\"too many "
				"control clients\",\"hint\":\"retry later\"}\n";
			(void)!send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			continue;
		}
		struct client *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->read_only = read_only;
		c->last_active_ms = now_ms();
		socklen_t cl = sizeof(c->cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &c->cred, &cl) < 0)
			c->cred = (struct ucred){ .pid = -1, .uid = (uid_t)-1, .gid = (gid_t)-1 };
		fg_jw_init(&c->out, s->p.max_outbuf + STREAM_FLUSH_BYTES + (1u << 20));
		s->clients[s->n_clients++] = c;
		s->cnt.accepted++;
	}
}

static void local_run(struct fg_ctl_server *s);

static void watch_pump(struct fg_ctl_server *s)
{
	if (!s->watchers || !s->ops.watch_poll)
		return;
	for (int round = 0; round < 16; round++) {
		int n = s->ops.watch_poll(s->evbuf, WATCH_BATCH, s->p.ctx);
		if (n <= 0)
			return;
		for (unsigned i = 0; i < s->n_clients; i++) {
			struct client *c = s->clients[i];
			if (!c->watching || c->dead)
				continue;
			for (int e = 0; e < n; e++) {
				if (!fg_flow_filter_match(&c->watch_filter, &s->evbuf[e].flow))
					continue;
				fg_proto_item_begin(&c->out, c->watch_id, s->evbuf[e].type);
				fg_flow_info_to_json(&c->out, NULL, &s->evbuf[e].flow);
				fg_proto_reply_end(&c->out);
			}
			(void)client_out_over(s, c);
		}
		if (n < WATCH_BATCH)
			return;
	}
}

/* poll slots before the clients': wake pipe, socket, read-only socket */
#define NFIXED 3

int fg_ctl_server_poll(struct fg_ctl_server *s, int timeout_ms)
{
	/* before the snapshot below: it closes clients */
	int idle_next = expire_clients(s);
	unsigned int n = s->n_clients;
	struct pollfd *pfd = calloc(n + NFIXED, sizeof(*pfd));
	if (!pfd)
		return -ENOMEM;
	pfd[0].fd = s->wake[0];
	pfd[0].events = POLLIN;
	pfd[1].fd = s->lfd;
	pfd[1].events = POLLIN;
	pfd[2].fd = s->ro_lfd;      /* -1 (none): poll() skips it */
	pfd[2].events = POLLIN;
	struct client **snap = calloc(n + 1, sizeof(*snap));
	if (!snap) {
		free(pfd);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++) {
		struct client *c = s->clients[i];
		snap[i] = c;
		pfd[i + NFIXED].fd = c->fd;
		/* a client behind on its replies is not read: back-pressure */
		bool rd = !c->closing && !c->backlog && !client_paused(c);
		pfd[i + NFIXED].events = (rd ? POLLIN : 0) | (out_pending(c) ? POLLOUT : 0);
		if (c->backlog && !client_paused(c))
			timeout_ms = 0;   /* its lines wait for no event */
	}
	if (s->watchers && (timeout_ms < 0 || timeout_ms > WATCH_POLL_MS))
		timeout_ms = WATCH_POLL_MS;
	if (idle_next >= 0 && (timeout_ms < 0 || timeout_ms > idle_next))
		timeout_ms = idle_next;
	int r = poll(pfd, n + NFIXED, timeout_ms);
	if (r < 0) {
		int e = errno;
		free(pfd);
		free(snap);
		return e == EINTR ? 0 : -e;
	}
	if (pfd[0].revents & POLLIN) {
		char b[64];
		while (read(s->wake[0], b, sizeof(b)) > 0)
			;
		local_run(s);
	}
	for (unsigned i = 0; i < n; i++) {
		struct client *c = snap[i];
		short re = pfd[i + NFIXED].revents;
		if (re & POLLNVAL) {
			c->dead = true;
			continue;
		}
		if (re & (POLLIN | POLLHUP | POLLERR))
			client_read(s, c);
		if (!c->dead && (out_pending(c) || (re & POLLOUT)) && client_send(c))
			c->dead = true;
		/* gone while paused (nothing read): nobody to answer */
		if (!c->dead && (re & (POLLHUP | POLLERR)) && !(re & POLLIN) &&
		    !(pfd[i + NFIXED].events & POLLIN))
			c->dead = true;
	}
	watch_pump(s);
	for (unsigned i = 0; i < s->n_clients; i++) {
		struct client *c = s->clients[i];
		if (!c->dead && out_pending(c) && client_send(c))
			c->dead = true;
		/* replies read: the lines that waited for them, then more input
		 * (its POLLIN may have come and gone while paused); a few
		 * rounds, then the others' turn (the poll below does not wait
		 * while one is left like this) */
		for (int k = 0; k < 16 && !c->dead && c->backlog && !client_paused(c); k++) {
			client_process(s, c);
			if (!c->dead && !c->backlog && !client_paused(c))
				client_read(s, c);
			if (!c->dead && out_pending(c) && client_send(c))
				c->dead = true;
		}
		if (c->dead || (c->closing && !out_pending(c) && !c->backlog)) {
			client_close(s, i);
			i--;
		}
	}
	if (pfd[1].revents & POLLIN)
		accept_clients(s, s->lfd, false);
	if (pfd[2].revents & POLLIN)
		accept_clients(s, s->ro_lfd, true);
	free(pfd);
	free(snap);
	return 0;
}

/* The daemon's own request, if one waits: handled as a client's would
 * be (the same handler, counters and audit call), the client being this
 * process.  On the control thread (or the caller's, when none runs). */
static void local_run(struct fg_ctl_server *s)
{
	pthread_mutex_lock(&s->local_lock);
	struct local_req *r = s->local;
	if (r && !r->done) {
		struct client c;
		memset(&c, 0, sizeof(c));
		c.fd = -1;
		c.cred = (struct ucred){ .pid = getpid(), .uid = getuid(), .gid = getgid() };
		fg_jw_init(&c.out, s->p.max_outbuf);
		handle_line(s, &c, r->line, r->len);
		r->reply = c.out.buf ? strndup(c.out.buf, c.out.len) : NULL;
		fg_jw_fini(&c.out);
		r->done = true;
		pthread_cond_broadcast(&s->local_cv);
	}
	pthread_mutex_unlock(&s->local_lock);
}

/* Runs request @p line (one JSON line) as the daemon itself; the reply
 * line in *reply (caller frees). */
static int local_request(struct fg_ctl_server *s, const char *line, size_t len,
			 char **reply)
{
	struct local_req r = { .line = line, .len = len };
	int rc = 0;
	pthread_mutex_lock(&s->local_lock);
	s->local = &r;
	pthread_mutex_unlock(&s->local_lock);
	if (!s->running) {
		local_run(s);
	} else {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 120;   /* a hang guard: an apply takes milliseconds */
		(void)!write(s->wake[1], "l", 1);
		pthread_mutex_lock(&s->local_lock);
		while (!r.done && rc == 0)
			rc = -pthread_cond_timedwait(&s->local_cv, &s->local_lock, &until);
		pthread_mutex_unlock(&s->local_lock);
	}
	pthread_mutex_lock(&s->local_lock);
	s->local = NULL;
	pthread_mutex_unlock(&s->local_lock);
	if (!r.done)
		return rc ? rc : -EIO;
	*reply = r.reply;
	return r.reply ? 0 : -ENOMEM;
}

int fg_ctl_server_reload(struct fg_ctl_server *s, const char *path, const char *origin,
			 char *err, size_t errlen)
{
	struct fg_cfg_err ev[4];
	struct fg_cfg_errs e = { .v = ev, .max = 4 };
	struct fg_json_writer w;
	struct fg_proto_resp resp;
	char *text = NULL, *reply = NULL;
	size_t len;
	int rc = fg_config_read_file(path, &text, &len, &e);
	if (rc) {
		snprintf(err, errlen, "%s: %s", path, e.n ? ev[0].msg : strerror(-rc));
		return rc;
	}
	fg_jw_init(&w, 0);
	fg_proto_req_begin(&w, 1, "config.apply");
	fg_jw_str(&w, "text", text);
	fg_jw_str(&w, "name", path);
	fg_jw_str(&w, "origin", origin ? origin : "reload");
	fg_proto_req_end(&w);
	free(text);
	rc = fg_jw_error(&w);
	if (rc == 0)
		rc = local_request(s, w.buf, w.len && w.buf[w.len - 1] == '\n' ? w.len - 1 : w.len,
				   &reply);
	fg_jw_fini(&w);
	if (rc) {
		snprintf(err, errlen, "%s", strerror(-rc));
		return rc;
	}
	char *nl = strchr(reply, '\n');
	rc = fg_proto_resp_parse(reply, nl ? (size_t)(nl - reply) : strlen(reply), &resp,
				 err, errlen);
	free(reply);
	if (rc)
		return rc;
	rc = resp.ok ? 0 : -EINVAL;
	if (!resp.ok)
		snprintf(err, errlen, "%s%s%s", resp.error ? resp.error : "refused",
			 resp.hint && resp.hint[0] ? "; " : "", resp.hint ? resp.hint : "");
	fg_proto_resp_free(&resp);
	return rc;
}

static void *server_main(void *arg)
{
	struct fg_ctl_server *s = arg;
	while (!s->stop)
		fg_ctl_server_poll(s, 1000);
	return NULL;
}

int fg_ctl_server_start(struct fg_ctl_server *s)
{
	if (s->running)
		return -EALREADY;
	s->stop = false;
	int rc = pthread_create(&s->thread, NULL, server_main, s);
	if (rc)
		return -rc;
	pthread_setname_np(s->thread, "fg-ctl");
	s->running = true;
	return 0;
}

void fg_ctl_server_stop(struct fg_ctl_server *s)
{
	if (!s || !s->running)
		return;
	s->stop = true;
	(void)!write(s->wake[1], "x", 1);
	pthread_join(s->thread, NULL);
	s->running = false;
}

void fg_ctl_server_destroy(struct fg_ctl_server *s)
{
	if (!s)
		return;
	fg_ctl_server_stop(s);
	while (s->n_clients)
		client_close(s, s->n_clients - 1);
	close(s->lfd);
	unlink(s->path);
	if (s->ro_lfd >= 0) {
		close(s->ro_lfd);
		unlink(s->ro_path);
	}
	close(s->wake[0]);
	close(s->wake[1]);
	free(s->clients);
	free(s->evbuf);
	pthread_mutex_destroy(&s->local_lock);
	pthread_cond_destroy(&s->local_cv);
	free(s);
}

void fg_ctl_server_counters(const struct fg_ctl_server *s, struct fg_ctl_counters *out)
{
	*out = s->cnt;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Pure helpers of the stats renderers (fg_stats.h, fg_metrics.h): telemetry
 * key escaping, Prometheus label escaping, the HTTP request classifier and
 * the --metrics address parser.  One table of cases each.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fg_metrics.h"
#include "fg_stats.h"

/* Reverses fg_stats_key_escape as fg_stats.h documents it. */
static void key_unescape(const char *in, char *out)
{
	while (*in) {
		if (*in == '_') {
			unsigned int v;

			assert_int_equal(sscanf(in + 1, "%2X", &v), 1);
			*out++ = (char)v;
			in += 3;
		} else {
			*out++ = *in++;
		}
	}
	*out = '\0';
}

static void test_key_escape(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"infer", "infer"},
		{"infer-a.b", "infer_2Da_2Eb"},
		{"my_svc", "my_5Fsvc"},
		{"10.0.0.1:80/tcp", "10_2E0_2E0_2E1_3A80_2Ftcp"},
		{"[fd00::1]:443/udp", "_5Bfd00_3A_3A1_5D_3A443_2Fudp"},
		{"", ""},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char k[128], back[128];

		assert_int_equal(fg_stats_key_escape(cases[i].in, k, sizeof(k)),
				 (int)strlen(cases[i].out));
		assert_string_equal(k, cases[i].out);
		for (const char *p = k; *p; p++)  /* DPDK 22.11's valid_name() */
			assert_true((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
				    (*p >= '0' && *p <= '9') || *p == '_' || *p == '/');
		key_unescape(k, back);
		assert_string_equal(back, cases[i].in);
	}
}

static void test_key_escape_too_long(void **state)
{
	char k[8];

	(void)state;
	assert_int_equal(fg_stats_key_escape("abcdefg", k, sizeof(k)), 7);
	assert_int_equal(fg_stats_key_escape("abcdefgh", k, sizeof(k)), -ENAMETOOLONG);
	assert_int_equal(fg_stats_key_escape("abcde.", k, sizeof(k)), -ENAMETOOLONG);
}

static void test_label_escape(void **state)
{
	static const struct {
		const char *in, *out;
		int rc;
	} cases[] = {
		{"plain", "plain", 5},
		{"a\"b", "a\\\"b", 4},
		{"back\\slash", "back\\\\slash", 11},
		{"new\nline", "new\\nline", 9},
		{"0123456789abcdef", "0123456789abcde", -ENOSPC},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[16];

		assert_int_equal(fg_metrics_label_escape(cases[i].in, out, sizeof(out)),
				 cases[i].rc);
		assert_string_equal(out, cases[i].out);
	}
}

static void test_http_parse(void **state)
{
	static const struct {
		const char *req;
		enum fg_metrics_http want;
	} cases[] = {
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", FG_METRICS_HTTP_METRICS},
		{"GET /metrics HTTP/1.0\n\n", FG_METRICS_HTTP_METRICS},
		{"GET /metrics?name[]=x HTTP/1.1\r\n\r\n", FG_METRICS_HTTP_METRICS},
		{"HEAD /metrics HTTP/1.1\r\n\r\n", FG_METRICS_HTTP_HEAD},
		{"GET / HTTP/1.1\r\n\r\n", FG_METRICS_HTTP_NOT_FOUND},
		{"GET /metricsx HTTP/1.1\r\n\r\n", FG_METRICS_HTTP_NOT_FOUND},
		{"POST /metrics HTTP/1.1\r\n\r\n", FG_METRICS_HTTP_BAD_METHOD},
		{"GET /metrics\r\n\r\n", FG_METRICS_HTTP_BAD_REQUEST},
		{"GET /metrics SPDY/3\r\n\r\n", FG_METRICS_HTTP_BAD_REQUEST},
		{"\r\n\r\n", FG_METRICS_HTTP_BAD_REQUEST},
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n", FG_METRICS_HTTP_INCOMPLETE},
		{"", FG_METRICS_HTTP_INCOMPLETE},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("case %zu: %s\n", i, cases[i].req);
		assert_int_equal(fg_metrics_http_parse(cases[i].req, strlen(cases[i].req)),
				 cases[i].want);
	}
}

static void test_http_too_large(void **state)
{
	static char big[FG_METRICS_MAX_REQUEST];

	(void)state;
	memset(big, 'a', sizeof(big));
	assert_int_equal(fg_metrics_http_parse(big, sizeof(big) - 1),
			 FG_METRICS_HTTP_INCOMPLETE);
	assert_int_equal(fg_metrics_http_parse(big, sizeof(big)),
			 FG_METRICS_HTTP_TOO_LARGE);
}

static void test_listen_parse(void **state)
{
	static const struct {
		const char *s;
		int rc, family, port;
	} cases[] = {
		{"127.0.0.1:9469", 0, AF_INET, 9469},
		{"0.0.0.0:1", 0, AF_INET, 1},
		{"[::1]:9469", 0, AF_INET6, 9469},
		{"[fd00::1]:65535", 0, AF_INET6, 65535},
		{"::1:9469", -EINVAL, 0, 0},
		{"127.0.0.1", -EINVAL, 0, 0},
		{"127.0.0.1:", -EINVAL, 0, 0},
		{"127.0.0.1:0", -EINVAL, 0, 0},
		{"127.0.0.1:65536", -EINVAL, 0, 0},
		{"127.0.0.1:80x", -EINVAL, 0, 0},
		{"localhost:9469", -EINVAL, 0, 0},
		{"[127.0.0.1]:9469", -EINVAL, 0, 0},
		{":9469", -EINVAL, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		socklen_t len = 0;
		int rc = fg_metrics_listen_parse(cases[i].s, &ss, &len);

		assert_int_equal(rc, cases[i].rc);
		if (rc < 0)
			continue;
		assert_int_equal(ss.ss_family, cases[i].family);
		assert_int_equal(ntohs(ss.ss_family == AF_INET ?
				       ((struct sockaddr_in *)&ss)->sin_port :
				       ((struct sockaddr_in6 *)&ss)->sin6_port),
				 cases[i].port);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_escape),
		cmocka_unit_test(test_key_escape_too_long),
		cmocka_unit_test(test_label_escape),
		cmocka_unit_test(test_http_parse),
		cmocka_unit_test(test_http_too_large),
		cmocka_unit_test(test_listen_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

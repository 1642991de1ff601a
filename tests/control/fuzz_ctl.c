/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz target for the control plane's parsers: the request line parser
 * (fg_proto_req_parse -> strict JSON reader), the JSON writer round trip
 * and the config file parser (fg_config_parse -> validate -> dump ->
 * parse).  Invariants checked (a violation traps):
 *  - whatever the JSON reader accepts, the writer re-serializes to text the
 *    reader accepts again and that re-serializes to the same bytes;
 *  - whatever config the parser accepts dumps to text that parses to an
 *    equal config.
 * Built as a libFuzzer target with -Dfuzz=true (clang); with tests/fuzz/fuzz_replay_main.c
 * it is a plain program that runs every file given on the command line
 * (the seed corpus) through the same code, so the sanitizer build covers it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg_config_parse.h"
#include "fg_proto.h"

static void json_round_trip(const struct fg_json *v)
{
	struct fg_json_writer w1, w2;
	fg_jw_init(&w1, 0);
	fg_jw_value(&w1, NULL, v);
	if (fg_jw_error(&w1))
		__builtin_trap();
	struct fg_json_doc *d = fg_json_parse(w1.buf, w1.len, 8u << 20, NULL, 0);
	if (!d)
		__builtin_trap();
	fg_jw_init(&w2, 0);
	fg_jw_value(&w2, NULL, fg_json_root(d));
	if (w1.len != w2.len || memcmp(w1.buf, w2.buf, w1.len))
		__builtin_trap();
	fg_json_free(d);
	fg_jw_fini(&w1);
	fg_jw_fini(&w2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct fg_proto_req r;
	if (!fg_proto_req_parse((const char *)data, size, &r, err, sizeof(err)))
		json_round_trip(r.args);
	fg_proto_req_free(&r);

	struct fg_json_doc *d = fg_json_parse((const char *)data, size, 0, err, sizeof(err));
	if (d)
		json_round_trip(fg_json_root(d));
	fg_json_free(d);

	if (size < (64u << 10)) {
		struct fg_cfg_err ev[8];
		struct fg_cfg_errs e = { .v = ev, .max = 8 };
		struct fg_config a, b;
		if (!fg_config_parse((const char *)data, size, "fuzz", &a, &e)) {
			char *text = NULL;
			if (fg_config_assign_ids(&a, NULL) || fg_config_dump_str(&a, &text))
				__builtin_trap();
			if (fg_config_parse(text, strlen(text), "dump", &b, NULL) ||
			    !fg_config_equal(&a, &b))
				__builtin_trap();
			free(text);
			fg_config_free(&b);
		}
		fg_config_free(&a);
	}
	return 0;
}

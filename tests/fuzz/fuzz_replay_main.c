/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The replay main of every fuzz target (fuzz_pkt, fuzz_ctl,
 * fuzz_promtext, fuzz_trace), written once: linked instead of libFuzzer
 * into the *_replay programs (suite 'unit', so the sanitizer builds run
 * the targets' code), it runs each file given through
 * LLVMFuzzerTestOneInput: the whole input and every prefix of it
 * (truncation at each boundary; every 97th from 8 KiB up).  A target's
 * LLVMFuzzerInitialize, when it has one, runs first, as libFuzzer runs it.
 * A target may also define (fuzz_state and fuzz_sync do):
 *   fuzz_replay_seeds()    writes its seeds into a folder: the command
 *                          line `PROG IGNORED --corpus DIR` makes DIR
 *                          (mkdir -p) and calls it (its return: the exit
 *                          status);
 *   fuzz_replay_seed_ok()  false: a seed the target refuses (exit 1);
 *   fuzz_replay_flips      every one-byte change of the first N bytes too.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
int fuzz_replay_seeds(const char *dir) __attribute__((weak));
int fuzz_replay_seed_ok(const uint8_t *data, size_t size) __attribute__((weak));
extern const size_t fuzz_replay_flips __attribute__((weak));

/* @p buf with each of its first fuzz_replay_flips bytes changed in turn */
static void flips(uint8_t *buf, size_t len)
{
	size_t n = &fuzz_replay_flips != NULL ? fuzz_replay_flips : 0;

	for (size_t k = 0; k < len && k < n; k++) {
		uint8_t o = buf[k];

		buf[k] ^= (uint8_t)(1u << (k % 8));
		LLVMFuzzerTestOneInput(buf, len);
		buf[k] = o;
	}
}

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 20];
	int n = 0;

	if (fuzz_replay_seeds != NULL && argc == 4 && !strcmp(argv[2], "--corpus")) {
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", argv[3]);
		if (system(cmd) != 0)
			return 1;
		return fuzz_replay_seeds(argv[3]);
	}
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		size_t len;

		if (f == NULL) {
			perror(argv[i]);
			return 1;
		}
		len = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (fuzz_replay_seed_ok != NULL && !fuzz_replay_seed_ok(buf, len)) {
			fprintf(stderr, "%s: a seed the target refuses\n", argv[i]);
			return 1;
		}
		LLVMFuzzerTestOneInput(buf, len);
		flips(buf, len);
		for (size_t k = 0; k < len; k += len > 8192 ? 97 : 1)
			LLVMFuzzerTestOneInput(buf, k);
		n++;
	}
	printf("replayed %d inputs and all their prefixes\n", n);
	return n ? 0 : 1;
}

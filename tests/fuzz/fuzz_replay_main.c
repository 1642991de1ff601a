/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The replay main of every fuzz target (fuzz_pkt, fuzz_ctl,
 * fuzz_promtext, fuzz_trace), written once: linked instead of libFuzzer
 * into the *_replay programs (suite 'unit', so the sanitizer builds run
 * the targets' code), it runs each file given through
 * LLVMFuzzerTestOneInput: the whole input and every prefix of it
 * (truncation at each boundary; every 97th from 8 KiB up).  A target's
 * LLVMFuzzerInitialize, when it has one, runs first, as libFuzzer runs it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

int main(int argc, char **argv)
{
	static uint8_t buf[1 << 20];
	int n = 0;

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
		LLVMFuzzerTestOneInput(buf, len);
		for (size_t k = 0; k < len; k += len > 8192 ? 97 : 1)
			LLVMFuzzerTestOneInput(buf, k);
		n++;
	}
	printf("replayed %d inputs and all their prefixes\n", n);
	return n ? 0 : 1;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * Loader-private layouts of struct fgx, shared by fgx_load.c (maps from a
 * config, counters, flows), fgx_pin.c (the pinned maps a restart adopts)
 * and fgx_attach.c (the bpf_link, the attach mode).  Not for the daemon.
 */
#ifndef FLOWGATE_FGX_PRIVATE_H
#define FLOWGATE_FGX_PRIVATE_H

#include <stdbool.h>
#include <stdint.h>

#include "fgx_load.h"
#include "fgx_maps.h"
#include "fg_xdp.skel.h"

/* Backend slots: a backend (service id, backend id) keeps its slot in
 * fgx_backends for as long as it is configured, so Maglev tables and
 * tracked flows can name it by slot.  A restart recovers the table from
 * the adopted fgx_backends map (fgx_slots_recover). */
struct fgx_slot {
	uint32_t service;
	uint32_t id;
	uint8_t used;
	uint8_t seen;           /**< in the config being applied */
};

/**
 * The maps that outlive the process, and what a start does with a pinned
 * one that this build cannot take as it is (another layout, another
 * meaning, another size):
 *   REBUILD  a new map, filled by fgx_apply() from the config;
 *   RESET    a new map: counters restart from 0 (said in the report);
 *   CONVERT  a new map, and every entry copied over member by member, by
 *            name (BTF of both builds); refused when the meaning differs.
 * .rodata (the CRC and Toeplitz tables) is the program's own: never pinned.
 */
#define FGX_PIN_LIST(X)                \
	X(fgx_cfg,       FGX_PIN_REBUILD) \
	X(fgx_counters,  FGX_PIN_RESET)   \
	X(fgx_be_stats,  FGX_PIN_RESET)   \
	X(fgx_services,  FGX_PIN_REBUILD) \
	X(fgx_svc_by_id, FGX_PIN_REBUILD) \
	X(fgx_backends,  FGX_PIN_CONVERT) \
	X(fgx_maglev,    FGX_PIN_REBUILD) \
	X(fgx_ct4,       FGX_PIN_CONVERT) \
	X(fgx_ct6,       FGX_PIN_CONVERT)

enum fgx_pin_policy { FGX_PIN_REBUILD, FGX_PIN_RESET, FGX_PIN_CONVERT };

#define FGX_PIN_(n, pol) FGX_PIN_##n,
enum fgx_pin_idx { FGX_PIN_LIST(FGX_PIN_) FGX_PIN_N };

/** One pinned map at fgx_open: what was found and what became of it. */
struct fgx_pinned {
	enum fgx_map_fate fate;
	uint32_t sem;           /**< this build's meaning hash (before load: the
				     inner map definitions are gone after it) */
	int old_fd;             /**< the map found (the running program's), when
				     not adopted: converted from, then unpinned; -1 */
	char old_file[64];      /**< its file in the pin directory ("" = none) */
	struct btf *old_btf;    /**< its BTF (CONVERT) */
	uint32_t old_val_type;  /**< its value type in old_btf */
	uint64_t converted;     /**< entries carried over so far */
	char why[96];           /**< why not adopted ("" when adopted / new) */
};

struct fgx {
	struct fg_xdp_bpf *skel;
	struct fgx_params par;
	char pin_dir[256];      /**< "" = nothing pinned */
	int link_fd;            /**< our bpf_link (-1: not attached) */
	int live_link_fd;       /**< the pinned link found at open (-1: none) */
	uint32_t live_prog_id;  /**< the program it runs (0: none) */
	int ifindex;
	struct fgx_attach_info att;
	struct fgx_pinned pin[FGX_PIN_N];
	char stale[16][64];     /**< pinned files no program uses: removed at attach */
	unsigned int n_stale;
	struct fgx_slot *slots; /**< FGX_MAX_BACKENDS */
};

/* fgx_pin.c */

/** Before load: finds the pinned maps in x->pin_dir and marks each
 *  adopted (reused by the skeleton), new, or to convert.  -ESTALE with
 *  @p err when a pinned map cannot be read by this build. */
int fgx_pin_prepare(struct fgx *x, char *err, size_t errlen);

/** After load: pins the maps that are not adopted and copies the entries
 *  of the ones to convert (first pass). */
int fgx_pin_commit(struct fgx *x, char *err, size_t errlen);

/** After the running program was swapped for ours: copies what the old
 *  maps gained meanwhile (second pass, entries not already there) and
 *  removes the pins no program uses any more. */
void fgx_pin_finish(struct fgx *x);

/** Whether every pinned map was adopted as it is. */
bool fgx_pin_all_adopted(const struct fgx *x);

/** Frees what fgx_pin_prepare kept (old fds, BTF). */
void fgx_pin_release(struct fgx *x);

/** The map of pin-list entry @p i in the skeleton. */
struct bpf_map *fgx_pin_map(const struct fgx *x, unsigned int i);

/** Pin-list names, in FGX_PIN_LIST order. */
extern const char *const fgx_pin_names[FGX_PIN_N];

/* fgx_load.c */

/** One live conntrack entry, as fgx_ct_each() hands it over. */
struct fgx_ct_walk {
	int fd;                 /**< its map */
	int v6;                 /**< fgx_ct6 */
	const void *key;        /**< struct ct_key4 / ct_key6 */
	struct fgx_ct e;
	struct fgx_cfg cfg;     /**< the timeouts it was judged by */
	uint64_t now;           /**< the program's clock (coarse monotonic ns) */
	uint64_t wall;          /**< Unix time, ms, read with now */
};

/** Called per live entry: 0 goes on, > 0 stops, < 0 stops with that error. */
typedef int (*fgx_ct_fn)(const struct fgx_ct_walk *w, void *arg);

/** Walks both conntrack maps, live flows only (not expired, not a
 *  fragment-follow helper).  @return entries seen, or the callback's /
 *  the map's negative errno. */
int64_t fgx_ct_each(struct fgx *x, fgx_ct_fn fn, void *arg);

/** The program's clock (CLOCK_MONOTONIC_COARSE, ns) and Unix time (ms). */
uint64_t fgx_now_ns(void);
uint64_t fgx_wall_ms(void);

/** The control protocol's record of entry @p w, named with @p cfg's
 *  services and backends (may be NULL). */
void fgx_flow_info(const struct fg_config *cfg, const struct fgx_ct_walk *w,
		   struct fg_flow_info *fi);

/** Rebuilds the slot table from fgx_backends (after adoption). */
void fgx_slots_recover(struct fgx *x);

#endif /* FLOWGATE_FGX_PRIVATE_H */

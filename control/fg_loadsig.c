/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Load signals: presets, score, page evaluation.  See fg_loadsig.h.
 */
#include "fg_loadsig.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fg_promtext.h"
#include "fg_xlist.h"

const char *const fg_loadsig_counter_names[FG_LS_MAX] = {
	FG_LOADSIG_COUNTER_LIST(FG_XL_NAME)
};
const char *const fg_loadsig_counter_help[FG_LS_MAX] = {
	FG_LOADSIG_COUNTER_LIST(FG_XL_SECOND)
};

static const char *const preset_names[] = { "vllm", "sglang", "triton", "custom" };

const char *fg_load_preset_name(enum fg_load_preset p)
{
	return (unsigned)p < sizeof(preset_names) / sizeof(preset_names[0]) ?
		preset_names[p] : "?";
}

int fg_load_preset_parse(const char *s)
{
	for (unsigned int i = 0; i < sizeof(preset_names) / sizeof(preset_names[0]); i++)
		if (!strcasecmp(s, preset_names[i]))
			return (int)i;
	return -EINVAL;
}

static void add_series(struct fg_metrics_cfg *m, const char *name, const char *alt,
		       uint32_t weight_milli)
{
	struct fg_load_series_cfg *s = &m->series[m->n_series++];

	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->alt, sizeof(s->alt), "%s", alt ? alt : "");
	s->weight_milli = weight_milli;
}

void fg_loadsig_preset(enum fg_load_preset p, struct fg_metrics_cfg *m)
{
	memset(m, 0, sizeof(*m));
	m->preset = p;
	m->margin_milli = FG_LOADSIG_MARGIN_DEFAULT;
	switch (p) {
	case FG_LOAD_PRESET_VLLM:
		add_series(m, "vllm:num_requests_waiting", NULL, 1000);
		add_series(m, "vllm:num_requests_running", NULL, 250);
		add_series(m, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", 2000);
		break;
	case FG_LOAD_PRESET_SGLANG:
		add_series(m, "sglang:num_queue_reqs", NULL, 1000);
		add_series(m, "sglang:token_usage", NULL, 2000);
		break;
	case FG_LOAD_PRESET_TRITON:
		add_series(m, "nv_inference_pending_request_count", NULL, 1000);
		break;
	default:
		m->preset = FG_LOAD_PRESET_CUSTOM;
		break;
	}
}

uint32_t fg_loadsig_stale_ms(const struct fg_metrics_cfg *m, uint32_t interval_ms)
{
	if (m->stale_ms)
		return m->stale_ms;
	uint64_t v = (uint64_t)interval_ms * FG_LOADSIG_STALE_INTERVALS;

	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

uint32_t fg_loadsig_score(const struct fg_metrics_cfg *m, const double *raw)
{
	double s = 0;

	for (uint32_t i = 0; i < m->n_series && i < FG_LOAD_SERIES_MAX; i++)
		s += raw[i] * (double)m->series[i].weight_milli;
	if (!(s >= 0))
		return 0;
	if (s >= (double)FG_LOADSIG_SCORE_MAX)
		return FG_LOADSIG_SCORE_MAX;
	return (uint32_t)(s + 0.5);
}

enum fg_loadsig_counter fg_loadsig_eval(const struct fg_metrics_cfg *m, const char *page,
					size_t len, int64_t now_wall_ms, uint32_t stale_ms,
					double *raw, uint32_t *score_milli, char *why,
					size_t why_len)
{
	struct fg_prom_selector sel;
	struct fg_prom_query q[FG_LOAD_SERIES_MAX];
	struct fg_prom_err err;
	uint32_t n = m->n_series < FG_LOAD_SERIES_MAX ? m->n_series : FG_LOAD_SERIES_MAX;

	if (why_len)
		why[0] = 0;
	if (len > FG_LOADSIG_PAGE_MAX) {
		snprintf(why, why_len, "page of %zu bytes (limit %u)", len, FG_LOADSIG_PAGE_MAX);
		return FG_LS_scrape_too_big;
	}
	if (fg_prom_selector_parse(m->select, &sel, &err)) {
		/* validated with the config: only a hand-built config gets here */
		snprintf(why, why_len, "select: %s", err.msg);
		return FG_LS_scrape_missing;
	}
	for (uint32_t i = 0; i < n; i++) {
		q[i].name = m->series[i].name;
		q[i].alt = m->series[i].alt;
	}
	int rc = fg_prom_query(page, len, &sel, q, n, &err);

	if (rc == -E2BIG) {
		snprintf(why, why_len, "%s", err.msg);
		return FG_LS_scrape_too_big;
	}
	if (rc < 0) {
		snprintf(why, why_len, "line %u: %s", err.line, err.msg);
		return FG_LS_scrape_malformed;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!q[i].matches) {
			snprintf(why, why_len, "no series %s%s%s%s%s", q[i].name,
				 q[i].alt && q[i].alt[0] ? " or " : "", q[i].alt ? q[i].alt : "",
				 m->select[0] ? " matching " : "", m->select);
			return FG_LS_scrape_missing;
		}
		if (!isfinite(q[i].value) || q[i].value < 0) {
			snprintf(why, why_len, "%s = %g", q[i].used_alt ? q[i].alt : q[i].name,
				 q[i].value);
			return FG_LS_scrape_bad_value;
		}
		if (q[i].has_ts && now_wall_ms - q[i].ts_ms > (int64_t)stale_ms) {
			snprintf(why, why_len, "%s sampled %lld ms ago (stale after %u ms)",
				 q[i].used_alt ? q[i].alt : q[i].name,
				 (long long)(now_wall_ms - q[i].ts_ms), stale_ms);
			return FG_LS_scrape_old;
		}
		raw[i] = q[i].value;
	}
	*score_milli = fg_loadsig_score(m, raw);
	return FG_LS_scrapes_ok;
}

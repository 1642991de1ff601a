/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "fg_counters.h"

const char *const fg_drop_names[FG_DROP_MAX] = {
#define FG_X(n, d) #n,
	FG_DROP_LIST(FG_X)
#undef FG_X
};
const char *const fg_drop_help[FG_DROP_MAX] = {
#define FG_X(n, d) d,
	FG_DROP_LIST(FG_X)
#undef FG_X
};
const char *const fg_core_counter_names[FG_CC_MAX] = {
#define FG_X(n, d) #n,
	FG_CORE_COUNTER_LIST(FG_X)
#undef FG_X
};
const char *const fg_core_counter_help[FG_CC_MAX] = {
#define FG_X(n, d) d,
	FG_CORE_COUNTER_LIST(FG_X)
#undef FG_X
};
const char *const fg_service_counter_names[FG_SC_MAX] = {
#define FG_X(n, d) #n,
	FG_SERVICE_COUNTER_LIST(FG_X)
#undef FG_X
};
const char *const fg_service_counter_help[FG_SC_MAX] = {
#define FG_X(n, d) d,
	FG_SERVICE_COUNTER_LIST(FG_X)
#undef FG_X
};
const char *const fg_backend_counter_names[FG_BC_MAX] = {
#define FG_X(n, d) #n,
	FG_BACKEND_COUNTER_LIST(FG_X)
#undef FG_X
};
const char *const fg_backend_counter_help[FG_BC_MAX] = {
#define FG_X(n, d) d,
	FG_BACKEND_COUNTER_LIST(FG_X)
#undef FG_X
};

int fg_drop_from_name(const char *name)
{
	int i;

	if (name == NULL)
		return -ENOENT;
	for (i = 0; i < FG_DROP_MAX; i++)
		if (strcmp(fg_drop_names[i], name) == 0)
			return i;
	return -ENOENT;
}

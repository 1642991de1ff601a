/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <string.h>

#include "fg_counters.h"

/* Each counter list (fg_counters.h) becomes its name and help tables. */
#define FG_X_NAME(n, d) #n,
#define FG_X_HELP(n, d) d,
#define FG_NAME_TABLES(names, help, max, LIST)                 \
	const char *const names[max] = { LIST(FG_X_NAME) };     \
	const char *const help[max] = { LIST(FG_X_HELP) };

FG_NAME_TABLES(fg_drop_names, fg_drop_help, FG_DROP_MAX, FG_DROP_LIST)
FG_NAME_TABLES(fg_core_counter_names, fg_core_counter_help, FG_CC_MAX,
	       FG_CORE_COUNTER_LIST)
FG_NAME_TABLES(fg_service_counter_names, fg_service_counter_help, FG_SC_MAX,
	       FG_SERVICE_COUNTER_LIST)
FG_NAME_TABLES(fg_backend_counter_names, fg_backend_counter_help, FG_BC_MAX,
	       FG_BACKEND_COUNTER_LIST)

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

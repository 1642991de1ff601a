/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * X-macro lists, written once: a list is `LIST(X)` with entries
 * `X(name, second)` (a description, a policy...).  Its enum and its
 * tables are one line each:
 *
 *     #define FOO_C_(n, d) FOO_C_##n,
 *     enum foo_counter { FOO_COUNTER_LIST(FOO_C_) FOO_C_MAX };
 *     FG_XL_TABLES(foo_counter_names, foo_counter_help, FOO_C_MAX);
 *     const char *const foo_counter_names[FOO_C_MAX] = { FOO_COUNTER_LIST(FG_XL_NAME) };
 *     const char *const foo_counter_help[FOO_C_MAX] = { FOO_COUNTER_LIST(FG_XL_SECOND) };
 *
 * Plain C, no dependency: any module may include it.
 */
#ifndef FLOWGATE_FG_XLIST_H
#define FLOWGATE_FG_XLIST_H

/** An entry's name as a string: a names table. */
#define FG_XL_NAME(n, d) #n,
/** An entry's second field: a description or policy table. */
#define FG_XL_SECOND(n, d) d,

/** The same for lists of three fields X(name, second, third). */
#define FG_XL3_NAME(n, s, t) #n,
#define FG_XL3_THIRD(n, s, t) t,

/** The names and second-field tables of a list, declared. */
#define FG_XL_TABLES(names, second, max) \
	extern const char *const names[max]; extern const char *const second[max]

#endif /* FLOWGATE_FG_XLIST_H */

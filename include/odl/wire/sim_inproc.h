/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The in-process model: libodl's `sim` backend <-> the model module
 * (odl-sim-inproc.so, package odl-model), the one definition of their ABI.
 *
 * With ODL_SIM_SOCKET=inproc a program that holds both ends of a sim link
 * needs no odl-linkd: at its first sim device libodl loads the module
 * (dlopen; libodl itself never links the simulator), which runs the same
 * model server as `odl-linkd --sim` in a thread of the program, listening on
 * a socket in a private folder; every sim device of the process then speaks
 * the ordinary protocol (sim.h) to it. One server per process (SystemC keeps
 * one simulation per process), stopped when the process exits.
 */
#ifndef ODL_WIRE_SIM_INPROC_H
#define ODL_WIRE_SIM_INPROC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ODL_SIM_INPROC_ABI 2u
/* The value of ODL_SIM_SOCKET that asks for the in-process model. */
#define ODL_SIM_INPROC_SOCKET "inproc"
/* The module's one exported symbol: a function returning its table. */
#define ODL_SIM_INPROC_ENTRY "odl_sim_inproc_table_v1"
/* Where libodl looks for the module, relative to its own folder. */
#define ODL_SIM_INPROC_MODULE "odl/odl-sim-inproc.so"

struct odl_sim_inproc_v1 {
	uint32_t abi; /* ODL_SIM_INPROC_ABI */
	/*
	 * Builds the model from @args (NULL-terminated; odl-linkd --sim's
	 * options: --profile, --gen, --lanes, --asymmetric, --length,
	 * --scenario, --calibration, --seed, --sim-timing, --lookahead, --spin,
	 * --control, -v), starts serving it on @socket_path in a thread and
	 * returns once it listens. NULL on failure, with the reason in @err
	 * (NUL-terminated, cut to @err_len). @banner gets the link's
	 * description as HELLO tells it ("<profile> <gen>x<lanes> <length> m
	 * [pipeline]"). The server's own lines (the timing it chose, a
	 * scenario's events) go to @say(@say_arg, line), from its thread;
	 * nothing is printed.
	 */
	void *(*start)(const char *socket_path, const char *const *args, char *err, size_t err_len,
		       char *banner, size_t banner_len, void (*say)(void *say_arg, const char *line),
		       void *say_arg);
	/* Stops the server started by start() and frees it. */
	void (*stop)(void *server);
};

typedef const struct odl_sim_inproc_v1 *(*odl_sim_inproc_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* ODL_WIRE_SIM_INPROC_H */

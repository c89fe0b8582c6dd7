/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A spin-wait hint for loops that poll memory another core writes (ring
 * indices, job queues): the lowest floor the library, the NCCL plugin and
 * the model server all build on, so one definition serves them. Userspace
 * only (the kernel has cpu_relax()).
 */
#ifndef ODL_WIRE_SPIN_H
#define ODL_WIRE_SPIN_H

#ifndef __KERNEL__
/* Tells the core (and a hyperthread sibling) that this is a spin loop. */
static inline void odl_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}
#endif

#endif /* ODL_WIRE_SPIN_H */

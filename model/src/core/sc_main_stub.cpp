// SPDX-License-Identifier: MIT
// libsystemc refers to sc_main; OdinLink programs have their own main() and
// drive the kernel themselves. Compiled into every program that links the
// model (an INTERFACE source), as a weak symbol a real sc_main overrides.
#include <cstdio>

extern "C" __attribute__((weak)) int sc_main(int, char**) {
    std::fprintf(stderr, "odl: model: sc_main is not used by this program\n");
    return 1;
}

// SPDX-License-Identifier: MIT
// Installed-package consumer in C++: odl/odl.hpp compiles on its own.
#include <cstdio>

#include <odl/odl.hpp>

int main() {
    std::printf("odl_version=%s\n", odl_version());
    return 0;
}

// SPDX-License-Identifier: MIT
// A host_bus for model-level odl-linkd tests: DMA into a local memory, no
// QEMU, interrupts counted.
#pragma once

#include "odl/model/linkd/backend.h"
#include "odl/model/nhi/host_memory.h"

namespace odl::model::linkd::testing {

class mem_bus final : public host_bus {
public:
    bool dma_read(std::uint64_t addr, void* buf, std::size_t len) override { return mem.dma_read(addr, buf, len); }
    bool dma_write(std::uint64_t addr, const void* buf, std::size_t len) override {
        return mem.dma_write(addr, buf, len);
    }
    void raise_irq(unsigned) override { irqs++; }
    local_memory mem;
    unsigned irqs = 0;
};

}  // namespace odl::model::linkd::testing

// SPDX-License-Identifier: MIT
#include "irq_lockstep.h"
#include "irq_unit_model.h"
#include "irq_unit_rtl.h"

namespace odl::model {

std::unique_ptr<irq_unit> make_irq_unit(const irq_unit_options& o) {
    switch (o.impl) {
    case irq_impl::rtl: return std::make_unique<irq_unit_rtl>(o);
    case irq_impl::lockstep:
        return std::make_unique<irq_unit_lockstep>(std::make_unique<irq_unit_model>(),
                                                   std::make_unique<irq_unit_rtl>(o));
    case irq_impl::model: break;
    }
    return std::make_unique<irq_unit_model>();
}

}  // namespace odl::model

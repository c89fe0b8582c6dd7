// SPDX-License-Identifier: MIT
#include "irq_lockstep.h"
#include "irq_unit_model.h"
#include "irq_unit_rtl.h"

namespace odl::model {

std::optional<irq_impl> parse_irq_impl(std::string_view s) {
    if (s == "model") return irq_impl::model;
    if (s == "rtl") return irq_impl::rtl;
    if (s == "lockstep") return irq_impl::lockstep;
    return std::nullopt;
}

const char* to_string(irq_impl i) {
    switch (i) {
    case irq_impl::model: return "model";
    case irq_impl::rtl: return "rtl";
    case irq_impl::lockstep: return "lockstep";
    }
    return "?";
}

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

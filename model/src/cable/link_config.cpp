// SPDX-License-Identifier: MIT
// Link validation and analytic rates.
#include "odl/model/cable/link_config.h"

#include <cmath>

#include <fmt/format.h>

#include "odl/wire/usb4_ctl.h"

namespace odl::model {

std::optional<generation> parse_generation(std::string_view s) {
    if (s == "tb3") return generation::tb3;
    if (s == "gen2" || s == "usb4-gen2") return generation::gen2;
    if (s == "tb4" || s == "gen3" || s == "usb4-gen3") return generation::gen3;
    if (s == "tb5" || s == "gen4" || s == "usb4-gen4") return generation::gen4;
    return std::nullopt;
}

std::string_view to_string(generation g) {
    switch (g) {
    case generation::tb3: return "tb3";
    case generation::gen2: return "usb4-gen2";
    case generation::gen3: return "tb4";
    case generation::gen4: return "tb5";
    }
    return "?";
}

link_config degraded(link_config c, generation gen, unsigned lanes) {
    c.gen = gen;
    c.lanes = lanes;
    if (gen != generation::gen4) c.asymmetric = false;
    return c;
}

std::optional<std::string> validate(const link_config& c) {
    if (c.asymmetric) {
        if (c.gen != generation::gen4)
            return fmt::format("asymmetric links need USB4 v2 Gen4 (tb5); {} is symmetric only",
                               to_string(c.gen));
        if (c.lanes != 3 && c.lanes != 2)
            return fmt::format("asymmetric Gen4 uses 3 lanes one way and 1 back, not {} lanes",
                               c.lanes);
        if (c.fast_end != 0 && c.fast_end != 1)
            return std::string("asymmetric: the fast end must be 0 or 1");
    } else if (c.lanes != 1 && c.lanes != 2) {
        return fmt::format("{} supports 1 or 2 lanes per direction, not {} (3 lanes exist only "
                           "as USB4 v2 Gen4 asymmetric: 3 one way, 1 back)",
                           to_string(c.gen), c.lanes);
    }
    if (!(c.length_m > 0.0) || c.length_m > 50.0)
        return fmt::format("cable length {} m is outside (0, 50] m", c.length_m);
    return std::nullopt;
}

double lane_gbps(generation g, const link_physics& p) {
    switch (g) {
    case generation::tb3: return 20.625 * 64.0 / 66.0;   // = 20.0
    case generation::gen2: return 10.3125 * 64.0 / 66.0; // = 10.0
    case generation::gen3: return 20.625 * 128.0 / 132.0;
    case generation::gen4: return 25.6 * 11.0 / 7.0 * p.gen4_coding_efficiency;
    }
    return 0.0;
}

unsigned tx_lanes(const link_config& c, int from) {
    if (!c.asymmetric) return c.lanes;
    return from == c.fast_end ? 3u : 1u;
}

double tx_gbps(const link_config& c, const link_physics& p, int from) {
    return tx_lanes(c, from) * lane_gbps(c.gen, p);
}

std::uint64_t wire_bytes(std::uint64_t frame_bytes) {
    const std::uint64_t packets =
        (frame_bytes + transport_payload_bytes - 1) / transport_payload_bytes;
    return frame_bytes + packets * transport_header_bytes;
}

double payload_gbps(const link_config& c, const link_physics& p, int from,
                    std::uint32_t frame_bytes) {
    return tx_gbps(c, p, from) * static_cast<double>(frame_bytes) /
           static_cast<double>(wire_bytes(frame_bytes));
}

std::uint64_t serialise_ps(const link_config& c, const link_physics& p, int from,
                           std::uint32_t frame_bytes) {
    const double bits = 8.0 * static_cast<double>(wire_bytes(frame_bytes));
    return static_cast<std::uint64_t>(std::llround(bits * 1000.0 / tx_gbps(c, p, from)));
}

std::uint64_t propagation_ps(const link_config& c, const link_physics& p) {
    return static_cast<std::uint64_t>(std::llround(c.length_m * p.cable_ns_per_m * 1000.0));
}

std::uint32_t lane_speed_code(generation g) {
    switch (g) {
    case generation::gen2: return ODL_LANE_SPEED_GEN2;
    case generation::gen4: return ODL_LANE_SPEED_GEN4;
    default: return ODL_LANE_SPEED_GEN3;
    }
}

}  // namespace odl::model

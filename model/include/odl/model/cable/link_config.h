// SPDX-License-Identifier: MIT
// Link generations, lanes and asymmetry: validation and the analytic rates
// (line coding, FEC, 256 B + 4 B transport packets) the cable model uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace odl::model {

enum class generation {
    tb3,   ///< Thunderbolt 3: 20.625 Gbaud NRZ, 64b/66b, 20 Gb/s per lane
    gen2,  ///< USB4 v1 Gen2: 10 Gb/s per lane
    gen3,  ///< USB4 v1 Gen3 (TB4): 20 Gb/s per lane
    gen4,  ///< USB4 v2 Gen4 (TB5): PAM3 25.6 GBd, 11b/7t, RS-FEC
};

/// Parses "tb3", "tb4"/"gen3"/"usb4-gen3", "gen2"/"usb4-gen2", "tb5"/"gen4"/"usb4-gen4".
std::optional<generation> parse_generation(std::string_view s);
std::string_view to_string(generation g);

/// One cable: generation, lanes per direction, asymmetry, length.
struct link_config {
    generation gen = generation::gen4;
    unsigned lanes = 2;        ///< per direction when symmetric
    bool asymmetric = false;   ///< Gen4 only: 3 lanes one way, 1 back
    int fast_end = 0;          ///< asymmetric: the end that transmits on 3 lanes
    double length_m = 1.0;
};

/// Physical constants that are not fixed by the spec (from the calibration file).
struct link_physics {
    double gen4_coding_efficiency = 0.98;  ///< FEC + framing below 40.23 Gb/s
    double cable_ns_per_m = 5.0;           ///< propagation
};

/// @c after a degrade to @gen x @lanes (the cable retrains into it):
/// asymmetry is Gen4's only.
link_config degraded(link_config c, generation gen, unsigned lanes);

/// Returns why @c is impossible, or nullopt when it is valid.
std::optional<std::string> validate(const link_config& c);

/// Lane data rate after line coding and FEC, Gb/s.
double lane_gbps(generation g, const link_physics& p);
/// Lanes transmitting from end @from (0 or 1).
unsigned tx_lanes(const link_config& c, int from);
/// Data rate from end @from, Gb/s (before transport packet headers).
double tx_gbps(const link_config& c, const link_physics& p, int from);
/// Bytes on the wire for a frame: payload plus a 4 B header per 256 B packet.
std::uint64_t wire_bytes(std::uint64_t frame_bytes);
/// Payload rate of back-to-back frames of @frame_bytes, Gb/s (the plateau).
double payload_gbps(const link_config& c, const link_physics& p, int from,
                    std::uint32_t frame_bytes);
/// Serialisation time of one frame, picoseconds.
std::uint64_t serialise_ps(const link_config& c, const link_physics& p, int from,
                           std::uint32_t frame_bytes);
/// Propagation delay, picoseconds.
std::uint64_t propagation_ps(const link_config& c, const link_physics& p);
/// LANE_ADP_CS_1 current-speed code for the generation.
std::uint32_t lane_speed_code(generation g);

constexpr std::uint32_t transport_payload_bytes = 256;
constexpr std::uint32_t transport_header_bytes = 4;

}  // namespace odl::model

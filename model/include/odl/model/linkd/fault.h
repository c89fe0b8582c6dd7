// SPDX-License-Identifier: MIT
// odl-linkd as a hostile peer: fault injection on the modelled cable
// (`odl-linkd --fault SPEC`, control command `fault add SPEC`). Rewrites
// odl_tb5's LOGIN / LOGIN_RESP XDomain packets (control packet CRC
// recomputed, so thunderbolt.ko takes the packet and odl_tb5 has to judge
// the payload) and damages, truncates, drops or duplicates DMA frames.
// Off unless a spec is armed; deterministic (seeded); bounded (count).
//
// Grammar (docs/vm.md, "Fault injection"):
//   login:FIELD=VALUE[,FIELD=VALUE...][,count=N][,skip=M][,every=K][,from=A|B]
//   login_resp:FIELD=VALUE[,...][,count=N][,skip=M][,every=K][,from=A|B]
//   data:MODE[,count=N][,skip=M][,every=K][,seed=S][,value=V][,bits=B]
//        [,frames=data|all][,from=A|B]
//   split:MODE[,count=N][,skip=M][,every=K][,value=V][,from=A|B]
// FIELD is a field of struct odl_xd_login / odl_xd_login_resp
// (include/odl/wire/tb5_login.h); MODE one of the data_modes below, or
// for split: one of the split_modes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "odl/model/cable/cable.h"
#include "odl/model/core/frame.h"

namespace odl::model::linkd {

enum class fault_target { login, login_resp, logout, data, split };

/// What a split fault does to odl_tb5's split pairs: a DATA header frame
/// with ODL_FRAME_F_SPLIT of exactly ODL_FRAME_HDR_BYTES (PDFs
/// ODL_XD_PDF_SOF/EOF), then, next on the same HopID from the same host,
/// its raw payload frame (PDFs ODL_XD_PDF_RAW_SOF/EOF).
enum class split_mode {
    drop_header,  ///< the header is lost: its raw frame arrives alone
    drop_raw,     ///< the raw frame is lost: the header waits in vain
    len,          ///< header len := value; default len - 1 (2 for 1), and on
                  ///< an EOM header msg_len moved alike (header stays valid)
    raw_pdf,      ///< the raw frame gets the whole-frame PDFs (SOF/EOF)
};

/// What a data fault does to a frame (the header is struct odl_frame_hdr).
enum class data_mode {
    flip,       ///< flip `bits` random bits of the 32-byte header
    payload,    ///< flip one random payload bit (frames with a payload)
    type,       ///< header field := value (default: see fault.cpp)
    flags,
    stream,
    len,
    reserved,   ///< reserved0
    seq,
    msg_len,
    offset,
    truncate,   ///< frame cut to `value` bytes (default: random, shorter)
    drop,       ///< frame lost
    duplicate,  ///< frame delivered twice
};

/// One rewrite of a LOGIN / LOGIN_RESP dword (or 16-bit half of one).
struct login_assign {
    std::string field;
    unsigned dword = 0;       ///< index of the dword in the packet
    unsigned shift = 0;       ///< 0 or 16 for the u16 version fields
    std::uint32_t mask = 0;   ///< field mask before the shift
    std::uint32_t value = 0;
};

struct fault_spec {
    std::string text;  ///< the spec as given (logs)
    fault_target target = fault_target::data;
    std::vector<login_assign> assigns;  ///< login / login_resp
    data_mode mode = data_mode::flip;
    split_mode smode = split_mode::drop_header;
    std::optional<std::uint32_t> value;
    unsigned bits = 1;
    bool all_frames = false;  ///< data: not only DATA (0x40) frames
    std::uint64_t count = 1;  ///< faults to inject, then the spec is spent
    std::uint64_t skip = 0;   ///< matching packets/frames let through first
    std::uint64_t every = 1;  ///< then every K-th matching one
    std::uint64_t seed = 1;
    int from = -1;            ///< sending host (0 = A, 1 = B), -1 either
};

/// Parses one SPEC; nullopt with @err naming the problem.
std::optional<fault_spec> parse_fault(const std::string& text, std::string& err);

/// The OdinLink service protocol UUID as it appears in odl_tb5's XDomain
/// packets (ODL_XD_SERVICE_UUID_BYTES of odl/wire/tb5_login.h, which
/// kmod/main.c's odl_svc_uuid uses too).
extern const std::uint8_t odl_service_uuid[16];

/// The armed specs and what they did; installed on the cable as its tap.
class fault_injector {
public:
    using log_fn = std::function<void(const std::string&)>;
    explicit fault_injector(log_fn log = {}) : m_log(std::move(log)) {}

    void add(fault_spec spec);
    /// Disarms everything; returns how many specs there were.
    std::size_t clear();
    bool armed() const;
    /// The cable tap: may rewrite @f, or ask for a drop / duplicate.
    tap_verdict apply(int from, frame& f);

    std::uint64_t injected() const { return m_injected; }
    /// "injected T armed N; #0 SPEC done/count; ..." for the control socket.
    std::string status() const;
    /// Control socket "fault ..." commands: "add SPEC", "clear", "status".
    /// The reply starts with "ok" or "error: ".
    std::string command(const std::string& cmd);

    struct armed_spec {
        fault_spec spec;
        std::uint64_t seen = 0;  ///< matching packets/frames so far
        std::uint64_t done = 0;  ///< faults injected
        std::mt19937_64 rng;
        /// split: (from << 16 | HopID) -> the last frame there was a
        /// split header (so a raw frame there is its payload).
        std::map<std::uint32_t, bool> split_hdr;
    };
    const std::vector<armed_spec>& specs() const { return m_specs; }

private:
    bool fire(armed_spec& a);
    bool apply_login(armed_spec& a, int from, frame& f);
    tap_verdict apply_logout(armed_spec& a, int from, frame& f);
    tap_verdict apply_data(armed_spec& a, int from, frame& f);
    tap_verdict apply_split(armed_spec& a, int from, frame& f);
    void note(const armed_spec& a, int from, const std::string& what);

    log_fn m_log;
    std::vector<armed_spec> m_specs;
    std::uint64_t m_injected = 0;
};

}  // namespace odl::model::linkd

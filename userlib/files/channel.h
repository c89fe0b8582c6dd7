// SPDX-License-Identifier: MIT
// One file-service session's messages over a libodl device (layout:
// include/odl/wire/files.h): numbering, tags, checks, and the buffers that
// libodl owns until a send or receive completes. A message reaches the
// caller only after files_codec.h's checks and its tag passed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "crypto.h"
#include "odl/odl.hpp"
#include "odl/wire/files_codec.h"

namespace odl::files {

/// The link failed or the peer left: the session is over (a transfer may
/// resume in a new one).
struct link_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
/// The peer broke the protocol (malformed, replayed or forged message): the
/// session is over, the caller says why.
struct protocol_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};
/// Our own stop flag was raised (SIGINT, SIGTERM).
struct stopped : std::runtime_error {
    stopped() : std::runtime_error("stopped") {}
};

/// A received message; valid until the next receive on its channel.
struct message {
    uint16_t type = 0;
    uint32_t flags = 0;
    const uint8_t* payload = nullptr;
    size_t len = 0;
    bool verified = false;  ///< false only for HELLO and PAIR (see channel)

    /// The payload's leading struct (its size was checked).
    template <typename T>
    T head() const {
        T t;
        std::memcpy(&t, payload, sizeof(T));
        return t;
    }
    /// The bytes after the leading struct @skip bytes long.
    std::string_view tail(size_t skip) const {
        return {reinterpret_cast<const char*>(payload) + skip, len - skip};
    }
};

class channel {
public:
    /// @me: which side this end is; @stop: raised to end any wait early;
    /// @first: the session's first message when the caller already received
    /// it (a server that dispatches by the first message): taken first.
    channel(odl::device& dev, odl_files_side me, const std::atomic<bool>* stop = nullptr,
            std::string_view first = {});
    ~channel();
    channel(const channel&) = delete;
    channel& operator=(const channel&) = delete;

    /// Session keys, from then on every message is tagged and checked with them.
    void set_keys(const key32& tx, const key32& rx);
    void set_chunk(uint32_t chunk) { m_chunk = chunk; }
    uint32_t chunk() const { return m_chunk; }

    /// Sends a message: payload = @a then @b. Under session keys unless it
    /// is a PAIR (zero tag) or a HELLO (tagged with @hello_key).
    void send(uint16_t type, const void* a, size_t na, const void* b = nullptr, size_t nb = 0, uint32_t flags = 0);
    void send_hello(const odl_files_hello& h, const key32& pair_key);
    /// Server, before any key: an ERROR with a zero tag refusing a HELLO,
    /// so the client learns why (it cannot trust it, only show it).
    void send_refusal(odl_files_err code, const std::string& text);
    /// DATA without a copy: fill data_area() (chunk bytes), then send_data().
    uint8_t* data_area();
    void send_data(uint64_t offset, size_t n);
    /// Waits until every send has left (the peer's library took it).
    void flush(uint64_t timeout_ns);

    /// The next message, waiting up to @timeout_ns (0: no limit); throws
    /// link_error, protocol_error, stopped. Before set_keys() only HELLO,
    /// HELLO_ACK and PAIR are taken, unverified: verify_hello() and the
    /// HELLO_ACK check are the caller's (it derives the keys).
    message recv(uint64_t timeout_ns);
    /// A message if one is already here, else nothing (never waits).
    std::optional<message> try_recv();
    /// Checks a HELLO's tag with @pair_key.
    bool verify_hello(const message& m, const key32& pair_key) const;
    /// Checks a HELLO_ACK's tag with @rx (the session key it proposes).
    bool verify_with(const message& m, const key32& rx) const;


private:
    struct slot {
        std::unique_ptr<uint8_t[]> buf;
        size_t len = 0;
        bool busy = false;
        bool done = false;
        int status = 0;
    };
    size_t free_send_slot();
    void post_send_slot(size_t i, size_t len);
    void post_recv(size_t i);
    void progress(uint64_t timeout_ns);
    void check_link() const;
    std::optional<message> take();
    void fill_header(uint8_t* p, uint16_t type, size_t payload_len, uint32_t flags, uint64_t seq) const;

    odl::device& m_dev;
    odl_files_side m_me;
    const std::atomic<bool>* m_stop;
    std::unique_ptr<gmac> m_tx, m_rx;
    uint32_t m_chunk = ODL_FILES_CHUNK_MAX;
    uint64_t m_tx_seq = 0, m_rx_seq = 0;
    std::vector<slot> m_send, m_recv;
    std::deque<size_t> m_recv_order;  ///< posted receives, oldest first
    std::optional<size_t> m_held;     ///< the slot of the message last returned
    size_t m_data_slot = SIZE_MAX;
    std::string m_link_error;
};

}  // namespace odl::files

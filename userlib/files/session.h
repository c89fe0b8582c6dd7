// SPDX-License-Identifier: MIT
// Opening a file-service session (HELLO, HELLO_ACK: session keys from the
// pair key and both nonces) and pairing two hosts (`odl pair`: X25519 over
// the link, a code the users compare).
#pragma once

#include <cstdint>
#include <string>

#include "channel.h"
#include "pair_store.h"

namespace odl::files {

/// A session's two keys (client to server, server to client), from the
/// pair key and both HELLO nonces.
struct session_keys {
    key32 c2s{}, s2c{};
};
session_keys derive_session_keys(const key32& pair_key, const uint8_t* nonce_c, const uint8_t* nonce_s);

/// Client: HELLO under @pair's key, then HELLO_ACK checked; sets the
/// session keys and chunk. Throws link_error / protocol_error.
void client_hello(channel& ch, const pair_record& pair, uint32_t chunk, uint64_t timeout_ns);

/// Server: waits for a HELLO whose pair id is in @keys and whose tag
/// verifies, answers HELLO_ACK; returns the peer's record. A HELLO that
/// fails throws protocol_error (nothing is sent back: there is no key).
pair_record server_hello(channel& ch, const pair_store& keys, uint32_t max_chunk);

/// The outcome of a pairing, to be saved once the users agreed on @code.
struct pairing {
    pair_record record;
    std::string code;  ///< six digits, "123 456", the same on both hosts
};

/// Exchanges PAIR messages over @ch (both hosts run this) and derives the
/// pair key, id and confirmation code.
pairing pair_over(channel& ch, const std::string& local_name, uint64_t timeout_ns);

}  // namespace odl::files

// SPDX-License-Identifier: MIT
#include "session.h"

#include "clock.h"
#include "transfer.h"

#include <algorithm>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

namespace odl::files {

session_keys derive_session_keys(const key32& pair, const uint8_t* nonce_c, const uint8_t* nonce_s) {
    uint8_t salt[2 * ODL_FILES_NONCE_BYTES];
    std::memcpy(salt, nonce_c, ODL_FILES_NONCE_BYTES);
    std::memcpy(salt + ODL_FILES_NONCE_BYTES, nonce_s, ODL_FILES_NONCE_BYTES);
    session_keys k;
    hkdf(pair.data(), pair.size(), salt, sizeof(salt), "odl files c2s v1", k.c2s.data(), k.c2s.size());
    hkdf(pair.data(), pair.size(), salt, sizeof(salt), "odl files s2c v1", k.s2c.data(), k.s2c.size());
    return k;
}

void client_hello(channel& ch, const pair_record& pair, uint32_t chunk, uint64_t timeout_ns) {
    odl_files_hello h{};
    std::memcpy(h.pair_id, pair.id.data(), pair.id.size());
    random_bytes(h.nonce, sizeof(h.nonce));
    h.chunk = odl_cpu_le32(chunk);
    ch.send_hello(h, pair.key);
    const message m = ch.recv(timeout_ns);
    if (m.type == ODL_FILES_ERROR) {
        throw protocol_error(fmt::format("peer refused the session: {} (an unauthenticated answer)",
                                         peer_text(m.tail(sizeof(odl_files_error)))));
    }
    if (m.type != ODL_FILES_HELLO_ACK) throw protocol_error(fmt::format("peer answered HELLO with type {}", m.type));
    const auto a = m.head<odl_files_hello_ack>();
    const uint32_t got = odl_le32(a.chunk);
    if (got > chunk) throw protocol_error("peer chose a chunk larger than asked for");
    const session_keys k = derive_session_keys(pair.key, h.nonce, a.nonce);
    if (!ch.verify_with(m, k.s2c))
        throw protocol_error("peer's HELLO_ACK does not verify: it does not hold this pairing's key");
    ch.set_keys(k.c2s, k.s2c);
    ch.set_chunk(got);
}

pair_record server_hello(channel& ch, const pair_store& keys, uint32_t max_chunk) {
    const message m = ch.recv(0);
    if (m.type != ODL_FILES_HELLO) throw protocol_error(fmt::format("session opened with type {}, not HELLO", m.type));
    const auto h = m.head<odl_files_hello>();
    pair_id id{};
    std::memcpy(id.data(), h.pair_id, id.size());
    const auto rec = keys.find(id);
    if (!rec) {
        ch.send_refusal(ODL_FILES_E_AUTH, "this host holds no pairing with that id: run `odl pair` on both hosts");
        throw protocol_error(fmt::format("HELLO from unknown pair {} (not paired here)", hex(id)));
    }
    if (!ch.verify_hello(m, rec->key)) {
        ch.send_refusal(ODL_FILES_E_AUTH, "HELLO does not verify with this host's key for the pairing");
        throw protocol_error(fmt::format("HELLO for pair {} ({}) does not verify: wrong key or forged", hex(id),
                                         rec->peer_name));
    }
    odl_files_hello_ack a{};
    random_bytes(a.nonce, sizeof(a.nonce));
    const uint32_t chunk = std::min(odl_le32(h.chunk), max_chunk);
    a.chunk = odl_cpu_le32(chunk);
    const session_keys k = derive_session_keys(rec->key, h.nonce, a.nonce);
    ch.set_keys(k.s2c, k.c2s);
    ch.set_chunk(chunk);
    ch.send(ODL_FILES_HELLO_ACK, &a, sizeof(a));
    return *rec;
}

pairing pair_over(channel& ch, const std::string& local_name, uint64_t timeout_ns) {
    x25519 mine;
    odl_files_pair out{};
    const key32 pub = mine.public_key();
    std::memcpy(out.public_key, pub.data(), pub.size());
    std::strncpy(out.name, local_name.c_str(), sizeof(out.name) - 1);
    ch.send(ODL_FILES_PAIR, &out, sizeof(out));
    const message m = ch.recv(timeout_ns);
    if (m.type != ODL_FILES_PAIR) throw protocol_error(fmt::format("peer sent type {} while pairing", m.type));
    const auto in = m.head<odl_files_pair>();
    key32 peer{};
    std::memcpy(peer.data(), in.public_key, peer.size());
    if (peer == pub) throw protocol_error("peer sent this host's own key back (a mirror, not a peer)");
    const key32 secret = mine.shared(peer);
    // Both hosts order the two public keys the same way.
    uint8_t transcript[64];
    const bool mine_first = std::lexicographical_compare(pub.begin(), pub.end(), peer.begin(), peer.end());
    std::memcpy(transcript, mine_first ? pub.data() : peer.data(), 32);
    std::memcpy(transcript + 32, mine_first ? peer.data() : pub.data(), 32);

    pairing p;
    hkdf(secret.data(), secret.size(), transcript, sizeof(transcript), "odl pair key v1", p.record.key.data(),
         p.record.key.size());
    hkdf(secret.data(), secret.size(), transcript, sizeof(transcript), "odl pair id v1", p.record.id.data(),
         p.record.id.size());
    uint8_t c[4];
    hkdf(secret.data(), secret.size(), transcript, sizeof(transcript), "odl pair code v1", c, sizeof(c));
    const uint32_t code = (uint32_t(c[0]) << 24 | uint32_t(c[1]) << 16 | uint32_t(c[2]) << 8 | c[3]) % 1000000u;
    p.code = fmt::format("{:03} {:03}", code / 1000, code % 1000);
    std::string name(in.name, strnlen(in.name, sizeof(in.name)));
    for (char& ch_ : name)
        if (static_cast<unsigned char>(ch_) < 0x20 || ch_ == '/') ch_ = '_';
    p.record.peer_name = name.empty() ? "peer" : name;
    p.record.local_name = local_name;
    p.record.created = utc_iso();
    return p;
}

}  // namespace odl::files

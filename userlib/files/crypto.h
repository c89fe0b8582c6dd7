// SPDX-License-Identifier: MIT
// The file service's cryptography, all of it OpenSSL's: SHA-256 of files,
// GMAC tags (AES-256-GCM over no plaintext) on every message, HKDF-SHA256
// for session keys, X25519 for pairing. Wrappers only: RAII owners and
// exceptions, nothing hand-written.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

struct evp_md_ctx_st;
struct evp_cipher_ctx_st;
struct evp_pkey_st;

namespace odl::files {

using key32 = std::array<uint8_t, 32>;
using digest = std::array<uint8_t, 32>;
using tag16 = std::array<uint8_t, 16>;

/// OpenSSL said no (never expected on a working system).
struct crypto_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Fills @n bytes at @p from the system's random generator.
void random_bytes(void* p, size_t n);

/// Lower-case hex of @n bytes.
std::string hex(const uint8_t* p, size_t n);
template <size_t N>
std::string hex(const std::array<uint8_t, N>& a) {
    return hex(a.data(), N);
}
/// Parses exactly @n bytes of hex; false on anything else.
bool unhex(std::string_view s, uint8_t* out, size_t n);

/// A running SHA-256.
class sha256 {
public:
    sha256();
    ~sha256();
    sha256(const sha256&) = delete;
    sha256& operator=(const sha256&) = delete;
    void update(const void* p, size_t n);
    /// The digest of everything so far; the hash starts over afterwards.
    digest finish();

private:
    evp_md_ctx_st* m_ctx;
};

/// GMAC tags under one key: the nonce is the message's sequence number and
/// direction, so a key must tag each (seq, direction) once.
class gmac {
public:
    explicit gmac(const key32& key);
    ~gmac();
    gmac(const gmac&) = delete;
    gmac& operator=(const gmac&) = delete;
    /// Tag over @a then @b (either may be empty) with the 12-byte @iv.
    tag16 tag(const uint8_t* iv, const void* a, size_t na, const void* b, size_t nb);
    /// The same with the nonce (@seq, @dir): a session's messages.
    tag16 tag(uint64_t seq, uint32_t dir, const void* a, size_t na, const void* b, size_t nb);

private:
    evp_cipher_ctx_st* m_ctx;
};

/// Constant-time comparison of @n bytes.
bool same_bytes(const void* a, const void* b, size_t n);

/// HKDF-SHA256: @out_len bytes from @secret, @salt and @info.
void hkdf(const uint8_t* secret, size_t secret_len, const uint8_t* salt, size_t salt_len,
          std::string_view info, uint8_t* out, size_t out_len);

/// An ephemeral X25519 key pair.
class x25519 {
public:
    x25519();
    ~x25519();
    x25519(const x25519&) = delete;
    x25519& operator=(const x25519&) = delete;
    key32 public_key() const;
    /// The shared secret with @peer_public; throws on a degenerate key.
    key32 shared(const key32& peer_public) const;

private:
    evp_pkey_st* m_key;
};

}  // namespace odl::files

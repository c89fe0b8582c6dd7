// SPDX-License-Identifier: MIT
#include "crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <cstring>

namespace odl::files {

namespace {

[[noreturn]] void fail(const char* what) { throw crypto_error(std::string("OpenSSL: ") + what + " failed"); }

void need(int ok, const char* what) {
    if (ok <= 0) fail(what);
}

struct pkey_ctx_free {
    void operator()(EVP_PKEY_CTX* c) const noexcept { EVP_PKEY_CTX_free(c); }
};
using pkey_ctx = std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_free>;

}  // namespace

void random_bytes(void* p, size_t n) { need(RAND_bytes(static_cast<unsigned char*>(p), int(n)), "RAND_bytes"); }

std::string hex(const uint8_t* p, size_t n) {
    static const char digits[] = "0123456789abcdef";
    std::string s(n * 2, '0');
    for (size_t i = 0; i < n; i++) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    return s;
}

bool unhex(std::string_view s, uint8_t* out, size_t n) {
    if (s.size() != 2 * n) return false;
    auto val = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (size_t i = 0; i < n; i++) {
        const int hi = val(s[2 * i]), lo = val(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = uint8_t(hi << 4 | lo);
    }
    return true;
}

sha256::sha256() : m_ctx(EVP_MD_CTX_new()) {
    if (!m_ctx) fail("EVP_MD_CTX_new");
    need(EVP_DigestInit_ex(m_ctx, EVP_sha256(), nullptr), "SHA-256 init");
}

sha256::~sha256() { EVP_MD_CTX_free(m_ctx); }

void sha256::update(const void* p, size_t n) { need(EVP_DigestUpdate(m_ctx, p, n), "SHA-256 update"); }

digest sha256::finish() {
    digest d{};
    unsigned len = 0;
    need(EVP_DigestFinal_ex(m_ctx, d.data(), &len), "SHA-256 final");
    need(EVP_DigestInit_ex(m_ctx, EVP_sha256(), nullptr), "SHA-256 init");
    return d;
}

gmac::gmac(const key32& key) : m_ctx(EVP_CIPHER_CTX_new()) {
    if (!m_ctx) fail("EVP_CIPHER_CTX_new");
    need(EVP_EncryptInit_ex(m_ctx, EVP_aes_256_gcm(), nullptr, key.data(), nullptr), "AES-256-GCM key");
}

gmac::~gmac() { EVP_CIPHER_CTX_free(m_ctx); }

tag16 gmac::tag(uint64_t seq, uint32_t dir, const void* a, size_t na, const void* b, size_t nb) {
    uint8_t iv[12];
    for (int i = 0; i < 8; i++) iv[i] = uint8_t(seq >> (8 * i));
    for (int i = 0; i < 4; i++) iv[8 + i] = uint8_t(dir >> (8 * i));
    return tag(iv, a, na, b, nb);
}

tag16 gmac::tag(const uint8_t* iv, const void* a, size_t na, const void* b, size_t nb) {
    need(EVP_EncryptInit_ex(m_ctx, nullptr, nullptr, nullptr, iv), "AES-256-GCM nonce");
    int out = 0;
    // Associated data only: the messages travel in clear, every bit tagged.
    if (na) need(EVP_EncryptUpdate(m_ctx, nullptr, &out, static_cast<const unsigned char*>(a), int(na)), "GMAC");
    if (nb) need(EVP_EncryptUpdate(m_ctx, nullptr, &out, static_cast<const unsigned char*>(b), int(nb)), "GMAC");
    unsigned char none[16];
    need(EVP_EncryptFinal_ex(m_ctx, none, &out), "GMAC final");
    tag16 t{};
    need(EVP_CIPHER_CTX_ctrl(m_ctx, EVP_CTRL_GCM_GET_TAG, int(t.size()), t.data()), "GMAC tag");
    return t;
}

bool same_bytes(const void* a, const void* b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

void hkdf(const uint8_t* secret, size_t secret_len, const uint8_t* salt, size_t salt_len, std::string_view info,
          uint8_t* out, size_t out_len) {
    pkey_ctx c(EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, nullptr));
    if (!c) fail("HKDF context");
    need(EVP_PKEY_derive_init(c.get()), "HKDF init");
    need(EVP_PKEY_CTX_set_hkdf_md(c.get(), EVP_sha256()), "HKDF digest");
    need(EVP_PKEY_CTX_set1_hkdf_salt(c.get(), salt, int(salt_len)), "HKDF salt");
    need(EVP_PKEY_CTX_set1_hkdf_key(c.get(), secret, int(secret_len)), "HKDF key");
    need(EVP_PKEY_CTX_add1_hkdf_info(c.get(), reinterpret_cast<const unsigned char*>(info.data()), int(info.size())),
         "HKDF info");
    size_t len = out_len;
    need(EVP_PKEY_derive(c.get(), out, &len), "HKDF derive");
    if (len != out_len) fail("HKDF length");
}

x25519::x25519() : m_key(nullptr) {
    pkey_ctx c(EVP_PKEY_CTX_new_id(EVP_PKEY_X25519, nullptr));
    if (!c) fail("X25519 context");
    need(EVP_PKEY_keygen_init(c.get()), "X25519 keygen init");
    need(EVP_PKEY_keygen(c.get(), &m_key), "X25519 keygen");
}

x25519::~x25519() { EVP_PKEY_free(m_key); }

key32 x25519::public_key() const {
    key32 k{};
    size_t len = k.size();
    need(EVP_PKEY_get_raw_public_key(m_key, k.data(), &len), "X25519 public key");
    return k;
}

key32 x25519::shared(const key32& peer_public) const {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> peer(
        EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, peer_public.data(), peer_public.size()), EVP_PKEY_free);
    if (!peer) fail("X25519 peer key");
    pkey_ctx c(EVP_PKEY_CTX_new(m_key, nullptr));
    if (!c) fail("X25519 derive context");
    need(EVP_PKEY_derive_init(c.get()), "X25519 derive init");
    need(EVP_PKEY_derive_set_peer(c.get(), peer.get()), "X25519 peer");
    key32 s{};
    size_t len = s.size();
    // OpenSSL refuses an all-zero result (a low-order peer key).
    need(EVP_PKEY_derive(c.get(), s.data(), &len), "X25519 derive");
    return s;
}

}  // namespace odl::files

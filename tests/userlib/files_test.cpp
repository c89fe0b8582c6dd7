// SPDX-License-Identifier: MIT
// The file service in one process: a server thread and a client over an
// in-process loopback pair. Copies, resume, a corrupted partial file, paths
// that lead out of the served folder, and hostile clients (unknown pair,
// forged tag, replayed message): each must be refused and leave nothing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "files/client.h"
#include "files/server.h"
#include "files/session.h"
#include "files/transfer.h"

namespace {

namespace fs = std::filesystem;
namespace fl = odl::files;

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const fs::path& p, const std::string& data) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << data;
}

std::string random_bytes(size_t n, unsigned seed) {
    std::mt19937 g(seed);
    std::string s(n, '\0');
    for (auto& c : s) c = char(g());
    return s;
}

/// Files whose names mark them as the service's partial files.
size_t partials(const fs::path& dir) {
    size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir))
        n += fl::is_partial_name(e.path().filename().string());
    return n;
}

class FilesTest : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/odl-files-test.XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        m_tmp = tmpl;
        m_share = m_tmp / "share";
        m_local = m_tmp / "local";
        fs::create_directories(m_share);
        fs::create_directories(m_local);
        fl::random_bytes(m_pair.id.data(), m_pair.id.size());
        fl::random_bytes(m_pair.key.data(), m_pair.key.size());
        m_pair.peer_name = "server";
        fl::pair_record theirs = m_pair;
        theirs.peer_name = "client";
        fl::pair_store(m_tmp / "server-keys").save(theirs);
        m_root = ::open(m_share.c_str(), O_RDONLY | O_DIRECTORY);
        ASSERT_GE(m_root, 0);
    }
    void TearDown() override {
        ::close(m_root);
        fs::remove_all(m_tmp);
    }

    /// Runs @client_side against a server session; returns the server's counters.
    template <typename F>
    fl::server_counters session(F client_side, uint32_t max_chunk = ODL_FILES_CHUNK_MAX) {
        odl::open_params p;
        p.num_streams = 1;
        auto [a, b] = odl::device::pair(p);
        fl::file_server server(m_root, fl::pair_store(m_tmp / "server-keys"),
                               [this](const std::string& l) { m_log += l + "\n"; }, max_chunk);
        // The server closes its end after the session, as `odl files serve` does.
        auto server_dev = std::make_unique<odl::device>(std::move(b));
        std::thread t([&] {
            server.serve(*server_dev, &m_stop);
            server_dev.reset();
        });
        auto dev = std::make_unique<odl::device>(std::move(a));
        try {
            client_side(dev);
        } catch (...) {
            dev.reset();  // the server sees the link go and returns
            t.join();
            throw;
        }
        dev.reset();
        t.join();
        return server.counters();
    }

    fl::file_client make_client(std::unique_ptr<odl::device>& dev, fl::copy_options opt = {},
                                fl::file_client::progress_fn progress = {}) {
        opt.retry_for_ns = 0;  // one device: no reconnecting here
        opt.answer_timeout_ns = 10'000'000'000ull;
        return fl::file_client(
            [&dev]() {
                if (!dev) throw fl::link_error("no second device in this test");
                return std::move(dev);
            },
            m_pair, opt, &m_stop, [this](const std::string& l) { m_notes += l + "\n"; }, std::move(progress));
    }

    fs::path m_tmp, m_share, m_local;
    int m_root = -1;
    fl::pair_record m_pair;
    std::atomic<bool> m_stop{false};
    std::string m_log, m_notes;
};

TEST_F(FilesTest, PushAndPullFilesAndTrees) {
    const std::string big = random_bytes((3u << 20) + 1, 1);
    write_file(m_local / "big.bin", big);
    ::chmod((m_local / "big.bin").c_str(), 0640);
    write_file(m_local / "tree/a.txt", "alpha");
    write_file(m_local / "tree/sub/deep/b.bin", random_bytes(70000, 2));
    fs::create_directories(m_local / "tree/empty");
    fl::copy_options opt;
    opt.chunk = 64 << 10;
    opt.recursive = true;
    const auto k = session([&](auto& dev) {
        auto c = make_client(dev, opt);
        c.push({(m_local / "big.bin").string(), (m_local / "tree").string()}, "in/");
        EXPECT_EQ(c.report().files, 3u);
        EXPECT_EQ(c.report().bytes, big.size() + 5 + 70000);
        c.pull({"in/tree"}, (m_local / "back").string());
        c.close();
    });
    EXPECT_EQ(slurp(m_share / "in/big.bin"), big);
    EXPECT_EQ(slurp(m_share / "in/tree/a.txt"), "alpha");
    EXPECT_TRUE(fs::is_directory(m_share / "in/tree/empty"));
    struct stat src{}, dst{};
    ::stat((m_local / "big.bin").c_str(), &src);
    ::stat((m_share / "in/big.bin").c_str(), &dst);
    EXPECT_EQ(dst.st_mode & 07777, 0640u);
    EXPECT_EQ(dst.st_mtim.tv_sec, src.st_mtim.tv_sec);
    EXPECT_EQ(dst.st_mtim.tv_nsec, src.st_mtim.tv_nsec);
    EXPECT_EQ(slurp(m_local / "back/sub/deep/b.bin"), random_bytes(70000, 2));
    EXPECT_TRUE(fs::is_directory(m_local / "back/empty"));
    EXPECT_EQ(k.files_in, 3u);
    EXPECT_EQ(k.files_out, 2u);
    EXPECT_EQ(k.refused, 0u);
    EXPECT_EQ(partials(m_share) + partials(m_local), 0u);
}

TEST_F(FilesTest, ResumesFromThePartialFile) {
    const std::string data = random_bytes(5u << 20, 3);
    write_file(m_local / "f.bin", data);
    const fl::file_meta meta = [&] {
        fl::unique_fd fd(::open((m_local / "f.bin").c_str(), O_RDONLY));
        return fl::meta_of(fd.get());
    }();
    const size_t held = 2u << 20;
    {
        // An earlier attempt that got 2 MiB across, then lost the link.
        fl::unique_fd dir(::open(m_share.c_str(), O_RDONLY | O_DIRECTORY));
        fl::incoming_file in(dir.get(), "f.bin", meta);
        in.write(0, reinterpret_cast<const uint8_t*>(data.data()), held);
    }
    EXPECT_EQ(partials(m_share), 2u) << "partial file and its record";
    EXPECT_FALSE(fs::exists(m_share / "f.bin")) << "nothing under the final name before the hash matched";
    session([&](auto& dev) {
        auto c = make_client(dev);
        c.push({(m_local / "f.bin").string()}, "f.bin");
        EXPECT_EQ(c.report().resumed_bytes, held);
        EXPECT_EQ(c.report().bytes, data.size() - held);
        c.close();
    });
    EXPECT_EQ(slurp(m_share / "f.bin"), data);
    EXPECT_EQ(partials(m_share), 0u);
}

TEST_F(FilesTest, CorruptedPartialIsCaughtByTheHashAndSentAgain) {
    const std::string data = random_bytes(3u << 20, 4);
    write_file(m_local / "f.bin", data);
    fl::unique_fd src(::open((m_local / "f.bin").c_str(), O_RDONLY));
    const fl::file_meta meta = fl::meta_of(src.get());
    std::string bad = data.substr(0, 1u << 20);
    bad[12345] ^= 0x40;  // a bit flipped on the receiver's disk
    {
        fl::unique_fd dir(::open(m_share.c_str(), O_RDONLY | O_DIRECTORY));
        fl::incoming_file in(dir.get(), "f.bin", meta);
        in.write(0, reinterpret_cast<const uint8_t*>(bad.data()), bad.size());
    }
    const auto k = session([&](auto& dev) {
        auto c = make_client(dev);
        c.push({(m_local / "f.bin").string()}, "f.bin");
        EXPECT_EQ(c.report().hash_mismatches, 1u);
        EXPECT_EQ(c.report().bytes, (2u << 20) + data.size()) << "the resumed attempt, then all of it";
        EXPECT_EQ(c.report().resumed_bytes, 0u) << "the copy that succeeded started from zero";
        c.close();
    });
    EXPECT_EQ(k.hash_mismatches, 1u);
    EXPECT_EQ(slurp(m_share / "f.bin"), data);
    EXPECT_NE(m_notes.find("SHA-256 mismatch"), std::string::npos) << m_notes;
}

TEST_F(FilesTest, FileChangingWhileSentIsNotCommitted) {
    write_file(m_local / "grows.log", random_bytes(4u << 20, 5));
    write_file(m_local / "next", "next");
    bool appended = false;
    fl::copy_options opt;
    opt.chunk = 256 << 10;
    const auto k = session([&](auto& dev) {
        auto c = make_client(dev, opt, [&](const std::string& name, uint64_t done, uint64_t) {
            if (appended || name.find("grows.log") == std::string::npos || done < (1u << 20)) return;
            std::ofstream(m_local / "grows.log", std::ios::app) << "one more line\n";  // a writer, mid-send
            appended = true;
        });
        try {
            c.push({(m_local / "grows.log").string(), (m_local / "next").string()}, "");
            ADD_FAILURE() << "a changing file was reported copied";
        } catch (const fl::copy_error& e) {
            EXPECT_NE(std::string(e.what()).find("1 of 2"), std::string::npos) << e.what();
        }
        EXPECT_EQ(c.report().files, 1u) << "the next file still goes";
        c.close();
    });
    EXPECT_TRUE(appended);
    EXPECT_NE(m_notes.find("changed while it was sent"), std::string::npos) << m_notes;
    EXPECT_FALSE(fs::exists(m_share / "grows.log"));
    EXPECT_EQ(slurp(m_share / "next"), "next");
    EXPECT_EQ(partials(m_share), 0u) << "the server dropped what it got";
    EXPECT_EQ(k.files_in, 1u);
}

TEST_F(FilesTest, PathsOutOfTheFolderAreRefused) {
    const fs::path outside = m_tmp / "outside";
    write_file(outside / "secret", "secret");
    fs::create_directory_symlink(outside, m_share / "link");
    write_file(m_local / "x", "x");
    session([&](auto& dev) {
        auto c = make_client(dev);
        EXPECT_THROW(c.push({(m_local / "x").string()}, "link/x"), fl::copy_error);
        EXPECT_THROW(c.pull({"link/secret"}, (m_local / "got").string()), fl::copy_error);
        EXPECT_THROW(c.push({(m_local / "x").string()}, "../x"), fl::copy_error);
        EXPECT_THROW(c.pull({"/etc/passwd"}, (m_local / "got").string()), fl::copy_error);
        c.close();
    });
    session([&](auto& dev) {
        auto c = make_client(dev);
        // The service's own names are not a peer's to write.
        EXPECT_THROW(c.push({(m_local / "x").string()}, ".odl-trash/x"), fl::copy_error);
        EXPECT_THROW(c.push({(m_local / "x").string()}, "d/.odl-part.0123"), fl::copy_error);
        EXPECT_THROW(c.remove(".odl-sync/state.json"), fl::copy_error);
        c.close();
    });
    EXPECT_FALSE(fs::exists(m_share / ".odl-trash"));
    EXPECT_FALSE(fs::exists(m_share / "d"));
    EXPECT_FALSE(fs::exists(outside / "x"));
    EXPECT_FALSE(fs::exists(m_tmp / "x"));
    EXPECT_FALSE(fs::exists(m_local / "got"));
    EXPECT_NE(m_notes.find("outside the served folder"), std::string::npos) << m_notes;
}

/// A hand-made client: raw messages over the device, tags made here.
struct raw_client {
    odl::device& dev;
    uint64_t seq = 0;

    std::vector<uint8_t> build(uint16_t type, const std::vector<uint8_t>& payload, const fl::key32* key,
                               const uint8_t* iv = nullptr) {
        odl_files_hdr h{};
        h.magic = odl_cpu_le32(ODL_FILES_MAGIC);
        h.version = odl_cpu_le16(ODL_FILES_VERSION);
        h.type = odl_cpu_le16(type);
        h.len = odl_cpu_le32(uint32_t(payload.size()));
        h.seq = odl_cpu_le64(++seq);
        std::vector<uint8_t> m(sizeof(h) + payload.size() + ODL_FILES_TAG_BYTES);
        std::memcpy(m.data(), &h, sizeof(h));
        if (!payload.empty()) std::memcpy(m.data() + sizeof(h), payload.data(), payload.size());
        if (key) {
            fl::gmac g(*key);
            const auto t = iv ? g.tag(iv, m.data(), sizeof(h) + payload.size(), nullptr, 0)
                              : g.tag(seq, 0, m.data(), sizeof(h) + payload.size(), nullptr, 0);
            std::memcpy(m.data() + sizeof(h) + payload.size(), t.data(), t.size());
        }
        return m;
    }
    void send(const std::vector<uint8_t>& m) {
        ASSERT_EQ(dev.post_send(0, 0, m.data(), m.size()), ODL_OK);
        auto c = dev.wait(5'000'000'000ull);
        ASSERT_EQ(c.size(), 1u);
    }
    /// HELLO under @key, HELLO_ACK read; returns the session keys.
    fl::session_keys hello(const fl::pair_record& pair) {
        odl_files_hello h{};
        std::memcpy(h.pair_id, pair.id.data(), 16);
        fl::random_bytes(h.nonce, sizeof(h.nonce));
        h.chunk = odl_cpu_le32(ODL_FILES_CHUNK_DEFAULT);
        std::vector<uint8_t> p(sizeof(h));
        std::memcpy(p.data(), &h, sizeof(h));
        send(build(ODL_FILES_HELLO, p, &pair.key, h.nonce));
        std::vector<uint8_t> in(256);
        EXPECT_EQ(dev.post_recv(0, ODL_TAG_ANY, in.data(), in.size()), ODL_OK);
        auto c = dev.wait(5'000'000'000ull);
        EXPECT_EQ(c.size(), 1u);
        odl_files_hello_ack a{};
        std::memcpy(&a, in.data() + ODL_FILES_HDR_BYTES, sizeof(a));
        return fl::derive_session_keys(pair.key, h.nonce, a.nonce);
    }
};

std::vector<uint8_t> mkdir_payload(const std::string& path) {
    odl_files_path h{odl_cpu_le32(0755), odl_cpu_le32(uint32_t(path.size()))};
    std::vector<uint8_t> p(sizeof(h) + path.size());
    std::memcpy(p.data(), &h, sizeof(h));
    std::memcpy(p.data() + sizeof(h), path.data(), path.size());
    return p;
}

TEST_F(FilesTest, UnknownPairIsRefused) {
    fl::random_bytes(m_pair.id.data(), m_pair.id.size());  // a pairing the server never made
    const auto k = session([&](auto& dev) {
        auto c = make_client(dev);
        write_file(m_local / "x", "x");
        try {
            c.push({(m_local / "x").string()}, "x");
            ADD_FAILURE() << "copied without a pairing";
        } catch (const fl::copy_error& e) {
            EXPECT_NE(std::string(e.what()).find("peer refused the session"), std::string::npos) << e.what();
        }
    });
    EXPECT_EQ(k.refused, 1u);
    EXPECT_NE(m_log.find("unknown pair"), std::string::npos) << m_log;
    EXPECT_FALSE(fs::exists(m_share / "x"));
}

TEST_F(FilesTest, WrongKeyIsRefused) {
    fl::random_bytes(m_pair.key.data(), m_pair.key.size());  // right id, wrong key
    const auto k = session([&](auto& dev) {
        auto c = make_client(dev);
        write_file(m_local / "x", "x");
        EXPECT_THROW(c.push({(m_local / "x").string()}, "x"), fl::copy_error);
    });
    EXPECT_EQ(k.refused, 1u);
    EXPECT_NE(m_log.find("does not verify"), std::string::npos) << m_log;
}

TEST_F(FilesTest, ForgedMessageEndsTheSession) {
    const auto k = session([&](auto& dev) {
        raw_client r{*dev};
        const auto keys = r.hello(m_pair);
        auto m = r.build(ODL_FILES_MKDIR, mkdir_payload("forged"), &keys.c2s);
        m[ODL_FILES_HDR_BYTES + 8] = 'F';  // changed after tagging
        r.send(m);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    });
    EXPECT_EQ(k.refused, 1u);
    EXPECT_FALSE(fs::exists(m_share / "forged"));
    EXPECT_FALSE(fs::exists(m_share / "Forged"));
    EXPECT_NE(m_log.find("tag does not verify"), std::string::npos) << m_log;
}

TEST_F(FilesTest, ReplayedMessageEndsTheSession) {
    const auto k = session([&](auto& dev) {
        raw_client r{*dev};
        const auto keys = r.hello(m_pair);
        const auto m = r.build(ODL_FILES_MKDIR, mkdir_payload("once"), &keys.c2s);
        r.send(m);
        r.send(m);  // the same bytes again
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
    });
    EXPECT_TRUE(fs::is_directory(m_share / "once")) << "the first one is taken";
    EXPECT_EQ(k.refused, 1u);
    EXPECT_NE(m_log.find("sequence number"), std::string::npos) << m_log;
}

}  // namespace

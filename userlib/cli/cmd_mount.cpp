// SPDX-License-Identifier: MIT
// `odl mount MOUNTPOINT [peer:PATH]`: the peer's served folder, read-only,
// through FUSE (libfuse3): listed over the link, each file fetched on open
// into a local cache (SHA-256 checked) and read from there. docs/files.md.
#define FUSE_USE_VERSION 31
#include <fuse.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "commands.h"
#include "files/client.h"
#include "files/mount_view.h"
#include "files/pair_store.h"
#include "cli_common.h"

namespace odl::cli {
namespace {

namespace fl = odl::files;

struct mount_cli {
    std::string mountpoint;
    std::string remote;
    std::string backend = "kernel";
    uint32_t device = 0;
    std::string keys;
    std::string peer;
    std::string cache;
    double ttl_s = 2;
    double retry_for_s = 10;
    bool verbose = false;
};

struct mount_ctx {
    fl::mount_view* view;
    bool verbose;
};

mount_ctx* ctx() { return static_cast<mount_ctx*>(fuse_get_context()->private_data); }

/// FUSE paths start with '/'; the view's are relative.
std::string rel_of(const char* path) { return path[0] == '/' ? std::string(path + 1) : std::string(path); }

void fill_stat(const fl::mount_view::node& n, struct stat* st) {
    std::memset(st, 0, sizeof(*st));
    // Read-only whatever the peer's modes say: no write bits.
    st->st_mode = (n.dir ? S_IFDIR : S_IFREG) | (n.mode & 0555);
    if (n.dir) st->st_mode |= 0555;
    st->st_nlink = n.dir ? 2 : 1;
    st->st_size = off_t(n.size);
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_mtim.tv_sec = time_t(n.mtime_ns / 1'000'000'000ull);
    st->st_mtim.tv_nsec = long(n.mtime_ns % 1'000'000'000ull);
    st->st_ctim = st->st_mtim;
    st->st_atim = st->st_mtim;
}

/// Runs @f; a failure over the link is EIO (said on stderr), as a disk's would be.
template <typename F>
int guarded(const char* what, const char* path, F f) {
    try {
        return f();
    } catch (const std::invalid_argument&) {
        return -ENOENT;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "odl: mount: %s %s: %s\n", what, path, e.what());
        return -EIO;
    }
}

int op_getattr(const char* path, struct stat* st, fuse_file_info*) {
    return guarded("stat", path, [&] {
        const auto n = ctx()->view->stat(rel_of(path));
        if (!n) return -ENOENT;
        fill_stat(*n, st);
        return 0;
    });
}

int op_readdir(const char* path, void* buf, fuse_fill_dir_t fill, off_t, fuse_file_info*, fuse_readdir_flags) {
    return guarded("list", path, [&] {
        const std::string rel = rel_of(path);
        const auto n = ctx()->view->stat(rel);
        if (!n) return -ENOENT;
        if (!n->dir) return -ENOTDIR;
        fill(buf, ".", nullptr, 0, fuse_fill_dir_flags(0));
        fill(buf, "..", nullptr, 0, fuse_fill_dir_flags(0));
        for (const auto& name : ctx()->view->children(rel)) fill(buf, name.c_str(), nullptr, 0, fuse_fill_dir_flags(0));
        return 0;
    });
}

int op_open(const char* path, fuse_file_info* fi) {
    if ((fi->flags & O_ACCMODE) != O_RDONLY) return -EROFS;
    return guarded("open", path, [&] {
        const uint64_t before = ctx()->view->fetches();
        const std::string local = ctx()->view->fetch(rel_of(path));
        const int fd = ::open(local.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return -errno;
        fi->fh = uint64_t(fd);
        if (ctx()->verbose && ctx()->view->fetches() != before) std::fprintf(stderr, "odl: mount: fetched %s\n", path);
        return 0;
    });
}

int op_read(const char*, char* buf, size_t size, off_t off, fuse_file_info* fi) {
    const ssize_t r = ::pread(int(fi->fh), buf, size, off);
    return r < 0 ? -errno : int(r);
}

int op_release(const char*, fuse_file_info* fi) {
    ::close(int(fi->fh));
    return 0;
}

int op_statfs(const char*, struct statvfs* st) {
    std::memset(st, 0, sizeof(*st));
    st->f_bsize = 4096;
    st->f_namemax = ODL_FILES_NAME_MAX;
    st->f_flag = ST_RDONLY;
    return 0;
}

void run_mount(const mount_cli& c) {
    std::string remote = c.remote;
    if (!remote.empty()) {
        if (remote.rfind("peer:", 0) != 0) die("mount", fmt::format("'{}': the folder to mount is peer:PATH", remote));
        remote = remote.substr(5);
        while (!remote.empty() && remote.back() == '/') remote.pop_back();
    }
    std::error_code ec;
    if (!std::filesystem::is_directory(c.mountpoint, ec)) die("mount", fmt::format("{}: not a directory", c.mountpoint));
    fl::pair_record pair;
    try {
        pair = fl::pair_store(c.keys.empty() ? fl::default_keys_dir() : c.keys).choose(c.peer);
    } catch (const std::exception& e) {
        die("mount", e.what());
    }
    // The cache: the given folder (kept), or a private one removed at the end.
    std::string cache = c.cache;
    bool own_cache = false;
    if (cache.empty()) {
        const char* base = std::getenv("XDG_RUNTIME_DIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/odl-mount-cache.XXXXXX";
        if (!::mkdtemp(tmpl.data())) die("mount", fmt::format("cache folder: {}", std::strerror(errno)));
        cache = tmpl;
        own_cache = true;
    } else if (!std::filesystem::is_directory(cache, ec)) {
        die("mount", fmt::format("--cache {}: not a directory", cache));
    }
    const std::string backend = c.backend;
    const uint32_t device = c.device;
    // A reader waits at most about --retry-for for a peer that is gone.
    const uint64_t connect_ns = std::max<uint64_t>(500'000'000ull, uint64_t(c.retry_for_s * 1e9));
    auto open = [backend, device, connect_ns]() {
        odl::open_params p;
        p.backend = backend.c_str();
        p.index = device;
        p.num_streams = 1;
        p.connect_timeout_ns = connect_ns;
        return std::make_unique<odl::device>(p);
    };
    fl::copy_options opt;
    opt.retry_for_ns = uint64_t(c.retry_for_s * 1e9);
    opt.answer_timeout_ns = 30'000'000'000ull;
    const bool verbose = c.verbose;
    fl::file_client client(open, pair, opt, nullptr, [](const std::string& l) {
        std::fprintf(stderr, "odl: mount: %s\n", l.c_str());
    });
    fl::mount_view view(client, remote, cache, uint64_t(c.ttl_s * 1e9));
    try {
        if (!view.stat("")) die("mount", "no root");
        if (!remote.empty() && view.children("").empty() && verbose)
            std::fprintf(stderr, "odl: mount: peer:%s is empty\n", remote.c_str());
    } catch (const std::exception& e) {
        if (own_cache) std::filesystem::remove_all(cache, ec);
        die("mount", fmt::format("peer:{}: {}", remote, e.what()));
    }

    fuse_operations ops{};
    ops.getattr = op_getattr;
    ops.readdir = op_readdir;
    ops.open = op_open;
    ops.read = op_read;
    ops.release = op_release;
    ops.statfs = op_statfs;
    mount_ctx mc{&view, verbose};
    fuse_args args = FUSE_ARGS_INIT(0, nullptr);
    fuse_opt_add_arg(&args, "odl");
    fuse_opt_add_arg(&args, "-o");
    fuse_opt_add_arg(&args, "ro,fsname=odl,subtype=odl");
    fuse* f = fuse_new(&args, &ops, sizeof(ops), &mc);
    fuse_opt_free_args(&args);
    if (!f) die("mount", "fuse_new failed");
    if (fuse_mount(f, c.mountpoint.c_str()) != 0) {
        fuse_destroy(f);
        die("mount", fmt::format("cannot mount on {} (is fuse3 installed and /dev/fuse there?)", c.mountpoint));
    }
    fuse_session* se = fuse_get_session(f);
    fuse_set_signal_handlers(se);
    if (verbose)
        std::fprintf(stderr, "odl: mount: peer:%s on %s, cache %s\n", remote.c_str(), c.mountpoint.c_str(),
                     cache.c_str());
    // One thread: the file client holds one session and serves one request at a time.
    const int rc = fuse_loop(f);
    fuse_remove_signal_handlers(se);
    fuse_unmount(f);
    fuse_destroy(f);
    client.close();
    if (own_cache) std::filesystem::remove_all(cache, ec);
    if (verbose)
        std::fprintf(stderr, "odl: mount: unmounted (%llu listing(s), %llu fetch(es))\n",
                     (unsigned long long)view.listings(), (unsigned long long)view.fetches());
    if (rc != 0) die("mount", fmt::format("FUSE loop ended with {}", rc));
}

}  // namespace

void add_mount_command(CLI::App& app) {
    auto c = std::make_shared<mount_cli>();
    auto* cmd = app.add_subcommand("mount", "Mount the peer's served folder read-only (FUSE): files fetched on open, "
                                            "SHA-256 checked. Unmount: fusermount3 -u MOUNTPOINT or Ctrl-C");
    cmd->add_option("mountpoint", c->mountpoint, "An empty local folder")->required();
    cmd->add_option("remote", c->remote, "peer:PATH, a folder of the peer's (default: all it serves)");
    cmd->add_option("--backend,-b", c->backend, "kernel (odl_tb5) | loopback | sim")->capture_default_str();
    cmd->add_option("--device,-d", c->device, "Device index leading to the peer")->capture_default_str();
    cmd->add_option("--keys", c->keys, "Folder of pair keys (as odl cp)");
    cmd->add_option("--peer", c->peer, "Which pairing to use when there are several");
    cmd->add_option("--cache", c->cache, "Keep fetched files in this folder (default: a private one, removed at the end)");
    cmd->add_option("--ttl", c->ttl_s, "Seconds a listing is trusted before it is asked for again")
        ->capture_default_str()
        ->check(finite_in(0, k_max_wait_s));
    cmd->add_option("--retry-for", c->retry_for_s, "Seconds to keep reconnecting before an operation fails (EIO)")
        ->capture_default_str()
        ->check(finite_in(0, k_max_wait_s));
    cmd->add_flag("--verbose,-v", c->verbose, "Say what is fetched");
    cmd->callback([c] { run_mount(*c); });
}

}  // namespace odl::cli

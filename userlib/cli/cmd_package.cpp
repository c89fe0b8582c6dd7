// SPDX-License-Identifier: MIT
// `odl package [--build-dir D] [--out D] [--kernel KVER]...`: the Debian
// packages of this build. Configures and builds the tree, runs cpack
// (cmake/OdlPackaging.cmake), then for each --kernel makes
// odl-tb5-modules-KVER (the module built for that release), and prints the
// .deb paths on stdout, one per line; progress goes to stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "cli_common.h"

namespace odl::cli {
namespace {

namespace fs = std::filesystem;

struct package_opts {
    std::string build_dir;
    std::string out;
    std::vector<std::string> kernels;
    std::string sign_key, sign_cert;
    int jobs = 0;
};

/// Runs argv with its stdout sent to our stderr (stdout is for the .deb
/// paths only); each line it prints also goes to *lines when given.
/// Returns the exit status (or 128+signal, 127 when it cannot start).
int run_tee(const std::vector<std::string>& argv, std::vector<std::string>* lines = nullptr) {
    fmt::print(stderr, "odl: package: {}\n", fmt::join(argv, " "));
    std::fflush(stderr);
    int fds[2];
    if (pipe(fds) != 0) return 127;
    const pid_t pid = fork();
    if (pid < 0) return 127;
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "odl: package: cannot run %s\n", args[0]);
        _exit(127);
    }
    close(fds[1]);
    FILE* in = fdopen(fds[0], "r");
    std::string line;
    for (int c; in && (c = std::fgetc(in)) != EOF;) {
        std::fputc(c, stderr);
        if (c != '\n') {
            line += static_cast<char>(c);
            continue;
        }
        if (lines) lines->push_back(line);
        line.clear();
    }
    if (in) std::fclose(in);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

/// A cache entry of an existing build tree ("" when absent).
std::string cache_value(const std::string& build, const std::string& key) {
    std::ifstream f(build + "/CMakeCache.txt");
    const std::string prefix = key + ":";
    for (std::string l; std::getline(f, l);) {
        if (l.rfind(prefix, 0) != 0) continue;
        const auto eq = l.find('=');
        return eq == std::string::npos ? "" : l.substr(eq + 1);
    }
    return "";
}

int package(const package_opts& o) {
    const std::string src = env_or("ODL_SOURCE_DIR", ODL_SOURCE_DIR_DEFAULT);
    const std::string build =
        fs::absolute(o.build_dir.empty() ? env_or("ODL_BUILD_DIR", ODL_BINARY_DIR_DEFAULT) : o.build_dir)
            .lexically_normal()
            .string();
    const std::string out = fs::absolute(o.out.empty() ? build + "/packages" : o.out).lexically_normal().string();
    long n = o.jobs > 0 ? o.jobs : std::atol(env_or("ODL_JOBS", "0").c_str());
    if (n <= 0) n = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
    const std::string jobs = std::to_string(n);
    if (!fs::exists(src + "/CMakeLists.txt"))
        die("package", fmt::format("no source tree at {} (set ODL_SOURCE_DIR)", src), 2);

    // Packages of a sanitizer build would not run without the sanitizer
    // runtimes; a debug build is allowed but said.
    const std::string san = cache_value(build, "ODL_SANITIZE");
    if (!san.empty())
        die("package", fmt::format("{} is a sanitizer build (ODL_SANITIZE={}); use --build-dir with another folder", build,
                        san),
            2);
    std::vector<std::string> configure = {"cmake", "-S", src, "-B", build};
    if (!fs::exists(build + "/CMakeCache.txt")) {
        configure.insert(configure.end(), {"-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"});
    } else {
        const std::string type = cache_value(build, "CMAKE_BUILD_TYPE");
        if (type != "Release" && type != "RelWithDebInfo" && type != "MinSizeRel")
            fmt::print(stderr, "odl: package: note: {} is a '{}' build\n", build, type);
    }
    // Headers for every --kernel before the build: a missing one should
    // not cost it (the script checks again, and builds, after cpack).
    for (const auto& k : o.kernels) {
        if (k.empty() || !std::regex_match(k, std::regex(R"([0-9][A-Za-z0-9.+-]*)")))
            die("package", fmt::format("--kernel '{}': not a kernel release (uname -r prints one, e.g. "
                                       "6.12.118+deb12-amd64)",
                                       k),
                2);
        if (!fs::exists("/usr/src/linux-headers-" + k + "/Makefile") && !fs::exists("/lib/modules/" + k + "/build/Makefile"))
            die("package", fmt::format("--kernel {}: no headers for it here (install linux-headers-{})", k, k), 2);
    }
    if (o.sign_key.empty() != o.sign_cert.empty())
        die("package", "--sign-key and --sign-cert go together (the private key and its X.509 certificate)", 2);
    if (!o.sign_key.empty() && o.kernels.empty())
        die("package", "--sign-key signs the modules of --kernel: give one", 2);
    for (const auto& f : {o.sign_key, o.sign_cert})
        if (!f.empty() && access(f.c_str(), R_OK) != 0)
            die("package", fmt::format("{}: cannot read it", f), 2);
    // The folder first: one that cannot be made should not cost the build.
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) die("package", fmt::format("cannot create {}: {}", out, ec.message()), 2);
    // Configure again: the package version carries the source id of now.
    if (run_tee(configure) != 0) die("package", "cmake configure failed");
    if (run_tee({"cmake", "--build", build, "-j", jobs}) != 0) die("package", "build failed");
    std::vector<std::string> lines;
    if (run_tee({"cpack", "--config", build + "/CPackConfig.cmake", "-B", out}, &lines) != 0) die("package", "cpack failed");

    const std::regex made(R"(^CPack: - package: (.*\.deb) generated\.$)");
    std::vector<std::string> debs;
    for (const auto& l : lines) {
        std::smatch m;
        if (std::regex_match(l, m, made)) debs.push_back(m[1]);
    }
    if (debs.empty()) die("package", "cpack reported no .deb");
    for (const auto& k : o.kernels) {
        std::vector<std::string> made_one;
        std::vector<std::string> argv = {build + "/packaging/odl-modules-deb", k, out};
        if (!o.sign_key.empty()) {
            argv.push_back(fs::absolute(o.sign_key).string());
            argv.push_back(fs::absolute(o.sign_cert).string());
        }
        if (run_tee(argv, &made_one) != 0 || made_one.empty())
            die("package", fmt::format("odl-tb5-modules for {} failed", k));
        debs.push_back(made_one.back());
    }
    fmt::print(stderr, "odl: package: {} packages in {}\n", debs.size(), out);
    for (const auto& d : debs) fmt::print("{}\n", d);
    return 0;
}

}  // namespace

void add_package_command(CLI::App& app) {
    auto o = std::make_shared<package_opts>();
    auto* cmd = app.add_subcommand("package", "Build the Debian packages of this build (paths on stdout)");
    cmd->add_option("--build-dir", o->build_dir, "build tree to package (default: ODL_BUILD_DIR, the build)");
    cmd->add_option("--out", o->out, "folder for the .deb files (default: <build>/packages)")
        ->check(odl::cli::non_empty());
    cmd->add_option("--kernel", o->kernels,
                    "also make odl-tb5-modules-KVER, odl_tb5 built for this kernel release (its headers "
                    "installed here; one or more)");
    cmd->add_option("--sign-key", o->sign_key,
                    "sign those modules with this private key (PEM; with --sign-cert, the kernel's sign-file)");
    cmd->add_option("--sign-cert", o->sign_cert, "the X.509 certificate of --sign-key (the one hosts enrol)");
    cmd->add_option("--jobs,-j", o->jobs, "parallel build jobs (default: ODL_JOBS or cores)")
        ->check(CLI::Range(1, 4096));
    cmd->callback([o] { std::exit(package(*o)); });
}

}  // namespace odl::cli

// SPDX-License-Identifier: MIT
#include "fuzz_file.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace odl::fuzz {
namespace {

const std::string& folder() {
    static const std::string dir = [] {
        // Under $TMPDIR: run_fuzz.sh points it at its own folder, which it
        // removes even when a finding aborts the process before atexit.
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/odl-fuzz-file-XXXXXX";
        if (!mkdtemp(tmpl.data())) std::abort();
        std::string d = tmpl;
        static std::string removed = d;
        std::atexit([] { std::filesystem::remove_all(removed); });
        return d;
    }();
    return dir;
}

}  // namespace

std::string as_file(const std::uint8_t* data, std::size_t size, const char* name) {
    const std::string path = folder() + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
    return path;
}

bool loads_or_fails_cleanly(const std::string& path, const std::function<void()>& load) {
    try {
        load();
        return true;
    } catch (const std::runtime_error& e) {
        const std::string what = e.what();
        if (what.rfind(path + ":", 0) != 0) {
            std::fprintf(stderr, "error without the file's name first: %s\n", what.c_str());
            std::abort();
        }
        return false;
    }
}

}  // namespace odl::fuzz

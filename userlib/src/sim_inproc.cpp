// SPDX-License-Identifier: MIT
#include "sim_inproc.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "error.h"
#include "log.h"
#include "odl/wire/sim_inproc.h"

namespace odl {
namespace {

/// Where the module is: ODL_SIM_MODULE, else beside libodl as installed
/// (<libodl's folder>/odl/odl-sim-inproc.so; the build tree has the same).
std::string module_path() {
    if (const char* p = std::getenv("ODL_SIM_MODULE"); p && *p) return p;
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&sim_inproc_socket), &info) && info.dli_fname) {
        std::string self = info.dli_fname;
        const auto slash = self.rfind('/');
        if (slash != std::string::npos) return self.substr(0, slash + 1) + ODL_SIM_INPROC_MODULE;
    }
    return ODL_SIM_INPROC_MODULE;
}

/// The process's one server: SystemC keeps one simulation per process.
class inproc_server {
public:
    static inproc_server& get() {
        static inproc_server s;  // its server is stopped by start()'s exit handler
        return s;
    }
    std::string socket() {
        const std::lock_guard<std::mutex> g(m_lock);
        if (!m_server) start();
        return m_path;
    }
    ~inproc_server() { stop(); }
    /// Stops the server (once). A child forked after the start has no
    /// server thread: the server and its folder are the parent's, which a
    /// child's exit must not touch (its sim devices use the parent's).
    void stop() {
        const std::lock_guard<std::mutex> g(m_lock);
        if (!m_server || m_pid != ::getpid()) return;
        m_api->stop(m_server);
        m_server = nullptr;
        ::rmdir(m_dir.c_str());  // the server removed its socket
        // The module stays loaded: SystemC's exit handlers are in it.
    }

private:
    void start() {
        const std::string path = module_path();
        if (!m_dl) {
            m_dl = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
            if (!m_dl)
                throw error(ODL_ERR_NO_DEVICE,
                            fmt::format("ODL_SIM_SOCKET=inproc: the in-process model could not be loaded ({}); it "
                                        "comes with the odl-model package (or set ODL_SIM_MODULE to its "
                                        "odl-sim-inproc.so)",
                                        ::dlerror()));
            auto entry = reinterpret_cast<odl_sim_inproc_entry_fn>(::dlsym(m_dl, ODL_SIM_INPROC_ENTRY));
            m_api = entry ? entry() : nullptr;
            if (!m_api || m_api->abi != ODL_SIM_INPROC_ABI) {
                ::dlclose(m_dl);
                m_dl = nullptr;
                m_api = nullptr;
                throw error(ODL_ERR_NO_DEVICE,
                            fmt::format("ODL_SIM_SOCKET=inproc: {} is not an in-process model of this build "
                                        "(ABI {} wanted)",
                                        path, ODL_SIM_INPROC_ABI));
            }
        }
        // The options, split at spaces (no quoting: none of them needs spaces).
        const char* env = std::getenv("ODL_SIM_ARGS");
        const std::string args = env ? env : "";
        std::vector<std::string> words;
        std::istringstream in(args);
        for (std::string w; in >> w;) words.push_back(w);
        std::vector<const char*> argv;
        for (const auto& w : words) argv.push_back(w.c_str());
        argv.push_back(nullptr);
        const char* dir = std::getenv("XDG_RUNTIME_DIR");
        std::string tmpl = fmt::format("{}/odl-sim-inproc.XXXXXX", dir && *dir ? dir : "/tmp");
        if (!::mkdtemp(tmpl.data()))
            throw error(ODL_ERR_IO, fmt::format("ODL_SIM_SOCKET=inproc: mkdtemp {}: {}", tmpl, std::strerror(errno)));
        const std::string sock = tmpl + "/sim.sock";
        char err[1024] = "", banner[256] = "";
        void* s = m_api->start(sock.c_str(), argv.data(), err, sizeof err, banner, sizeof banner, &say, nullptr);
        if (!s) {
            ::rmdir(tmpl.c_str());
            throw error(ODL_ERR_INVAL, fmt::format("ODL_SIM_SOCKET=inproc: ODL_SIM_ARGS='{}': {}", args, err));
        }
        m_server = s;
        m_pid = ::getpid();
        m_dir = tmpl;
        m_path = sock;
        // Registered after the module's and SystemC's own exit handlers,
        // so it runs before them: the model's thread stops while they are
        // all still there.
        std::atexit([] { get().stop(); });
        log::write(ODL_LOG_INFO, "sim: in-process model on {} ({})", sock, banner);
    }
    /// The server's own lines, from its thread: the library's log, not stderr.
    static void say(void*, const char* line) { log::write(ODL_LOG_INFO, "sim: in-process model: {}", line); }

    std::mutex m_lock;
    void* m_dl = nullptr;
    const odl_sim_inproc_v1* m_api = nullptr;
    void* m_server = nullptr;
    pid_t m_pid = 0;  ///< the process that started m_server
    std::string m_dir, m_path;
};

}  // namespace

std::string sim_inproc_socket() { return inproc_server::get().socket(); }

}  // namespace odl

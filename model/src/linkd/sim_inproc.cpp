// SPDX-License-Identifier: MIT
// odl-sim-inproc.so: the model server of `odl-linkd --sim` in a thread of a
// libodl program (ODL_SIM_SOCKET=inproc; ABI: include/odl/wire/sim_inproc.h).
// Everything SystemC does happens on that thread: the model is built,
// run and destroyed there.
#include <algorithm>
#include <cstring>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "odl/model/linkd/sim_options.h"
#include "odl/model/linkd/sim_server.h"
#include "odl/wire/sim_inproc.h"

namespace {

using odl::model::linkd::sim_server;
using odl::model::linkd::sim_server_config;

void put(char* dst, std::size_t len, const std::string& s) {
    if (!dst || len == 0) return;
    const std::size_t n = std::min(len - 1, s.size());
    std::memcpy(dst, s.data(), n);
    dst[n] = '\0';
}

/// @args as odl-linkd --sim takes them, into one link's configuration.
/// Throws std::runtime_error naming what is wrong.
sim_server_config parse(const char* socket_path, const char* const* args, std::string* note) {
    CLI::App app{"in-process model"};
    std::string gen = "gen4", control;
    unsigned lanes = 2;
    bool verbose = false;
    odl::model::linkd::sim_options o;
    auto* gen_opt = app.add_option("--gen", gen, "cable generation")->check(CLI::IsMember({"tb3", "gen2", "gen3", "gen4"}));
    auto* lanes_opt = app.add_option("--lanes", lanes, "lanes per direction")->check(CLI::Range(1, 2));
    app.add_option("-c,--control", control, "unix socket for cable plug|unplug and status");
    app.add_flag("-v,--verbose", verbose, "log the fit and the counts");
    const auto h = odl::model::linkd::add_sim_options(app, o);
    std::vector<std::string> argv;
    for (const char* const* a = args; a && *a; ++a) argv.emplace_back(*a);
    std::reverse(argv.begin(), argv.end());  // CLI11 takes them last first
    try {
        app.parse(argv);
    } catch (const CLI::ParseError& e) {
        throw std::runtime_error(e.what());
    }
    if (o.links != 1)
        throw std::runtime_error("the in-process model serves one link (sim device 0); for more, odl-linkd --sim --links N");
    if (const auto why = odl::model::linkd::scenario_conflict(o, h, {gen_opt, lanes_opt})) throw std::runtime_error(*why);
    auto links = odl::model::linkd::sim_link_configs(o, gen, lanes, note);
    sim_server_config cfg = std::move(links.at(0));
    cfg.socket_path = socket_path ? socket_path : "";
    cfg.control_path = control;
    cfg.verbose = verbose;
    return cfg;
}

/// One server and the thread that builds, runs and destroys it.
struct inproc {
    std::thread thread;
    std::mutex lock;               ///< guards server against its destruction
    sim_server* server = nullptr;  ///< owned by the thread; set while it runs
};

void* start(const char* socket_path, const char* const* args, char* err, std::size_t err_len, char* banner,
            std::size_t banner_len, void (*say)(void*, const char*), void* say_arg) {
    try {
        std::string note;
        sim_server_config cfg = parse(socket_path, args, &note);
        // The program's library logs them: nothing of this module prints.
        cfg.say = [say, say_arg](const std::string& line) {
            if (say) say(say_arg, line.c_str());
        };
        if (!note.empty()) cfg.say(note);
        auto ip = std::make_unique<inproc>();
        // Shared with the thread, which may still be leaving set_value()
        // when this function returns: (true, banner) once listening, else
        // (false, why not).
        auto up = std::make_shared<std::promise<std::pair<bool, std::string>>>();
        auto listening = up->get_future();
        ip->thread = std::thread([up, cfg = std::move(cfg), raw = ip.get()]() mutable {
            std::unique_ptr<sim_server> s;
            std::string desc;
            try {
                s = std::make_unique<sim_server>(std::move(cfg));
                std::string why;
                if (!s->listen(why)) {
                    up->set_value({false, why.empty() ? "cannot listen" : why});
                    return;
                }
                desc = s->describe();
                const std::lock_guard<std::mutex> g(raw->lock);
                raw->server = s.get();
            } catch (const std::exception& e) {
                up->set_value({false, e.what()});
                return;
            }
            up->set_value({true, desc});
            s->run();  // until stop()
            const std::lock_guard<std::mutex> g(raw->lock);
            raw->server = nullptr;
            s.reset();  // SystemC's objects go on the thread that made them
        });
        const auto [ok, text] = listening.get();
        if (!ok) {
            ip->thread.join();
            put(err, err_len, text);
            return nullptr;
        }
        put(banner, banner_len, text);
        return ip.release();
    } catch (const std::exception& e) {
        put(err, err_len, e.what());
        return nullptr;
    }
}

void stop(void* handle) {
    std::unique_ptr<inproc> ip(static_cast<inproc*>(handle));
    if (!ip) return;
    {
        const std::lock_guard<std::mutex> g(ip->lock);
        if (ip->server) ip->server->stop();  // the thread destroys it on its way out
    }
    if (ip->thread.joinable()) ip->thread.join();
}

const odl_sim_inproc_v1 k_table = {ODL_SIM_INPROC_ABI, start, stop};

}  // namespace

// The one symbol libodl looks up (ODL_SIM_INPROC_ENTRY).
extern "C" __attribute__((visibility("default"))) const odl_sim_inproc_v1* odl_sim_inproc_table_v1() { return &k_table; }

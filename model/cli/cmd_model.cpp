// SPDX-License-Identifier: MIT
// `odl model sweep|report|calibrate`: latency modelling on the SystemC model.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model_commands.h"
#include "odl_cli_checks.h"
#include "odl/model/sweep/html_report.h"
#include "png.h"
#include "results_dir.h"
#include "odl/model/sweep/fit.h"
#include "odl/model/sweep/sweep.h"

namespace odl::cli {
namespace {

/// "odl: model WHAT: NOUN done/total" on stderr after each step. On a
/// terminal one line is rewritten in place; in a log (a pipe or a file) a
/// line per tenth of the work and the last, so the log neither fills with
/// hundreds of lines nor holds them all on one line joined by carriage
/// returns.
std::function<void(std::size_t, std::size_t)> step_progress(std::string what, std::string noun) {
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    return [what = std::move(what), noun = std::move(noun), tty](std::size_t done, std::size_t total) {
        if (tty) {
            fmt::print(stderr, "\rodl: model {}: {} {}/{}\033[K", what, noun, done, total);
            if (done == total) fmt::print(stderr, "\n");
            return;
        }
        const std::size_t tenth = std::max<std::size_t>(total / 10, 1);
        if (done == total || done % tenth == 0)
            fmt::print(stderr, "odl: model {}: {} {}/{}\n", what, noun, done, total);
    };
}

struct model_opts {
    std::vector<std::string> generations = {"tb4", "tb5", "tb5-asym"};
    std::vector<std::string> sizes = {"64", "256", "1KiB", "4KiB", "16KiB", "64KiB", "256KiB",
                                      "1MiB", "4MiB"};
    std::vector<std::string> modes = {"poll", "interrupt"};
    std::vector<double> throttle_us = {0};
    std::vector<unsigned> hosts = {2};
    std::string platform = "intel-tb5-discrete";
    std::string calibration;
    std::string points;
    std::string out;
    bool write = false;
    bool check = false;
    unsigned iterations = 200;
    bool json = false;
    std::string histogram_size = "4KiB";
    std::vector<std::string> collective_sizes = {"1MiB", "16MiB", "64MiB"};
    std::vector<unsigned> collective_hosts = {2, 4};
};

[[noreturn]] void die(const std::string& sub, const std::string& msg) {
    std::fprintf(stderr, "odl: model %s: %s\n", sub.c_str(), msg.c_str());
    std::exit(2);
}

std::uint64_t parse_size(const std::string& sub, const std::string& s) {
    const auto v = odl::cli::byte_size(s);
    if (!v || *v == 0) die(sub, fmt::format("bad size '{}' (expected e.g. 64, 4KiB, 1MiB)", s));
    return *v;
}

/// The results folder of @what, made now: called before the points run, so
/// a folder that cannot be made does not cost the whole sweep first.
std::string make_out_dir(const model_opts& o, const char* what) {
    const std::string dir = o.out.empty() ? results_base() + "/model/" + what : o.out;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) die(what, fmt::format("cannot create {}: {}", dir, ec.message()));
    return dir;
}

namespace m = odl::model;

m::calibration load_cal(const std::string& sub, const model_opts& o) {
    try {
        return m::load_calibration(o.calibration.empty() ? m::default_calibration_path()
                                                         : o.calibration);
    } catch (const std::exception& e) {
        die(sub, e.what());
    }
}

m::sweep_spec spec_of(const std::string& sub, const model_opts& o) {
    m::sweep_spec s;
    s.generations = o.generations;
    s.sizes.clear();
    for (const auto& z : o.sizes) s.sizes.push_back(parse_size(sub, z));
    s.modes = o.modes;
    s.throttle_us = o.throttle_us;
    s.hosts = o.hosts;
    s.platform = o.platform;
    s.iterations = o.iterations;
    return s;
}

/// Refuses bad sweep options (dies naming them) before anything is made.
void check_options(const std::string& sub, const model_opts& o, const m::calibration& cal) {
    const m::sweep_spec s = spec_of(sub, o);
    try {
        m::check_sweep(s, cal);
    } catch (const std::exception& e) {
        die(sub, e.what());
    }
}

/// Runs the points; the options were checked by check_options() already.
std::vector<m::sweep_point> sweep(const std::string& sub, const model_opts& o,
                                  const m::calibration& cal) {
    const m::sweep_spec s = spec_of(sub, o);
    try {
        return m::run_sweep(s, cal, step_progress(sub, "point"));
    } catch (const std::exception& e) {
        die(sub, e.what());
    }
}

void write(const std::string& sub, const std::string& path, const std::string& body) {
    std::ofstream f(path, std::ios::binary);
    f << body;
    if (!f) die(sub, fmt::format("cannot write {}", path));
}

int do_sweep(const model_opts& o) {
    const auto cal = load_cal("sweep", o);
    check_options("sweep", o, cal);
    const std::string dir = make_out_dir(o, "sweep");
    const auto pts = sweep("sweep", o, cal);
    const std::string csv = m::to_csv(pts);
    write("sweep", dir + "/sweep.csv", csv);
    std::vector<std::string> files;
    try {
        files = m::write_plots(pts, dir);
    } catch (const std::exception& e) {
        die("sweep", e.what());
    }
    for (const auto& f : files) {
        const std::string why = svg_to_png(f);
        if (!why.empty()) die("sweep", why);
    }
    fmt::print(stderr, "odl: model sweep: wrote {}/sweep.csv and {} plots (SVG and PNG)\n", dir, files.size());
    if (o.json) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& p : pts)
            j.push_back({{"platform", p.platform}, {"generation", p.generation}, {"mode", p.mode},
                         {"throttle_us", p.throttle_us}, {"hosts", p.hosts}, {"size_bytes", p.size},
                         {"p50_us", p.p50_us}, {"p90_us", p.p90_us}, {"p99_us", p.p99_us},
                         {"p999_us", p.p999_us}, {"mean_us", p.mean_us},
                         {"gbps", p.gbps}, {"allreduce_us", p.allreduce_us},
                         {"busbw_gbps", p.busbw_gbps}});
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("{}", csv);
    }
    return 0;
}

int do_report(const model_opts& o, const std::string& command) {
    const auto cal = load_cal("report", o);
    if (o.modes.size() != 1) die("report", "one --modes value (poll or interrupt): the page compares generations");
    m::report_data d;
    // Bad input before the sweep runs, not after.
    d.histogram_size = parse_size("report", o.histogram_size);
    if (std::none_of(o.sizes.begin(), o.sizes.end(), [&](const std::string& z) { return parse_size("report", z) == d.histogram_size; }))
        die("report", fmt::format("--histogram-size {} is not one of --sizes", o.histogram_size));
    std::vector<std::uint64_t> csizes;
    for (const auto& z : o.collective_sizes) csizes.push_back(parse_size("report", z));
    check_options("report", o, cal);
    try {
        m::check_collectives(o.generations, o.collective_hosts, csizes);
    } catch (const std::exception& e) {
        die("report", e.what());
    }
    const std::string dir = make_out_dir(o, "report");
    d.points = sweep("report", o, cal);
    d.platform = o.platform;
    d.mode = o.modes[0];
    d.calibration_path = cal.path;
    d.command = command;
    d.iterations = o.iterations;
    try {
        d.collectives = m::run_collectives(o.generations, o.platform, d.mode == "interrupt", o.collective_hosts,
                                           csizes, cal, step_progress("report", "collective"));
    } catch (const std::exception& e) {
        die("report", e.what());
    }
    const auto charts = m::report_charts(d);
    for (const auto& [name, body] : charts) {
        write("report", dir + "/" + name + ".svg", body);
        const std::string why = svg_to_png(dir + "/" + name + ".svg");
        if (!why.empty()) die("report", why);
    }
    write("report", dir + "/report.html", m::report_html(d, charts));
    write("report", dir + "/report.json", m::report_json(d).dump(2) + "\n");
    const std::string md =
        m::compare_report(d.points, fmt::format("TB4 vs TB5 vs TB5 asymmetric on `{}`", o.platform)) +
        m::collectives_markdown(d.collectives);
    write("report", dir + "/report.md", md);
    fmt::print(stderr, "odl: model report: wrote {}/report.html (open it in a browser), report.json, report.md and {} "
               "plots (SVG and PNG)\n", dir, charts.size());
    fmt::print("{}", md);
    return 0;
}

// `odl model predict`: what a ring of N hosts takes per collective on the
// model, size by size, without GPUs or NCCL: the figure a NCCL job over the
// plugin is compared with (plugin/gpu/run_sim_check.sh). No files.
int do_predict(const model_opts& o) {
    const auto cal = load_cal("predict", o);
    if (o.modes.size() != 1 || (o.modes[0] != "poll" && o.modes[0] != "interrupt"))
        die("predict", "one --modes value (poll or interrupt)");
    std::vector<std::uint64_t> sizes;
    for (const auto& z : o.collective_sizes) sizes.push_back(parse_size("predict", z));
    std::vector<m::collective_row> rows;
    try {
        (void)cal.get(o.platform);  // an unknown platform names those that exist
        rows = m::run_collectives(o.generations, o.platform, o.modes[0] == "interrupt", o.collective_hosts, sizes, cal,
                                  step_progress("predict", "collective"));
    } catch (const std::exception& e) {
        die("predict", e.what());
    }
    if (o.json) {
        nlohmann::json j{{"platform", o.platform}, {"mode", o.modes[0]}, {"calibration", cal.path},
                         {"collectives", nlohmann::json::array()}};
        for (const auto& c : rows)
            j["collectives"].push_back({{"generation", c.generation}, {"kind", c.kind}, {"hosts", c.hosts},
                                        {"size_bytes", c.size}, {"time_us", c.time_us},
                                        {"busbw_gbps", c.busbw_gbps}});
        fmt::print("{}\n", j.dump(2));
    } else {
        fmt::print("{}", m::collectives_markdown(rows));
    }
    return 0;
}

m::calibration_points load_pts(const std::string& sub, const model_opts& o, const m::calibration& cal) {
    try {
        return m::load_points(o.points.empty() ? m::default_points_path() : o.points, cal);
    } catch (const std::exception& e) {
        die(sub, e.what());
    }
}

int do_calibrate(const model_opts& o) {
    const auto cal = load_cal("calibrate", o);
    const auto points = load_pts("calibrate", o, cal);
    if (!o.out.empty()) {  // a file that cannot be written is said before the points run (6 s)
        const std::filesystem::path parent = std::filesystem::path(o.out).parent_path();
        const std::string dir = parent.empty() ? "." : parent.string();
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0 ||
            std::filesystem::is_directory(o.out, ec))
            die("calibrate", fmt::format("cannot write {} (no folder {} to write it in, or it is a folder)", o.out, dir));
    }
    std::vector<m::calibration_point> pts;
    std::vector<m::leave_one_out_row> loo;
    try {
        fmt::print(stderr, "odl: model calibrate: {} points\n", points.points.size());
        pts = m::run_calibration(cal, points);
        fmt::print(stderr, "odl: model calibrate: leave-one-out fits\n");
        loo = m::leave_one_out(cal, points);
    } catch (const std::exception& e) {
        die("calibrate", e.what());
    }
    const std::string md = m::calibration_markdown(
        pts, loo, cal, points, "./odl model calibrate --out docs/model-calibration.md");
    if (!o.out.empty()) {
        write("calibrate", o.out, md);
        fmt::print(stderr, "odl: model calibrate: wrote {}\n", o.out);
    }
    fmt::print("{}", md);
    // Only the fit points must be met: a validate point's miss is a finding
    // the page reports, not a broken command.
    unsigned bad = 0;
    for (const auto& p : pts) bad += p.fit && !p.within();
    return bad == 0 ? 0 : 1;
}

int do_fit(const model_opts& o) {
    const std::string path = o.calibration.empty() ? m::default_calibration_path() : o.calibration;
    const auto cal = load_cal("fit", o);
    const auto points = load_pts("fit", o, cal);
    m::fit_result r;
    try {
        fmt::print(stderr, "odl: model fit: {} groups of fit points\n", m::fit_groups(points).size());
        r = m::fit_calibration(cal, points);
    } catch (const std::exception& e) {
        die("fit", e.what());
    }
    unsigned changed = 0;
    fmt::print("{:<20} {:<22} {:>12} {:>12}\n", "platform", "parameter", "file (ns)", "fitted (ns)");
    for (const auto& f : r.params) {
        const bool diff = std::llround(f.before_ns) != std::llround(f.after_ns);
        changed += diff;
        fmt::print("{:<20} {:<22} {:>12.0f} {:>12.0f}{}\n", f.platform, f.param, f.before_ns,
                   f.after_ns, diff ? "  (changed)" : "");
    }
    if (o.write && changed) {
        std::ifstream in(path, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        if (!in) die("fit", fmt::format("cannot read {}", path));
        std::string updated;
        try {
            updated = m::write_fitted(text.str(), r.params);
        } catch (const std::exception& e) {
            die("fit", fmt::format("{}: {}", path, e.what()));
        }
        write("fit", path, updated);
        fmt::print(stderr, "odl: model fit: wrote {} changed values into {}\n", changed, path);
    } else if (o.check && changed) {
        fmt::print(stderr,
                   "odl: model fit: {} of {} fitted values differ from {}: run `./odl model fit "
                   "--write` and `./odl model calibrate --out docs/model-calibration.md`\n",
                   changed, r.params.size(), path);
        return 1;
    } else {
        fmt::print(stderr, "odl: model fit: {} of {} values differ from {}{}\n", changed, r.params.size(),
                   path, changed ? " (--write writes them)" : "");
    }
    return 0;
}

void add_common(CLI::App* c, model_opts& o) {
    c->add_option("--generations", o.generations, "tb3, tb4, tb5, tb5-asym")->delimiter(',');
    c->add_option("--sizes", o.sizes, "message sizes, e.g. 64,4KiB,1MiB")->delimiter(',');
    c->add_option("--modes", o.modes, "poll, interrupt")->delimiter(',');
    c->add_option("--throttle-us", o.throttle_us, "interrupt throttle values in us")->delimiter(',');
    c->add_option("--hosts", o.hosts, "host counts (more than 2: ring all-reduce too)")->delimiter(',');
    c->add_option("--platform", o.platform, "platform profile of the calibration file");
    c->add_option("--iterations", o.iterations, "ping-pong round trips per point");
    c->add_option("--calibration", o.calibration, "calibration YAML (default: the shipped one)");
}

}  // namespace

void add_model_command(CLI::App& app) {
    auto o = std::make_shared<model_opts>();
    auto* model = app.add_subcommand("model", "latency modelling on the SystemC model");
    model->require_subcommand(1);
    auto* sw = model->add_subcommand("sweep", "sweep generation x size x mode x throttle x hosts; CSV + SVG");
    add_common(sw, *o);
    sw->add_option("--out", o->out, "folder for sweep.csv and the SVG plots")
        ->check(odl::cli::non_empty());
    sw->add_flag("--json", o->json, "print JSON instead of CSV");
    auto* rp = model->add_subcommand(
        "report", "TB4 vs TB5 vs TB5 asymmetric: an HTML page with charts, PNG plots, JSON and markdown");
    add_common(rp, *o);
    rp->add_option("--out", o->out, "folder for report.html, report.json, report.md and the plots")
        ->check(odl::cli::non_empty());
    rp->add_option("--histogram-size", o->histogram_size, "the message size whose latency histograms are drawn");
    rp->add_option("--collective-sizes", o->collective_sizes, "all-reduce / all-gather sizes")->delimiter(',');
    rp->add_option("--collective-hosts", o->collective_hosts, "ring sizes for the collectives (2..8)")->delimiter(',');
    auto* pr = model->add_subcommand(
        "predict", "ring all-reduce and all-gather per size on the model, as NCCL counts them (no GPUs)");
    pr->add_option("--generations", o->generations, "tb3, tb4, tb5, tb5-asym")->delimiter(',');
    pr->add_option("--platform", o->platform, "platform profile of the calibration file");
    pr->add_option("--calibration", o->calibration, "calibration YAML (default: the shipped one)");
    pr->add_option("--modes", o->modes, "poll or interrupt (one)")->delimiter(',');
    pr->add_option("--sizes", o->collective_sizes, "collective sizes, e.g. 8,1MiB,256MiB")->delimiter(',');
    pr->add_option("--hosts", o->collective_hosts, "ring sizes (2..8)")->delimiter(',');
    pr->add_flag("--json", o->json, "print JSON instead of a markdown table");
    pr->callback([o, pr] {
        if (pr->get_option("--modes")->count() == 0) o->modes = {"poll"};
        if (pr->get_option("--hosts")->count() == 0) o->collective_hosts = {2};
        std::exit(do_predict(*o));
    });
    auto* ca = model->add_subcommand("calibrate", "model vs published calibration points (markdown)");
    ca->add_option("--calibration", o->calibration, "calibration YAML (default: the shipped one)");
    ca->add_option("--points", o->points, "calibration points YAML (default: the shipped one)");
    ca->add_option("--out", o->out, "also write the markdown to this file")
        ->check(odl::cli::non_empty());
    auto* fi = model->add_subcommand("fit", "fit the calibration file's F parameters to the fit points");
    fi->add_option("--calibration", o->calibration, "calibration YAML (default: the shipped one)");
    fi->add_option("--points", o->points, "calibration points YAML (default: the shipped one)");
    auto* wr = fi->add_flag("--write", o->write, "write the fitted values into the calibration file");
    fi->add_flag("--check", o->check, "exit 1 when the file's values are not what the fit gives")->excludes(wr);
    fi->callback([o] { std::exit(do_fit(*o)); });
    sw->callback([o] { std::exit(do_sweep(*o)); });
    rp->callback([o, rp] {
        if (rp->get_option("--modes")->count() == 0) o->modes = {"poll"};
        // Tails need more round trips than a median: p99.9 of 200 is noise.
        if (rp->get_option("--iterations")->count() == 0) o->iterations = 2000;
        if (rp->get_option("--sizes")->count() == 0)
            o->sizes = {"64", "256", "1KiB", "4KiB", "16KiB", "64KiB", "256KiB", "1MiB"};
        std::string cmd = "./odl model report";
        for (const auto& opt : rp->get_options())
            if (opt->count() && opt->get_name() != "--help")
                cmd += fmt::format(" {} {}", opt->get_name(), fmt::join(opt->results(), ","));
        std::exit(do_report(*o, cmd));
    });
    ca->callback([o] { std::exit(do_calibrate(*o)); });
}

}  // namespace odl::cli

// SPDX-License-Identifier: MIT
// odl-tray: the link's state in the desktop's notification area (GTK3 and
// Ayatana AppIndicator; where the desktop has no StatusNotifier host, the
// library falls back to an XEmbed tray icon). Four icons: connected,
// degraded (a direction trained below the port's rating), disconnected,
// daemon down. Menu: each device with its peer, link and last test; open
// the status page; run a latency test; quit. Everything comes from
// odl-daemon's signals (daemon_watch), handed to GTK's thread.
#include <libayatana-appindicator/app-indicator.h>
#include <gtk/gtk.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "odl_cli_checks.h"
#include "daemon_watch.h"
#include "odl/build_info.h"
#include "tray_state.h"

namespace {

using odl::tray::tray_view;

struct tray {
    AppIndicator* indicator = nullptr;
    GtkWidget* menu = nullptr;
    std::unique_ptr<odl::tray::daemon_watch> watch;
    std::string open_with;
    bool verbose = false;
    tray_view view;
    std::string note;  // the outcome of the user's last action, shown in the menu
    bool test_pending = false;
};

tray* g_tray = nullptr;  // GTK's callbacks reach the one tray through it

void rebuild_menu();

/// Runs @fn on GTK's thread (the bus thread must not touch widgets).
template <typename F>
void on_gtk_thread(F fn) {
    auto* heap = new F(std::move(fn));
    g_idle_add(
        [](gpointer p) -> gboolean {
            std::unique_ptr<F> f(static_cast<F*>(p));
            (*f)();
            return G_SOURCE_REMOVE;
        },
        heap);
}

void say(const std::string& what) {
    if (!g_tray->verbose) return;
    std::printf("odl-tray: %s\n", what.c_str());
    std::fflush(stdout);
}

void show(tray_view v) {
    const bool changed = v.kind != g_tray->view.kind || v.title != g_tray->view.title || v.lines != g_tray->view.lines;
    g_tray->view = std::move(v);
    if (!changed) return;
    const auto& view = g_tray->view;
    app_indicator_set_icon_full(g_tray->indicator, odl::tray::icon_name(view.kind), view.title.c_str());
    app_indicator_set_title(g_tray->indicator, view.title.c_str());
    rebuild_menu();
    say(fmt::format("{}: {}", odl::tray::kind_name(view.kind), view.title));
    for (const auto& l : view.lines) say("  " + l);
}

void open_page(GtkMenuItem*, gpointer) {
    std::string url;
    try {
        url = g_tray->watch->status_page_url();
    } catch (const sdbus::Error& e) {
        g_tray->note = "status page: " + e.getMessage();
        say(g_tray->note);
        rebuild_menu();
        return;
    }
    gchar* argv[] = {const_cast<gchar*>(g_tray->open_with.c_str()), const_cast<gchar*>(url.c_str()), nullptr};
    GError* err = nullptr;
    if (!g_spawn_async(nullptr, argv, nullptr, G_SPAWN_SEARCH_PATH, nullptr, nullptr, nullptr, &err)) {
        g_tray->note = fmt::format("cannot run {}: {}", g_tray->open_with, err->message);
        g_error_free(err);
    } else {
        g_tray->note.clear();
    }
    say(g_tray->note.empty() ? "opened the status page" : g_tray->note);
    rebuild_menu();
}

void run_test(GtkMenuItem*, gpointer) {
    const std::string dev = g_tray->view.test_device;
    if (dev.empty() || g_tray->test_pending) return;
    g_tray->test_pending = true;
    g_tray->note.clear();
    say("latency test on " + dev);
    rebuild_menu();
    g_tray->watch->run_test(dev, "latency", [](const std::string& error) {
        on_gtk_thread([error] {
            g_tray->test_pending = false;
            // A test that ran reports through the device's LastTest; only a refusal needs a note.
            g_tray->note = error.empty() ? "" : "test: " + error;
            if (!error.empty()) say(g_tray->note);
            rebuild_menu();
        });
    });
}

GtkWidget* item(const std::string& label, bool sensitive, void (*fn)(GtkMenuItem*, gpointer) = nullptr) {
    GtkWidget* w = gtk_menu_item_new_with_label(label.c_str());
    gtk_widget_set_sensitive(w, sensitive);
    if (fn) g_signal_connect(w, "activate", G_CALLBACK(fn), nullptr);
    gtk_menu_shell_append(GTK_MENU_SHELL(g_tray->menu), w);
    return w;
}

void rebuild_menu() {
    gtk_container_foreach(GTK_CONTAINER(g_tray->menu), [](GtkWidget* w, gpointer) { gtk_widget_destroy(w); }, nullptr);
    const auto& v = g_tray->view;
    item(v.title, false);
    for (const auto& l : v.lines) item(l, false);
    if (!g_tray->note.empty()) item(g_tray->note, false);
    gtk_menu_shell_append(GTK_MENU_SHELL(g_tray->menu), gtk_separator_menu_item_new());
    const bool up = v.kind != odl::tray::link_kind::daemon_down;
    item("Open the status page", up, open_page);
    if (g_tray->test_pending)
        item("Latency test running...", false);
    else
        item(v.test_device.empty() ? "Run a latency test" : "Run a latency test on " + v.test_device,
             up && !v.test_device.empty(), run_test);
    gtk_menu_shell_append(GTK_MENU_SHELL(g_tray->menu), gtk_separator_menu_item_new());
    item("Quit", true, [](GtkMenuItem*, gpointer) { gtk_main_quit(); });
    gtk_widget_show_all(g_tray->menu);
}

/// share/odl/icons beside the program's bin/ (installed and build trees alike).
std::string icons_beside_me() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string() : (self.parent_path().parent_path() / "share" / "odl" / "icons").string();
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"odl-tray: the OdinLink link's state in the desktop's notification area"};
    std::string bus = "system", icons = icons_beside_me();
    tray t;
    t.open_with = "xdg-open";
    app.set_version_flag("--version", std::string("odl-tray " ODL_BUILD_VERSION));
    app.add_option("--bus", bus, "odl-daemon's bus: system, session, or a D-Bus address (unix:path=...)")
        ->capture_default_str()
        ->check(odl::cli::dbus_bus());
    app.add_option("--icons", icons,
                   "the folder of the icons (odl-connected.png, ...; default: share/odl/icons beside bin/)");
    app.add_option("--open-with", t.open_with, "the program that opens the status page's address")
        ->capture_default_str();
    app.add_flag("-v,--verbose", t.verbose, "print each change of state and each action on stdout");
    odl::cli::decimal_integers(app);
    CLI11_PARSE(app, argc, argv);

    for (const auto k : {odl::tray::link_kind::connected, odl::tray::link_kind::degraded,
                         odl::tray::link_kind::disconnected, odl::tray::link_kind::daemon_down})
        if (!std::filesystem::is_regular_file(icons + "/" + odl::tray::icon_name(k) + ".png")) {
            std::fprintf(stderr, "odl-tray: no icon %s.png in %s (--icons)\n", odl::tray::icon_name(k), icons.c_str());
            return 1;
        }
    if (!gtk_init_check(nullptr, nullptr)) {
        const char* d = std::getenv("DISPLAY");
        std::fprintf(stderr, "odl-tray: cannot open the display (DISPLAY=%s)\n", d ? d : "");
        return 1;
    }
    // Where the desktop has no StatusNotifier host, the indicator library's
    // XEmbed fallback looks for its icon folder in GTK's icon search path and
    // reads past the end of that list when the folder is not in it (a known
    // bug of libayatana-appindicator: odl-tray crashed there in 10 of 46
    // runs of tray_test under AddressSanitizer and load, the icon never
    // shown). With the folder already there, the search stops at it: 0 of 30.
    icons = std::filesystem::absolute(icons).string();
    gtk_icon_theme_append_search_path(gtk_icon_theme_get_default(), icons.c_str());
    g_tray = &t;
    t.menu = gtk_menu_new();
    t.indicator = app_indicator_new_with_path("odl-tray", odl::tray::icon_name(t.view.kind),
                                              APP_INDICATOR_CATEGORY_HARDWARE, icons.c_str());
    app_indicator_set_status(t.indicator, APP_INDICATOR_STATUS_ACTIVE);
    t.view.title = "OdinLink";
    rebuild_menu();
    app_indicator_set_menu(t.indicator, GTK_MENU(t.menu));
    try {
        t.watch = std::make_unique<odl::tray::daemon_watch>(
            bus, [](bool up, std::map<std::string, odl::tray::device_view> devices) {
                on_gtk_thread([v = odl::tray::summarize(up, devices)]() mutable { show(std::move(v)); });
            });
    } catch (const sdbus::Error& e) {
        std::fprintf(stderr, "odl-tray: cannot reach the %s bus: %s\n", bus.c_str(), e.getMessage().c_str());
        return 1;
    }
    gtk_main();
    t.watch.reset();  // no callback after this point
    g_object_unref(t.indicator);
    return 0;
}

// SPDX-License-Identifier: MIT
// The live status page (docs/daemon.md): served on a loopback port by its
// own http_server, readable only with a token that the D-Bus method
// StatusPage() hands to each local user (one per uid, the caller's uid as
// the bus tells it), so a page from elsewhere cannot read it. Routes: "/" (the
// page, self-contained), "/api/state" (the host view as JSON, which the
// page reads twice a second), POST "/api/test" (run a test) and POST
// "/api/files" (list the peer's files), the last two for the token's user
// when root or in the group odl, as over the bus.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "access.h"
#include "http_server.h"
#include "page_requests.h"
#include "test_runner.h"

namespace odl::daemon {

/// Tokens by uid, issued over D-Bus and checked by the HTTP thread.
class status_tokens {
public:
    /// The token of @uid (made on first use: 128 random bits, hex).
    std::string issue(uid_t uid);
    bool valid(const std::string& token) const { return uid_of(token).has_value(); }
    /// The uid @token was issued to, if any.
    std::optional<uid_t> uid_of(const std::string& token) const;

private:
    mutable std::mutex m_mu;
    std::map<uid_t, std::string> m_by_uid;
};

/// What the page reads and may do.
struct status_page_context {
    const status_tokens& tokens;
    std::string root;                      ///< the host under it ("" the real one)
    std::string version;
    const test_records& tests;             ///< the last test of each device (shown with its charts)
    std::vector<std::string> plugin_dirs;  ///< where else to read the NCCL plugin's statistics
    /// Starts a test (on the daemon's loop); empty: the page cannot run tests.
    std::function<page_requests::answer(const std::string& device, const std::string& test)> start_test;
    /// Lists the peer's files (on the daemon's loop); empty: no file browser.
    std::function<page_requests::answer(const std::string& device, const std::string& path)> browse;
    const test_records* listings = nullptr;  ///< the last listing of each device
    /// Fetches one of the peer's files (on the daemon's loop); empty: none.
    std::function<page_requests::answer(const std::string& device, const std::string& path)> fetch = {};
    const test_records* fetches = nullptr;  ///< the last fetch of each device
    std::string fetch_dir = {};             ///< where fetched files land
    std::string act_group = kActGroup;     ///< who may run tests besides root
};

/// Answers one request of the page.
http_server::reply status_request(const http_server::request& req, const status_page_context& ctx);

/// The page itself (status_page_html.cpp).
extern const char* const kStatusPageHtml;

}  // namespace odl::daemon

// SPDX-License-Identifier: MIT
// The live status page (docs/daemon.md): served on a loopback port by its
// own http_server, readable only with a token that the D-Bus method
// StatusPage() hands to each local user (one per uid, the caller's uid as
// the bus tells it), so a page from elsewhere cannot read it. Routes: "/" (the
// page, self-contained) and "/api/state" (the host view as JSON, which the
// page reads twice a second).
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "http_server.h"
#include "test_runner.h"

namespace odl::daemon {

/// Tokens by uid, issued over D-Bus and checked by the HTTP thread.
class status_tokens {
public:
    /// The token of @uid (made on first use: 128 random bits, hex).
    std::string issue(uid_t uid);
    bool valid(const std::string& token) const;

private:
    mutable std::mutex m_mu;
    std::map<uid_t, std::string> m_by_uid;
};

/// Answers one request for @target (path and query); @tests: the last
/// test of each device (shown with its charts); @plugin_dirs: where else to
/// read the NCCL plugin's statistics (host::plugin_stats_of_host()).
http_server::reply status_request(const std::string& target, const status_tokens& tokens, const std::string& root,
                                  const std::string& version, const test_records& tests,
                                  const std::vector<std::string>& plugin_dirs = {});

/// The page itself (status_page_html.cpp).
extern const char* const kStatusPageHtml;

}  // namespace odl::daemon

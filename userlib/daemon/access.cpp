// SPDX-License-Identifier: MIT
#include "access.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace odl::daemon {

bool may_act(uid_t uid, const std::string& group_name) {
    if (uid == 0) return true;
    // The reentrant lookups: the status page asks from its own thread.
    std::vector<char> buf(16384);
    struct group gr{};
    struct group* g = nullptr;
    if (getgrnam_r(group_name.c_str(), &gr, buf.data(), buf.size(), &g) != 0 || !g) return false;
    const gid_t want = g->gr_gid;
    struct passwd pw{};
    struct passwd* p = nullptr;
    if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &p) != 0 || !p) return false;
    if (p->pw_gid == want) return true;
    int n = 64;
    std::vector<gid_t> gids(static_cast<size_t>(n));
    for (int tries = 0; tries < 4; tries++) {
        const int want_n = n;
        if (getgrouplist(p->pw_name, p->pw_gid, gids.data(), &n) >= 0) {
            gids.resize(size_t(n));
            for (gid_t x : gids)
                if (x == want) return true;
            return false;
        }
        if (n <= want_n) n = want_n * 2;  // glibc sets n to the count needed
        gids.resize(size_t(n));
    }
    return false;
}

}  // namespace odl::daemon

// SPDX-License-Identifier: MIT
// The HIL inventory (docs/hil.md): host pairs reached over SSH, which
// device of each is cabled to the other, the model platform profile to
// compare with and the link rating expected. Loaded and checked in one go;
// every error names file:line.
#pragma once

#include <string>
#include <vector>

namespace odl::hil {

/// How the controller reaches one host: OpenSSH client options.
struct ssh_target {
    std::string destination;  ///< host name or address (never the link under test)
    std::string user;
    int port = 22;
    std::string key;          ///< private key file (absolute path)
    std::string known_hosts;  ///< known-hosts file (absolute path); host keys are checked
    int connect_timeout_s = 10;
    /// OpenSSH keep-alives: a host that stops answering (hung, its management
    /// link cut) is given up after interval x count seconds.
    int keepalive_interval_s = 5;
    int keepalive_count = 3;
    std::string where;        ///< "file:line" of the host's entry, for messages
};

/// One host of a pair: role "a" or "b".
struct host {
    std::string role;
    ssh_target ssh;
    int device = 0;  ///< /dev/odl_tb5_N cabled to the other host
    /// Where the other host reaches this one over the management network
    /// (NCCL's rendezvous); the SSH destination unless set.
    std::string address;
};

/// Two hosts joined by the cable under test.
struct pair {
    std::string name;     ///< names the results folder
    std::string profile;  ///< model platform profile for `odl hil compare`
    std::string expect;   ///< link rating expected, as `odl doctor --expect` takes it ("gen4x2")
    std::string cable_command;  ///< controller command for cable events ("" = none: skipped)
    host a, b;
};

struct inventory {
    std::string file;
    std::vector<pair> pairs;

    /// The pair named @name, or the only one when @name is empty; throws
    /// std::runtime_error naming the choices otherwise.
    const pair& select(const std::string& name) const;
};

/// Loads and validates @path. Relative key and known-hosts paths are taken
/// from the inventory's folder. Throws std::runtime_error("file:line: ...").
inventory load_inventory(const std::string& path);

}  // namespace odl::hil

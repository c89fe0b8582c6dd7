// SPDX-License-Identifier: MIT
// One host reached with the OpenSSH client: a master connection shared by
// every command (ControlMaster), host keys checked against the inventory's
// known-hosts file, the inventory's key only, no agent or X11 forwarding,
// no user ssh_config (the inventory says everything), and keep-alives so a
// vanished host ends a command within seconds.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "odl/hil/inventory.h"
#include "odl/hil/process.h"

namespace odl::hil {

/// 'text' quoted for a POSIX shell.
std::string shell_quote(const std::string& text);

/// Why ssh could not reach a host, from its messages (empty when it did).
std::string ssh_failure_reason(const process_result& r);

/// A private folder for the SSH control sockets (short path: socket names
/// are limited to 107 bytes), removed with everything in it.
class control_dir {
public:
    control_dir();
    ~control_dir();
    control_dir(const control_dir&) = delete;
    control_dir& operator=(const control_dir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

class ssh_session {
public:
    /// @control_dir: a private folder for the master's socket (short path).
    ssh_session(host h, std::string control_dir);
    ~ssh_session();
    ssh_session(const ssh_session&) = delete;
    ssh_session& operator=(const ssh_session&) = delete;

    /// Opens the master connection. Returns "" or why not (unreachable,
    /// host key not trusted, authentication refused), one line.
    std::string connect();
    /// Runs @command with the remote user's shell; bounded by @timeout_s.
    process_result run(const std::string& command, int timeout_s, const std::string& input = "") const;
    /// Copies local @files into the existing remote folder @remote_dir (scp).
    process_result copy_to(const std::vector<std::string>& files, const std::string& remote_dir,
                           int timeout_s) const;
    /// Closes the master connection (the destructor does too).
    void close();

    const host& target() const { return host_; }
    /// "a (root@127.0.0.1 port 2222)".
    std::string label() const;

private:
    std::vector<std::string> options() const;

    host host_;
    std::string control_path_;
    std::string log_path_;
    std::unique_ptr<background_process> master_;
};

}  // namespace odl::hil

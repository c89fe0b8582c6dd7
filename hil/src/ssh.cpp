// SPDX-License-Identifier: MIT
// ssh_session: OpenSSH client processes around one master connection.
#include "odl/hil/ssh.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace odl::hil {

std::string shell_quote(const std::string& text) {
    std::string q = "'";
    for (char c : text) {
        if (c == '\'') q += "'\\''";
        else q += c;
    }
    return q + "'";
}

std::string ssh_failure_reason(const process_result& r) {
    if (r.status != 255 && !r.timed_out) return "";
    const std::string& e = r.err;
    auto has = [&](const char* s) { return e.find(s) != std::string::npos; };
    if (r.timed_out) return "no answer in time (host down or unreachable?)";
    if (has("REMOTE HOST IDENTIFICATION HAS CHANGED"))
        return "its host key differs from the one in known_hosts (re-installed host, or someone in between)";
    if (has("Host key verification failed") || has("No ED25519 host key") || has("host key is known"))
        return "its host key is not in the inventory's known_hosts file";
    if (has("Permission denied")) return "authentication refused (key not authorised for this user?)";
    if (has("Connection refused")) return "connection refused (sshd not running, or wrong port)";
    if (has("timed out") || has("No route to host") || has("Network is unreachable"))
        return "unreachable (network, address or firewall)";
    if (has("Could not resolve hostname")) return "host name does not resolve";
    if (has("Connection closed") || has("Connection reset") || has("Broken pipe"))
        return "the connection was closed (host went away?)";
    std::string first = e.substr(0, e.find('\n'));
    return first.empty() ? "ssh failed (exit 255)" : "ssh: " + first;
}

control_dir::control_dir() {
    char tmpl[] = "/tmp/odl-hil-XXXXXX";
    if (!::mkdtemp(tmpl)) throw std::runtime_error("cannot make a folder in /tmp for the SSH sockets");
    path_ = tmpl;
}

control_dir::~control_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

ssh_session::ssh_session(host h, std::string control_dir)
    : host_(std::move(h)),
      control_path_(control_dir + "/" + host_.role + ".sock"),
      log_path_(control_dir + "/" + host_.role + ".ssh.log") {}

ssh_session::~ssh_session() { close(); }

std::string ssh_session::label() const {
    return fmt::format("{} ({}@{} port {})", host_.role, host_.ssh.user, host_.ssh.destination, host_.ssh.port);
}

std::vector<std::string> ssh_session::options() const {
    const auto& s = host_.ssh;
    return {"-F", "/dev/null",
            "-o", "BatchMode=yes",
            "-o", "StrictHostKeyChecking=yes",
            "-o", "UserKnownHostsFile=" + s.known_hosts,
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "IdentitiesOnly=yes",
            "-o", "IdentityFile=" + s.key,
            "-o", "IdentityAgent=none",
            "-o", "ForwardAgent=no",
            "-o", "ForwardX11=no",
            "-o", fmt::format("ConnectTimeout={}", s.connect_timeout_s),
            "-o", fmt::format("ServerAliveInterval={}", s.keepalive_interval_s),
            "-o", fmt::format("ServerAliveCountMax={}", s.keepalive_count),
            "-o", "LogLevel=ERROR",
            "-o", "ControlPath=" + control_path_,
            "-o", fmt::format("Port={}", s.port),
            "-o", "User=" + s.user};
}

std::string ssh_session::connect() {
    close();
    std::vector<std::string> argv{"ssh"};
    for (auto& o : options()) argv.push_back(o);
    for (const char* o : {"-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-N", "--"}) argv.push_back(o);
    argv.push_back(host_.ssh.destination);
    master_ = std::make_unique<background_process>(argv, log_path_);
    // Ready once the master answers on its socket; bounded by the connect
    // timeout plus the time a slow host takes to authenticate.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(host_.ssh.connect_timeout_s + 10);
    std::vector<std::string> check{"ssh"};
    for (auto& o : options()) check.push_back(o);
    for (const char* o : {"-O", "check", "--"}) check.push_back(o);
    check.push_back(host_.ssh.destination);
    while (std::chrono::steady_clock::now() < deadline) {
        int status = 0;
        if (!master_->running(&status)) {
            process_result r;
            r.status = status == 0 ? 255 : status;
            std::ifstream log(log_path_);
            std::stringstream ss;
            ss << log.rdbuf();
            r.err = ss.str();
            master_.reset();
            const std::string why = ssh_failure_reason(r);
            return why.empty() ? fmt::format("ssh exited with status {}", status) : why;
        }
        if (run_process(check, 5).status == 0) return "";
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    master_.reset();
    return "no answer in time (host down or unreachable?)";
}

void ssh_session::close() {
    if (!master_) return;
    std::vector<std::string> argv{"ssh"};
    for (auto& o : options()) argv.push_back(o);
    for (const char* o : {"-O", "exit", "--"}) argv.push_back(o);
    argv.push_back(host_.ssh.destination);
    run_process(argv, 5);
    master_.reset();  // waits for it, or ends it
    ::unlink(control_path_.c_str());
}

process_result ssh_session::run(const std::string& command, int timeout_s, const std::string& input) const {
    std::vector<std::string> argv{"ssh"};
    for (auto& o : options()) argv.push_back(o);
    // A master that went away must not turn into a silent second login
    // attempt with other settings: the same options apply either way.
    for (const char* o : {"-o", "ControlMaster=no", "-T", "--"}) argv.push_back(o);
    argv.push_back(host_.ssh.destination);
    argv.push_back(command);
    return run_process(argv, timeout_s, input);
}

process_result ssh_session::copy_to(const std::vector<std::string>& files, const std::string& remote_dir,
                                    int timeout_s) const {
    std::vector<std::string> argv{"scp", "-q", "-p"};
    for (auto& o : options()) argv.push_back(o);
    argv.push_back("-o");
    argv.push_back("ControlMaster=no");
    argv.push_back("--");
    for (const auto& f : files) argv.push_back(f);
    argv.push_back(host_.ssh.destination + ":" + remote_dir + "/");
    return run_process(argv, timeout_s);
}

}  // namespace odl::hil

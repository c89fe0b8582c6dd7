// SPDX-License-Identifier: MIT
// Running a local program with a deadline: what the HIL commands use for
// ssh, scp and cpack. Nothing it starts outlives the call.
#pragma once

#include <string>
#include <vector>

namespace odl::hil {

struct process_result {
    int status = 0;          ///< exit status; 128+N when killed by signal N; 127: could not start
    bool timed_out = false;  ///< killed at the deadline (status is then 124)
    std::string out;         ///< standard output (at most kOutputCap bytes kept)
    std::string err;         ///< standard error (likewise)
};

/// Bytes of each stream kept; the rest is read and dropped, and a line
/// saying so is appended.
constexpr std::size_t kOutputCap = 16u << 20;

/// Runs @argv (no shell) in its own process group with @input on its
/// standard input; at @timeout_s seconds the group gets SIGTERM, two seconds
/// later SIGKILL. Waits for the process in every case.
process_result run_process(const std::vector<std::string>& argv, int timeout_s, const std::string& input = "");

/// A program left running while the caller works (the SSH master
/// connection), its output going to @log_path. Destroying it ends it: SIGTERM
/// to its group, SIGKILL two seconds later, and waits.
class background_process {
public:
    background_process(const std::vector<std::string>& argv, const std::string& log_path);
    ~background_process();
    background_process(const background_process&) = delete;
    background_process& operator=(const background_process&) = delete;

    /// False once it has exited (its status is then in *status when given).
    bool running(int* status = nullptr);
    /// Ends it now (as the destructor does); returns its status.
    int stop();

private:
    int pid_ = -1;
    int status_ = 0;
};

}  // namespace odl::hil

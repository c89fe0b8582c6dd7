// SPDX-License-Identifier: MIT
// The asking side of the file service (`odl cp`): pushes and pulls files
// and trees, resuming each file where the receiver's verified bytes end
// after a lost link or a restarted peer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "channel.h"
#include "pair_store.h"

namespace odl::files {

struct copy_options {
    bool recursive = false;
    uint32_t chunk = ODL_FILES_CHUNK_DEFAULT;
    uint64_t retry_for_ns = 30'000'000'000ull;  ///< reconnecting after a lost link, at most this long
    uint64_t answer_timeout_ns = 60'000'000'000ull;
};

struct copy_report {
    uint64_t files = 0, dirs = 0;
    uint64_t bytes = 0;          ///< file bytes that crossed the link in this run (failed attempts too)
    uint64_t resumed_bytes = 0;  ///< bytes the receiver already held, of files copied
    uint64_t total_bytes = 0;    ///< size of every file copied
    uint64_t reconnects = 0;
    uint64_t hash_mismatches = 0;  ///< retried from the start, once per file
    uint64_t skipped = 0;          ///< symbolic links and special files left out
};

/// One entry of a LIST, its path relative to the listed folder.
struct remote_entry {
    std::string path;
    bool dir = false;
    uint64_t size = 0;
    uint64_t mtime_ns = 0;
    uint32_t mode = 0;
};

/// A copy that cannot be done: bad arguments, refusal, or out of retries.
struct copy_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class file_client {
public:
    using open_fn = std::function<std::unique_ptr<odl::device>()>;
    using note_fn = std::function<void(const std::string&)>;
    /// Progress: current file, its bytes done and size.
    using progress_fn = std::function<void(const std::string& name, uint64_t done, uint64_t size)>;

    file_client(open_fn open, pair_record pair, copy_options opt, const std::atomic<bool>* stop, note_fn note,
                progress_fn progress = {});
    ~file_client();

    /// `odl cp SRC... peer:DEST`.
    void push(const std::vector<std::string>& sources, const std::string& dest);
    /// `odl cp peer:SRC... DEST`.
    void pull(const std::vector<std::string>& sources, const std::string& dest);
    /// Every entry under the peer's folder @remote ("" = the served folder),
    /// recursively; service_error when the peer refuses (E_KIND: a file).
    std::vector<remote_entry> list(const std::string& remote);
    /// Pulls one file @remote to @local: verified, resumed, reconnecting.
    void fetch(const std::string& remote, const std::string& local);
    /// Pushes one file @local to @remote: verified, resumed, reconnecting.
    void put(const std::string& local, const std::string& remote);
    /// Makes the folder @remote (and its parents) on the peer.
    void make_dir(const std::string& remote, uint32_t mode = 0755);
    /// Moves the peer's file @remote into its .odl-trash/.
    void remove(const std::string& remote);
    /// Says BYE and closes (also done by the destructor, quietly).
    void close();

    const copy_report& report() const { return m_report; }

private:
    struct job;
    void run(std::vector<job>& jobs);
    void connect();
    /// After a lost link: closes it and waits a little, or throws
    /// copy_error(@give_up) once it has been down longer than retry_for.
    void drop_link(uint64_t& since, const std::string& give_up);
    /// Says @why the device did not open, at the first failure of an outage (@since 0).
    void waiting(uint64_t since, const std::string& why);
    void push_file(const job& j);
    void pull_file(const job& j);
    void remote_mkdir(const std::string& path, uint32_t mode);
    void remote_remove(const std::string& path);
    std::vector<remote_entry> list_once(const std::string& src);

    open_fn m_open;
    pair_record m_pair;
    copy_options m_opt;
    const std::atomic<bool>* m_stop;
    note_fn m_note;
    progress_fn m_progress;
    std::unique_ptr<odl::device> m_dev;
    std::unique_ptr<channel> m_ch;
    copy_report m_report;
};

}  // namespace odl::files

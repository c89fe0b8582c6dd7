// SPDX-License-Identifier: MIT
// Pooled frames: no heap allocation per frame once the pool is warm.
#include <vector>

#include "odl/model/core/frame.h"

namespace odl::model {

namespace {

/// The free list lives as long as the thread (leaked on purpose: frames may
/// be released during static destruction).
std::vector<frame*>& free_frames() {
    thread_local auto* v = new std::vector<frame*>();
    return *v;
}

}  // namespace

void frame_recycle::operator()(frame* f) const {
    std::vector<std::uint8_t> keep = std::move(f->bytes);
    keep.clear();  // keeps its capacity
    *f = frame{};
    f->bytes = std::move(keep);
    free_frames().push_back(f);
}

frame_ptr make_frame() {
    auto& fl = free_frames();
    if (fl.empty()) return frame_ptr(new frame());
    frame* f = fl.back();
    fl.pop_back();
    return frame_ptr(f);
}

}  // namespace odl::model

// SPDX-License-Identifier: MIT
// Pooled frames: no heap allocation per frame once the pool is warm.
#include <cstddef>
#include <new>
#include <vector>

#include "odl/model/core/frame.h"

namespace odl::model {

namespace {

/// Free lists live as long as the thread (leaked on purpose: frames may be
/// released during static destruction).
std::vector<frame*>& free_frames() {
    thread_local auto* v = new std::vector<frame*>();
    return *v;
}

std::vector<void*>& free_blocks() {
    thread_local auto* v = new std::vector<void*>();
    return *v;
}

/// Allocator for the shared_ptr control block (one size per program).
template <class T>
struct block_alloc {
    using value_type = T;
    block_alloc() = default;
    template <class U>
    block_alloc(const block_alloc<U>&) {}
    T* allocate(std::size_t n) {
        auto& fl = free_blocks();
        if (n == 1 && !fl.empty()) {
            void* p = fl.back();
            fl.pop_back();
            return static_cast<T*>(p);
        }
        return static_cast<T*>(::operator new(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) {
        if (n == 1)
            free_blocks().push_back(p);
        else
            ::operator delete(p);
    }
    template <class U>
    bool operator==(const block_alloc<U>&) const { return true; }
    template <class U>
    bool operator!=(const block_alloc<U>&) const { return false; }
};

struct recycle {
    void operator()(frame* f) const {
        std::vector<std::uint8_t> keep = std::move(f->bytes);
        keep.clear();  // keeps its capacity
        *f = frame{};
        f->bytes = std::move(keep);
        free_frames().push_back(f);
    }
};

}  // namespace

frame_ptr make_frame() {
    auto& fl = free_frames();
    frame* f;
    if (fl.empty()) {
        f = new frame();
    } else {
        f = fl.back();
        fl.pop_back();
    }
    return frame_ptr(f, recycle{}, block_alloc<frame>{});
}

}  // namespace odl::model

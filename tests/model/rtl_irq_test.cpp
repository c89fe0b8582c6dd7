// SPDX-License-Identifier: MIT
// The NHI interrupt unit's RTL block (model/rtl/odl_nhi_irq.sv, Verilated
// with coverage) against its C++ twin: the datasheet's behaviours on the
// RTL alone, the lock-step checker catching a difference, and constrained-
// random operation sequences run in lock step. At the end the block's
// coverage counters go to $ODL_RTL_COVERAGE (default rtl_irq_coverage.dat)
// and the share of points hit is checked.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>

#include "irq_lockstep.h"
#include "irq_unit_model.h"
#include "irq_unit_rtl.h"

namespace odl::model {
namespace {

constexpr std::uint64_t us = 1000000;  // ps

// Coverage counters are per context; every RTL unit of this process is
// written at the end, so keep the last one alive until then.
std::shared_ptr<irq_unit_rtl>& last_rtl() {
    static std::shared_ptr<irq_unit_rtl> u;
    return u;
}
irq_unit_rtl& fresh_rtl(unsigned hop_count) {
    last_rtl() = std::make_shared<irq_unit_rtl>();
    last_rtl()->reset(hop_count);
    return *last_rtl();
}

// Rings 0..HC-1 TX (index h), RX (HC + h), all on vector 0 unless mapped.
void enable_all(irq_unit& u, unsigned hc) {
    const std::uint64_t mask = (std::uint64_t{1} << (2 * hc)) - 1;
    u.write(irq_reg::enable, static_cast<std::uint32_t>(mask), 0);
    u.write(irq_reg::enable + 1, static_cast<std::uint32_t>(mask >> 32), 0);
}

TEST(RtlIrq, RaiseSchedulesOnTheMappedVectorAndFires) {
    irq_unit_rtl& u = fresh_rtl(12);
    // Index 12 + 3 (RX ring 3) on vector 5: IVR word 1, nibble 7.
    u.write(irq_reg::ivr + 1, 5u << 28, 0);
    enable_all(u, 12);
    const irq_schedule s = u.raise(15, 10 * us);
    EXPECT_TRUE(s.due);
    EXPECT_EQ(s.vector, 5u);
    EXPECT_EQ(s.at_ps, 10 * us);
    // Pending: a second cause schedules nothing more.
    EXPECT_FALSE(u.raise(15, 11 * us).due);
    EXPECT_EQ(u.read(irq_reg::status, false, 0), 1u << 15);
    EXPECT_TRUE(u.fire(5, 12 * us));
    EXPECT_EQ(u.read(irq_reg::vstate + 5, false, 0), 4u);  // fired once, nothing pending
    EXPECT_EQ(u.read(irq_reg::last_fire + 10, false, 0), static_cast<std::uint32_t>(12 * us));
}

TEST(RtlIrq, ThrottleSpacesMessages) {
    irq_unit_rtl& u = fresh_rtl(4);
    enable_all(u, 4);
    u.write(irq_reg::throttle + 0, 100, 0);  // 25.6 us
    ASSERT_TRUE(u.raise(0, 5 * us).due);
    ASSERT_TRUE(u.fire(0, 5 * us));
    u.write(irq_reg::status_clear, 1, 5 * us);
    const irq_schedule s = u.raise(0, 6 * us);
    ASSERT_TRUE(s.due);
    EXPECT_EQ(s.at_ps, 5 * us + 100 * 256000);
    // Past the gap: at once.
    ASSERT_TRUE(u.fire(0, s.at_ps));
    u.write(irq_reg::status_clear, 1, s.at_ps);
    EXPECT_EQ(u.raise(0, 100 * us).at_ps, 100 * us);
}

TEST(RtlIrq, CauseSurvivesAStatusClearedBeforeTheMessage) {
    irq_unit_rtl& u = fresh_rtl(4);
    enable_all(u, 4);
    ASSERT_TRUE(u.raise(4, us).due);
    u.write(irq_reg::status_clear, 1u << 4, us);  // the handler's posted clear
    EXPECT_TRUE(u.fire(0, 2 * us));               // still goes out
    EXPECT_TRUE(u.raise(4, 3 * us).due);
    u.write(irq_reg::status_clear, 1u << 4, 3 * us);
    EXPECT_TRUE(u.fire(0, 4 * us));
    // Nothing new since: no message.
    EXPECT_FALSE(u.fire(0, 5 * us));
}

TEST(RtlIrq, MaskedAutoClearedAndOverflowBits) {
    irq_unit_rtl& u = fresh_rtl(4);
    EXPECT_FALSE(u.raise(1, us).due);  // not enabled
    EXPECT_FALSE(u.fire(0, us));
    const std::uint32_t rising = u.write(irq_reg::enable, 0x3, 2 * us);
    EXPECT_EQ(rising, 0x3u);
    EXPECT_EQ(u.write(irq_reg::enable, 0x7, 2 * us), 0x4u);
    EXPECT_TRUE(u.evaluate(1, 2 * us).due);  // unmasked with status set
    u.write(irq_reg::enable_clear, 0x7, 3 * us);
    EXPECT_FALSE(u.fire(0, 3 * us));  // masked meanwhile
    // Overflow (index 2 HC): status only, never a message.
    EXPECT_FALSE(u.raise(8, 4 * us).due);
    EXPECT_EQ(u.read(irq_reg::status, true, 4 * us), (1u << 8) | (1u << 1));
    EXPECT_EQ(u.read(irq_reg::status, false, 4 * us), 0u);  // cleared by the read
    // Read-only and write-only words.
    u.write(irq_reg::vstate, 0xffffffffu, 5 * us);
    EXPECT_EQ(u.read(irq_reg::status_clear, false, 5 * us), 0u);
}

// A twin that differs on purpose: the checker must stop at it.
class off_by_one final : public irq_unit {
public:
    void reset(unsigned hc) override { m.reset(hc); }
    std::uint32_t read(std::uint8_t r, bool c, std::uint64_t t) override { return m.read(r, c, t); }
    std::uint32_t write(std::uint8_t r, std::uint32_t v, std::uint64_t t) override { return m.write(r, v, t); }
    irq_schedule raise(unsigned i, std::uint64_t t) override {
        irq_schedule s = m.raise(i, t);
        if (s.due && i == 3) ++s.at_ps;
        return s;
    }
    irq_schedule evaluate(unsigned i, std::uint64_t t) override { return m.evaluate(i, t); }
    bool fire(unsigned v, std::uint64_t t) override { return m.fire(v, t); }

private:
    irq_unit_model m;
};

TEST(RtlIrq, LockstepStopsAtTheFirstDifferenceWithAReport) {
    auto rtl = std::make_unique<irq_unit_rtl>();
    irq_unit_lockstep ls(std::make_unique<off_by_one>(), std::move(rtl));
    ls.reset(4);
    enable_all(ls, 4);
    ASSERT_TRUE(ls.raise(2, us).due);
    ASSERT_TRUE(ls.fire(0, us));
    try {
        ls.raise(3, 2 * us);
        FAIL() << "no divergence reported";
    } catch (const irq_divergence& e) {
        const std::string r = e.what();
        EXPECT_NE(r.find("differ at operation 6: #6 raise index 3 at 2000000 ps"), std::string::npos) << r;
        EXPECT_NE(r.find("C++ twin: message on vector 0 at 2000001 ps"), std::string::npos) << r;
        EXPECT_NE(r.find("RTL:      message on vector 0 at 2000000 ps"), std::string::npos) << r;
        EXPECT_NE(r.find("#5 fire vector 0 at 1000000 ps"), std::string::npos) << r;
    }
}

// Random operations, biased towards what a driver does: causes on rings,
// handlers clearing status (sometimes late), masks and unmasks, vector and
// throttle changes, and every scheduled message fired at its time.
TEST(RtlIrq, RandomSequencesInLockStep) {
    const char* env = std::getenv("ODL_RTL_SEED");
    const std::uint64_t seed0 = env ? std::strtoull(env, nullptr, 0) : 1;
    std::uint64_t ops = 0;
    // One RTL unit for every seed (reset in between), so its coverage
    // counters add up.
    auto rtl = std::make_shared<irq_unit_rtl>();
    last_rtl() = rtl;
    for (std::uint64_t seed = seed0; seed < seed0 + 8; ++seed) {
        std::mt19937_64 rng(seed);
        const auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
        const unsigned hc = 2 + pick(20);
        // The lock step owns its units; the RTL one is shared for coverage.
        struct shared_rtl final : irq_unit {
            std::shared_ptr<irq_unit_rtl> u;
            void reset(unsigned h) override { u->reset(h); }
            std::uint32_t read(std::uint8_t r, bool c, std::uint64_t t) override { return u->read(r, c, t); }
            std::uint32_t write(std::uint8_t r, std::uint32_t v, std::uint64_t t) override { return u->write(r, v, t); }
            irq_schedule raise(unsigned i, std::uint64_t t) override { return u->raise(i, t); }
            irq_schedule evaluate(unsigned i, std::uint64_t t) override { return u->evaluate(i, t); }
            bool fire(unsigned v, std::uint64_t t) override { return u->fire(v, t); }
        };
        auto sr = std::make_unique<shared_rtl>();
        sr->u = rtl;
        irq_unit_lockstep ls(std::make_unique<irq_unit_model>(), std::move(sr));
        std::multimap<std::uint64_t, unsigned> due;  // scheduled messages
        std::uint64_t now = 0;
        const auto take = [&](const irq_schedule& s) {
            if (s.due) due.emplace(s.at_ps, s.vector);
        };
        try {
            ls.reset(hc);
            for (unsigned i = 0; i < 4000; ++i) {
                now += rng() % (3 * us);
                // Messages whose time came, in time order.
                while (!due.empty() && due.begin()->first <= now) {
                    const auto [t, v] = *due.begin();
                    due.erase(due.begin());
                    ls.fire(v, t);
                }
                const unsigned n_idx = 3 * hc;
                switch (pick(16)) {
                case 0: case 1: case 2: case 3: case 4: take(ls.raise(pick(n_idx), now)); break;
                case 5: case 6: ls.write(irq_reg::status_clear + pick(2), static_cast<std::uint32_t>(rng()), now); break;
                case 7: ls.read(irq_reg::status + pick(2), pick(2) == 0, now); break;
                case 8: {
                    const unsigned k = pick(2);
                    const std::uint32_t rising = ls.write(irq_reg::enable + k, static_cast<std::uint32_t>(rng()), now);
                    for (unsigned b = 0; b < 32; ++b)
                        if ((rising >> b) & 1u) take(ls.evaluate(k * 32 + b, now));
                    break;
                }
                case 9: ls.write(irq_reg::enable_clear + pick(2), static_cast<std::uint32_t>(rng()), now); break;
                case 10: ls.write(irq_reg::ivr + pick(6), static_cast<std::uint32_t>(rng()) & 0x33333333u, now); break;
                case 11: ls.write(irq_reg::throttle + pick(16), pick(4) == 0 ? 0 : pick(64), now); break;
                case 12: ls.fire(pick(16), now); break;  // a stray message time
                case 13: ls.read(static_cast<std::uint8_t>(pick(0x50)), pick(4) == 0, now); break;
                case 14: take(ls.evaluate(pick(64), now)); break;
                default:
                    if (pick(64) == 0) {
                        ls.reset(2 + pick(20));
                    } else {
                        ls.write(static_cast<std::uint8_t>(pick(0x60)), static_cast<std::uint32_t>(rng()), now);
                    }
                }
            }
        } catch (const irq_divergence& e) {
            FAIL() << "seed " << seed << ": " << e.what();
        }
        ops += ls.operations();
    }
    EXPECT_GT(ops, 8u * 4000u);
    ::testing::Test::RecordProperty("operations", std::to_string(ops));
}

// --rtl-trace: an FST file of the operations inside the window only.
TEST(RtlIrq, WavesForAWindowOfSimulatedTime) {
    const std::string dir = ::testing::TempDir();
    const auto waves = [&](const std::string& name, std::uint64_t from, std::uint64_t to) {
        irq_unit_options o;
        o.impl = irq_impl::rtl;
        o.trace_fst = dir + name;
        o.trace_from_ps = from;
        o.trace_to_ps = to;
        {
            irq_unit_rtl u(o);
            u.reset(4);
            enable_all(u, 4);
            for (unsigned i = 0; i < 200; ++i) {
                const std::uint64_t t = (i + 1) * us;
                if (u.raise(i % 8, t).due) u.fire(0, t);
                u.write(irq_reg::status_clear, 0xff, t);
            }
        }
        long size = -1;
        {
            std::ifstream f(o.trace_fst, std::ios::binary | std::ios::ate);
            EXPECT_TRUE(f) << o.trace_fst;
            size = static_cast<long>(f.tellg());
        }
        std::remove(o.trace_fst.c_str());
        return size;
    };
    const long all = waves("irq-all.fst", 0, ~std::uint64_t{0});
    const long none = waves("irq-none.fst", 500 * us, 600 * us);  // after the last operation
    EXPECT_GT(all, 0);
    EXPECT_GT(none, 0);  // the header and signal names
    EXPECT_GT(all, none + 1000) << "waves of 200 operations hardly bigger than none";
    EXPECT_THROW(irq_unit_rtl({irq_impl::rtl, "/nonexistent-dir/x.fst", 0, 1}), std::runtime_error);
}

// Last (gtest runs a file's tests in order): the RTL's coverage counters.
TEST(RtlIrq, ZCoverageReport) {
    const char* env = std::getenv("ODL_RTL_COVERAGE");
    const std::string path = env && *env ? env : "rtl_irq_coverage.dat";
    ASSERT_TRUE(last_rtl());
    ASSERT_TRUE(last_rtl()->write_coverage(path)) << "built without Verilator coverage";
    std::ifstream in(path);
    ASSERT_TRUE(in) << path;
    // Lines: C '<key>' <count>; the key's fields are \x01-separated
    // name\x02value pairs, "page" telling the kind (v_toggle, v_line, v_branch).
    std::string line;
    std::map<std::string, std::pair<unsigned, unsigned>> kinds;  // kind -> (hit, points)
    while (std::getline(in, line)) {
        if (line.rfind("C '", 0) != 0) continue;
        const auto sp = line.rfind(' ');
        const auto page = line.find("page\x02");
        std::string kind = "other";
        if (page != std::string::npos) kind = line.substr(page + 5, line.find('/', page) - page - 5);
        auto& k = kinds[kind];
        ++k.second;
        if (std::strtoull(line.c_str() + sp + 1, nullptr, 10) > 0) ++k.first;
    }
    for (const auto& [kind, k] : kinds)
        std::printf("RTL coverage of odl_nhi_irq, %s: %u of %u points hit (%.1f %%)\n", kind.c_str(), k.first,
                    k.second, k.second ? 100.0 * k.first / k.second : 0.0);
    std::printf("written to %s\n", path.c_str());
    // Toggle coverage: every register and port bit seen both ways. (This
    // Verilator's line and branch counters miss statements that certainly
    // ran - an IVR write, a scheduled message - so they are only printed.)
    const auto& t = kinds["v_toggle"];
    EXPECT_GT(t.second, 500u);
    EXPECT_GE(t.first * 100, t.second * 90) << t.first << " of " << t.second << " toggle points";
    EXPECT_GT(kinds["v_line"].second, 0u) << "no line points: built without --coverage?";
}

}  // namespace
}  // namespace odl::model

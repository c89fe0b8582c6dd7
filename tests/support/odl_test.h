// SPDX-License-Identifier: MIT
// Shared assertions for libodl tests.
#pragma once

#include <gtest/gtest.h>

#include "odl/odl.h"

/// Asserts a libodl call succeeded, printing the library's reason if not.
#define EXPECT_ODL_OK(expr)                                                        \
    do {                                                                           \
        const int odl_rc_ = (expr);                                                \
        EXPECT_EQ(odl_rc_, ODL_OK) << #expr << ": " << odl_strerror(odl_rc_) << " (" \
                                   << odl_last_error() << ")";                     \
    } while (0)
#define ASSERT_ODL_OK(expr)                                                        \
    do {                                                                           \
        const int odl_rc_ = (expr);                                                \
        ASSERT_EQ(odl_rc_, ODL_OK) << #expr << ": " << odl_strerror(odl_rc_) << " (" \
                                   << odl_last_error() << ")";                     \
    } while (0)

// SPDX-License-Identifier: MIT
// SVG plots to PNG with rsvg-convert (Debian's librsvg2-bin, installed by
// the bootstrap): one way for every command that draws.
#pragma once

#include <string>

namespace odl::cli {

/// Writes @svg_path's PNG beside it (same stem). Returns "" when written,
/// else why not (rsvg-convert missing or failing), for the caller to report.
std::string svg_to_png(const std::string& svg_path);

}  // namespace odl::cli

// SPDX-License-Identifier: MIT
#include "png.h"

#include <fmt/format.h>

#include "odl/hil/process.h"

namespace odl::cli {

std::string svg_to_png(const std::string& svg_path) {
    const std::string stem = svg_path.size() > 4 && svg_path.compare(svg_path.size() - 4, 4, ".svg") == 0
                                 ? svg_path.substr(0, svg_path.size() - 4)
                                 : svg_path;
    const auto r = odl::hil::run_process({"rsvg-convert", "-f", "png", "-o", stem + ".png", svg_path}, 60);
    if (r.status == 127)
        return "PNG plots need rsvg-convert (Debian package librsvg2-bin); the SVGs are written";
    if (r.status != 0) return fmt::format("{}.png: rsvg-convert failed (status {}): {}", stem, r.status, r.err);
    return "";
}

}  // namespace odl::cli

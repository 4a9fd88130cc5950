// Chart.js, embedded into the binary at build time from Debian's libjs-chart.js (the UMD build
// that defines window.Chart; CMake finds it and refuses to configure without it), so that the
// HTML report is a single file that draws its plots offline.
#pragma once

#include <string_view>

namespace lockstep {

std::string_view ChartJsSource();

}  // namespace lockstep

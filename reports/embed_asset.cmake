# cmake -DIN=chart.min.js -DOUT=chart_js.cc -P embed_chart_js.cmake
# Writes a C++ source that holds IN as a byte array (xxd -i style: no raw-string delimiter to
# collide with, no 64 KiB string-literal limit, any bytes allowed). Runs at build time, so a new
# libjs-chart.js is picked up by the next build.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
"// Generated from ${IN} by reports/embed_chart_js.cmake; do not edit.
#include \"reports/chart_js.h\"

namespace lockstep {
namespace {
const unsigned char kChartJs[${size}] = {
${bytes}
};
}  // namespace

std::string_view ChartJsSource() { return {reinterpret_cast<const char*>(kChartJs), sizeof(kChartJs)}; }
std::string_view ChartJsOrigin() { return \"${IN}\"; }

}  // namespace lockstep
")
file(RENAME "${OUT}.tmp" "${OUT}")

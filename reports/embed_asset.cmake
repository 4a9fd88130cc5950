# cmake -DIN=chart.min.js -DOUT=chart_js.cc -DHEADER=reports/chart_js.h -DNAME=ChartJs -P embed_asset.cmake
# Writes a C++ source that holds IN as a byte array (xxd -i style: no raw-string delimiter to
# collide with, no 64 KiB string-literal limit, any bytes allowed), with `<NAME>Source()` giving
# its text. Runs at build time, so an edited asset or a new libjs-chart.js is picked up by the next
# build.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){24})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
"// Generated from ${IN} by reports/embed_asset.cmake; do not edit.
#include \"${HEADER}\"

namespace lockstep {
namespace {
const unsigned char kBytes[${size}] = {
${bytes}
};
}  // namespace

std::string_view ${NAME}Source() { return {reinterpret_cast<const char*>(kBytes), sizeof(kBytes)}; }

}  // namespace lockstep
")
file(RENAME "${OUT}.tmp" "${OUT}")

// An object built the way lockstep's injected objects must not be (tests/CMakeLists.txt): default
// visibility and no version script, so the std:: template code it instantiates is exported, as a
// static libstdc++'s symbols would be. The export check must fire on it
// (cmake/CheckInjectedObject.cmake, EXPECT=leak).
#include <sstream>
#include <string>
#include <vector>

std::string LeakyObjectFormat(const std::vector<int>& values) {
  std::vector<int> copy;
  for (int v : values) copy.push_back(v);
  std::ostringstream out;
  for (int v : copy) out << v << ' ';
  return out.str();
}

// An object built the way lockstep's injected objects must not be (tests/CMakeLists.txt): default
// visibility and no version script, so the std:: template code it instantiates is exported, as a
// static libstdc++'s symbols would be. The export check must fire on it
// (cmake/CheckInjectedObject.cmake, EXPECT=leak).
//
// The leak is an explicit instantiation, so that it is there under every compiler and optimization
// level: GCC 14 at -O3 inlines all of a vector<int>'s growth into its caller, and an object that
// only used std:: templates then exported none of them (Debian 13, 2026-11-27). The standard lets
// a program instantiate a library template explicitly for a type of its own.
#include <sstream>
#include <string>
#include <vector>

struct LeakyValue {
  int v;
};
template class std::vector<LeakyValue>;

std::string LeakyObjectFormat(const std::vector<int>& values) {
  std::vector<LeakyValue> copy;
  for (int v : values) copy.push_back(LeakyValue{v});
  std::ostringstream out;
  for (const LeakyValue& v : copy) out << v.v << ' ';
  return out.str();
}

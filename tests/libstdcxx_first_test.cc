// A program that links LibTorch uses the system's libstdc++ for its own std:: calls, never the
// copies of std::filesystem that PyPI's torch wheels export (cmake/LockstepLibstdcxxFirst.cmake).
// Where the toolchain finds only libstdc++.a (the GPU image, 2026-11-26), such a program bound
// remove_all to libtorch.so's copy and died through a null pointer in it; ci/toolchain-check.sh
// builds this test that way.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

// The file the dynamic linker took `function` from.
std::string ObjectOf(void* function) {
  Dl_info info{};
  if (::dladdr(function, &info) == 0 || info.dli_fname == nullptr) return "?";
  return info.dli_fname;
}

TEST(LibstdcxxFirstTest, StdFilesystemIsNotLibTorchs) {
  // LibTorch is loaded and used: its exported copies are there to be bound to.
  ASSERT_EQ(torch::ones({2}).sum().item<float>(), 2.0f);
  using RemoveAll = std::uintmax_t (*)(const fs::path&, std::error_code&);
  const std::string from = ObjectOf(reinterpret_cast<void*>(static_cast<RemoveAll>(&fs::remove_all)));
  EXPECT_EQ(from.find("libtorch"), std::string::npos)
      << "std::filesystem::remove_all bound to " << from << ": this program mixes LibTorch's copy of "
      << "std::filesystem with its own libstdc++ (cmake/LockstepLibstdcxxFirst.cmake)";
}

TEST(LibstdcxxFirstTest, RemoveAllRemovesATree) {
  const fs::path root = fs::temp_directory_path() / ("lockstep-libstdcxx-first-" + std::to_string(::getpid()));
  fs::create_directories(root / "a" / "b");
  std::ofstream(root / "a" / "b" / "file") << "x";
  std::ofstream(root / "top") << "y";
  std::error_code ec;
  EXPECT_EQ(fs::remove_all(root, ec), 5u) << ec.message();  // the tree: root, a, a/b, a/b/file, top
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_FALSE(fs::exists(root));
}

}  // namespace

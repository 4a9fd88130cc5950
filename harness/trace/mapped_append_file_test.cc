// MappedAppendFile's two ways to append (Append, and Reserve then Commit for a record written in
// place), through the mapping and through write(2) calls: the same bytes in the file either way.
#include "harness/trace/mapped_append_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lockstep {
namespace {

namespace fs = std::filesystem;

class MappedAppendFileTest : public ::testing::TestWithParam<AppendBy> {
 protected:
  void SetUp() override {
    path_ = fs::temp_directory_path() / ("mapped-append-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(static_cast<int>(GetParam())));
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    // A small window: the appends below cross it several times.
    Result<std::unique_ptr<MappedAppendFile>> f = MappedAppendFile::Open(fd, path_.string(), 4096, GetParam());
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    file_ = std::move(f).value();
  }
  void TearDown() override {
    file_.reset();
    std::error_code ec;
    fs::remove(path_, ec);
  }
  // The file's contents once closed (cut to what was appended).
  std::string Closed() {
    file_.reset();
    std::ifstream in(path_, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  fs::path path_;
  std::unique_ptr<MappedAppendFile> file_;
};

TEST_P(MappedAppendFileTest, AppendsAndRecordsWrittenInPlaceLandInOrder) {
  EXPECT_EQ(file_->mapped(), GetParam() == AppendBy::kMapping);
  std::string want;
  for (int i = 0; i < 300; ++i) {
    const std::string line = "record " + std::to_string(i) + " " + std::string(static_cast<size_t>(i % 97), 'x') + "\n";
    if (i % 2 == 0) {
      ASSERT_TRUE(file_->Append(line).ok());
    } else {
      Result<char*> room = file_->Reserve(line.size());
      ASSERT_TRUE(room.ok()) << room.status().ToString();
      std::memcpy(*room, line.data(), line.size() - 1);
      ASSERT_TRUE(file_->Commit(line.back()).ok());
    }
    want += line;
  }
  EXPECT_EQ(file_->appended(), want.size());
  EXPECT_EQ(Closed(), want);
}

// A reservation given up (the caller failed before its Commit) appends nothing: the next append
// takes its place.
TEST_P(MappedAppendFileTest, AReservationWithoutItsCommitAppendsNothing) {
  ASSERT_TRUE(file_->Append("a\n").ok());
  Result<char*> room = file_->Reserve(10);
  ASSERT_TRUE(room.ok());
  std::memcpy(*room, "abandoned", 9);
  ASSERT_TRUE(file_->Append("b\n").ok());
  if (file_->mapped()) {
    // What a reader of the live file sees: the data, then zeros (TraceDataLength stops there).
    std::ifstream in(path_, std::ios::binary);
    std::string head(12, '?');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    EXPECT_EQ(head, std::string("a\nb\n") + std::string(8, '\0'));
  }
  EXPECT_EQ(Closed(), "a\nb\n");
}

TEST_P(MappedAppendFileTest, ACommitWithoutAReservationIsAnError) {
  const Status s = file_->Commit('\n');
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("without a reservation"), std::string::npos) << s.ToString();
  ASSERT_TRUE(file_->Append("a\n").ok());
  EXPECT_FALSE(file_->Commit('\n').ok()) << "an Append's room is committed by the Append";
  EXPECT_EQ(Closed(), "a\n");
}

INSTANTIATE_TEST_SUITE_P(BothWays, MappedAppendFileTest, ::testing::Values(AppendBy::kMapping, AppendBy::kWrite),
                         [](const ::testing::TestParamInfo<AppendBy>& info) {
                           return info.param == AppendBy::kMapping ? std::string("Mapping") : std::string("Write");
                         });

}  // namespace
}  // namespace lockstep

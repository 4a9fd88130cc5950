#include "harness/scenario/internal/source_text.h"

#include <gtest/gtest.h>

namespace lockstep::internal {
namespace {

TEST(SourceTextTest, OffsetsBecomeOneBasedLineAndColumn) {
  SourceText text("ab\ncd\n\nef");
  EXPECT_EQ(text.PositionOfOffset(0).line, 1);
  EXPECT_EQ(text.PositionOfOffset(0).column, 1);
  EXPECT_EQ(text.PositionOfOffset(4).line, 2);
  EXPECT_EQ(text.PositionOfOffset(4).column, 2);
  EXPECT_EQ(text.PositionOfOffset(7).line, 4);
  EXPECT_EQ(text.PositionOfOffset(7).column, 1);
}

TEST(SourceTextTest, ColumnsCountCharactersNotBytes) {
  // "é" is two bytes; yaml-cpp's mark column for "b" is the byte column 8.
  SourceText text("m: {a: \xC3\xA9, b: 1}\n");
  TextPosition pos = text.PositionOfMark(0, 10);
  EXPECT_EQ(pos.line, 1);
  EXPECT_EQ(pos.column, 10);  // m,:, ,{,a,:, ,é,,, ,b -> b is the 10th character
  EXPECT_EQ(text.PositionOfOffset(10).column, 10);
}

TEST(SourceTextTest, ByteOrderMarkIsNotAColumn) {
  SourceText text("\xEF\xBB\xBF" "a: 1\n");
  EXPECT_TRUE(text.has_bom());
  // yaml-cpp's marks start after the BOM.
  EXPECT_EQ(text.PositionOfMark(0, 3).column, 4);
  EXPECT_EQ(text.PositionOfOffset(6).column, 4);
}

TEST(SourceTextTest, MarksBecomeByteOffsetsWithinTheText) {
  SourceText text("\xEF\xBB\xBF" "a: 1\nb: *x\n");
  EXPECT_EQ(text.OffsetOfMark(1, 3), 3u + 5u + 3u);  // after the BOM and the first line
  EXPECT_EQ(text.bytes()[*text.OffsetOfMark(1, 3)], '*');
  EXPECT_EQ(text.OffsetOfMark(-1, -1), std::nullopt);  // yaml-cpp's null mark
  EXPECT_EQ(text.OffsetOfMark(7, 0), std::nullopt);
  EXPECT_EQ(text.OffsetOfMark(1, 40), std::nullopt);
}

TEST(SourceTextTest, CrLfLinesEndAtTheLineFeed) {
  SourceText text("a: 1\r\nb: 2\r\n");
  TextPosition pos = text.PositionOfMark(1, 3);
  EXPECT_EQ(pos.line, 2);
  EXPECT_EQ(pos.column, 4);
}

TEST(SourceTextTest, MarksPastTheEndKeepYamlCppNumbers) {
  SourceText text("a: 1\n");
  TextPosition pos = text.PositionOfMark(4, 2);
  EXPECT_EQ(pos.line, 5);
  EXPECT_EQ(pos.column, 3);
}

TEST(SourceTextTest, NullMarkIsLineOne) {
  SourceText text("a: 1\n");
  TextPosition pos = text.PositionOfMark(-1, -1);
  EXPECT_EQ(pos.line, 1);
  EXPECT_EQ(pos.column, 1);
}

TEST(SourceTextTest, ValidUtf8HasNoProblem) {
  EXPECT_FALSE(SourceText("name: caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n\ttab: 1\r\n").FindEncodingProblem());
}

struct BadCase {
  const char* bytes;
  std::size_t offset;
  const char* message;
};

TEST(SourceTextTest, FindsTheFirstBadByte) {
  const BadCase cases[] = {
      {"a: \xFF\n", 3, "invalid UTF-8: byte 0xFF cannot start a character"},
      {"ok\na: \xC3(\n", 6, "invalid UTF-8: byte 0xC3 followed by 0x28"},
      {"a: \xC0\xAF", 3, "invalid UTF-8: byte 0xC0 cannot start a character"},       // overlong '/'
      {"a: \xE0\x80\xAF", 3, "invalid UTF-8: byte 0xE0 followed by 0x80"},           // overlong
      {"a: \xED\xA0\x80", 3, "invalid UTF-8: byte 0xED followed by 0xA0"},           // surrogate
      {"a: \xF4\x90\x80\x80", 3, "invalid UTF-8: byte 0xF4 followed by 0x90"},       // > U+10FFFF
      {"a: \xE2\x82", 3, "invalid UTF-8: the file ends inside a character"},
      {"a: \x01", 3, "control character U+0001 is not allowed in a scenario file"},
      {"a: \x7F", 3, "control character U+007F is not allowed in a scenario file"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.message);
    auto problem = SourceText(c.bytes).FindEncodingProblem();
    ASSERT_TRUE(problem.has_value());
    EXPECT_EQ(problem->offset, c.offset);
    EXPECT_EQ(problem->message, c.message);
  }
}

TEST(SourceTextTest, Utf16IsNamed) {
  auto problem = SourceText(std::string("\xFF\xFEr\0", 4)).FindEncodingProblem();
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->offset, 0u);
  EXPECT_EQ(problem->message, "the file is UTF-16 (it starts with the byte-order mark 0xFF 0xFE); scenario files must be UTF-8");
}

TEST(SourceTextTest, TabIndentation) {
  SourceText text("a:\n\tb: 1\n  \tc: 2\nd: \t3\n");
  EXPECT_FALSE(text.LineIndentedWithTab(0));
  EXPECT_TRUE(text.LineIndentedWithTab(1));
  EXPECT_TRUE(text.LineIndentedWithTab(2));
  EXPECT_FALSE(text.LineIndentedWithTab(3));
  EXPECT_FALSE(text.LineIndentedWithTab(9));
}

TEST(SourceTextTest, NulByteIsFoundAfterMultibyteCharacters) {
  std::string bytes = "x: \xC3\xA9\xC3\xA9";
  bytes.push_back('\0');
  SourceText text(bytes);
  auto problem = text.FindEncodingProblem();
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(problem->offset, 7u);
  EXPECT_EQ(text.PositionOfOffset(problem->offset).column, 6);
}

}  // namespace
}  // namespace lockstep::internal

#include "reports/text_escape.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(SanitizeTextTest, KeepsTextAndAllowedWhitespace) {
  EXPECT_EQ(SanitizeText("plain ascii"), "plain ascii");
  EXPECT_EQ(SanitizeText("tab\tlf\ncr\r"), "tab\tlf\ncr\r");
  EXPECT_EQ(SanitizeText("日本語 αβγ 🚀"), "日本語 αβγ 🚀");
}

TEST(SanitizeTextTest, DropsCharactersXmlForbids) {
  EXPECT_EQ(SanitizeText(std::string("a\x01" "b\x1b[31mc\x7f" "d", 11)), "ab[31mcd");
  EXPECT_EQ(SanitizeText(std::string("nul\0end", 7)), "nulend");
  EXPECT_EQ(SanitizeText("c1\xC2\x85" "x"), "c1x");                 // U+0085
  EXPECT_EQ(SanitizeText("lone\xED\xA0\x80" "high"), "lonehigh");   // U+D800
  EXPECT_EQ(SanitizeText("lone\xED\xBF\xBF" "low"), "lonelow");     // U+DFFF
  EXPECT_EQ(SanitizeText("non\xEF\xBF\xBE" "char\xEF\xBF\xBF"), "nonchar");  // U+FFFE, U+FFFF
  EXPECT_EQ(SanitizeText("ok\xEF\xBF\xBD"), "ok\xEF\xBF\xBD");       // U+FFFD itself is fine
}

TEST(SanitizeTextTest, ReplacesMalformedBytes) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(SanitizeText("a\xFF" "b"), "a" + r + "b");
  EXPECT_EQ(SanitizeText("\x80"), r);                      // stray continuation byte
  EXPECT_EQ(SanitizeText("\xC0\xAF"), r + r);              // overlong '/'
  EXPECT_EQ(SanitizeText("\xE6\x97"), r + r);              // truncated sequence
  EXPECT_EQ(SanitizeText("\xF4\x90\x80\x80"), r + r + r + r);  // above U+10FFFF
}

TEST(XmlEscapeTest, Attributes) {
  EXPECT_EQ(XmlEscapeAttribute("a&b<c>d\"e'f"), "a&amp;b&lt;c&gt;d&quot;e&apos;f");
  EXPECT_EQ(XmlEscapeAttribute("1\t2\n3\r"), "1&#9;2&#10;3&#13;");
  EXPECT_EQ(XmlEscapeAttribute("ctrl\x02"), "ctrl");
}

TEST(XmlEscapeTest, Text) {
  EXPECT_EQ(XmlEscapeText("a&b<c>d\"e"), "a&amp;b&lt;c&gt;d\"e");
}

TEST(XmlEscapeTest, CDataSplitsTerminator) {
  EXPECT_EQ(XmlCData("plain"), "<![CDATA[plain]]>");
  EXPECT_EQ(XmlCData("a]]>b"), "<![CDATA[a]]]]><![CDATA[>b]]>");
  EXPECT_EQ(XmlCData("]]>]]>"), "<![CDATA[]]]]><![CDATA[>]]]]><![CDATA[>]]>");
  EXPECT_EQ(XmlCData("x]]]>y"), "<![CDATA[x]]]]]><![CDATA[>y]]>");
  EXPECT_EQ(XmlCData("end]]"), "<![CDATA[end]]]]>");
  EXPECT_EQ(XmlCData("bell\x07"), "<![CDATA[bell]]>");
}

TEST(HtmlEscapeTest, EscapesMarkupCharacters) {
  EXPECT_EQ(HtmlEscape("<script>alert('x' & \"y\")</script>"),
            "&lt;script&gt;alert(&#39;x&#39; &amp; &quot;y&quot;)&lt;/script&gt;");
}

TEST(MarkdownEscapeTest, CellsCannotBreakTheTable) {
  EXPECT_EQ(MarkdownEscape("a|b"), "a\\|b");
  EXPECT_EQ(MarkdownEscape("back\\|slash"), "back\\\\\\|slash");
  EXPECT_EQ(MarkdownEscape("line1\r\nline2"), "line1<br>line2");
  EXPECT_EQ(MarkdownEscape("<b>&"), "&lt;b&gt;&amp;");
  EXPECT_EQ(MarkdownEscape("tab\there"), "tab here");
}

TEST(TruncateTest, NeverSplitsACharacter) {
  EXPECT_EQ(TruncateUtf8("short", 10), "short");
  EXPECT_EQ(TruncateUtf8("abcdefghij", 8), "abcde...");
  // "ααααα" is 10 bytes; 7 leaves 4 bytes for text: two whole characters.
  EXPECT_EQ(TruncateUtf8("ααααα", 7), "αα...");
  EXPECT_EQ(TruncateUtf8("αααα", 6), "α...");
  EXPECT_EQ(TailUtf8("abcdef", 3), "def");
  EXPECT_EQ(TailUtf8("αβγ", 3), "γ");  // the cut would land inside β
  EXPECT_EQ(TailUtf8("αβγ", 10), "αβγ");
}

}  // namespace
}  // namespace lockstep

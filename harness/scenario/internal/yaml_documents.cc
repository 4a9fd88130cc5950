#include "harness/scenario/internal/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>

#include <sstream>

namespace lockstep::internal {
namespace {

// Records where a document starts and where its first node is; builds nothing.
class DocumentMarks : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> start;
  std::optional<YAML::Mark> first_node;

  void Reset() {
    start.reset();
    first_node.reset();
  }
  void OnDocumentStart(const YAML::Mark& mark) override { start = mark; }
  void OnDocumentEnd() override {}
  // An empty document's null is marked where the next token is; its start says more.
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    Node(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(mark);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& mark) {
    if (!first_node) first_node = mark;
  }
};

}  // namespace

YamlDocuments ScanDocuments(const std::string& text) {
  YamlDocuments result;
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentMarks marks;
  int last_pos = -1;
  while (true) {
    marks.Reset();
    if (!parser.HandleNextDocument(marks)) break;
    const YAML::Mark start = marks.start.value_or(YAML::Mark::null_mark());
    // Every real document consumes at least one token, so its start moves forward.
    if (start.pos <= last_pos) {
      result.stuck_at = start;
      break;
    }
    last_pos = start.pos;
    ++result.count;
    if (result.count == 2) {
      result.second = marks.first_node.value_or(start);
      break;
    }
  }
  return result;
}

}  // namespace lockstep::internal

#include "server/core/log.hpp"

#include "tests/support/logfmt.hpp"

#include <doctest/doctest.h>

#include <regex>
#include <stdexcept>
#include <string>

using namespace newsdesk::server;
using newsdesk::testing::log_capture;
using newsdesk::testing::read_logfmt_line;

TEST_CASE("a quote, backslash and newline in an error text give one well-formed logfmt line") {
  log_capture captured;
  const std::string error = "bad \"name\" in C:\\sites\\a.json\nlevel=error msg=forged";
  try {
    throw std::runtime_error(error);
  } catch (const std::exception& e) {
    log_error("msg=\"cannot load\" error=" + logfmt_quoted(e.what()) + " retry_ms=100");
  }
  const auto lines = captured.lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find(R"(error="bad \"name\" in C:\\sites\\a.json\nlevel=error msg=forged")") !=
        std::string::npos);
  const auto line = read_logfmt_line(lines[0]);
  REQUIRE_MESSAGE(line, lines[0]);
  CHECK(std::regex_match(line->time, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")));
  CHECK(line->keys() == std::vector<std::string>{"level", "msg", "error", "retry_ms"});
  CHECK(line->get("level") == "error");
  CHECK(line->get("msg") == "cannot load");
  CHECK(line->get("error") == error);
  CHECK(line->get("retry_ms") == "100");
}

TEST_CASE("logfmt_quoted escapes every control character and keeps UTF-8 as it is") {
  CHECK(logfmt_quoted("") == R"("")");
  CHECK(logfmt_quoted("plain text") == R"("plain text")");
  CHECK(logfmt_quoted("a\rb\tc") == R"("a\rb\tc")");
  CHECK(logfmt_quoted(std::string("nul\0bell\a del\x7f", 14)) ==
        R"("nul\u0000bell\u0007 del\u007f")");
  CHECK(logfmt_quoted("Ünïcødé — ok") == "\"Ünïcødé — ok\"");
  for (int c = 0; c < 0x20; ++c) {
    const auto text = logfmt_quoted(std::string(1, static_cast<char>(c)));
    CHECK_MESSAGE(read_logfmt_line("t k=" + text + "\n"), c);
    CHECK(read_logfmt_line("t k=" + text + "\n")->get("k") == std::string(1, static_cast<char>(c)));
  }
}

TEST_CASE("Prometheus label escaping: only backslash, quote and newline, as the format knows") {
  std::string out;
  append_escaped(out, "a\\b\"c\nd\te", escape_style::prometheus);
  CHECK(out == "a\\\\b\\\"c\\nd\te");
}

TEST_CASE("an access line goes through the sink too, whole") {
  log_capture captured;
  log_access("msg=access method=GET path=" + logfmt_quoted("/a\"b") + " status=200");
  const auto lines = captured.lines();
  REQUIRE(lines.size() == 1);
  const auto line = read_logfmt_line(lines[0]);
  REQUIRE_MESSAGE(line, lines[0]);
  CHECK(line->get("path") == "/a\"b");
  CHECK(line->get("level") == "info");
}

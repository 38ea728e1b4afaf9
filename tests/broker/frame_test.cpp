#include <doctest/doctest.h>

#include <string>

#include "broker/frame.hpp"

using namespace newsdesk::broker;

TEST_CASE("a frame is a 4-byte big-endian length followed by the payload") {
  const std::string f = encode_frame("hello");
  REQUIRE(f.size() == 9);
  CHECK(f.substr(0, 4) == std::string("\0\0\0\5", 4));
  CHECK(f.substr(4) == "hello");
  char h[4];
  write_length(h, 0x01020304U);
  CHECK(read_length(h) == 0x01020304U);
  CHECK(static_cast<unsigned char>(h[0]) == 1);
}

TEST_CASE("fewer than 4 bytes need more and ask for the header") {
  for (std::size_t n = 0; n < 4; ++n) {
    const auto r = try_decode(std::string_view("\0\0\0\1", n), 100);
    CHECK(r.status == decode_status::need_more);
    CHECK(r.size == 4);
  }
}

TEST_CASE("a partial payload needs more and tells the total size") {
  const std::string f = encode_frame("abcdef");
  const auto r = try_decode(std::string_view(f).substr(0, 7), 100);
  CHECK(r.status == decode_status::need_more);
  CHECK(r.size == 10);
}

TEST_CASE("a whole frame decodes and reports the bytes consumed") {
  std::string two = encode_frame("one") + encode_frame("three") + "\0\0"; // trailing partial
  auto r = try_decode(two, 100);
  REQUIRE(r.status == decode_status::frame);
  CHECK(r.payload == "one");
  CHECK(r.size == 7);
  r = try_decode(std::string_view(two).substr(7), 100);
  REQUIRE(r.status == decode_status::frame);
  CHECK(r.payload == "three");
  r = try_decode(std::string_view(two).substr(7 + 9), 100);
  CHECK(r.status == decode_status::need_more);
}

TEST_CASE("a zero-length frame is a frame with an empty payload") {
  const auto r = try_decode(std::string_view("\0\0\0\0", 4), 100);
  REQUIRE(r.status == decode_status::frame);
  CHECK(r.payload.empty());
  CHECK(r.size == 4);
}

TEST_CASE("a length above the limit is an error from the header alone, before any payload") {
  // Only the 4 header bytes exist: the decision cannot depend on reading (or allocating) more.
  const auto r = try_decode(std::string_view("\xff\xff\xff\xff", 4), 1024 * 1024);
  CHECK(r.status == decode_status::error);
  CHECK(r.size == 0xffffffffU);
  const auto at_limit = try_decode(std::string_view("\0\0\0\x10", 4), 16);
  CHECK(at_limit.status == decode_status::need_more);
  const auto over = try_decode(std::string_view("\0\0\0\x11", 4), 16);
  CHECK(over.status == decode_status::error);
}

#include "server/core/utf8.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace newsdesk::server;

TEST_CASE("UTF-8: well-formed text passes; overlong forms, surrogates, past U+10FFFF, stray and "
          "truncated bytes fail") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain ASCII"));
  CHECK(valid_utf8(std::string("a\0b", 3))); // NUL is a character (MQTT refuses it on its own)
  CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\xb0 \xe6\x9d\xb1\xe4\xba\xac"));
  CHECK(valid_utf8("\xf4\x8f\xbf\xbf"));       // U+10FFFF
  CHECK_FALSE(valid_utf8("\xc0\xaf"));         // overlong '/'
  CHECK_FALSE(valid_utf8("\xe0\x80\xaf"));     // overlong, three bytes
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));     // U+D800
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80")); // past U+10FFFF
  CHECK_FALSE(valid_utf8("ok \xe2\x82"));      // truncated at the end
  CHECK_FALSE(valid_utf8("\x80"));
  CHECK_FALSE(valid_utf8("\xff"));
}

TEST_CASE("UTF-8: each maximal ill-formed subsequence is replaced once, as WHATWG decoders do") {
  CHECK(replace_invalid_utf8("caf\xc3\xa9") == "caf\xc3\xa9");
  // A truncated three-byte sequence before ASCII: one U+FFFD, and the ASCII kept.
  CHECK(replace_invalid_utf8("\xe2\x82"
                             "A") == "\xef\xbf\xbd"
                                     "A");
  // Two stray continuation bytes are two subsequences.
  CHECK(replace_invalid_utf8("\x80\x80") == "\xef\xbf\xbd\xef\xbf\xbd");
  // A surrogate's lead and what follows it: E D is not followed by A0 in well-formed text.
  CHECK(replace_invalid_utf8("\xed\xa0\x80", "?") == "???");
  CHECK(replace_invalid_utf8("a\xff"
                             "b",
                             " ") == "a b");
}

TEST_CASE("UTF-8: the decoder hands each code point with its bytes; append_utf8 writes them back") {
  const std::string text = "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x93\xb0\xff";
  std::vector<char32_t> points;
  std::string again;
  int invalid = 0;
  decode_utf8(
      text,
      [&](char32_t cp, std::string_view bytes) {
        points.push_back(cp);
        std::string written;
        append_utf8(written, cp);
        CHECK(written == bytes);
        again += written;
      },
      [&] { ++invalid; });
  CHECK(points == std::vector<char32_t>{U'A', U'\u00e9', U'\u20ac', U'\U0001f4f0'});
  CHECK(invalid == 1);
  CHECK(again == text.substr(0, text.size() - 1));
}

// Pictures made from hostile bytes: real JPEG and PNG made small as WebP, everything else, and
// bombs, refused with a message that says what was wrong.
#include "server/pictures/picture_codec.hpp"

#include "tests/support/test_images.hpp"

#include <doctest/doctest.h>

#include <vips/vips.h>

using namespace newsdesk::server;
using namespace newsdesk::testing;

namespace {

// The width and height libvips reads back from `webp`.
std::pair<int, int> size_of(const std::string& webp) {
  VipsImage* image = vips_image_new_from_buffer(webp.data(), webp.size(), "", nullptr);
  REQUIRE(image != nullptr);
  std::pair<int, int> size{vips_image_get_width(image), vips_image_get_height(image)};
  g_object_unref(image);
  return size;
}

} // namespace

TEST_CASE("pictures: a large JPEG is made 480 px wide as WebP, its shape kept, named by its hash") {
  const auto jpeg = test_jpeg(1600, 900);
  auto made = make_picture(jpeg);
  REQUIRE_MESSAGE(made.ok(), made.error);
  CHECK(made.width == 480);
  CHECK(made.height == 270);
  CHECK(made.content_type == "image/webp");
  CHECK(made.body.substr(0, 4) == "RIFF");
  CHECK(made.body.substr(8, 4) == "WEBP");
  CHECK(size_of(made.body) == std::pair{480, 270});
  CHECK(made.body.size() < 40 * 1024);
  CHECK(is_picture_name(made.name));
  CHECK(make_picture(jpeg).name == made.name); // the same bytes, the same name

  // A tall one fits 480 px high; a small one is never enlarged.
  auto tall = make_picture(test_png(400, 2000));
  REQUIRE_MESSAGE(tall.ok(), tall.error);
  CHECK(tall.height == 480);
  CHECK(tall.width == 96);
  auto small = make_picture(test_png(300, 200));
  REQUIRE_MESSAGE(small.ok(), small.error);
  CHECK(small.width == 300);
  CHECK(small.height == 200);
}

TEST_CASE("pictures: what is not a JPEG, PNG, GIF or WebP is refused, saying what it is") {
  auto refusal = [](const std::string& bytes) { return make_picture(bytes).error; };
  CHECK(refusal("<!DOCTYPE html><html><body>Not found</body></html>") ==
        "not a JPEG, PNG, GIF or WebP image: HTML");
  CHECK(refusal("<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"/>") ==
        "not a JPEG, PNG, GIF or WebP image: SVG");
  CHECK(refusal("") == "not a JPEG, PNG, GIF or WebP image: an empty body");
  CHECK(refusal("{\"error\": 404}") == "not a JPEG, PNG, GIF or WebP image: JSON");
  CHECK(refusal(std::string("\0\0\0\x1c"
                            "ftypavif",
                            12) +
                std::string(100, 'x'))
            .find("AVIF") != std::string::npos);
  CHECK(refusal(std::string(1000, 'z')) == "not a JPEG, PNG, GIF or WebP image: unknown bytes");
  // The first bytes of a JPEG and then nothing that decodes.
  CHECK(refusal(std::string("\xff\xd8\xff\xe0", 4) + std::string(500, 'x'))
            .starts_with("cannot read the JPEG header"));
  // A JPEG cut in half: refused, not shown half grey.
  const auto jpeg = test_jpeg(800, 600);
  CHECK(refusal(jpeg.substr(0, jpeg.size() / 2)).starts_with("cannot decode the JPEG"));
  CHECK(make_picture(jpeg).ok());
}

TEST_CASE("pictures: a small file declaring a huge image (a bomb) is refused before decoding") {
  const auto bomb = declared_png(60'000, 60'000);
  CHECK(bomb.size() < 200);
  auto made = make_picture(bomb);
  CHECK_FALSE(made.ok());
  CHECK(made.error == "60000 x 60000 pixels: more than 40 megapixels, or none (a decompression "
                      "bomb, or a broken header)");
  // Just within the bound, the header passes and the missing pixels fail the decoding.
  CHECK(make_picture(declared_png(6000, 6000)).error.starts_with("cannot decode the PNG"));
}

TEST_CASE("pictures: served names are 32 hex digits and .webp, nothing else") {
  CHECK(is_picture_name("0123456789abcdef0123456789abcdef.webp"));
  CHECK_FALSE(is_picture_name("0123456789ABCDEF0123456789abcdef.webp"));
  CHECK_FALSE(is_picture_name("0123456789abcdef0123456789abcde.webp"));
  CHECK_FALSE(is_picture_name("../../etc/passwd"));
  CHECK_FALSE(is_picture_name("0123456789abcdef0123456789abcdef.svg"));
}

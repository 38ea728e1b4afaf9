// Real images for the picture tests, written with libjpeg and zlib (not with libvips, which
// newsdesk reads them with), and a PNG that only declares its size (a decompression bomb's
// header).
#pragma once

#include <cstdint>
#include <string>

namespace newsdesk::testing {

// A JPEG or PNG of `width` x `height` pixels: a gradient, so that it compresses as a photo does.
std::string test_jpeg(int width, int height);
std::string test_png(int width, int height);

// A PNG whose header (IHDR, with its CRC) declares `width` x `height` pixels, followed by a few
// bytes of image data: what a decompression bomb looks like before it is decoded.
std::string declared_png(std::uint32_t width, std::uint32_t height);

} // namespace newsdesk::testing

#include "tests/support/test_images.hpp"

// Written with libjpeg and zlib directly, not libvips: libvips's thread pool hands every tile
// between threads through GLib's locks, which ThreadSanitizer's interceptors made so slow that
// making the test images took most of a minute under TSan.
#include <jpeglib.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace newsdesk::testing {

namespace {

// Three bytes per pixel: x, y and their mean, each wrapped at 256 (a photo-like gradient).
std::vector<unsigned char> gradient_row(int width, int y) {
  std::vector<unsigned char> row(static_cast<std::size_t>(width) * 3);
  for (int x = 0; x < width; ++x) {
    auto* pixel = &row[static_cast<std::size_t>(x) * 3];
    pixel[0] = static_cast<unsigned char>(x);
    pixel[1] = static_cast<unsigned char>(y);
    pixel[2] = static_cast<unsigned char>((x + y) / 2);
  }
  return row;
}

std::string big_endian32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string chunk(const std::string& type, const std::string& data) {
  const std::string typed = type + data;
  const auto crc =
      crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size()));
  return big_endian32(static_cast<std::uint32_t>(data.size())) + typed +
         big_endian32(static_cast<std::uint32_t>(crc));
}

std::string deflated(const std::string& raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(size, '\0');
  if (compress(reinterpret_cast<Bytef*>(packed.data()), &size,
               reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size())) != Z_OK)
    throw std::runtime_error("test image: zlib could not compress");
  packed.resize(size);
  return packed;
}

// A PNG of `width` x `height` (`bit_depth` bits per sample; `colour_type` 2 RGB or 0 grey) whose
// image data is `raw` (filtered rows) deflated.
std::string png(std::uint32_t width, std::uint32_t height, char bit_depth, char colour_type,
                const std::string& raw) {
  const std::string ihdr = big_endian32(width) + big_endian32(height) + bit_depth + colour_type +
                           std::string("\0\0\0", 3);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", deflated(raw)) +
         chunk("IEND", "");
}

} // namespace

std::string test_jpeg(int width, int height) {
  jpeg_compress_struct compressor{};
  jpeg_error_mgr errors{};
  compressor.err = jpeg_std_error(&errors);
  // The images are made by the tests, never read: an error is a broken build, said and ended.
  errors.error_exit = [](j_common_ptr info) {
    (*info->err->output_message)(info);
    std::abort();
  };
  jpeg_create_compress(&compressor);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&compressor, &buffer, &size);
  compressor.image_width = static_cast<JDIMENSION>(width);
  compressor.image_height = static_cast<JDIMENSION>(height);
  compressor.input_components = 3;
  compressor.in_color_space = JCS_RGB;
  jpeg_set_defaults(&compressor);
  jpeg_set_quality(&compressor, 85, TRUE);
  jpeg_start_compress(&compressor, TRUE);
  for (int y = 0; y < height; ++y) {
    auto row = gradient_row(width, y);
    JSAMPROW rows[] = {row.data()};
    jpeg_write_scanlines(&compressor, rows, 1);
  }
  jpeg_finish_compress(&compressor);
  jpeg_destroy_compress(&compressor);
  std::string out(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  return out;
}

std::string test_png(int width, int height) {
  std::string raw;
  raw.reserve(static_cast<std::size_t>(height) * (static_cast<std::size_t>(width) * 3 + 1));
  for (int y = 0; y < height; ++y) {
    raw.push_back('\0'); // filter type 0: the row as it is
    const auto row = gradient_row(width, y);
    raw.append(row.begin(), row.end());
  }
  return png(static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height), 8, 2, raw);
}

std::string declared_png(std::uint32_t width, std::uint32_t height) {
  // 1 bit of grey per pixel: the densest a bomb can be, 1 byte of zlib for ~1,000 of pixels.
  return png(width, height, 1, 0, std::string(64, '\0'));
}

} // namespace newsdesk::testing

#include "tests/support/test_images.hpp"

#include <vips/vips.h>
#include <zlib.h>

#include <memory>
#include <stdexcept>

namespace newsdesk::testing {

namespace {

struct unref {
  void operator()(VipsImage* image) const { g_object_unref(image); }
};
using image_ptr = std::unique_ptr<VipsImage, unref>;

// Three bands of uchar: x, y and their sum, each wrapped at 256.
image_ptr gradient(int width, int height) {
  if (VIPS_INIT("newsdesk-tests") != 0)
    throw std::runtime_error("libvips did not start");
  VipsImage *xy = nullptr, *sum = nullptr, *joined = nullptr, *bytes = nullptr;
  if (vips_xyz(&xy, width, height, nullptr) != 0)
    throw std::runtime_error(vips_error_buffer());
  image_ptr xy_owned(xy);
  if (vips_bandmean(xy, &sum, nullptr) != 0)
    throw std::runtime_error(vips_error_buffer());
  image_ptr sum_owned(sum);
  if (vips_bandjoin2(xy, sum, &joined, nullptr) != 0)
    throw std::runtime_error(vips_error_buffer());
  image_ptr joined_owned(joined);
  if (vips_cast_uchar(joined, &bytes, nullptr) != 0)
    throw std::runtime_error(vips_error_buffer());
  VipsImage* srgb = nullptr;
  image_ptr bytes_owned(bytes);
  if (vips_copy(bytes, &srgb, "interpretation", VIPS_INTERPRETATION_sRGB, nullptr) != 0)
    throw std::runtime_error(vips_error_buffer());
  return image_ptr(srgb);
}

std::string bytes_of(void* buffer, std::size_t size) {
  std::string out(static_cast<const char*>(buffer), size);
  g_free(buffer);
  return out;
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

} // namespace

std::string test_jpeg(int width, int height) {
  auto image = gradient(width, height);
  void* buffer = nullptr;
  std::size_t size = 0;
  if (vips_jpegsave_buffer(image.get(), &buffer, &size, "Q", 85, nullptr) != 0)
    throw std::runtime_error(vips_error_buffer());
  return bytes_of(buffer, size);
}

std::string test_png(int width, int height) {
  auto image = gradient(width, height);
  void* buffer = nullptr;
  std::size_t size = 0;
  if (vips_pngsave_buffer(image.get(), &buffer, &size, nullptr) != 0)
    throw std::runtime_error(vips_error_buffer());
  return bytes_of(buffer, size);
}

std::string declared_png(std::uint32_t width, std::uint32_t height) {
  // 1 bit of grey per pixel: the densest a bomb can be, 1 byte of zlib for ~1,000 of pixels.
  const std::string ihdr =
      big_endian32(width) + big_endian32(height) + std::string("\1\0\0\0\0", 5);
  std::string idat(64, '\0');
  uLongf packed_size = compressBound(static_cast<uLong>(idat.size()));
  std::string packed(packed_size, '\0');
  compress(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
           reinterpret_cast<const Bytef*>(idat.data()), static_cast<uLong>(idat.size()));
  packed.resize(packed_size);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) + chunk("IDAT", packed) +
         chunk("IEND", "");
}

} // namespace newsdesk::testing

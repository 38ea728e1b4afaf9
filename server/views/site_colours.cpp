#include "server/views/site_colours.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>

namespace newsdesk::server {

namespace {

// A "#rgb" or "#rrggbb" colour's channels, 0-255; nullopt for anything else.
std::optional<std::array<int, 3>> channels_of(std::string_view colour) {
  if ((colour.size() != 4 && colour.size() != 7) || colour[0] != '#')
    return std::nullopt;
  std::array<int, 3> out{};
  for (int i = 0; i < 3; ++i) {
    const auto digits = colour.size() == 4 ? std::string(2, colour[1 + i])
                                           : std::string(colour.substr(1 + 2 * i, 2));
    if (!std::isxdigit(static_cast<unsigned char>(digits[0])) ||
        !std::isxdigit(static_cast<unsigned char>(digits[1])))
      return std::nullopt;
    out[i] = std::stoi(digits, nullptr, 16);
  }
  return out;
}

// WCAG relative luminance.
double luminance_of(const std::array<int, 3>& c) {
  auto linear = [](int v) {
    const double x = v / 255.0;
    return x <= 0.03928 ? x / 12.92 : std::pow((x + 0.055) / 1.055, 2.4);
  };
  return 0.2126 * linear(c[0]) + 0.7152 * linear(c[1]) + 0.0722 * linear(c[2]);
}

double contrast_of(double a, double b) {
  return (std::max(a, b) + 0.05) / (std::min(a, b) + 0.05);
}

std::string hex_of(const std::array<int, 3>& c) {
  char out[8];
  std::snprintf(out, sizeof out, "#%02x%02x%02x", c[0], c[1], c[2]);
  return out;
}

} // namespace

std::string text_colour_for(std::string_view bg) {
  const auto c = channels_of(bg);
  if (!c)
    return "#ffffff";
  // WCAG contrast against white (1.05 / (L + 0.05)) vs against near-black: pick the larger.
  // Pure black and white: at the crossover (L = 0.179) both give 4.58:1, so any colour gets at
  // least WCAG AA's 4.5:1 (#111111 instead of black fell to 4.2:1 near it).
  return luminance_of(*c) > 0.179 ? "#000000" : "#ffffff";
}

std::string colour_against(std::string_view colour, std::string_view background) {
  const auto c = channels_of(colour);
  const auto bg = channels_of(background);
  if (!c || !bg)
    return std::string(colour);
  const double bg_luminance = luminance_of(*bg);
  // Towards white on a dark background, towards black on a light one, a step at a time: the
  // nearest colour of the same hue family that stands out 3:1 (WCAG 1.4.11, a control's edge).
  const int towards = bg_luminance < 0.18 ? 255 : 0;
  auto adjusted = *c;
  for (int step = 0; step <= 20; ++step) {
    for (int i = 0; i < 3; ++i)
      adjusted[i] = static_cast<int>(std::lround((*c)[i] + (towards - (*c)[i]) * step / 20.0));
    if (contrast_of(luminance_of(adjusted), bg_luminance) >= 3.0)
      return step == 0 ? std::string(colour) : hex_of(adjusted);
  }
  return hex_of(adjusted);
}

} // namespace newsdesk::server
